//! An open directory handle: every file operation is an `*at` call relative to it (§D
//! `RunDir`), so the directory cannot be swapped for a symlink mid-operation, and no final
//! component is ever followed through a symlink.

use crate::errors::{os_error, with_path};
use crate::os::Os;
use crate::os::files::retry_eintr;
use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use rustix::fs::{self, AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;
use std::ffi::OsString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Mode of every directory this crate creates (A6, H3).
pub const DIR_MODE: u32 = 0o700;
/// Mode of every file this crate creates (A3, A10).
pub const FILE_MODE: u32 = 0o600;

/// The largest document [`Dir::read`] reads: run files are small; anything bigger is damage.
pub const MAX_DOC_BYTES: u64 = 64 * 1024 * 1024;

/// An open directory (`O_DIRECTORY|O_NOFOLLOW`) plus the os its operations use.
#[derive(Debug)]
pub struct Dir {
    fd: OwnedFd,
    path: PathBuf,
    os: Arc<Os>,
}

/// One entry of [`Dir::entries`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// The entry's name.
    pub name: OsString,
    /// Its type as reported by `lstat` (a symlink is a symlink).
    pub file_type: FileType,
}

impl Dir {
    /// Opens an existing directory without following a symlink at its final component.
    pub fn open(path: &Path) -> io::Result<Self> {
        Self::open_with(path, Os::shared_default())
    }

    /// [`Dir::open`] with explicit os.
    pub fn open_with(path: &Path, os: Arc<Os>) -> io::Result<Self> {
        let flags = OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::RDONLY;
        let fd = retry_eintr(|| os.files.openat(fs::CWD, path, flags, Mode::empty()))
            .map_err(|e| os_error(e, "open", path))?;
        Ok(Self {
            fd,
            path: path.to_owned(),
            os,
        })
    }

    /// Creates the directory and its missing parents with mode 0700 (A6), then opens it.
    pub fn create_private(path: &Path) -> io::Result<Self> {
        Self::create_private_with(path, Os::shared_default())
    }

    /// [`Dir::create_private`] with explicit os.
    pub fn create_private_with(path: &Path, os: Arc<Os>) -> io::Result<Self> {
        mkdir_recursive(&os, path)?;
        Self::open_with(path, os)
    }

    /// The directory's path (for messages; operations use the descriptor).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The os of this handle.
    pub fn os(&self) -> &Arc<Os> {
        &self.os
    }

    /// The path of `name` inside this directory (for messages).
    pub fn join(&self, name: impl AsRef<Path>) -> PathBuf {
        self.path.join(name)
    }

    /// Another handle to the same directory.
    pub fn try_clone(&self) -> io::Result<Self> {
        let fd = rustix::io::fcntl_dupfd_cloexec(&self.fd, 0).map_err(|e| os_error(e, "dup", &self.path))?;
        Ok(Self {
            fd,
            path: self.path.clone(),
            os: self.os.clone(),
        })
    }

    /// Another handle on this directory that works through `os`.
    pub fn with_os(&self, os: Arc<Os>) -> io::Result<Self> {
        Ok(Self {
            os,
            ..self.try_clone()?
        })
    }

    /// Opens the existing subdirectory `name` (no symlink followed); `Ok(None)` when absent.
    pub fn open_child(&self, name: &str) -> io::Result<Option<Self>> {
        check_name(name, &self.path)?;
        let flags = OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::RDONLY;
        match retry_eintr(|| {
            self.os
                .files
                .openat(self.fd.as_fd(), Path::new(name), flags, Mode::empty())
        }) {
            Ok(fd) => Ok(Some(Self {
                fd,
                path: self.path.join(name),
                os: self.os.clone(),
            })),
            Err(Errno::NOENT) => Ok(None),
            Err(e) => Err(os_error(e, "open", &self.path.join(name))),
        }
    }

    /// Creates the subdirectory `name` (0700) if missing and opens it without following a
    /// symlink (A6). mkdir is retried per the retry policy (A7).
    pub fn ensure_child(&self, name: &str) -> io::Result<Self> {
        self.ensure_child_with(name, false)
    }

    /// [`Dir::ensure_child`], fsyncing this directory after creating the child, so the new
    /// entry survives a power loss (A4) before anything durable is written into it.
    pub fn ensure_child_synced(&self, name: &str) -> io::Result<Self> {
        self.ensure_child_with(name, true)
    }

    fn ensure_child_with(&self, name: &str, sync: bool) -> io::Result<Self> {
        check_name(name, &self.path)?;
        let path = self.path.join(name);
        match self.os.retry.run(self.os.sleeper.as_ref(), || {
            self.os
                .files
                .mkdirat(self.fd.as_fd(), Path::new(name), Mode::from_raw_mode(DIR_MODE))
        }) {
            Ok(()) if sync => self.sync()?,
            Ok(()) | Err(Errno::EXIST) => {}
            Err(e) => return Err(os_error(e, "mkdir", &path)),
        }
        self.open_child(name)?
            .ok_or_else(|| os_error(Errno::NOENT, "open", &path))
    }

    /// [`Dir::ensure_child`] for each component of `components`, returning the last one.
    pub fn ensure_path(&self, components: &[&str]) -> io::Result<Self> {
        let mut current = self.try_clone()?;
        for component in components {
            current = current.ensure_child(component)?;
        }
        Ok(current)
    }

    /// [`Dir::ensure_path`] with each newly created directory fsynced into its parent (A4).
    pub fn ensure_path_synced(&self, components: &[&str]) -> io::Result<Self> {
        let mut current = self.try_clone()?;
        for component in components {
            current = current.ensure_child_synced(component)?;
        }
        Ok(current)
    }

    /// Opens the existing nested subdirectory; `Ok(None)` if any component is absent.
    pub fn open_path(&self, components: &[&str]) -> io::Result<Option<Self>> {
        let mut current = self.try_clone()?;
        for component in components {
            match current.open_child(component)? {
                Some(next) => current = next,
                None => return Ok(None),
            }
        }
        Ok(Some(current))
    }

    /// Reads `name` without following a symlink. `Ok(None)` means absent (A11).
    pub fn read(&self, name: &str) -> io::Result<Option<Vec<u8>>> {
        let Some(file) = self.open_read(name)? else {
            return Ok(None);
        };
        let mut bytes = Vec::new();
        io::Read::read_to_end(&mut io::Read::take(file, MAX_DOC_BYTES + 1), &mut bytes)
            .map_err(|e| with_path(e, "read", &self.path.join(name)))?;
        if bytes.len() as u64 > MAX_DOC_BYTES {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "{} is larger than {MAX_DOC_BYTES} bytes",
                    self.path.join(name).display()
                ),
            ));
        }
        Ok(Some(bytes))
    }

    /// Opens the regular file `name` for reading without following a symlink; `Ok(None)` when
    /// absent. Anything else in its place (a FIFO, a device, a directory) is refused without
    /// blocking: a FIFO is opened non-blocking, so a reader never waits for a writer.
    pub fn open_read(&self, name: &str) -> io::Result<Option<std::fs::File>> {
        check_name(name, &self.path)?;
        let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NONBLOCK;
        let path = self.path.join(name);
        let fd = match retry_eintr(|| {
            self.os
                .files
                .openat(self.fd.as_fd(), Path::new(name), flags, Mode::empty())
        }) {
            Ok(fd) => fd,
            Err(Errno::NOENT) => return Ok(None),
            Err(e) => return Err(os_error(e, "open", &path)),
        };
        let stat = fs::fstat(&fd).map_err(|e| os_error(e, "stat", &path))?;
        if fs::FileType::from_raw_mode(stat.st_mode) != fs::FileType::RegularFile {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{} is not a regular file", path.display()),
            ));
        }
        Ok(Some(std::fs::File::from(fd)))
    }

    /// Opens `name` for reading without following a symlink, with its metadata.
    pub fn open_file(&self, name: &str) -> io::Result<Option<(std::fs::File, fs::Stat)>> {
        match self.open_read(name)? {
            Some(file) => {
                let stat = fs::fstat(&file).map_err(|e| os_error(e, "stat", &self.path.join(name)))?;
                Ok(Some((file, stat)))
            }
            None => Ok(None),
        }
    }

    /// `lstat` of `name`; `Ok(None)` when absent.
    pub fn stat(&self, name: &str) -> io::Result<Option<fs::Stat>> {
        check_name(name, &self.path)?;
        match retry_eintr(|| fs::statat(&self.fd, name, AtFlags::SYMLINK_NOFOLLOW)) {
            Ok(stat) => Ok(Some(stat)),
            Err(Errno::NOENT) => Ok(None),
            Err(e) => Err(os_error(e, "stat", &self.path.join(name))),
        }
    }

    /// Opens `name` for appending (A10, H7): `O_WRONLY|O_APPEND|O_CREAT|O_NOFOLLOW|O_CLOEXEC`,
    /// mode 0600. A symlink there fails with `ELOOP`.
    pub fn open_append(&self, name: &str) -> io::Result<std::fs::File> {
        check_name(name, &self.path)?;
        let flags = OFlags::WRONLY | OFlags::APPEND | OFlags::CREATE | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        retry_eintr(|| {
            self.os
                .files
                .openat(self.fd.as_fd(), Path::new(name), flags, Mode::from_raw_mode(FILE_MODE))
        })
        .map(std::fs::File::from)
        .map_err(|e| os_error(e, "open", &self.path.join(name)))
    }

    /// Creates the empty file `name` (mode 0600) only if nothing exists there:
    /// `O_WRONLY|O_CREAT|O_EXCL|O_NOFOLLOW|O_CLOEXEC`, then fsyncs the directory so the
    /// claim survives a crash. `Ok(true)` when this call created it, `Ok(false)` when a file
    /// (or a symlink, or anything else) was already there: of several processes racing, exactly
    /// one gets `true` (a once-marker).
    pub fn create_exclusive(&self, name: &str) -> io::Result<bool> {
        check_name(name, &self.path)?;
        let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        match retry_eintr(|| {
            self.os
                .files
                .openat(self.fd.as_fd(), Path::new(name), flags, Mode::from_raw_mode(FILE_MODE))
        }) {
            Ok(fd) => {
                drop(fd);
                // Best effort: the file exists either way, and a failed fsync cannot undo it.
                let _ = self.sync();
                Ok(true)
            }
            Err(Errno::EXIST) => Ok(false),
            Err(e) => Err(os_error(e, "create", &self.path.join(name))),
        }
    }

    /// Creates the empty file `name` (mode 0600) if it is missing and sets its mtime to now
    /// with an explicit `futimens` (opening an existing file does not change it). Never
    /// follows a symlink at `name`.
    pub fn touch(&self, name: &str) -> io::Result<()> {
        self.set_mtime(name, None)
    }

    /// The modification time of `name` in wall ms (`None`: no such entry).
    pub fn mtime_ms(&self, name: &str) -> io::Result<Option<u64>> {
        Ok(self.stat(name)?.map(|stat| {
            #[allow(clippy::useless_conversion)] // the field types differ between platforms
            let nanos = u64::try_from(stat.st_mtime_nsec).unwrap_or(0);
            u64::try_from(stat.st_mtime).unwrap_or(0) * 1000 + nanos / 1_000_000
        }))
    }

    /// [`Dir::touch`], setting the mtime to the handle's wall clock, for a stamp that is later
    /// compared with that clock (a coarse kernel time could be ahead of an injected one).
    pub fn stamp(&self, name: &str) -> io::Result<()> {
        self.set_mtime(name, Some(self.os.clock.wall_ms()))
    }

    fn set_mtime(&self, name: &str, at_ms: Option<u64>) -> io::Result<()> {
        check_name(name, &self.path)?;
        let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let files = &self.os.files;
        let fd = retry_eintr(|| files.openat(self.fd.as_fd(), Path::new(name), flags, Mode::from_raw_mode(FILE_MODE)))
            .map_err(|e| os_error(e, "open", &self.path.join(name)))?;
        retry_eintr(|| files.touch(fd.as_fd(), at_ms)).map_err(|e| os_error(e, "futimens", &self.path.join(name)))
    }

    /// Removes the file `name`; an absent file is fine (H6, K12, X10).
    pub fn remove(&self, name: &str) -> io::Result<()> {
        check_name(name, &self.path)?;
        match retry_eintr(|| self.os.files.unlinkat(self.fd.as_fd(), Path::new(name))) {
            Ok(()) | Err(Errno::NOENT) => Ok(()),
            Err(e) => Err(os_error(e, "unlink", &self.path.join(name))),
        }
    }

    /// Unlinks the file `name` and says whether this call removed it: `Ok(false)` when it was
    /// already gone, so of two processes unlinking the same name exactly one sees `true`.
    pub fn unlink_claim(&self, name: &str) -> io::Result<bool> {
        check_name(name, &self.path)?;
        match retry_eintr(|| self.os.files.unlinkat(self.fd.as_fd(), Path::new(name))) {
            Ok(()) => Ok(true),
            Err(Errno::NOENT) => Ok(false),
            Err(e) => Err(os_error(e, "unlink", &self.path.join(name))),
        }
    }

    /// Removes the directory `name` only if it is empty (never recursive, I6 b). Returns
    /// whether it was removed; absent or not empty is `Ok(false)`.
    pub fn remove_empty_dir(&self, name: &str) -> io::Result<bool> {
        check_name(name, &self.path)?;
        match retry_eintr(|| self.os.files.rmdirat(self.fd.as_fd(), Path::new(name))) {
            Ok(()) => Ok(true),
            Err(Errno::NOENT | Errno::NOTEMPTY | Errno::EXIST) => Ok(false),
            Err(e) => Err(os_error(e, "rmdir", &self.path.join(name))),
        }
    }

    /// Renames `from` (in this directory) to `to` in `to_dir`, atomically replacing a file
    /// there; retried per the retry policy (A7).
    pub fn rename_to(&self, from: &str, to_dir: &Dir, to: &str) -> io::Result<()> {
        check_name(from, &self.path)?;
        check_name(to, &to_dir.path)?;
        self.os
            .retry
            .run(self.os.sleeper.as_ref(), || {
                self.os
                    .files
                    .renameat(self.fd.as_fd(), Path::new(from), to_dir.fd.as_fd(), Path::new(to))
            })
            .map_err(|e| os_error(e, "rename", &self.path.join(from)))
    }

    /// fsyncs the directory itself (A4).
    pub fn sync(&self) -> io::Result<()> {
        retry_eintr(|| self.os.files.fsync(self.fd.as_fd())).map_err(|e| os_error(e, "fsync", &self.path))
    }

    /// The directory's entries (without `.` and `..`), types from `lstat`.
    pub fn entries(&self) -> io::Result<Vec<Entry>> {
        let mut dir = fs::Dir::read_from(&self.fd).map_err(|e| os_error(e, "opendir", &self.path))?;
        let mut entries = Vec::new();
        while let Some(entry) = dir.read() {
            let entry = entry.map_err(|e| os_error(e, "readdir", &self.path))?;
            let name = entry.file_name().to_bytes();
            if name == b"." || name == b".." {
                continue;
            }
            let name = OsString::from(std::ffi::OsStr::from_bytes(name));
            let mut file_type = entry.file_type();
            if file_type == FileType::Unknown
                && let Ok(stat) = fs::statat(&self.fd, name.as_os_str(), AtFlags::SYMLINK_NOFOLLOW)
            {
                file_type = FileType::from_raw_mode(stat.st_mode);
            }
            entries.push(Entry { name, file_type });
        }
        Ok(entries)
    }

    /// The directory's descriptor.
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

impl AsFd for Dir {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

/// Rejects names that are not a single path component (empty, `.`, `..`, containing `/` or
/// NUL): every name handled here is relative to its directory handle.
pub fn check_name(name: &str, dir: &Path) -> io::Result<()> {
    if name.is_empty() || name == "." || name == ".." || name.contains('/') || name.contains('\0') {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("invalid file name '{name}' in '{}'", dir.display()),
        ));
    }
    Ok(())
}

fn mkdir_recursive(os: &Os, path: &Path) -> io::Result<()> {
    if path.as_os_str().is_empty() {
        return Ok(());
    }
    match mkdir_one(os, path) {
        Ok(()) | Err(Errno::EXIST) => Ok(()),
        Err(Errno::NOENT) => {
            match path.parent() {
                Some(parent) if parent != path => mkdir_recursive(os, parent)?,
                _ => return Err(os_error(Errno::NOENT, "mkdir", path)),
            }
            match mkdir_one(os, path) {
                Ok(()) | Err(Errno::EXIST) => Ok(()),
                Err(e) => Err(os_error(e, "mkdir", path)),
            }
        }
        Err(e) => Err(os_error(e, "mkdir", path)),
    }
}

fn mkdir_one(os: &Os, path: &Path) -> Result<(), Errno> {
    os.retry.run(os.sleeper.as_ref(), || {
        os.files.mkdirat(fs::CWD, path, Mode::from_raw_mode(DIR_MODE))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a6_creates_missing_parents_with_0700() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = Dir::create_private(&tmp.path().join("a/b/c")).unwrap();
        for p in ["a", "a/b", "a/b/c"] {
            let mode = std::fs::metadata(tmp.path().join(p)).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o700, "{p}");
        }
        let child = dir.ensure_path(&["d", "e"]).unwrap();
        assert_eq!(child.path(), tmp.path().join("a/b/c/d/e"));
        assert_eq!(
            std::fs::metadata(child.path()).unwrap().permissions().mode() & 0o777,
            0o700
        );
        assert!(dir.open_path(&["d", "x"]).unwrap().is_none());
    }

    #[test]
    fn a_symlinked_child_directory_is_not_followed() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir(tmp.path().join("target")).unwrap();
        let dir = Dir::create_private(&tmp.path().join("run")).unwrap();
        std::os::unix::fs::symlink(tmp.path().join("target"), tmp.path().join("run/control")).unwrap();
        let error = dir.ensure_child("control").unwrap_err();
        assert!(
            error.to_string().contains("ELOOP") || error.to_string().contains("ENOTDIR"),
            "{error}"
        );
        assert!(Dir::open(&tmp.path().join("run/control")).is_err());
    }

    #[test]
    fn names_must_be_single_components() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = Dir::open(tmp.path()).unwrap();
        for bad in ["", ".", "..", "a/b", "../x"] {
            assert!(dir.read(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn remove_empty_dir_never_removes_content() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = Dir::open(tmp.path()).unwrap();
        let child = dir.ensure_child("x").unwrap();
        std::fs::write(child.join("f"), b"1").unwrap();
        assert!(!dir.remove_empty_dir("x").unwrap());
        assert!(tmp.path().join("x/f").exists());
        child.remove("f").unwrap();
        assert!(dir.remove_empty_dir("x").unwrap());
        assert!(!dir.remove_empty_dir("x").unwrap(), "absent is fine");
    }

    #[test]
    fn a10_append_refuses_a_symlink_and_creates_0600() {
        let tmp = tempfile::tempdir().unwrap();
        let victim = tmp.path().join("victim");
        std::fs::write(&victim, b"keep").unwrap();
        let dir = Dir::create_private(&tmp.path().join("run")).unwrap();
        std::os::unix::fs::symlink(&victim, tmp.path().join("run/runner.stdout.log")).unwrap();
        let error = dir.open_append("runner.stdout.log").unwrap_err();
        assert!(error.to_string().contains("ELOOP"), "{error}");
        assert_eq!(std::fs::read(&victim).unwrap(), b"keep");
        let mut f = dir.open_append("runner.stderr.log").unwrap();
        io::Write::write_all(&mut f, b"x").unwrap();
        assert_eq!(
            std::fs::metadata(tmp.path().join("run/runner.stderr.log"))
                .unwrap()
                .permissions()
                .mode()
                & 0o777,
            0o600
        );
    }

    #[test]
    fn entries_report_lstat_types() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = Dir::open(tmp.path()).unwrap();
        std::fs::write(tmp.path().join("f"), b"").unwrap();
        std::os::unix::fs::symlink("f", tmp.path().join("l")).unwrap();
        let mut entries = dir.entries().unwrap();
        entries.sort_by(|a, b| a.name.cmp(&b.name));
        assert_eq!(entries.len(), 2);
        assert_eq!(entries[0].file_type, FileType::RegularFile);
        assert_eq!(entries[1].file_type, FileType::Symlink);
    }
}
