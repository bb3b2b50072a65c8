//! Registering owned descriptors with the tokio reactor.

use rustix::fd::OwnedFd;
use std::io;
use tokio::io::Interest;
use tokio::io::unix::AsyncFd;

/// Registers `fd` for read readiness (a pidfd, a socket, an inotify descriptor).
pub fn register_readable(fd: OwnedFd) -> io::Result<AsyncFd<OwnedFd>> {
    // SAFETY: an `OwnedFd` is a valid open descriptor that keeps returning the same number
    // until it is dropped, and the `AsyncFd` owns it for its whole lifetime and never swaps it.
    unsafe { AsyncFd::register_with_interest(fd, Interest::READABLE) }.map_err(|e| e.into())
}
