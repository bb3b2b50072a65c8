//! Host fault points inside multi-document protocol calls (§T `startup-failure`, `proof`,
//! `overlay`). Those calls write through a run-directory handle whose filesystem seam raises
//! the configured errno at the configured step (`@write`, `@fsync`, `@rename`) of the named
//! documents, so the temp-file cleanup (A8) runs as in a real failure. Without such faults
//! (always, in production builds) the ordinary handle is used.

use rustix::fd::{AsRawFd, BorrowedFd, OwnedFd};
use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;
use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use sublaunch_protocol::atomic::parse_temp_name;
use sublaunch_protocol::dir::Dir;
use sublaunch_protocol::hooks::{AtStep, HostHooks, HostPoint};
use sublaunch_protocol::layout::names;
use sublaunch_protocol::os::Os;
use sublaunch_protocol::os::files::{Files, RealFiles};

/// The documents each point covers.
fn targets(point: HostPoint) -> &'static [&'static str] {
    match point {
        HostPoint::StartupFailure => &[
            names::STATUS,
            names::PROCESS_TERMINAL_CANDIDATE,
            names::RUNNER_STARTUP_FAILURE,
        ],
        HostPoint::Proof => &[names::PROCESS_TERMINAL],
        HostPoint::Overlay => &[names::STATUS],
        _ => &[],
    }
}

#[derive(Clone, Copy, Debug)]
struct Rule {
    target: &'static str,
    errno: Errno,
    at: AtStep,
}

/// A filesystem raising errnos for the temp files of chosen documents.
#[derive(Debug, Default)]
struct FaultFs {
    rules: Vec<Rule>,
    open: Mutex<HashMap<i32, (PathBuf, Rule)>>,
}

impl FaultFs {
    fn rule_for(&self, target: &str) -> Option<Rule> {
        self.rules.iter().copied().find(|r| r.target == target)
    }

    fn take(&self, fd: BorrowedFd<'_>, at: AtStep) -> Option<Errno> {
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        let raw = fd.as_raw_fd();
        match open.get(&raw) {
            Some((_, rule)) if rule.at == at => open.remove(&raw).map(|(_, r)| r.errno),
            _ => None,
        }
    }

    fn forget(&self, temp: &Path) {
        self.open
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|_, (name, _)| name != temp);
    }
}

impl Files for FaultFs {
    fn openat(&self, dir: BorrowedFd<'_>, name: &Path, flags: OFlags, mode: Mode) -> Result<OwnedFd, Errno> {
        let fd = RealFiles.openat(dir, name, flags, mode)?;
        if flags.contains(OFlags::EXCL)
            && let Some(temp) = parse_temp_name(name.as_os_str())
            && let Some(rule) = self.rule_for(&temp.target)
        {
            self.open
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(fd.as_raw_fd(), (name.to_owned(), rule));
        }
        Ok(fd)
    }

    fn write(&self, fd: BorrowedFd<'_>, bytes: &[u8]) -> Result<usize, Errno> {
        match self.take(fd, AtStep::Write) {
            Some(errno) => Err(errno),
            None => RealFiles.write(fd, bytes),
        }
    }

    fn fsync(&self, fd: BorrowedFd<'_>) -> Result<(), Errno> {
        match self.take(fd, AtStep::Fsync) {
            Some(errno) => Err(errno),
            None => RealFiles.fsync(fd),
        }
    }

    fn renameat(&self, from_dir: BorrowedFd<'_>, from: &Path, to_dir: BorrowedFd<'_>, to: &Path) -> Result<(), Errno> {
        self.forget(from);
        if let Some(rule) = to.to_str().and_then(|t| self.rule_for(t))
            && rule.at == AtStep::Rename
            && parse_temp_name(from.as_os_str()).is_some()
        {
            return Err(rule.errno);
        }
        RealFiles.renameat(from_dir, from, to_dir, to)
    }

    fn unlinkat(&self, dir: BorrowedFd<'_>, name: &Path) -> Result<(), Errno> {
        self.forget(name);
        RealFiles.unlinkat(dir, name)
    }
}

/// Opens `<run>` for a protocol call covering `points`: with the fault filesystem when any of
/// them has an errno fault, else with the ordinary os.
pub(crate) fn run_dir_for(path: &Path, os: &Arc<Os>, faults: &HostHooks, points: &[HostPoint]) -> io::Result<Dir> {
    let rules: Vec<Rule> = points
        .iter()
        .filter_map(|point| faults.errno_fault(*point).map(|fault| (*point, fault)))
        .flat_map(|(point, (errno, at))| targets(point).iter().map(move |target| Rule { target, errno, at }))
        .collect();
    if rules.is_empty() {
        return Dir::open_with(path, os.clone());
    }
    let fs = FaultFs {
        rules,
        open: Mutex::new(HashMap::new()),
    };
    Dir::open_with(path, Arc::new((**os).clone().with_files(Arc::new(fs))))
}

#[cfg(test)]
mod tests {
    use super::*;
    use sublaunch_protocol::atomic::Durability;
    use sublaunch_protocol::hooks::HostAction;

    #[test]
    fn proof_faults_hit_only_the_proof_and_leave_no_temp_file() {
        let tmp = tempfile::tempdir().unwrap();
        let faults = HostHooks::from_entries(vec![(
            HostPoint::Proof,
            HostAction::Errno {
                errno: Errno::NOSPC,
                at: AtStep::Write,
            },
        )]);
        let dir = run_dir_for(tmp.path(), &Os::shared_default(), &faults, &[HostPoint::Proof]).unwrap();
        let error = dir
            .write("process-terminal.json", b"{}", Durability::Atomic)
            .unwrap_err();
        assert!(error.to_string().starts_with("ENOSPC"), "{error}");
        dir.write("status.json", b"{}", Durability::Durable).unwrap();
        let left: Vec<_> = std::fs::read_dir(tmp.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(left, ["status.json"]);

        let fsync = HostHooks::from_entries(vec![(
            HostPoint::Overlay,
            HostAction::Errno {
                errno: Errno::IO,
                at: AtStep::Fsync,
            },
        )]);
        let dir = run_dir_for(tmp.path(), &Os::shared_default(), &fsync, &[HostPoint::Overlay]).unwrap();
        dir.write("status.json", b"{\"a\":1}", Durability::Atomic).unwrap();
        let error = dir.write("status.json", b"{}", Durability::Durable).unwrap_err();
        assert!(error.to_string().starts_with("EIO"), "{error}");
        assert_eq!(std::fs::read(tmp.path().join("status.json")).unwrap(), b"{\"a\":1}");
    }
}
