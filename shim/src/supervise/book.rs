//! The shim's `status.json` and active-run marker while it owns the single-writer window
//! (S1: from commit until exit), with the capacity-resilient writer of A9/I7.
//!
//! The status is read once at commit (keeping the host's fields, W9) and then kept in memory
//! and written whole. A write that fails with a storage-capacity error keeps only its newest
//! payload and is retried every 1 000 ms; a newer successful write drops it; once the terminal
//! state is written, pending marker retries are dropped (no resurrection, I7).

use std::io;
use std::time::{Duration, Instant};
use sublaunch_protocol::deferred::{Deferred, DeferredKind, Submitted};
use sublaunch_protocol::files::atomic::Durability;
use sublaunch_protocol::files::dir::Dir;
use sublaunch_protocol::files::doc::{ReadDoc, to_pretty_bytes};
use sublaunch_protocol::files::durability::{DocKind, DurabilityPolicy};
use sublaunch_protocol::files::layout::names;
use sublaunch_protocol::records::index::ActiveRunIndex;
use sublaunch_protocol::records::status::{RunState, Status, read_status};

/// Activity-only status updates are coalesced to one per this interval (S3).
pub const ACTIVITY_INTERVAL: Duration = Duration::from_millis(1_000);

/// Keys of deferred writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Key {
    /// `status.json`.
    Status,
    /// `.active-runs/<runId>`.
    Mark,
}

/// A deferred operation.
#[derive(Clone, Debug)]
enum Op {
    /// Write these status bytes.
    Status(Vec<u8>, Durability),
    /// Create-or-touch the marker (I2 + I7 check).
    Mark,
}

/// Where the operations land: the run's `status.json` and its marker in the active-run index.
#[derive(Debug)]
struct Target {
    run: Dir,
    index: Option<ActiveRunIndex>,
    run_id: String,
    tool_call_id: Option<String>,
}

impl Target {
    fn apply(&self, op: &Op) -> io::Result<()> {
        match (op, &self.index) {
            (Op::Status(bytes, durability), _) => self.run.write(names::STATUS, bytes, *durability),
            (Op::Mark, Some(index)) => {
                let outcome = index.mark_checked(&self.run_id, self.tool_call_id.as_deref(), &self.run)?;
                if let Some(e) = outcome.alias_error {
                    eprintln!("sublaunch-shim: cannot create the tool-call alias: {e}");
                }
                Ok(())
            }
            (Op::Mark, None) => Ok(()),
        }
    }
}

/// Status and marker writer.
#[derive(Debug)]
pub struct StatusBook {
    target: Target,
    policy: DurabilityPolicy,
    deferred: Deferred<Key, Op>,
    /// The in-memory status (authoritative during the shim's window).
    pub status: Status,
    last_write: Option<Instant>,
    dirty: bool,
}

impl StatusBook {
    /// Reads the base status of the run (never failing: a corrupt or unreadable document, a
    /// planted symlink (F38), is replaced by the shim's own, which the next write puts in place
    /// atomically, A5); the second value says why the base was replaced.
    pub fn open(
        run: Dir,
        runs: Option<&Dir>,
        run_id: &str,
        tool_call_id: Option<String>,
        policy: DurabilityPolicy,
    ) -> (Self, Option<String>) {
        let (status, replaced) = match read_status(&run) {
            Ok(ReadDoc::Present(status)) => (status, None),
            Ok(ReadDoc::Absent) => (Status::default(), None),
            Ok(ReadDoc::Corrupt(c)) => (Status::default(), Some(format!("corrupt: {}", c.error))),
            Err(e) => (Status::default(), Some(e.to_string())),
        };
        let index = runs.and_then(|runs| match ActiveRunIndex::new(runs, policy) {
            Ok(index) => Some(index),
            Err(e) => {
                eprintln!("sublaunch-shim: the active-run index is unavailable: {e}");
                None
            }
        });
        let book = Self {
            target: Target {
                run,
                index,
                run_id: run_id.to_owned(),
                tool_call_id,
            },
            policy,
            deferred: Deferred::default(),
            status,
            last_write: None,
            dirty: false,
        };
        (book, replaced)
    }

    /// The run directory handle.
    pub fn run(&self) -> &Dir {
        &self.target.run
    }

    /// Writes the in-memory status as `kind` now (or defers it on a capacity error, A9).
    pub fn write(&mut self, kind: DocKind) -> Submitted {
        let bytes = to_pretty_bytes(&self.status);
        self.write_bytes(bytes, kind)
    }

    /// Writes the running status now, logging a failure.
    pub fn update(&mut self) {
        if let Submitted::Failed(e) = self.write(DocKind::RunningStatus) {
            eprintln!("sublaunch-shim: cannot update status.json: {e}");
        }
    }

    /// Writes `bytes` as the status (the `corrupt` test hook passes invalid JSON).
    pub fn write_bytes(&mut self, bytes: Vec<u8>, kind: DocKind) -> Submitted {
        let options = self.policy.for_kind(kind);
        self.dirty = false;
        self.last_write = Some(Instant::now());
        let op = Op::Status(bytes, options);
        self.deferred
            .submit(Key::Status, DeferredKind::Write, op, Instant::now(), |op| {
                self.target.apply(op)
            })
    }

    /// I2 + I7: create-or-touch the marker, re-checking the status afterwards (deferred on a
    /// capacity error; dropped after the terminal state). Other errors are logged.
    pub fn mark(&mut self) {
        if self.target.index.is_none() {
            return;
        }
        let submitted = self
            .deferred
            .submit(Key::Mark, DeferredKind::Mark, Op::Mark, Instant::now(), |op| {
                self.target.apply(op)
            });
        if let Submitted::Failed(e) = submitted {
            eprintln!("sublaunch-shim: cannot mark the run active: {e}");
        }
    }

    /// The terminal state was written (or queued): pending marks are dropped and refused
    /// from now on (I7).
    pub fn terminal_written(&mut self) {
        self.deferred.terminal_written();
    }

    /// I4: releases the marker and aliases, writing the terminal-run entry.
    pub fn release(&mut self, state: &RunState) -> io::Result<()> {
        self.deferred.terminal_written();
        let target = &self.target;
        let Some(index) = &target.index else { return Ok(()) };
        let outcome = index.release(&target.run_id, state, target.tool_call_id.as_deref(), Some(&target.run))?;
        for warning in outcome.warnings {
            eprintln!("sublaunch-shim: {warning}");
        }
        Ok(())
    }

    /// Whether anything is waiting for capacity.
    pub fn pending(&self) -> bool {
        !self.deferred.is_empty()
    }

    /// When the next deferred retry or coalesced activity write is due.
    pub fn next_due(&self) -> Option<Instant> {
        let activity = self
            .dirty
            .then(|| self.last_write.map_or_else(Instant::now, |t| t + ACTIVITY_INTERVAL));
        match (self.deferred.next_due(), activity) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Retries due deferred writes and performs a due coalesced activity write.
    pub fn tick(&mut self, now: Instant) {
        let target = &self.target;
        for (key, e) in self.deferred.retry_due(now, |_, op| target.apply(op)) {
            eprintln!("sublaunch-shim: deferred {key:?} write failed: {e}");
        }
        if self.dirty && self.last_write.is_none_or(|t| now >= t + ACTIVITY_INTERVAL) {
            self.update();
        }
    }

    /// Notes a change of the in-memory status that the next write carries (a coalesced
    /// activity write at the latest).
    pub fn changed(&mut self) {
        self.dirty = true;
    }

    /// Notes agent activity (coalesced into the next status write).
    pub fn touch_activity(&mut self, wall_ms: u64) {
        self.status.last_activity_at = Some(wall_ms);
        self.status.last_update = Some(wall_ms);
        self.dirty = true;
    }

    /// Blocks (signals keep being counted) until nothing is deferred or `until` passes;
    /// returns whether everything landed.
    pub fn flush(&mut self, until: Instant) -> bool {
        loop {
            let now = Instant::now();
            self.tick(now);
            if self.deferred.is_empty() {
                return true;
            }
            if now >= until {
                return false;
            }
            let wake = self.deferred.next_due().unwrap_or(now).min(until);
            crate::process::signals::wait(&mut [], Some(wake.saturating_duration_since(now)));
        }
    }
}
