//! R12: the control inbox `<run>/control/{stop,interrupt,timeout}.json`, watched with inotify
//! plus a safety poll. A control file is consumed (removed) when seen; its content is not
//! interpreted.

use super::{Request, StopBy};
use crate::process::pipe::poll_in;
use rustix::fd::{AsRawFd, OwnedFd};
use rustix::fs::inotify;
use std::mem::MaybeUninit;
use std::time::{Duration, Instant};
use sublaunch_protocol::files::dir::Dir;
use sublaunch_protocol::files::layout::names;

/// Safety poll interval with inotify.
pub const SAFETY_POLL: Duration = Duration::from_millis(1_000);
/// Poll interval without inotify.
pub const FALLBACK_POLL: Duration = Duration::from_millis(250);

/// The inbox of one run.
#[derive(Debug)]
pub struct ControlInbox {
    dir: Option<Dir>,
    inotify: Option<(OwnedFd, Option<i32>)>,
    next_poll: Instant,
}

impl ControlInbox {
    /// Creates `<run>/control` (0700) if needed and starts watching it.
    pub fn open(run: &Dir) -> Self {
        let dir = match run.ensure_child(names::CONTROL_DIR) {
            Ok(dir) => Some(dir),
            Err(e) => {
                eprintln!("sublaunch-shim: the control inbox is unavailable: {e}");
                None
            }
        };
        let inotify = dir.as_ref().and_then(|dir| {
            let fd = inotify::init(inotify::CreateFlags::CLOEXEC | inotify::CreateFlags::NONBLOCK).ok()?;
            let mask = inotify::WatchFlags::MOVED_TO | inotify::WatchFlags::CLOSE_WRITE | inotify::WatchFlags::CREATE;
            let watch = inotify::add_watch(&fd, dir.path(), mask).ok()?;
            Some((fd, Some(watch)))
        });
        Self {
            dir,
            inotify,
            next_poll: Instant::now(),
        }
    }

    /// The inotify descriptor to wait on.
    pub fn pollfd(&self) -> Option<libc::pollfd> {
        self.inotify.as_ref().map(|(fd, _)| poll_in(fd.as_raw_fd()))
    }

    /// When the next safety poll is due.
    pub fn due(&self) -> Option<Instant> {
        self.dir.as_ref().map(|_| self.next_poll)
    }

    /// Looks for requests when `woken` (inotify readable) or the safety poll is due.
    pub fn check(&mut self, now: Instant, woken: bool) -> Vec<Request> {
        let Some(dir) = &self.dir else { return Vec::new() };
        if !woken && now < self.next_poll {
            return Vec::new();
        }
        if let Some((fd, _)) = &self.inotify {
            let mut buf = [MaybeUninit::<u8>::uninit(); 1024];
            let mut reader = inotify::Reader::new(fd, &mut buf);
            while reader.next().is_ok() {}
        }
        self.next_poll = now
            + if self.inotify.is_some() {
                SAFETY_POLL
            } else {
                FALLBACK_POLL
            };
        let mut requests = Vec::new();
        for (name, request) in [
            (names::CONTROL_STOP, Request::Stop(StopBy::User)),
            (names::CONTROL_TIMEOUT, Request::Timeout),
            (names::CONTROL_INTERRUPT, Request::Interrupt),
        ] {
            if matches!(dir.stat(name), Ok(Some(_))) {
                if let Err(e) = dir.remove(name) {
                    eprintln!("sublaunch-shim: cannot consume control/{name}: {e}");
                }
                requests.push(request);
            }
        }
        requests
    }

    /// Stops watching, once the run has ended: the kernel frees a removed watch after a grace
    /// period (15 ms here), and closing an instance waits for that, so removing the watch
    /// before the end records lets the wait pass while they are written instead of at exit.
    pub fn stop_watching(&mut self) {
        if let Some((fd, watch)) = &mut self.inotify
            && let Some(watch) = watch.take()
        {
            let _ = inotify::remove_watch(&*fd, watch);
        }
    }
}

/// A wait before the run starts (for a cooldown, for room under a spend limit) that a stop
/// ends: the control inbox and the stop signals are watched while it sleeps.
pub struct Pause {
    inbox: Option<ControlInbox>,
}

impl Pause {
    /// Watches `ctx`'s run for stop requests.
    pub fn new(ctx: &crate::context::Ctx) -> Self {
        Self {
            inbox: ctx.open_run().ok().map(|run| ControlInbox::open(&run)),
        }
    }

    /// Sleeps up to `timeout`, adding what arrived to `requests`; says whether they end the run.
    pub fn sleep(&mut self, requests: &mut super::Requests, timeout: std::time::Duration) -> bool {
        let mut fds: Vec<libc::pollfd> = self.inbox.as_ref().and_then(ControlInbox::pollfd).into_iter().collect();
        crate::process::signals::wait(&mut fds, Some(timeout));
        let woken = fds.first().is_some_and(|p| p.revents != 0);
        requests.take_signals();
        for request in self
            .inbox
            .as_mut()
            .map(|i| i.check(std::time::Instant::now(), woken))
            .unwrap_or_default()
        {
            requests.receive(request);
        }
        requests.ends_run()
    }
}
