//! Files that fail (test-hooks builds): an errno raised at one step of the writes of chosen
//! documents — creating, writing or fsyncing their temp file, renaming it into place, or the
//! directory fsync after that rename — so
//! the writer's cleanup (A8) runs as in a real failure. A rule may hold only while a flag file
//! exists: the tests have no tmpfs to fill, so a full disk (A9, I7, F42, F46) is simulated by
//! failing creation with `ENOSPC` until the test removes the flag.

use super::AtStep;
use crate::files::atomic::parse_temp_name;
use crate::os::files::{Files, RealFiles};
use rustix::fd::{AsRawFd, BorrowedFd, OwnedFd};
use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// One injected failure.
#[derive(Clone, Debug)]
pub struct Rule {
    documents: Option<Vec<String>>,
    errno: Errno,
    at: AtStep,
    while_exists: Option<PathBuf>,
}

impl Rule {
    /// Fails the writes of `documents` (`None`: every document) with `errno` at `at`.
    pub fn new(documents: Option<Vec<String>>, errno: Errno, at: AtStep) -> Self {
        Self {
            documents,
            errno,
            at,
            while_exists: None,
        }
    }

    /// The same rule, in force only while `flag` exists.
    #[must_use]
    pub fn while_exists(mut self, flag: PathBuf) -> Self {
        self.while_exists = Some(flag);
        self
    }

    /// Whether the file `name` (a temp file of a document, or the document itself) is hit.
    fn hits(&self, name: &Path) -> bool {
        let temp = parse_temp_name(name.as_os_str()).map(|t| t.target);
        let document = temp.as_deref().or_else(|| name.to_str());
        let chosen = match (&self.documents, document) {
            (None, _) => true,
            (Some(documents), Some(document)) => documents.iter().any(|d| d == document),
            (Some(_), None) => false,
        };
        chosen
            && self
                .while_exists
                .as_ref()
                .is_none_or(|flag| flag.symlink_metadata().is_ok())
    }
}

/// [`Files`] that raise the errnos of their rules and otherwise act as the real ones.
#[derive(Debug)]
pub struct FaultyFiles {
    rules: Vec<Rule>,
    /// Temp files open for writing, by descriptor, with the rule that will fail them.
    open: Mutex<HashMap<i32, (PathBuf, Rule)>>,
    /// The errno of the next directory fsync, armed by the rename of a chosen document.
    dir_fsync: Mutex<Option<Errno>>,
}

impl FaultyFiles {
    /// Files failing per `rules`.
    pub fn new(rules: Vec<Rule>) -> Self {
        Self {
            rules,
            open: Mutex::new(HashMap::new()),
            dir_fsync: Mutex::new(None),
        }
    }

    fn rule(&self, name: &Path, at: AtStep) -> Option<&Rule> {
        self.rules.iter().find(|r| r.at == at && r.hits(name))
    }

    fn open_files(&self) -> std::sync::MutexGuard<'_, HashMap<i32, (PathBuf, Rule)>> {
        self.open.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The errno due at `at` on `fd` (each is raised once).
    fn take(&self, fd: BorrowedFd<'_>, at: AtStep) -> Option<Errno> {
        let mut open = self.open_files();
        let raw = fd.as_raw_fd();
        match open.get(&raw) {
            Some((_, rule)) if rule.at == at => open.remove(&raw).map(|(_, r)| r.errno),
            _ => None,
        }
    }
}

impl Files for FaultyFiles {
    fn openat(&self, dir: BorrowedFd<'_>, name: &Path, flags: OFlags, mode: Mode) -> Result<OwnedFd, Errno> {
        if flags.contains(OFlags::CREATE)
            && let Some(rule) = self.rule(name, AtStep::Create)
        {
            return Err(rule.errno);
        }
        let fd = RealFiles.openat(dir, name, flags, mode)?;
        if flags.contains(OFlags::EXCL) && parse_temp_name(name.as_os_str()).is_some() {
            let rule = [AtStep::Write, AtStep::Fsync]
                .into_iter()
                .find_map(|at| self.rule(name, at));
            if let Some(rule) = rule {
                self.open_files()
                    .insert(fd.as_raw_fd(), (name.to_owned(), rule.clone()));
            }
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
        if let Some(errno) = self.take(fd, AtStep::Fsync) {
            return Err(errno);
        }
        // Armed by a rename, so the next fsync is the directory's (A4: file, rename, directory).
        match self.dir_fsync.lock().unwrap_or_else(|p| p.into_inner()).take() {
            Some(errno) => Err(errno),
            None => RealFiles.fsync(fd),
        }
    }

    fn renameat(&self, from_dir: BorrowedFd<'_>, from: &Path, to_dir: BorrowedFd<'_>, to: &Path) -> Result<(), Errno> {
        self.open_files().retain(|_, (name, _)| name != from);
        if parse_temp_name(from.as_os_str()).is_some()
            && let Some(rule) = self.rule(to, AtStep::Rename)
        {
            return Err(rule.errno);
        }
        RealFiles.renameat(from_dir, from, to_dir, to)?;
        if parse_temp_name(from.as_os_str()).is_some()
            && let Some(rule) = self.rule(to, AtStep::DirFsync)
        {
            *self.dir_fsync.lock().unwrap_or_else(|p| p.into_inner()) = Some(rule.errno);
        }
        Ok(())
    }

    fn unlinkat(&self, dir: BorrowedFd<'_>, name: &Path) -> Result<(), Errno> {
        self.open_files().retain(|_, (open, _)| open != name);
        RealFiles.unlinkat(dir, name)
    }
}
