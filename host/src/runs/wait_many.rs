//! Waiting on several runs at once (`sublaunch wait ID…`, an embedder, an MCP server): every
//! run is waited for as [`wait_terminal`] waits for one — its directory watched with inotify,
//! its shim's exit with a pidfd, a dead shim reconciled — each in a task of its own, so a run's
//! change wakes only its own waiter. Nothing is printed: each end is handed to the caller.

use super::RunStore;
use super::wait::{WaitEnd, look, wait_terminal};
use crate::launch::tokio;
use std::sync::Arc;
use std::time::Duration;
use sublaunch_protocol::files::dir::Dir;
use sublaunch_protocol::records::status::Status;

/// When [`wait_many`] is done.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaitUntil {
    /// When the first run ends.
    Any,
    /// When every run has ended.
    All,
}

/// How [`wait_many`] ended.
#[derive(Debug)]
pub struct WaitMany {
    /// The runs seen to end, in the order they ended, with their terminal status.
    pub ended: Vec<(String, Status)>,
    /// The runs not seen to end, in the order given.
    pub still_running: Vec<String>,
    /// Whether the time limit passed before the wait was done.
    pub timed_out: bool,
}

/// Waits until any or all of `runs` (id and directory; an id given twice is waited for once)
/// are terminal, at most `limit`. `on_end` is called once for each run as it ends, in the
/// order they end; runs already ended come first, in the order given. With
/// [`WaitUntil::Any`] only the first end is reported, and the others are left running.
pub async fn wait_many(
    store: &Arc<RunStore>,
    runs: Vec<(String, Arc<Dir>)>,
    until: WaitUntil,
    limit: Option<Duration>,
    on_end: impl FnMut(&str, &Status),
) -> WaitMany {
    let deadline = super::wait::deadline_after(limit);
    let mut tally = Tally {
        pending: Vec::new(),
        ended: Vec::new(),
        until,
        on_end,
    };
    for (id, run) in runs {
        if !tally.pending.iter().flatten().any(|(seen, _)| *seen == id) {
            tally.pending.push(Some((id, run)));
        }
    }
    // Runs that have already ended, in the order given.
    tally.look_at_each(store).await;

    // The others, each watched by its own task (aborted when this returns).
    let mut waits = tokio::task::JoinSet::new();
    if !tally.done() {
        for (index, entry) in tally.pending.iter().enumerate() {
            if let Some((_, run)) = entry {
                let (store, run) = (store.clone(), run.clone());
                waits.spawn(async move { (index, wait_terminal(&store, &run, None).await) });
            }
        }
    }
    let mut timed_out = false;
    while !tally.done() {
        let sleep_until = async {
            match deadline {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            joined = waits.join_next() => match joined {
                Some(Ok((index, WaitEnd::Terminal(status)))) => tally.end(index, *status),
                // Without a limit a wait only ends terminal; a failed task leaves its run among
                // the running.
                Some(Ok((_, WaitEnd::TimedOut)) | Err(_)) => {}
                None => break,
            },
            () = sleep_until => {
                timed_out = true;
                break;
            }
        }
    }
    if timed_out {
        waits.abort_all();
        // One last look at each, as a single wait takes at its deadline.
        tally.look_at_each(store).await;
        timed_out = !tally.done();
    }
    WaitMany {
        ended: tally.ended,
        still_running: tally.pending.into_iter().flatten().map(|(id, _)| id).collect(),
        timed_out,
    }
}

/// The runs of a [`wait_many`]: those still waited for (by index, `None` once ended) and
/// those that ended.
struct Tally<F> {
    pending: Vec<Option<(String, Arc<Dir>)>>,
    ended: Vec<(String, Status)>,
    until: WaitUntil,
    on_end: F,
}

impl<F: FnMut(&str, &Status)> Tally<F> {
    /// Whether the wait is done.
    fn done(&self) -> bool {
        match self.until {
            WaitUntil::Any => !self.ended.is_empty() || self.pending.is_empty(),
            WaitUntil::All => self.pending.iter().all(Option::is_none),
        }
    }

    /// Run `index` ended with `status`: reported once.
    fn end(&mut self, index: usize, status: Status) {
        if let Some((id, _)) = self.pending.get_mut(index).and_then(Option::take) {
            (self.on_end)(&id, &status);
            self.ended.push((id, status));
        }
    }

    /// One look at each run still waited for, in the order given, until the wait is done.
    async fn look_at_each(&mut self, store: &Arc<RunStore>) {
        for index in 0..self.pending.len() {
            if self.done() {
                return;
            }
            let Some((_, run)) = &self.pending[index] else {
                continue;
            };
            if let Some(status) = look(store, run).await.terminal {
                self.end(index, *status);
            }
        }
    }
}
