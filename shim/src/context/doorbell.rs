//! The shim's end of the startup doorbell (K14): a `SOCK_STREAM` socket at fd 3.
//!
//! Host messages are only wake-ups — the shim re-reads the authoritative control file after
//! each (K14, "file wins"). EOF before commit means the host is gone (R8). After commit the
//! shim sends `committed` and closes fd 3; the agent never inherits it (CLOEXEC).

use rustix::fd::{AsRawFd, OwnedFd};
use rustix::io::Errno;
use rustix::net::{RecvFlags, SendFlags};
use sublaunch_protocol::records::handshake::{Doorbell as Message, DoorbellReader};

/// The doorbell socket, if the host passed one.
#[derive(Debug, Default)]
pub struct Doorbell {
    fd: Option<OwnedFd>,
    reader: DoorbellReader,
    eof: bool,
}

impl Doorbell {
    /// Wraps the socket placed at fd 3 by the start-up hygiene (non-blocking from now on).
    pub fn new(fd: Option<OwnedFd>) -> Self {
        if let Some(fd) = &fd {
            let _ = rustix::io::ioctl_fionbio(fd, true);
        }
        Self {
            fd,
            reader: DoorbellReader::default(),
            eof: false,
        }
    }

    /// Whether a doorbell is in use (opened and not yet closed).
    pub fn is_open(&self) -> bool {
        self.fd.is_some()
    }

    /// Whether the host closed its end (EOF seen).
    pub fn host_closed(&self) -> bool {
        self.eof
    }

    /// The `pollfd` to wait on, while the doorbell is open and not at EOF.
    pub fn pollfd(&self) -> Option<libc::pollfd> {
        let fd = self.fd.as_ref().filter(|_| !self.eof)?;
        Some(crate::process::pipe::poll_in(fd.as_raw_fd()))
    }

    /// Reads whatever is available; returns the host messages (wake-ups only). Sets
    /// [`Self::host_closed`] on EOF or a connection error.
    pub fn drain(&mut self) -> Vec<Message> {
        let mut messages = Vec::new();
        let Some(fd) = &self.fd else { return messages };
        let mut buf = [0u8; 512];
        loop {
            match rustix::net::recv(fd, &mut buf, RecvFlags::DONTWAIT) {
                Ok((0, _)) => {
                    self.eof = true;
                    break;
                }
                Ok((n, _)) => messages.extend(self.reader.push(&buf[..n])),
                Err(Errno::INTR) => {}
                Err(Errno::AGAIN) => break,
                Err(_) => {
                    self.eof = true;
                    break;
                }
            }
        }
        messages
    }

    /// Sends `{"v":1,"state":<state>}` (best effort: a vanished host is noticed by EOF).
    pub fn ring(&mut self, state: &str) {
        let Some(fd) = &self.fd else { return };
        let line = Message::State(state.to_owned()).encode();
        let mut rest = line.as_slice();
        while !rest.is_empty() {
            match rustix::net::send(fd, rest, SendFlags::NOSIGNAL | SendFlags::DONTWAIT) {
                Ok(n) => rest = &rest[n..],
                Err(Errno::INTR) => {}
                Err(_) => return,
            }
        }
    }

    /// Closes fd 3 (after `committed`, or the `close-doorbell` test hook).
    pub fn close(&mut self) {
        self.fd = None;
    }
}
