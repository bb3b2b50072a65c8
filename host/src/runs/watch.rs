//! Waiting for a run we did not spawn to change (`wait`, `stop`, `logs --follow`): inotify on
//! the run directory and a pidfd on the shim, with a slow safety tick (or polling with
//! backoff when inotify is unavailable). No busy loop: every wait is an event or a timer.

use crate::launch::tokio::io::unix::AsyncFd;
use rustix::fd::OwnedFd;
use rustix::fs::inotify::{self, CreateFlags, WatchFlags};
use rustix::process::{Pid, PidfdFlags};
use std::path::Path;
use std::time::Duration;
use sublaunch_protocol::procinfo::start_identity;
use sublaunch_protocol::records::handshake::PollBackoff;

/// The safety tick when inotify works (liveness is re-checked at least this often).
const SAFETY_TICK: Duration = Duration::from_secs(1);

/// Wakes up when a run directory or its shim changes.
pub struct RunWatcher {
    inotify: Option<AsyncFd<OwnedFd>>,
    shim: Option<AsyncFd<OwnedFd>>,
    watched_pid: Option<u32>,
    backoff: PollBackoff,
    /// J7: how often a run whose job only its engine can report on is looked at.
    engine_tick: Option<Duration>,
}

/// How often the engine is asked about a run handed to a cluster while someone waits for it:
/// an end nothing records (a job killed outright, a node lost) is seen this soon.
const ENGINE_TICK: Duration = Duration::from_millis(250);

impl RunWatcher {
    /// Watches `run_dir` (file creations, renames and writes).
    pub fn new(run_dir: &Path) -> Self {
        let inotify = inotify::init(CreateFlags::CLOEXEC | CreateFlags::NONBLOCK)
            .ok()
            .and_then(|fd| {
                let flags = WatchFlags::CREATE
                    | WatchFlags::MODIFY
                    | WatchFlags::MOVED_TO
                    | WatchFlags::CLOSE_WRITE
                    | WatchFlags::DELETE;
                inotify::add_watch(&fd, run_dir, flags).ok()?;
                crate::launch::readiness::register_readable(fd).ok()
            });
        Self {
            inotify,
            shim: None,
            watched_pid: None,
            backoff: PollBackoff::default(),
            engine_tick: None,
        }
    }

    /// J7: also wakes up often enough to ask the cluster engine how the run's job is.
    pub fn poll_engine(&mut self) {
        self.engine_tick = Some(ENGINE_TICK);
    }

    /// Also wakes up when process `pid` (with start identity `identity`) exits.
    pub fn watch_pid(&mut self, pid: u32, identity: Option<&str>) {
        if self.watched_pid == Some(pid) {
            return;
        }
        self.watched_pid = Some(pid);
        let Some(target) = i32::try_from(pid).ok().and_then(Pid::from_raw) else {
            return;
        };
        let Ok(fd) = rustix::process::pidfd_open(target, PidfdFlags::empty()) else {
            return;
        };
        // The pidfd names whatever has the pid now: keep it only if it is still the shim.
        let same = match identity {
            Some(expected) => start_identity(pid).ok().flatten().as_deref() == Some(expected),
            None => true,
        };
        if same {
            self.shim = crate::launch::readiness::register_readable(fd).ok();
        }
    }

    /// Resolves on the next change, shim exit or tick.
    pub async fn changed(&mut self) {
        let tick = if self.inotify.is_some() {
            SAFETY_TICK
        } else {
            self.backoff.next().unwrap_or(SAFETY_TICK)
        };
        let tick = self.engine_tick.map_or(tick, |engine| engine.min(tick));
        let inotify = &self.inotify;
        let shim = &mut self.shim;
        tokio::select! {
            () = async {
                match inotify {
                    Some(fd) => drain(fd).await,
                    None => std::future::pending().await,
                }
            } => {}
            () = async {
                match shim.as_ref() {
                    Some(fd) => { let _ = fd.readable().await; }
                    None => std::future::pending::<()>().await,
                }
            } => {
                // A pidfd stays readable after the exit: report it once.
                *shim = None;
            }
            () = tokio::time::sleep(tick) => {}
        }
    }
}

impl Drop for RunWatcher {
    /// Closing an inotify instance that watched anything waits for a kernel grace period
    /// (15–18 ms on this machine). The close happens on a thread of its own, so whoever drops
    /// the watcher — an MCP `wait` about to answer, `settled_result` about to read the result —
    /// goes on at once.
    fn drop(&mut self) {
        if let Some(fd) = self.inotify.take() {
            let fd = fd.into_inner();
            if let Err(e) = std::thread::Builder::new()
                .name("inotify-close".into())
                .spawn(move || drop(fd))
            {
                log::debug!("closing the run watcher on this thread: {e}");
            }
        }
    }
}

/// Waits for inotify events and discards them (their content does not matter: the caller
/// re-reads the files).
async fn drain(fd: &AsyncFd<OwnedFd>) {
    loop {
        let Ok(mut guard) = fd.readable().await else {
            return std::future::pending().await;
        };
        let mut buffer = [0u8; 4096];
        let mut got = false;
        loop {
            match guard.try_io(|f| rustix::io::read(f.get_ref(), &mut buffer).map_err(std::io::Error::from)) {
                Ok(Ok(n)) if n > 0 => got = true,
                Ok(Err(e)) if e.kind() == std::io::ErrorKind::Interrupted => {}
                // Would block: the queue is drained.
                Err(_) => break,
                // A broken inotify descriptor: rely on the safety tick from now on.
                Ok(_) => return std::future::pending().await,
            }
        }
        if got {
            return;
        }
    }
}
