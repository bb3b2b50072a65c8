//! The host end of the doorbell (K14): a CLOEXEC `AF_UNIX` stream socketpair whose other end
//! becomes the shim's stdin (the shim moves it to fd 3). Messages are one-line JSON wake-ups;
//! the files stay authoritative. EOF before commit means the shim is gone or gave up the
//! channel; the host then relies on the exit watcher and polling.

use rustix::fd::OwnedFd;
use rustix::io::Errno;
use rustix::net::{AddressFamily, SendFlags, SocketFlags, SocketType};
use std::collections::VecDeque;
use std::io;
use sublaunch_protocol::records::handshake::{ControlAction, Doorbell, DoorbellReader};
use tokio::io::unix::AsyncFd;

/// One event from the doorbell.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Ring {
    /// A decoded message.
    Message(Doorbell),
    /// The shim closed its end (or the socket failed).
    Closed,
}

/// A connected pair: the host keeps `host`, the shim gets `child` as stdin.
pub(crate) struct DoorbellPair {
    /// The host's end (CLOEXEC).
    pub host: OwnedFd,
    /// The shim's end (CLOEXEC until it is dup'ed onto the shim's stdin).
    pub child: OwnedFd,
}

/// Creates the CLOEXEC socketpair.
pub(crate) fn pair() -> io::Result<DoorbellPair> {
    let (host, child) = rustix::net::socketpair(AddressFamily::UNIX, SocketType::STREAM, SocketFlags::CLOEXEC, None)?;
    Ok(DoorbellPair { host, child })
}

/// The host end, registered with the runtime.
pub(crate) struct HostDoorbell {
    fd: AsyncFd<OwnedFd>,
    reader: DoorbellReader,
    pending: VecDeque<Doorbell>,
    closed: bool,
    closed_reported: bool,
}

impl HostDoorbell {
    /// Wraps the host end (made non-blocking).
    pub(crate) fn new(host: OwnedFd) -> io::Result<Self> {
        rustix::io::ioctl_fionbio(&host, true)?;
        Ok(Self {
            fd: super::readiness::register_readable(host)?,
            reader: DoorbellReader::default(),
            pending: VecDeque::new(),
            closed: false,
            closed_reported: false,
        })
    }

    /// Whether the shim's end is known to be closed.
    pub(crate) fn is_closed(&self) -> bool {
        self.closed
    }

    /// Reads whatever is already buffered without waiting and reports whether the shim's end
    /// is closed (the commit check of K14/K16: EOF before commit means the shim is gone).
    pub(crate) fn poll_closed(&mut self) -> bool {
        let mut buffer = [0u8; 512];
        while !self.closed {
            match rustix::io::read(self.fd.get_ref(), &mut buffer) {
                Ok(0) => self.closed = true,
                Ok(n) => self.pending.extend(self.reader.push(&buffer[..n])),
                Err(Errno::INTR) => {}
                Err(Errno::AGAIN) => break,
                Err(_) => self.closed = true,
            }
        }
        self.closed
    }

    /// The next message, or `Closed` once; after that it never resolves. Cancel-safe.
    pub(crate) async fn recv(&mut self) -> Ring {
        loop {
            if let Some(message) = self.pending.pop_front() {
                return Ring::Message(message);
            }
            if self.closed {
                if self.closed_reported {
                    std::future::pending::<()>().await;
                }
                self.closed_reported = true;
                return Ring::Closed;
            }
            let Ok(mut guard) = self.fd.readable().await else {
                self.closed = true;
                continue;
            };
            let mut buffer = [0u8; 512];
            match guard.try_io(|fd| rustix::io::read(fd.get_ref(), &mut buffer).map_err(io::Error::from)) {
                Ok(Ok(0)) => self.closed = true,
                Ok(Ok(n)) => self.pending.extend(self.reader.push(&buffer[..n])),
                Ok(Err(e)) if e.kind() == io::ErrorKind::Interrupted => {}
                Ok(Err(_)) => self.closed = true,
                Err(_would_block) => {}
            }
        }
    }

    /// Rings the shim after a control file was written (best effort: a gone shim is seen by
    /// the exit watcher; `MSG_NOSIGNAL` keeps a closed peer from raising SIGPIPE).
    pub(crate) fn send(&self, action: ControlAction) {
        let line = Doorbell::Action(action.as_str().to_owned()).encode();
        let mut rest = line.as_slice();
        while !rest.is_empty() {
            match rustix::net::send(self.fd.get_ref(), rest, SendFlags::NOSIGNAL | SendFlags::DONTWAIT) {
                Ok(n) => rest = &rest[n..],
                Err(Errno::INTR) => {}
                Err(_) => return,
            }
        }
    }
}
