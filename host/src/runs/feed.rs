//! Following the event stream (D5): a [`Reader`] of `<root>/events` woken by inotify when a
//! segment grows or a new one starts, with a slow safety tick (and plain polling where inotify
//! is not available). `sublaunch events --follow` and the MCP server's notifications read it.

use rustix::event::{PollFd, PollFlags, Timespec};
use rustix::fd::OwnedFd;
use rustix::fs::inotify::{self, CreateFlags, WatchFlags};
use std::io;
use std::path::Path;
use std::time::{Duration, Instant};
use sublaunch_protocol::records::stream::{Batch, Reader, Stream};

/// The longest a follower sleeps without looking (when inotify missed nothing, it wakes on
/// the append).
const SAFETY_TICK: Duration = Duration::from_secs(1);

/// A follower of one root's event stream.
#[derive(Debug)]
pub struct Feed {
    reader: Reader,
    stream: Stream,
    inotify: Option<OwnedFd>,
}

impl Feed {
    /// A follower of the events under `root` after `after` (every kept event for `None`).
    pub fn new(root: &Path, after: Option<u64>) -> Self {
        let stream = Stream::under(root);
        Self {
            reader: Reader::new(stream.clone(), after),
            stream,
            inotify: None,
        }
    }

    /// The cursor of the last event returned.
    pub fn cursor(&self) -> Option<u64> {
        self.reader.cursor()
    }

    /// The next events (at most `max`); when there are none yet, waits up to `wait` for some.
    pub fn next(&mut self, max: usize, wait: Duration) -> io::Result<Batch> {
        let until = Instant::now() + wait;
        self.watch();
        loop {
            let batch = self.reader.next(max)?;
            let left = until.saturating_duration_since(Instant::now());
            if !batch.events.is_empty() || batch.dropped > 0 || left.is_zero() {
                return Ok(batch);
            }
            self.sleep(left.min(SAFETY_TICK));
        }
    }

    /// Watches `<root>/events` (created when missing), once.
    fn watch(&mut self) {
        if self.inotify.is_some() || self.stream.ensure_dir().is_err() {
            return;
        }
        let Ok(fd) = inotify::init(CreateFlags::CLOEXEC | CreateFlags::NONBLOCK) else {
            return;
        };
        let flags = WatchFlags::MODIFY | WatchFlags::CREATE | WatchFlags::MOVED_TO;
        if inotify::add_watch(&fd, self.stream.dir(), flags).is_ok() {
            self.inotify = Some(fd);
        }
    }

    /// Waits for a change of the directory, at most `limit`; then drains what inotify queued.
    fn sleep(&mut self, limit: Duration) {
        let Some(fd) = &self.inotify else {
            std::thread::sleep(limit.min(Duration::from_millis(100)));
            return;
        };
        let timeout = Timespec::try_from(limit).unwrap_or(Timespec { tv_sec: 1, tv_nsec: 0 });
        let mut fds = [PollFd::new(fd, PollFlags::IN)];
        let _ = rustix::event::poll(&mut fds, Some(&timeout));
        let mut buffer = [0u8; 4096];
        while matches!(rustix::io::read(fd, &mut buffer), Ok(n) if n > 0) {}
    }
}
