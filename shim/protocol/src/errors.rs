//! OS errors with their errno name and the path they happened on.
//!
//! Launch errors must name the errno (`EACCES`, `ENOSPC`, `ELOOP` …: fault rows F07–F12), so
//! every file error of this crate reads `<ENAME>: <description> (os error <n>), <op> '<path>'`
//! while keeping its `io::ErrorKind` and its errno (see [`errno`]).

use rustix::io::Errno;
use std::io;
use std::path::Path;

/// The errno names this crate knows, for messages and for the `<errno>` actions of the test
/// hooks (§T).
const NAMES: &[(Errno, &str)] = &[
    (Errno::PERM, "EPERM"),
    (Errno::NOENT, "ENOENT"),
    (Errno::INTR, "EINTR"),
    (Errno::IO, "EIO"),
    (Errno::BADF, "EBADF"),
    (Errno::AGAIN, "EAGAIN"),
    (Errno::NOMEM, "ENOMEM"),
    (Errno::ACCESS, "EACCES"),
    (Errno::BUSY, "EBUSY"),
    (Errno::EXIST, "EEXIST"),
    (Errno::XDEV, "EXDEV"),
    (Errno::NOTDIR, "ENOTDIR"),
    (Errno::ISDIR, "EISDIR"),
    (Errno::INVAL, "EINVAL"),
    (Errno::NFILE, "ENFILE"),
    (Errno::MFILE, "EMFILE"),
    (Errno::FBIG, "EFBIG"),
    (Errno::NOSPC, "ENOSPC"),
    (Errno::ROFS, "EROFS"),
    (Errno::PIPE, "EPIPE"),
    (Errno::NAMETOOLONG, "ENAMETOOLONG"),
    (Errno::NOTEMPTY, "ENOTEMPTY"),
    (Errno::LOOP, "ELOOP"),
    (Errno::DQUOT, "EDQUOT"),
    (Errno::SRCH, "ESRCH"),
    (Errno::NOEXEC, "ENOEXEC"),
    (Errno::TXTBSY, "ETXTBSY"),
    (Errno::STALE, "ESTALE"),
];

/// The symbolic name of an errno (`13` → `EACCES`), if known.
pub fn errno_name(code: i32) -> Option<&'static str> {
    NAMES.iter().find(|(e, _)| e.raw_os_error() == code).map(|(_, n)| *n)
}

/// The errno for a symbolic name (`EACCES` → `13`), case-sensitive, if known.
pub fn errno_from_name(name: &str) -> Option<Errno> {
    NAMES.iter().find(|(_, n)| *n == name).map(|(e, _)| *e)
}

/// An OS error annotated with the operation and path it happened on. `io::Error::raw_os_error`
/// of the wrapping error is lost by `io::Error::new`, so the code is kept here (see [`errno`]).
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct OsErrorWithPath {
    /// The errno.
    pub code: i32,
    message: String,
}

/// Builds the error for `errno` raised by `op` (`open`, `write`, `fsync`, `rename` …) on `path`.
pub fn os_error(errno: Errno, op: &str, path: &Path) -> io::Error {
    let code = errno.raw_os_error();
    let base = io::Error::from_raw_os_error(code);
    let name = errno_name(code).unwrap_or("EUNKNOWN");
    let message = format!("{name}: {base}, {op} '{}'", path.display());
    io::Error::new(base.kind(), OsErrorWithPath { code, message })
}

/// Annotates an existing I/O error with `op` and `path`, keeping its errno when it has one.
pub fn with_path(error: io::Error, op: &str, path: &Path) -> io::Error {
    match errno(&error) {
        Some(code) if error.get_ref().is_none() => os_error(Errno::from_raw_os_error(code), op, path),
        _ => error,
    }
}

/// The errno of an error from this crate (or a plain OS error), if it came from the OS.
pub fn errno(error: &io::Error) -> Option<i32> {
    error.raw_os_error().or_else(|| {
        error
            .get_ref()
            .and_then(|inner| inner.downcast_ref::<OsErrorWithPath>())
            .map(|e| e.code)
    })
}

/// Whether the error carries `expected`.
pub fn has_errno(error: &io::Error, expected: Errno) -> bool {
    errno(error) == Some(expected.raw_os_error())
}

/// A9: `ENOSPC`, `EDQUOT`, `EMFILE`, `ENFILE` are storage-capacity errors (shim-side writes keep
/// retrying them; host launch writes fail fast).
pub fn is_capacity_error(error: &io::Error) -> bool {
    [Errno::NOSPC, Errno::DQUOT, Errno::MFILE, Errno::NFILE]
        .into_iter()
        .any(|e| has_errno(error, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_the_errno_the_operation_and_the_path() {
        let e = os_error(Errno::ACCESS, "open", Path::new("/r/runner.stdout.log"));
        let text = e.to_string();
        assert!(text.starts_with("EACCES: "), "{text}");
        assert!(text.ends_with(", open '/r/runner.stdout.log'"), "{text}");
        assert_eq!(errno(&e), Some(Errno::ACCESS.raw_os_error()));
        assert_eq!(e.kind(), io::ErrorKind::PermissionDenied);
    }

    #[test]
    fn with_path_annotates_plain_os_errors_once() {
        let plain = io::Error::from_raw_os_error(Errno::NOSPC.raw_os_error());
        let once = with_path(plain, "write", Path::new("/x"));
        assert!(once.to_string().starts_with("ENOSPC"));
        let twice = with_path(once, "rename", Path::new("/y"));
        assert!(
            twice.to_string().ends_with("write '/x'"),
            "an annotated error is kept: {twice}"
        );
        assert!(is_capacity_error(&twice));
    }

    #[test]
    fn names_round_trip() {
        for name in ["ENOSPC", "EACCES", "EPERM", "EIO", "EBUSY", "ELOOP", "EDQUOT"] {
            let e = errno_from_name(name).unwrap();
            assert_eq!(errno_name(e.raw_os_error()), Some(name));
        }
        assert!(errno_from_name("enospc").is_none());
    }
}
