//! The injectable filesystem seam (§T "an injectable `Fs`").
//!
//! Every operation is relative to a directory descriptor (`*at` calls), so a directory cannot be
//! swapped for a symlink mid-operation. Each method has the real implementation as its default,
//! so a test double overrides only the calls it wants to fail, count or pause.

use rustix::fd::{BorrowedFd, OwnedFd};
use rustix::fs::{self, AtFlags, Mode, OFlags, Timespec, Timestamps};
use rustix::io::Errno;
use std::fmt::Debug;
use std::path::Path;

/// Filesystem operations used by the run-file writers. Errors are raw errnos; callers attach
/// the operation and path (see [`crate::errors::os_error`]).
pub trait Files: Send + Sync + Debug {
    /// `openat(dir, name, flags, mode)`.
    fn openat(&self, dir: BorrowedFd<'_>, name: &Path, flags: OFlags, mode: Mode) -> Result<OwnedFd, Errno> {
        fs::openat(dir, name, flags, mode)
    }

    /// One `write(2)`; may be short.
    fn write(&self, fd: BorrowedFd<'_>, bytes: &[u8]) -> Result<usize, Errno> {
        rustix::io::write(fd, bytes)
    }

    /// `fsync(2)` of a file or directory.
    fn fsync(&self, fd: BorrowedFd<'_>) -> Result<(), Errno> {
        fs::fsync(fd)
    }

    /// `renameat(from_dir, from, to_dir, to)`.
    fn renameat(&self, from_dir: BorrowedFd<'_>, from: &Path, to_dir: BorrowedFd<'_>, to: &Path) -> Result<(), Errno> {
        fs::renameat(from_dir, from, to_dir, to)
    }

    /// `unlinkat(dir, name, 0)`.
    fn unlinkat(&self, dir: BorrowedFd<'_>, name: &Path) -> Result<(), Errno> {
        fs::unlinkat(dir, name, AtFlags::empty())
    }

    /// `mkdirat(dir, name, mode)`.
    fn mkdirat(&self, dir: BorrowedFd<'_>, name: &Path, mode: Mode) -> Result<(), Errno> {
        fs::mkdirat(dir, name, mode)
    }

    /// `unlinkat(dir, name, AT_REMOVEDIR)`: removes an empty directory only (I6 b).
    fn rmdirat(&self, dir: BorrowedFd<'_>, name: &Path) -> Result<(), Errno> {
        fs::unlinkat(dir, name, AtFlags::REMOVEDIR)
    }

    /// Sets a file's access and modification times (`futimens`, I2): to `at_ms` (epoch ms)
    /// when given, else to the kernel's now.
    fn touch(&self, fd: BorrowedFd<'_>, at_ms: Option<u64>) -> Result<(), Errno> {
        let when = match at_ms {
            Some(ms) => Timespec {
                tv_sec: (ms / 1000).try_into().unwrap_or(i64::MAX),
                tv_nsec: ((ms % 1000) * 1_000_000).try_into().unwrap_or_default(),
            },
            None => Timespec {
                tv_sec: 0,
                tv_nsec: fs::UTIME_NOW,
            },
        };
        fs::futimens(
            fd,
            &Timestamps {
                last_access: when,
                last_modification: when,
            },
        )
    }
}

/// The real filesystem.
#[derive(Clone, Copy, Debug, Default)]
pub struct RealFiles;

impl Files for RealFiles {}

/// Runs `op` until it returns something other than `EINTR` (A7: EINTR is always retried).
pub fn retry_eintr<T>(mut op: impl FnMut() -> Result<T, Errno>) -> Result<T, Errno> {
    loop {
        match op() {
            Err(Errno::INTR) => {}
            other => return other,
        }
    }
}
