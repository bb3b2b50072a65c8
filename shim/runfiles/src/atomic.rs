//! Atomic private file writes (host-and-shim.md A1–A8).
//!
//! A document is written to a fresh temp file in the same directory — created with
//! `O_EXCL|O_NOFOLLOW` relative to a directory handle, mode 0600, under a random name — and
//! renamed over the final name, so readers never see a partial document and a planted
//! symlink is neither followed nor written through. On any failure the temp file is removed.
//! A durable write also fsyncs the file before the rename and the directory after it.

use rustix::fd::{AsFd, OwnedFd};
use rustix::fs::{self, Mode, OFlags};
use rustix::io::Errno;
use sha2::{Digest, Sha256};
use std::ffi::OsStr;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

/// How often a fresh temp name is tried when the chosen one exists (A3).
const NAME_ATTEMPTS: usize = 8;

/// Whether a write must survive a power loss (A4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Durability {
    /// Atomic only: no process death can tear the file, a power loss may lose it.
    Atomic,
    /// Atomic and fsynced (file, then directory).
    Durable,
}

/// An open directory handle; every file operation is relative to it, so the directory cannot
/// be swapped for a symlink mid-operation.
#[derive(Debug)]
pub struct Dir {
    fd: OwnedFd,
    path: PathBuf,
}

impl Dir {
    /// Opens an existing directory without following a symlink at its final component.
    pub fn open(path: &Path) -> io::Result<Self> {
        let fd = fs::open(path, OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::RDONLY, Mode::empty())
            .map_err(|e| with_path(e.into(), path))?;
        Ok(Self { fd, path: path.to_owned() })
    }

    /// Creates the directory and its missing parents with mode 0700 (A6), then opens it.
    pub fn create_private(path: &Path) -> io::Result<Self> {
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(path)
            .map_err(|e| with_path(e, path))?;
        Self::open(path)
    }

    /// The directory's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Atomically replaces `name` in this directory with `bytes`, mode 0600.
    pub fn write(&self, name: &str, bytes: &[u8], durability: Durability) -> io::Result<()> {
        let (temp_name, file) = self.create_temp(name)?;
        let result = write_all(&file, bytes)
            .and_then(|()| match durability {
                Durability::Durable => fs::fsync(&file).map_err(io::Error::from),
                Durability::Atomic => Ok(()),
            })
            .and_then(|()| {
                drop(file);
                fs::renameat(&self.fd, &temp_name, &self.fd, name).map_err(io::Error::from)
            });
        if let Err(error) = result {
            let _ = fs::unlinkat(&self.fd, &temp_name, fs::AtFlags::empty());
            return Err(with_path(error, &self.path.join(name)));
        }
        if durability == Durability::Durable {
            fs::fsync(&self.fd).map_err(|e| with_path(e.into(), &self.path))?;
        }
        Ok(())
    }

    /// Reads `name` without following a symlink. `Ok(None)` means absent (A11).
    pub fn read(&self, name: &str) -> io::Result<Option<Vec<u8>>> {
        let fd = match fs::openat(&self.fd, name, OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC, Mode::empty()) {
            Ok(fd) => fd,
            Err(Errno::NOENT) => return Ok(None),
            Err(e) => return Err(with_path(e.into(), &self.path.join(name))),
        };
        let mut file = std::fs::File::from(fd);
        let mut bytes = Vec::new();
        io::Read::read_to_end(&mut file, &mut bytes).map_err(|e| with_path(e, &self.path.join(name)))?;
        Ok(Some(bytes))
    }

    /// Opens `name` for reading without following a symlink, with its metadata.
    pub fn open_file(&self, name: &str) -> io::Result<Option<(std::fs::File, fs::Stat)>> {
        match fs::openat(&self.fd, name, OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC, Mode::empty()) {
            Ok(fd) => {
                let stat = fs::fstat(&fd)?;
                Ok(Some((std::fs::File::from(fd), stat)))
            }
            Err(Errno::NOENT) => Ok(None),
            Err(e) => Err(with_path(e.into(), &self.path.join(name))),
        }
    }

    /// Removes `name`; an absent file is fine.
    pub fn remove(&self, name: &str) -> io::Result<()> {
        match fs::unlinkat(&self.fd, name, fs::AtFlags::empty()) {
            Ok(()) | Err(Errno::NOENT) => Ok(()),
            Err(e) => Err(with_path(e.into(), &self.path.join(name))),
        }
    }

    fn create_temp(&self, name: &str) -> io::Result<(String, std::fs::File)> {
        let mut last = Errno::EXIST;
        for _ in 0..NAME_ATTEMPTS {
            let temp_name = temp_name(name, std::process::id(), epoch_ms(), random_u64());
            let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
            match fs::openat(&self.fd, temp_name.as_str(), flags, Mode::from_raw_mode(0o600)) {
                Ok(fd) => return Ok((temp_name, std::fs::File::from(fd))),
                Err(e @ (Errno::EXIST | Errno::LOOP)) => last = e,
                Err(e) => return Err(with_path(e.into(), &self.path.join(temp_name))),
            }
        }
        Err(with_path(last.into(), &self.path.join(name)))
    }
}

impl AsFd for Dir {
    fn as_fd(&self) -> rustix::fd::BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

/// The temp name for `name` (A2): `.<name>.<pid>.<ms>.<rand>.tmp`, or with the SHA-256 of the
/// name in its place when that would exceed 255 bytes.
pub fn temp_name(name: &str, pid: u32, epoch_ms: u128, random: u64) -> String {
    let candidate = format!(".{name}.{pid}.{epoch_ms}.{random:016x}.tmp");
    if candidate.len() <= 255 {
        return candidate;
    }
    let digest: String = Sha256::digest(name.as_bytes()).iter().map(|b| format!("{b:02x}")).collect();
    format!(".{digest}.{pid}.{epoch_ms}.{random:016x}.tmp")
}

fn write_all(file: &std::fs::File, bytes: &[u8]) -> io::Result<()> {
    io::Write::write_all(&mut &*file, bytes)
}

fn epoch_ms() -> u128 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis())
}

/// 64 bits from the OS CSPRNG (A2).
pub fn random_u64() -> u64 {
    let mut bytes = [0u8; 8];
    let mut filled = 0;
    while filled < bytes.len() {
        match rustix::rand::getrandom(&mut bytes[filled..], rustix::rand::GetRandomFlags::empty()) {
            Ok(n) => filled += n,
            Err(Errno::INTR) => {}
            Err(_) => break,
        }
    }
    u64::from_ne_bytes(bytes)
}

/// Adds the path to an OS error's message, keeping its kind and errno.
fn with_path(error: io::Error, path: &Path) -> io::Error {
    let raw = error.raw_os_error();
    let message = format!("{}: {error}", path.display());
    match raw {
        Some(code) => io::Error::new(io::Error::from_raw_os_error(code).kind(), OsErrorWithPath { code, message }),
        None => io::Error::new(error.kind(), message),
    }
}

/// An OS error annotated with the path it happened on; `raw_os_error` of the wrapper is lost,
/// so the code is kept here.
#[derive(Debug)]
pub struct OsErrorWithPath {
    /// The errno.
    pub code: i32,
    message: String,
}

impl std::fmt::Display for OsErrorWithPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for OsErrorWithPath {}

/// The errno of an error from this module, if it came from the OS.
pub fn errno(error: &io::Error) -> Option<i32> {
    error.raw_os_error().or_else(|| {
        error.get_ref().and_then(|inner| inner.downcast_ref::<OsErrorWithPath>()).map(|e| e.code)
    })
}

/// Whether a path's file name is an orphan temp file of this module (A12).
pub fn is_temp_name(name: &OsStr) -> bool {
    let bytes = name.as_bytes();
    bytes.starts_with(b".") && bytes.ends_with(b".tmp")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{MetadataExt, PermissionsExt};

    #[test]
    fn write_replaces_atomically_with_mode_0600() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = Dir::create_private(&tmp.path().join("a/b")).unwrap();
        dir.write("doc.json", b"one", Durability::Durable).unwrap();
        dir.write("doc.json", b"two", Durability::Atomic).unwrap();
        let path = tmp.path().join("a/b/doc.json");
        assert_eq!(std::fs::read(&path).unwrap(), b"two");
        assert_eq!(std::fs::metadata(&path).unwrap().mode() & 0o777, 0o600);
        assert_eq!(std::fs::metadata(tmp.path().join("a/b")).unwrap().permissions().mode() & 0o777, 0o700);
        let leftovers: Vec<_> = std::fs::read_dir(tmp.path().join("a/b")).unwrap().collect();
        assert_eq!(leftovers.len(), 1, "no temp file is left behind");
    }

    #[test]
    fn a_symlink_at_the_final_path_is_replaced_not_followed() {
        let tmp = tempfile::tempdir().unwrap();
        let victim = tmp.path().join("victim");
        std::fs::write(&victim, b"precious").unwrap();
        let dir = Dir::create_private(&tmp.path().join("run")).unwrap();
        std::os::unix::fs::symlink(&victim, tmp.path().join("run/status.json")).unwrap();
        dir.write("status.json", b"{}", Durability::Atomic).unwrap();
        assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
        let meta = std::fs::symlink_metadata(tmp.path().join("run/status.json")).unwrap();
        assert!(meta.file_type().is_file());
        assert_eq!(meta.mode() & 0o777, 0o600);
    }

    #[test]
    fn temp_names_stay_within_255_bytes() {
        let long = "x".repeat(250);
        let name = temp_name(&long, 4_194_304, 1_795_999_088_717, u64::MAX);
        assert!(name.len() <= 255, "{} bytes", name.len());
        assert!(name.starts_with('.') && name.ends_with(".tmp"));
        let short = temp_name("status.json", 7, 1, 0xab);
        assert_eq!(short, ".status.json.7.1.00000000000000ab.tmp");
    }

    #[test]
    fn read_distinguishes_absent_from_present() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = Dir::create_private(tmp.path()).unwrap();
        assert_eq!(dir.read("missing.json").unwrap(), None);
        dir.write("x.json", b"1", Durability::Atomic).unwrap();
        assert_eq!(dir.read("x.json").unwrap().as_deref(), Some(&b"1"[..]));
    }
}
