//! One of the agent's output pipes: its non-blocking read end, the line splitter over it and
//! the byte count (R11: both pipes are drained continuously, the agent never blocks).

use crate::process::streams::LineSplitter;
use rustix::fd::{AsRawFd, OwnedFd};
use rustix::io::Errno;

/// Which pipe.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stream {
    /// The agent's stdout.
    Stdout,
    /// The agent's stderr.
    Stderr,
}

/// The result of one read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Read {
    /// This many bytes.
    Data(usize),
    /// The writers closed it.
    Eof,
    /// Nothing available now (or closed by the shim).
    Empty,
}

/// A `pollfd` waiting for `fd` to be readable.
pub fn poll_in(fd: i32) -> libc::pollfd {
    libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    }
}

/// A pipe from the agent.
#[derive(Debug)]
pub struct Pipe {
    fd: Option<OwnedFd>,
    /// Splits what is read into lines (R11 bounds).
    pub lines: LineSplitter,
    total: u64,
}

impl Pipe {
    /// Wraps a non-blocking read end, keeping at most `retain` bytes of a line.
    pub fn new(fd: OwnedFd, retain: usize) -> Self {
        Self {
            fd: Some(fd),
            lines: LineSplitter::new(retain),
            total: 0,
        }
    }

    /// Whether the shim still reads it.
    pub fn is_open(&self) -> bool {
        self.fd.is_some()
    }

    /// Bytes read so far.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// The raw descriptor while open.
    pub fn raw_fd(&self) -> Option<i32> {
        self.fd.as_ref().map(AsRawFd::as_raw_fd)
    }

    /// The `pollfd` while open.
    pub fn pollfd(&self) -> Option<libc::pollfd> {
        self.raw_fd().map(poll_in)
    }

    /// One non-blocking read into `buf`.
    pub fn read(&mut self, buf: &mut [u8]) -> Read {
        let Some(fd) = &self.fd else { return Read::Empty };
        loop {
            match rustix::io::read(fd, &mut *buf) {
                Ok(0) => return Read::Eof,
                Ok(n) => {
                    self.total += n as u64;
                    return Read::Data(n);
                }
                Err(Errno::INTR) => {}
                Err(Errno::AGAIN) => return Read::Empty,
                Err(_) => return Read::Eof,
            }
        }
    }

    /// Closes the read end (EOF, or the X7 guard).
    pub fn close(&mut self) {
        self.fd = None;
        self.lines.abandon();
    }
}
