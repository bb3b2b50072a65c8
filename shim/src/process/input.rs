//! The standard input of an agent that takes messages while it runs (pi's RPC mode, Claude
//! Code's streamed input): a non-blocking pipe the supervisor writes its task to, then a
//! checkpoint when the deadline nears, and closes once the agent has answered (both agents
//! exit when their input ends). Writes never block the event loop: what the pipe cannot take
//! waits for `POLLOUT`. An agent that stopped reading (`EPIPE`) loses what was pending.

use rustix::fd::{AsRawFd, OwnedFd};

/// The writing end of one agent's input.
#[derive(Debug)]
pub struct AgentInput {
    fd: Option<OwnedFd>,
    pending: Vec<u8>,
    written: usize,
    close_when_flushed: bool,
}

impl AgentInput {
    /// The input behind `fd` (non-blocking), with `first` to write.
    pub fn new(fd: OwnedFd, first: Vec<u8>) -> Self {
        let mut input = Self {
            fd: Some(fd),
            pending: first,
            written: 0,
            close_when_flushed: false,
        };
        input.flush();
        input
    }

    /// Queues `bytes` (a whole message line) after what is pending.
    pub fn send(&mut self, bytes: &[u8]) {
        if self.fd.is_some() && !self.close_when_flushed {
            self.pending.extend_from_slice(bytes);
            self.flush();
        }
    }

    /// Closes the input once what is pending was written (the agent then ends).
    pub fn close(&mut self) {
        self.close_when_flushed = true;
        self.flush();
    }

    /// Whether the pipe is still open.
    pub fn is_open(&self) -> bool {
        self.fd.is_some()
    }

    /// Whether the input was asked to close.
    pub fn closing(&self) -> bool {
        self.close_when_flushed
    }

    /// The `POLLOUT` entry while something waits to be written.
    pub fn pollfd(&self) -> Option<libc::pollfd> {
        let fd = self.fd.as_ref()?;
        (self.written < self.pending.len()).then(|| libc::pollfd {
            fd: fd.as_raw_fd(),
            events: libc::POLLOUT,
            revents: 0,
        })
    }

    /// Writes what the pipe takes now; closes it when asked to and nothing is pending, or
    /// when the agent stopped reading.
    pub fn flush(&mut self) {
        let Some(fd) = &self.fd else { return };
        while self.written < self.pending.len() {
            match rustix::io::write(fd, &self.pending[self.written..]) {
                Ok(n) => self.written += n,
                Err(rustix::io::Errno::INTR) => {}
                Err(rustix::io::Errno::AGAIN) => return,
                Err(_) => {
                    // EPIPE: the agent is gone or closed its input; nothing more can reach it.
                    self.fd = None;
                    self.pending = Vec::new();
                    self.written = 0;
                    return;
                }
            }
        }
        self.pending = Vec::new();
        self.written = 0;
        if self.close_when_flushed {
            self.fd = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    #[test]
    fn messages_arrive_whole_and_in_order_and_close_ends_the_input() {
        let (read, write) = rustix::pipe::pipe().unwrap();
        rustix::io::ioctl_fionbio(&write, true).unwrap();
        // More than a pipe holds: the rest waits for POLLOUT instead of blocking.
        let big = vec![b'a'; 200_000];
        let mut input = AgentInput::new(write, big.clone());
        assert!(input.pollfd().is_some());
        input.send(b"checkpoint\n");
        input.close();
        assert!(input.is_open(), "closes only once flushed");
        let mut reader = std::fs::File::from(read);
        let mut got = Vec::new();
        let mut buf = [0u8; 65_536];
        while input.is_open() {
            let n = reader.read(&mut buf).unwrap();
            got.extend_from_slice(&buf[..n]);
            input.flush();
        }
        reader.read_to_end(&mut got).unwrap();
        assert_eq!(got.len(), big.len() + "checkpoint\n".len());
        assert!(got.ends_with(b"aaacheckpoint\n"));
        input.send(b"late\n");
        assert!(!input.is_open());
    }

    #[test]
    fn an_agent_that_stopped_reading_drops_what_is_pending() {
        let (read, write) = rustix::pipe::pipe().unwrap();
        rustix::io::ioctl_fionbio(&write, true).unwrap();
        drop(read);
        let input = AgentInput::new(write, b"task\n".to_vec());
        assert!(!input.is_open());
        assert!(input.pollfd().is_none());
    }
}
