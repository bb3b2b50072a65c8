//! Waiting for a capacity slot after commit ([`sublaunch_protocol::records::capacity`]): a run launched
//! over the cap starts nothing until its ticket holds a slot. The wait wakes when a ticket of
//! the queue goes or changes (inotify) and on a short tick — a killed runner's ticket does not
//! delete itself — and each time settles the queue under its lock (dead runners' tickets
//! reclaimed, waiting ones promoted in arrival order). Stop requests (the control inbox and
//! the stop signals, X9) end the wait: the run gives up its ticket and ends without starting
//! its agents.

use crate::context::Ctx;
use crate::process::pipe::poll_in;
use crate::process::signals;
use crate::supervise::Requests;
use crate::supervise::control::ControlInbox;
use rustix::fd::{AsRawFd, OwnedFd};
use rustix::fs::inotify;
use std::mem::MaybeUninit;
use std::time::{Duration, Instant};
use sublaunch_protocol::files::dir::Dir;
use sublaunch_protocol::os::processes::Processes;
use sublaunch_protocol::records::capacity::{CapacityQueue, queue_position};

/// How often a waiting run re-evaluates the queue without being woken.
pub const TICK: Duration = Duration::from_millis(500);

/// Waits until the run's ticket holds a slot, or a request ends the run first; returns the
/// requests that arrived (none when the run may start). Runs without a cap never wait.
pub fn wait_for_slot(ctx: &Ctx) -> Requests {
    let mut requests = Requests::default();
    if ctx.cfg.max_active.is_none() {
        return requests;
    }
    let queue = match Dir::open_with(&ctx.paths.runs, ctx.os.clone()).and_then(|runs| CapacityQueue::open(&runs)) {
        Ok(queue) => queue,
        Err(e) => {
            eprintln!("sublaunch-shim: the capacity queue is unavailable, starting anyway: {e}");
            return requests;
        }
    };
    let watch = watch(&queue);
    let mut inbox = match ctx.open_run() {
        Ok(run) => Some(ControlInbox::open(&run)),
        Err(e) => {
            eprintln!("sublaunch-shim: cannot watch for stop requests while queued: {e}");
            None
        }
    };
    let mut said = None;
    loop {
        match settle(&queue, &ctx.cfg.id, ctx.os.processes.as_ref()) {
            Ok(None) => return requests,
            Ok(Some(position)) => {
                if said != Some(position) {
                    eprintln!("sublaunch-shim: queued for capacity (position {position})");
                    said = Some(position);
                }
            }
            Err(e) => eprintln!("sublaunch-shim: cannot evaluate the capacity queue (retrying): {e}"),
        }
        let mut fds: Vec<libc::pollfd> = watch.iter().map(|fd| poll_in(fd.as_raw_fd())).collect();
        let inbox_at = fds.len();
        fds.extend(inbox.as_ref().and_then(ControlInbox::pollfd));
        signals::wait(&mut fds, Some(TICK));
        if let Some(fd) = &watch {
            drain(fd);
        }
        let inbox_woken = fds.get(inbox_at).is_some_and(|p| p.revents != 0);
        requests.take_signals();
        for request in inbox
            .as_mut()
            .map(|i| i.check(Instant::now(), inbox_woken))
            .unwrap_or_default()
        {
            requests.receive(request);
        }
        if requests.ends_run() {
            if let Err(e) = queue.release(&ctx.cfg.id) {
                eprintln!("sublaunch-shim: cannot remove the capacity ticket: {e}");
            }
            return requests;
        }
    }
}

/// Settles the queue (`processes` judges whether the runners of other tickets live); `Ok(None)`
/// when this run may start (its ticket holds a slot, or it has none), else its place among the
/// waiting.
fn settle(queue: &CapacityQueue, run_id: &str, processes: &dyn Processes) -> std::io::Result<Option<usize>> {
    let tickets = queue.lock()?.evaluate(processes)?;
    Ok(queue_position(&tickets, run_id))
}

/// Removes this run's ticket when its steps have ended (no lock needed); runs with or without
/// a cap have one.
pub fn release(ctx: &Ctx) {
    let released = Dir::open_with(&ctx.paths.runs, ctx.os.clone())
        .and_then(|runs| CapacityQueue::open_existing(&runs))
        .and_then(|queue| queue.map_or(Ok(false), |q| q.release(&ctx.cfg.id)));
    if let Err(e) = released {
        eprintln!("sublaunch-shim: cannot remove the capacity ticket: {e}");
    }
}

/// An inotify watch on the queue directory: a ticket removed (a run ended), created or
/// replaced (taken, promoted).
fn watch(queue: &CapacityQueue) -> Option<OwnedFd> {
    let fd = inotify::init(inotify::CreateFlags::CLOEXEC | inotify::CreateFlags::NONBLOCK).ok()?;
    let mask = inotify::WatchFlags::DELETE
        | inotify::WatchFlags::MOVED_FROM
        | inotify::WatchFlags::MOVED_TO
        | inotify::WatchFlags::CREATE;
    inotify::add_watch(&fd, queue.dir().path(), mask).ok()?;
    Some(fd)
}

fn drain(fd: &OwnedFd) {
    let mut buf = [MaybeUninit::<u8>::uninit(); 1024];
    let mut reader = inotify::Reader::new(fd, &mut buf);
    while reader.next().is_ok() {}
}
