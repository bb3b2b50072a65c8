//! The supervising task of one launch, started right after the spawn: it waits for the launch
//! to settle (H19), tracks the shim's commit, then — once the exit watcher fired — runs the
//! finalization and publishes it to the handles.

use super::blocking::blocking;
use super::context::RunContext;
use super::doorbell::{HostDoorbell, Ring};
use super::exit_watcher::ProcessControl;
use super::finalize::{Finished, commit_evidence, finalize_after_exit};
use super::handle::CommitState;
use super::handshake::SAFETY_POLL;
use std::sync::Arc;
use sublaunch_protocol::records::handshake::{Doorbell, PollBackoff};
use tokio::sync::{oneshot, watch};

/// How the launch settled.
pub(crate) enum Settled {
    /// Committed from the host's side (the proceed file is durable); the doorbell moves here
    /// and stays open until the shim commits or exits.
    Started(Option<HostDoorbell>),
    /// Failed before proceed; the startup failure is persisted.
    Failed(String),
}

/// The task's inputs and outputs.
pub(crate) struct Supervisor {
    pub ctx: Arc<RunContext>,
    pub control: Arc<dyn ProcessControl>,
    pub settled: oneshot::Receiver<Settled>,
    pub commit: watch::Sender<CommitState>,
    pub finished: watch::Sender<Option<Finished>>,
}

impl Supervisor {
    /// Runs to the end of the run.
    pub(crate) async fn run(self) {
        match self.settled.await {
            Ok(Settled::Started(doorbell)) => {
                track_commit(&self.ctx, self.control.as_ref(), &self.commit, doorbell).await
            }
            Ok(Settled::Failed(error)) => {
                self.commit.send_replace(CommitState::Failed(error));
            }
            // The launch future was dropped mid-way: finalize after the exit all the same.
            Err(_) => {}
        }
        let exit = self.control.wait_exit().await;
        let finished = finalize_after_exit(&self.ctx, &exit).await;
        if *self.commit.borrow() == CommitState::Pending {
            let state = match &finished.startup_failure {
                Some(error) => CommitState::Failed(error.clone()),
                None => CommitState::Committed,
            };
            self.commit.send_replace(state);
        }
        self.finished.send_replace(Some(finished));
    }
}

/// Waits for the shim's `committed` message (or commit evidence on a poll tick) until the
/// exit; closes the host's doorbell end afterwards.
async fn track_commit(
    ctx: &Arc<RunContext>,
    control: &dyn ProcessControl,
    commit: &watch::Sender<CommitState>,
    mut doorbell: Option<HostDoorbell>,
) {
    let mut backoff = PollBackoff::default();
    loop {
        let open = doorbell.as_ref().is_some_and(|d| !d.is_closed());
        let tick = if open {
            SAFETY_POLL
        } else {
            backoff.next().unwrap_or(SAFETY_POLL)
        };
        tokio::select! {
            ring = async {
                match doorbell.as_mut() {
                    Some(d) if !d.is_closed() => d.recv().await,
                    _ => std::future::pending().await,
                }
            } => {
                if ring == Ring::Message(Doorbell::State("committed".into())) {
                    commit.send_replace(CommitState::Committed);
                    return;
                }
            }
            () = tokio::time::sleep(tick) => {
                let context = ctx.clone();
                let evidence = blocking(move || commit_evidence(&context.run, &context.run_id)).await;
                if evidence.unwrap_or(false) && control.exit().is_none() {
                    commit.send_replace(CommitState::Committed);
                    return;
                }
            }
            _ = control.wait_exit() => return,
        }
    }
}
