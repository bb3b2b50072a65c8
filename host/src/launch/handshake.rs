//! The host half of the startup handshake (K4–K8, K13–K16, H16, H17), driven by three event
//! sources — the doorbell, a poll tick and the exit watcher — against monotonic deadlines.
//! Every wake-up re-reads `runner-startup.json`: the file is authoritative, a doorbell message
//! only says "look now" (K14).

use super::blocking::blocking;
use super::context::RunContext;
use super::doorbell::{HostDoorbell, Ring};
use super::exit_watcher::ProcessControl;
use serde_json::Value;
use std::io;
use std::sync::Arc;
use std::time::Duration;
use sublaunch_protocol::files::doc::{ReadDoc, to_pretty_bytes};
use sublaunch_protocol::files::durability::DocKind;
use sublaunch_protocol::files::layout::names;
use sublaunch_protocol::os::clock::Deadline;
use sublaunch_protocol::os::faults::HostPoint;
use sublaunch_protocol::records::handshake::{
    ControlAction, ControlMessage, HostObservation, PollBackoff, StartupState, evaluate_host, evaluate_host_after_exit,
    exited_before_commit_message, exited_before_proceed_message, host_timeout_message,
};

/// How long the commit check waits for the exit of a shim whose doorbell reached EOF.
const EOF_EXIT_GRACE: Duration = Duration::from_millis(1_000);

/// The safety poll while the doorbell is open (a missed or spoofed message costs at most this).
pub(crate) const SAFETY_POLL: Duration = Duration::from_millis(250);

/// Why the commit or the revival handshake failed.
#[derive(Clone, Debug, thiserror::Error)]
pub enum HandshakeError {
    /// The shim failed, exited or did not answer in time, in the protocol's words (K5–K8,
    /// K13, K16).
    #[error("{0}")]
    Runner(String),
    /// A control file could not be written.
    #[error("{prefix}: {source}")]
    Control {
        /// What the write was for (`Failed to authorize async runner startup`, …).
        prefix: &'static str,
        /// Why.
        source: Arc<io::Error>,
    },
}

/// One handshake of one launch.
pub(crate) struct Handshake<'a> {
    pub ctx: &'a Arc<RunContext>,
    pub control: &'a dyn ProcessControl,
    pub doorbell: Option<&'a mut HostDoorbell>,
    /// Host wait per state (K4, K13).
    pub timeout: Duration,
}

impl Handshake<'_> {
    /// H16/K16: the fresh-launch commit. Refuses to write proceed once the shim's exit has been
    /// observed.
    pub(crate) async fn fresh_commit(&mut self, barrier_token: &str) -> Result<(), HandshakeError> {
        self.ctx.fault_sleep(HostPoint::Proceed).await;
        if let Some((code, signal)) = self.exit_before_commit().await {
            return Err(HandshakeError::Runner(exited_before_commit_message(
                code,
                signal.as_deref(),
            )));
        }
        self.write_control(ControlAction::Proceed, barrier_token).await?;
        self.ring(ControlAction::Proceed);
        Ok(())
    }

    /// K3: ready → ack → acknowledged → confirm → confirmed → (commit check) → proceed.
    pub(crate) async fn revival(&mut self) -> Result<(), HandshakeError> {
        let token = self.wait_state(StartupState::Ready, None).await?;
        self.ctx.fault_sleep(HostPoint::Ack).await;
        self.write_control(ControlAction::Ack, &token).await?;
        self.ring(ControlAction::Ack);
        self.wait_state(StartupState::Acknowledged, Some(&token)).await?;
        self.ctx.fault_sleep(HostPoint::Confirm).await;
        self.write_control(ControlAction::Confirm, &token).await?;
        self.ring(ControlAction::Confirm);
        self.wait_state(StartupState::Confirmed, Some(&token)).await?;
        self.ctx.fault_sleep(HostPoint::Proceed).await;
        if let Some((code, signal)) = self.exit_before_commit().await {
            return Err(HandshakeError::Runner(exited_before_proceed_message(
                code,
                signal.as_deref(),
            )));
        }
        self.write_control(ControlAction::Proceed, &token).await?;
        self.ring(ControlAction::Proceed);
        // K7: after the commit point nothing may fail the launch.
        let run = self.ctx.run.clone();
        let _ = blocking(move || run.remove(names::RUNNER_STARTUP)).await;
        Ok(())
    }

    /// K16: the shim's exit as seen right before proceed. An exit already observed counts, and
    /// so does EOF on the doorbell (K14: the shim is gone), after which the exit watcher gets a
    /// moment to report the exit status.
    async fn exit_before_commit(&mut self) -> Option<(Option<i32>, Option<String>)> {
        if let Some(exit) = self.control.exit() {
            return Some((exit.exit_code, exit.signal));
        }
        let closed = self.doorbell.as_mut().is_some_and(|d| d.poll_closed());
        if !closed {
            return None;
        }
        match tokio::time::timeout(EOF_EXIT_GRACE, self.control.wait_exit()).await {
            Ok(exit) => Some((exit.exit_code, exit.signal)),
            Err(_) => Some((None, None)),
        }
    }

    /// K4/K5: waits for `expected` (with `token` after `ready`); returns the token.
    async fn wait_state(&mut self, expected: StartupState, token: Option<&str>) -> Result<String, HandshakeError> {
        let clock = self.ctx.os.clock.clone();
        let deadline = Deadline::after(clock.as_ref(), self.timeout);
        let path = self.ctx.run.join(names::RUNNER_STARTUP);
        let mut backoff = PollBackoff::default();
        loop {
            let exited = self.control.exit();
            let read = self.read_report().await;
            if let Some(exit) = exited {
                return Err(after_exit(&read, expected, &path, &exit));
            }
            match evaluate_host(&read, expected, token, &path) {
                HostObservation::Failed(message) => return Err(HandshakeError::Runner(message)),
                HostObservation::Reached { token, .. } => {
                    if let Some(exit) = self.control.exit() {
                        // K5: an exit seen in the same check; the file's error state wins.
                        let again = self.read_report().await;
                        return Err(after_exit(&again, expected, &path, &exit));
                    }
                    return Ok(token);
                }
                HostObservation::KeepWaiting => {}
            }
            if deadline.expired(clock.as_ref()) {
                return match evaluate_host(&self.read_report().await, expected, token, &path) {
                    HostObservation::Reached { token, .. } => Ok(token),
                    HostObservation::Failed(message) => Err(HandshakeError::Runner(message)),
                    HostObservation::KeepWaiting => Err(HandshakeError::Runner(host_timeout_message(
                        deadline.budget(),
                        expected,
                    ))),
                };
            }
            let doorbell_open = self.doorbell.as_ref().is_some_and(|d| !d.is_closed());
            let tick = if doorbell_open {
                SAFETY_POLL
            } else {
                backoff.next().unwrap_or(SAFETY_POLL)
            };
            let wait = tick.min(deadline.remaining(clock.as_ref()));
            let control = self.control;
            let doorbell = &mut self.doorbell;
            tokio::select! {
                ring = next_ring(doorbell) => {
                    // A message is only a wake-up; EOF hands liveness to the exit watcher and
                    // the poll tick (the shim may have closed the channel and still be alive).
                    let _: Ring = ring;
                }
                _ = control.wait_exit() => {}
                () = tokio::time::sleep(wait) => {}
            }
        }
    }

    async fn read_report(&self) -> io::Result<ReadDoc<Value>> {
        let run = self.ctx.run.clone();
        blocking(move || run.read_doc::<Value>(names::RUNNER_STARTUP)).await
    }

    /// K6/H16: writes a control file atomically (proceed is in the durable class).
    async fn write_control(&self, action: ControlAction, token: &str) -> Result<(), HandshakeError> {
        let point = match action {
            ControlAction::Ack => HostPoint::Ack,
            ControlAction::Confirm => HostPoint::Confirm,
            ControlAction::Proceed => HostPoint::Proceed,
        };
        let kind = match action {
            ControlAction::Proceed => DocKind::Proceed,
            ControlAction::Ack | ControlAction::Confirm => DocKind::HandshakeControl,
        };
        let ctx = self.ctx.clone();
        let bytes = to_pretty_bytes(&ControlMessage::new(action, token));
        let written = blocking(move || {
            ctx.faults
                .write(&ctx.run, point, action.file_name(), &bytes, ctx.policy.for_kind(kind))
        })
        .await;
        if written.is_err() && action == ControlAction::Proceed {
            self.withdraw_proceed().await;
        }
        written.map_err(|e| HandshakeError::Control {
            prefix: action.write_failure_prefix(),
            source: Arc::new(e),
        })
    }

    /// K8: a failed proceed must not be left behind. A write can fail after its rename (the
    /// directory fsync, A4), with the file already visible to the shim; the shim takes the
    /// file before it commits, so whichever unlink comes first decides, and a shim that
    /// finds it gone keeps waiting until it is terminated.
    async fn withdraw_proceed(&self) {
        self.ctx.fault_sleep(HostPoint::Withdraw).await;
        let ctx = self.ctx.clone();
        let _ = blocking(move || ctx.run.remove(ControlAction::Proceed.file_name())).await;
    }

    fn ring(&self, action: ControlAction) {
        if let Some(doorbell) = self.doorbell.as_ref() {
            doorbell.send(action);
        }
    }
}

/// The next doorbell event, or never when there is no open doorbell.
async fn next_ring(doorbell: &mut Option<&mut HostDoorbell>) -> Ring {
    match doorbell {
        Some(d) if !d.is_closed() => d.recv().await,
        _ => std::future::pending().await,
    }
}

fn after_exit(
    read: &io::Result<ReadDoc<Value>>,
    expected: StartupState,
    path: &std::path::Path,
    exit: &super::exit_watcher::RunnerExit,
) -> HandshakeError {
    HandshakeError::Runner(evaluate_host_after_exit(
        read,
        expected,
        path,
        exit.exit_code,
        exit.signal.as_deref(),
    ))
}
