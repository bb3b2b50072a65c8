//! Atomic private file writes (host-and-shim.md A1–A8).
//!
//! A document is written to a fresh temp file in the same directory — created with
//! `O_EXCL|O_NOFOLLOW` relative to the directory handle, mode 0600, under a random name (A2,
//! A3) — and renamed over the final name (A1), so readers never see a partial document and a
//! planted symlink is neither followed nor written through (A5: the rename replaces the link).
//! A durable write also fsyncs the file before the rename and the directory after it (A4).
//! On any failure before the rename the temp file is removed, and a removal error never
//! replaces the original error (A8).

use crate::errors::os_error;
use crate::os::files::retry_eintr;
use rustix::fd::{AsFd, OwnedFd};
use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;
use sha2::{Digest, Sha256};
use std::ffi::OsStr;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

pub use crate::errors::{OsErrorWithPath, errno};
pub use crate::files::dir::Dir;

/// How often a fresh temp name is tried when the chosen one exists or is a symlink (A3).
pub const NAME_ATTEMPTS: usize = 8;

/// Whether a write must survive a power loss (A4). Which documents are durable is decided by
/// [`crate::files::durability::DurabilityPolicy`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Durability {
    /// Atomic only: no process death can tear the file, a power loss may lose it.
    #[default]
    Atomic,
    /// Atomic and fsynced (file before the rename, directory after it).
    Durable,
    /// The file is fsynced before the rename, the directory is not: the writer fsyncs the
    /// directory later (a [`Durability::Durable`] write in it, or [`Dir::sync`]) and reports
    /// nothing that depends on the write before then. Documents of one directory so share one
    /// directory fsync; a power loss before it may lose the new name (the old document stays),
    /// never tear the content.
    Staged,
}

impl Durability {
    /// [`Durability::Staged`] for a durable write; an atomic write stays atomic.
    pub fn staged(self) -> Self {
        match self {
            Self::Durable | Self::Staged => Self::Staged,
            Self::Atomic => Self::Atomic,
        }
    }

    /// Whether the file is fsynced before its rename.
    fn syncs_file(self) -> bool {
        matches!(self, Self::Durable | Self::Staged)
    }
}

impl Dir {
    /// Atomically replaces `name` in this directory with `bytes`, mode 0600 (A1–A8).
    pub fn write(&self, name: &str, bytes: &[u8], durability: Durability) -> io::Result<()> {
        crate::files::dir::check_name(name, self.path())?;
        let os = self.os().clone();
        let (temp, fd) = self.create_temp(name)?;
        let temp_path = self.join(&temp);
        let result = (|| {
            write_all(self, &fd, bytes).map_err(|e| os_error(e, "write", &temp_path))?;
            if durability.syncs_file() {
                retry_eintr(|| os.files.fsync(fd.as_fd())).map_err(|e| os_error(e, "fsync", &temp_path))?;
            }
            drop(fd);
            os.retry
                .run(os.sleeper.as_ref(), || {
                    os.files
                        .renameat(self.fd(), Path::new(&temp), self.fd(), Path::new(name))
                })
                .map_err(|e| os_error(e, "rename", &self.join(name)))
        })();
        if let Err(error) = result {
            // A8: the temp file always goes; a cleanup error never masks `error`.
            let _ = retry_eintr(|| os.files.unlinkat(self.fd(), Path::new(&temp)));
            return Err(error);
        }
        if durability == Durability::Durable {
            self.sync()?;
        }
        Ok(())
    }

    /// Creates a fresh temp file for `name` (A2, A3): up to [`NAME_ATTEMPTS`] names are tried
    /// when one exists or is a symlink.
    fn create_temp(&self, name: &str) -> io::Result<(String, OwnedFd)> {
        let os = self.os();
        let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let mut last = (Errno::EXIST, String::new());
        for _ in 0..NAME_ATTEMPTS {
            let temp = temp_name(name, os.pid, os.clock.wall_ms(), os.random.next_u64());
            match retry_eintr(|| {
                os.files.openat(
                    self.fd(),
                    Path::new(&temp),
                    flags,
                    Mode::from_raw_mode(crate::files::dir::FILE_MODE),
                )
            }) {
                Ok(fd) => return Ok((temp, fd)),
                Err(e @ (Errno::EXIST | Errno::LOOP)) => last = (e, temp),
                Err(e) => return Err(os_error(e, "open", &self.join(&temp))),
            }
        }
        Err(os_error(last.0, "open", &self.join(&last.1)))
    }
}

fn write_all(dir: &Dir, fd: &OwnedFd, mut bytes: &[u8]) -> Result<(), Errno> {
    let fs = &dir.os().files;
    while !bytes.is_empty() {
        match fs.write(fd.as_fd(), bytes) {
            Ok(0) => return Err(Errno::IO),
            Ok(n) => bytes = &bytes[n..],
            Err(Errno::INTR) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// The temp name for `name` (A2): `.<name>.<pid>.<ms>.<rand>.tmp` with a 16-hex-digit random
/// part, or with the SHA-256 of the name in its place when that would exceed 255 bytes.
pub fn temp_name(name: &str, pid: u32, epoch_ms: u64, random: u64) -> String {
    let candidate = format!(".{name}.{pid}.{epoch_ms}.{random:016x}.tmp");
    if candidate.len() <= 255 {
        return candidate;
    }
    format!(".{}.{pid}.{epoch_ms}.{random:016x}.tmp", sha256_hex(name.as_bytes()))
}

/// Lowercase hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

/// The parts of a temp name `.<name>.<pid>.<ms>.<rand>.tmp` (A12).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TempName {
    /// The target's basename (or its SHA-256).
    pub target: String,
    /// The writer's pid.
    pub pid: u32,
    /// Epoch ms at creation.
    pub epoch_ms: u64,
}

/// Parses a temp name written by this crate or by upstream (whose random part is base-36).
pub fn parse_temp_name(name: &OsStr) -> Option<TempName> {
    let text = std::str::from_utf8(name.as_bytes()).ok()?;
    let inner = text.strip_prefix('.')?.strip_suffix(".tmp")?;
    let mut parts = inner.rsplitn(4, '.');
    let random = parts.next()?;
    let ms = parts.next()?;
    let pid = parts.next()?;
    let target = parts.next()?;
    if target.is_empty() || random.is_empty() || !random.bytes().all(|b| b.is_ascii_alphanumeric()) {
        return None;
    }
    if !ms.bytes().all(|b| b.is_ascii_digit()) || !pid.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(TempName {
        target: target.to_owned(),
        pid: pid.parse().ok()?,
        epoch_ms: ms.parse().ok()?,
    })
}

/// Whether a file name looks like a temp file of an atomic write (A8, A12).
pub fn is_temp_name(name: &OsStr) -> bool {
    let bytes = name.as_bytes();
    bytes.starts_with(b".") && bytes.ends_with(b".tmp")
}

#[cfg(test)]
mod tests;
