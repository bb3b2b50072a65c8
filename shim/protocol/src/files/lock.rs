//! The status lock (S1 ⊕): an exclusive advisory `flock` on `<run>/.status.lock`, taken by every
//! read-modify-write of `status.json` outside the single-writer windows; and the same kind of
//! lock on any lock file of a directory ([`FileLock`]). The kernel releases it when the holder
//! dies; dropping the guard releases it too.

use crate::errors::os_error;
use crate::files::dir::{Dir, FILE_MODE};
use crate::files::layout::names;
use crate::os::files::retry_eintr;
use rustix::fd::OwnedFd;
use rustix::fs::{self, FlockOperation, Mode, OFlags};
use rustix::io::Errno;
use std::io;
use std::path::Path;

/// A held exclusive lock on a run's `.status.lock`.
#[derive(Debug)]
pub struct StatusLock {
    fd: OwnedFd,
}

impl StatusLock {
    /// Blocks until the lock is held. Async callers run this on a blocking thread.
    pub fn acquire(run: &Dir) -> io::Result<Self> {
        let FileLock { fd } = FileLock::exclusive(run, names::STATUS_LOCK)?;
        Ok(Self { fd })
    }

    /// Takes the lock if it is free; `Ok(None)` when another holder has it.
    pub fn try_acquire(run: &Dir) -> io::Result<Option<Self>> {
        let fd = open_lock_file(run, names::STATUS_LOCK)?;
        match retry_eintr(|| fs::flock(&fd, FlockOperation::NonBlockingLockExclusive)) {
            Ok(()) => Ok(Some(Self { fd })),
            Err(Errno::WOULDBLOCK) => Ok(None),
            Err(e) => Err(os_error(e, "flock", &run.join(names::STATUS_LOCK))),
        }
    }
}

/// A held exclusive `flock` on a lock file of a directory (the usage lock, the cooldowns'
/// lock); released when dropped or when the holder dies.
#[derive(Debug)]
pub struct FileLock {
    fd: OwnedFd,
}

impl FileLock {
    /// Blocks until the lock on `dir/name` (created 0600 when missing, never followed) is held.
    pub fn exclusive(dir: &Dir, name: &str) -> io::Result<Self> {
        let fd = open_lock_file(dir, name)?;
        retry_eintr(|| fs::flock(&fd, FlockOperation::LockExclusive))
            .map_err(|e| os_error(e, "flock", &dir.join(name)))?;
        Ok(Self { fd })
    }
}

impl Drop for StatusLock {
    fn drop(&mut self) {
        let _ = fs::flock(&self.fd, FlockOperation::Unlock);
    }
}

fn open_lock_file(dir: &Dir, name: &str) -> io::Result<OwnedFd> {
    let flags = OFlags::RDWR | OFlags::CREATE | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    retry_eintr(|| {
        dir.os()
            .files
            .openat(dir.fd(), Path::new(name), flags, Mode::from_raw_mode(FILE_MODE))
    })
    .map_err(|e| os_error(e, "open", &dir.join(name)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    #[test]
    fn s1_lock_is_exclusive_and_released_on_drop() {
        let tmp = tempfile::tempdir().unwrap();
        let run = Dir::open(tmp.path()).unwrap();
        let held = StatusLock::acquire(&run).unwrap();
        assert!(
            StatusLock::try_acquire(&run).unwrap().is_none(),
            "a second open file description cannot take it"
        );

        let (tx, rx) = mpsc::channel();
        let path = tmp.path().to_owned();
        let waiter = std::thread::spawn(move || {
            let run = Dir::open(&path).unwrap();
            let _lock = StatusLock::acquire(&run).unwrap();
            tx.send(()).unwrap();
        });
        assert!(rx.try_recv().is_err(), "the waiter blocks while the lock is held");
        drop(held);
        rx.recv().unwrap();
        waiter.join().unwrap();
        assert!(StatusLock::try_acquire(&run).unwrap().is_some());
    }

    #[test]
    fn s1_lock_file_is_private_and_not_followed() {
        let tmp = tempfile::tempdir().unwrap();
        let run = Dir::open(tmp.path()).unwrap();
        std::os::unix::fs::symlink("/dev/null", tmp.path().join(".status.lock")).unwrap();
        assert!(StatusLock::acquire(&run).unwrap_err().to_string().contains("ELOOP"));
    }
}
