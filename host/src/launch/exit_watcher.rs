//! The exit watcher (H12, X1, X3): owns the shim's child handle from the moment it is spawned,
//! records its exit once, and is the only component allowed to signal it.
//!
//! Liveness comes from the watcher alone. The shim is reaped under the same lock the
//! signaller takes, so a signal is only ever sent while the shim is unreaped: an unreaped
//! process (even a zombie) keeps its pid and process-group id reserved, so the target cannot
//! have been recycled. The exit is detected with a pidfd (readable once the process exits,
//! without reaping it); without pidfd support a blocking-pool thread waits with
//! `waitid(WEXITED|WNOWAIT)`, which does not reap either.

use rustix::fd::OwnedFd;
use rustix::io::Errno;
use rustix::process::{Pid, Signal, WaitId, WaitIdOptions};
use std::fmt;
use std::future::Future;
use std::io;
use std::os::unix::process::ExitStatusExt;
use std::pin::Pin;
use std::process::Child;
use std::sync::{Arc, Mutex};
use sublaunch_protocol::os::Os;
use sublaunch_protocol::os::clock::Clock;
use sublaunch_protocol::os::processes::signal_name;
use sublaunch_protocol::records::proof::RunnerInstance;
use tokio::sync::watch;

/// How the shim ended, as observed by the host (the runner record of S6).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunnerExit {
    /// Exit code; `None` when a signal ended it (or the status is unknown).
    pub exit_code: Option<i32>,
    /// Signal name (`SIGKILL`), `None` when it exited.
    pub signal: Option<String>,
    /// Wall ms when the host observed the exit.
    pub close_observed_at: u64,
}

impl RunnerExit {
    /// The `{kind:"runner"}` instance record for runner `runner_process_instance_id`.
    pub fn instance(&self, runner_process_instance_id: &str) -> RunnerInstance {
        RunnerInstance {
            process_instance_id: runner_process_instance_id.to_owned(),
            close_observed_at: self.close_observed_at,
            exit_code: self.exit_code,
            signal: self.signal.clone(),
        }
    }
}

/// The two signals of the pre-proceed termination (X1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TermSignal {
    /// SIGTERM.
    Term,
    /// SIGKILL.
    Kill,
}

impl TermSignal {
    fn os(self) -> Signal {
        match self {
            Self::Term => Signal::TERM,
            Self::Kill => Signal::KILL,
        }
    }
}

/// What a signal request did.
#[derive(Debug)]
pub enum SignalOutcome {
    /// Delivered to the shim's process group (or to the shim while it had none).
    Sent,
    /// The shim was already reaped: nothing was signalled (F58).
    AlreadyReaped,
    /// The kernel refused (F27: `EPERM`).
    Failed(io::Error),
}

/// A future resolving to the shim's exit.
pub type ExitFuture<'a> = Pin<Box<dyn Future<Output = RunnerExit> + Send + 'a>>;

/// The process seam of §T (`ProcessControl`): what the launch, the handshake and the
/// terminator know about the shim, the one child the host owns. The real implementation is
/// [`ExitWatcher`], which signals through the processes capability shared with the shim
/// (`Os::processes`); tests replace or wrap it to assert signalling decisions without real
/// processes (F27, F58).
pub trait ProcessControl: Send + Sync + fmt::Debug {
    /// The shim's pid.
    fn pid(&self) -> u32;
    /// The exit, once observed (reaped).
    fn exit(&self) -> Option<RunnerExit>;
    /// Resolves once the exit has been observed.
    fn wait_exit(&self) -> ExitFuture<'_>;
    /// Signals the shim's process group, only while the shim is unreaped (X1).
    fn signal(&self, signal: TermSignal) -> SignalOutcome;
}

/// The real [`ProcessControl`]: owns the child and reaps it exactly once.
pub struct ExitWatcher {
    pid: u32,
    os: Arc<Os>,
    child: Arc<Mutex<Option<Child>>>,
    exit: watch::Receiver<Option<RunnerExit>>,
}

impl fmt::Debug for ExitWatcher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ExitWatcher")
            .field("pid", &self.pid)
            .field("exit", &*self.exit.borrow())
            .finish()
    }
}

impl ExitWatcher {
    /// Arms the watcher for a freshly spawned `child` (H12). `pidfd` is the child's pidfd when
    /// the kernel supports it; `os`'s clock stamps the exit and its processes capability sends
    /// the signals. Must be called inside a tokio runtime with I/O enabled.
    pub fn arm(child: Child, pidfd: Option<OwnedFd>, os: Arc<Os>) -> Self {
        let pid = child.id();
        let child = Arc::new(Mutex::new(Some(child)));
        let (tx, exit) = watch::channel(None);
        let (reaper, clock) = (child.clone(), os.clock.clone());
        tokio::spawn(async move {
            wait_until_exited(pid, pidfd).await;
            let observed = reap(&reaper, clock.as_ref()).await;
            let _ = tx.send(Some(observed));
        });
        Self { pid, os, child, exit }
    }
}

impl ProcessControl for ExitWatcher {
    fn pid(&self) -> u32 {
        self.pid
    }

    fn exit(&self) -> Option<RunnerExit> {
        self.exit.borrow().clone()
    }

    fn wait_exit(&self) -> ExitFuture<'_> {
        let mut rx = self.exit.clone();
        Box::pin(async move {
            loop {
                if let Some(exit) = rx.borrow_and_update().clone() {
                    return exit;
                }
                if rx.changed().await.is_err() {
                    // The reaper task is gone (runtime shutting down): never resolves.
                    std::future::pending::<()>().await;
                }
            }
        })
    }

    fn signal(&self, signal: TermSignal) -> SignalOutcome {
        let guard = self.child.lock().unwrap_or_else(|p| p.into_inner());
        if guard.is_none() {
            return SignalOutcome::AlreadyReaped;
        }
        signal_group_of(self.os.as_ref(), self.pid, signal.os())
    }
}

/// Sends `signal` to the group led by `pid`; while the shim moves itself into its own session
/// its group may briefly not exist (ESRCH), then the (still unreaped) pid itself is signalled.
fn signal_group_of(os: &Os, pid: u32, signal: Signal) -> SignalOutcome {
    let Some(target) = i32::try_from(pid).ok().and_then(Pid::from_raw) else {
        return SignalOutcome::Failed(io::Error::other(format!("invalid pid {pid}")));
    };
    match os.processes.kill_group(target, signal) {
        Ok(()) => SignalOutcome::Sent,
        Err(Errno::SRCH) => match os.processes.kill(target, signal) {
            Ok(()) => SignalOutcome::Sent,
            Err(e) => SignalOutcome::Failed(e.into()),
        },
        Err(e) => SignalOutcome::Failed(e.into()),
    }
}

/// Resolves once the process has exited (without reaping it).
async fn wait_until_exited(pid: u32, pidfd: Option<OwnedFd>) {
    if let Some(fd) = pidfd
        && let Ok(async_fd) = super::readiness::register_readable(fd)
    {
        let _ = async_fd.readable().await;
        return;
    }
    wait_nowait(pid).await;
}

/// `waitid(P_PID, pid, WEXITED|WNOWAIT)` on the blocking pool.
async fn wait_nowait(pid: u32) {
    let Some(target) = i32::try_from(pid).ok().and_then(Pid::from_raw) else {
        return;
    };
    let _ = tokio::task::spawn_blocking(move || {
        loop {
            match rustix::process::waitid(WaitId::Pid(target), WaitIdOptions::EXITED | WaitIdOptions::NOWAIT) {
                Err(Errno::INTR) => {}
                _ => return,
            }
        }
    })
    .await;
}

/// Reaps the exited child under the lock and records how it ended.
async fn reap(child: &Mutex<Option<Child>>, clock: &dyn Clock) -> RunnerExit {
    loop {
        let waiting = {
            let mut guard = child.lock().unwrap_or_else(|p| p.into_inner());
            match guard.as_mut().map(Child::try_wait) {
                // A spurious wake-up (cannot happen with pidfd or WNOWAIT): wait again.
                Some(Ok(None)) => guard.as_ref().map(Child::id),
                ended => {
                    *guard = None;
                    // Without a status the child was reaped by someone else (an embedder's
                    // waitpid(-1)): how it ended is lost.
                    let status = ended.and_then(Result::ok).flatten();
                    return RunnerExit {
                        exit_code: status.and_then(|s| s.code()),
                        signal: status.and_then(|s| s.signal()).map(signal_name),
                        close_observed_at: clock.wall_ms(),
                    };
                }
            }
        };
        if let Some(pid) = waiting {
            wait_nowait(pid).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    }

    #[test]
    fn h12_records_the_exit_code_once_and_stops_signalling_after_the_reap() {
        runtime().block_on(async {
            let child = std::process::Command::new("sh")
                .args(["-c", "exit 42"])
                .spawn()
                .unwrap();
            let pidfd = rustix::process::pidfd_open(
                Pid::from_raw(i32::try_from(child.id()).unwrap()).unwrap(),
                rustix::process::PidfdFlags::empty(),
            )
            .ok();
            let watcher = ExitWatcher::arm(child, pidfd, Os::shared_default());
            let exit = watcher.wait_exit().await;
            assert_eq!(exit.exit_code, Some(42));
            assert_eq!(exit.signal, None);
            assert_eq!(watcher.exit(), Some(exit));
            assert!(matches!(watcher.signal(TermSignal::Kill), SignalOutcome::AlreadyReaped));
        });
    }

    #[test]
    fn x1_a_killed_child_reports_its_signal_without_pidfd() {
        runtime().block_on(async {
            let child = std::process::Command::new("sleep")
                .arg("30")
                .process_group(0)
                .spawn()
                .unwrap();
            let watcher = ExitWatcher::arm(child, None, Os::shared_default());
            assert!(watcher.exit().is_none());
            assert!(matches!(watcher.signal(TermSignal::Kill), SignalOutcome::Sent));
            let exit = watcher.wait_exit().await;
            assert_eq!(exit.signal.as_deref(), Some("SIGKILL"));
            assert_eq!(exit.exit_code, None);
        });
    }

    use std::os::unix::process::CommandExt;
}
