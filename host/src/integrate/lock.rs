//! One integration of a run at a time (G82): `<run>/integrate.lock`, held with `flock` for
//! as long as an integration runs (the kernel lets go of it when the process dies, however it
//! dies). The file also names the process group of the gate running now, so that the next
//! integration ends what a killed one left running — the gate's shell dies with the
//! integration (its parent-death signal), but its own children would live on.

use super::IntegrateError;
use rustix::fs::{FlockOperation, flock};
use serde::{Deserialize, Serialize};
use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::OpenOptionsExt;
use sublaunch_protocol::files::dir::Dir;
use sublaunch_protocol::procinfo;

const LOCK_FILE: &str = "integrate.lock";

/// The gate a running integration started: its process group.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GateGroup {
    /// The group (the gate's shell leads it).
    pub pgid: u32,
    /// The session it is in.
    pub session: u32,
    /// The shell's start (clock ticks after boot): nothing started before it is the gate's.
    pub since: u64,
}

/// The held lock of one run's integration.
#[derive(Debug)]
pub struct Lock {
    file: File,
}

impl Lock {
    /// Takes the lock of `run`, or [`IntegrateError::Busy`]; ends what a killed integration's
    /// gate left running.
    pub fn take(run: &Dir, run_id: &str) -> Result<Self, IntegrateError> {
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(run.join(LOCK_FILE))?;
        if flock(&file, FlockOperation::NonBlockingLockExclusive).is_err() {
            return Err(IntegrateError::Busy(run_id.to_owned()));
        }
        let mut text = String::new();
        let _ = file.read_to_string(&mut text);
        if let Ok(left) = serde_json::from_str::<GateGroup>(&text) {
            kill_group(left);
        }
        let lock = Self { file };
        lock.note(None);
        Ok(lock)
    }

    /// Records the gate running now (`None`: none).
    pub fn note(&self, group: Option<GateGroup>) {
        let mut file = &self.file;
        let text = group.and_then(|g| serde_json::to_string(&g).ok()).unwrap_or_default();
        let _ = file.set_len(0);
        let _ = file.seek(SeekFrom::Start(0));
        let _ = file.write_all(text.as_bytes());
    }
}

impl Drop for Lock {
    fn drop(&mut self) {
        self.note(None);
    }
}

/// Kills what is left of a gate's process group, and waits (at most 5 s) until each of them
/// has exited: the caller goes on as if nothing of the gate ran any more.
pub fn kill_group(group: GateGroup) {
    use rustix::process::{Pid, PidfdFlags, Signal, kill_process, pidfd_open};
    let mut exits = Vec::new();
    for pid in procinfo::group_members(group.pgid, group.session, group.since) {
        let Some(pid) = Pid::from_raw(pid as i32) else { continue };
        // The pidfd first: it keeps naming this process, and becomes readable when it exits.
        let exit = pidfd_open(pid, PidfdFlags::empty()).ok();
        if kill_process(pid, Signal::KILL).is_ok()
            && let Some(exit) = exit
        {
            exits.push(exit);
        }
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    for exit in exits {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        let Ok(timeout) = rustix::event::Timespec::try_from(left) else {
            break;
        };
        let mut fds = [rustix::event::PollFd::new(&exit, rustix::event::PollFlags::IN)];
        let _ = rustix::event::poll(&mut fds, Some(&timeout));
    }
}
