//! The capacity-resilient writer's bookkeeping (A9, I7): shim-side status and index writes that
//! fail with a storage-capacity error keep only their newest payload per path and are retried
//! every 1 000 ms until they succeed; a newer successful write of the same path discards the
//! pending retry; once the terminal state is written, pending retries of active-run marks are
//! dropped (no resurrection). The shim owns the timer; this type owns the decisions.

use crate::errors::is_capacity_error;
use std::collections::BTreeMap;
use std::io;
use std::time::{Duration, Instant};

/// Retry interval of deferred capacity writes (A9).
pub const RETRY_INTERVAL: Duration = Duration::from_millis(1_000);

/// What a deferred operation is, for I7.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeferredKind {
    /// A document write (status, candidate …).
    Write,
    /// An active-run mark (dropped after the terminal state).
    Mark,
}

/// The outcome of [`Deferred::submit`].
#[derive(Debug)]
pub enum Submitted {
    /// Written now.
    Done,
    /// A capacity error: kept for retry.
    Deferred,
    /// Another error: reported once, dropped.
    Failed(io::Error),
    /// Refused: a mark after the terminal state (I7).
    Dropped,
}

#[derive(Debug)]
struct Pending<V> {
    value: V,
    kind: DeferredKind,
    due: Instant,
}

/// Newest-payload-per-key retry queue.
#[derive(Debug)]
pub struct Deferred<K: Ord + Clone, V> {
    pending: BTreeMap<K, Pending<V>>,
    terminal_written: bool,
}

impl<K: Ord + Clone, V> Default for Deferred<K, V> {
    fn default() -> Self {
        Self {
            pending: BTreeMap::new(),
            terminal_written: false,
        }
    }
}

impl<K: Ord + Clone, V> Deferred<K, V> {
    /// Tries `write(&value)` now; on a capacity error keeps `value` as the newest payload of
    /// `key`, due at `now + 1 s`. A success discards an older pending payload of `key`.
    pub fn submit(
        &mut self,
        key: K,
        kind: DeferredKind,
        value: V,
        now: Instant,
        write: impl FnOnce(&V) -> io::Result<()>,
    ) -> Submitted {
        if kind == DeferredKind::Mark && self.terminal_written {
            return Submitted::Dropped;
        }
        match write(&value) {
            Ok(()) => {
                self.pending.remove(&key);
                Submitted::Done
            }
            Err(e) if is_capacity_error(&e) => {
                self.pending.insert(
                    key,
                    Pending {
                        value,
                        kind,
                        due: now + RETRY_INTERVAL,
                    },
                );
                Submitted::Deferred
            }
            Err(e) => Submitted::Failed(e),
        }
    }

    /// Records that the terminal state was written: pending marks are dropped now and refused
    /// from now on (I7).
    pub fn terminal_written(&mut self) {
        self.terminal_written = true;
        self.pending.retain(|_, p| p.kind != DeferredKind::Mark);
    }

    /// When the next retry is due (for the shim's timer).
    pub fn next_due(&self) -> Option<Instant> {
        self.pending.values().map(|p| p.due).min()
    }

    /// Whether anything is pending.
    pub fn is_empty(&self) -> bool {
        self.pending.is_empty()
    }

    /// Retries every payload due at `now`; capacity failures are rescheduled, other failures
    /// are returned (and dropped).
    pub fn retry_due(&mut self, now: Instant, mut write: impl FnMut(&K, &V) -> io::Result<()>) -> Vec<(K, io::Error)> {
        let due: Vec<K> = self
            .pending
            .iter()
            .filter(|(_, p)| p.due <= now)
            .map(|(k, _)| k.clone())
            .collect();
        let mut failures = Vec::new();
        for key in due {
            let Some(pending) = self.pending.get_mut(&key) else {
                continue;
            };
            match write(&key, &pending.value) {
                Ok(()) => {
                    self.pending.remove(&key);
                }
                Err(e) if is_capacity_error(&e) => pending.due = now + RETRY_INTERVAL,
                Err(e) => {
                    self.pending.remove(&key);
                    failures.push((key, e));
                }
            }
        }
        failures
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustix::io::Errno;

    fn enospc() -> io::Error {
        io::Error::from_raw_os_error(Errno::NOSPC.raw_os_error())
    }

    #[test]
    fn a9_newest_payload_wins_and_is_retried_until_space_returns() {
        let t0 = Instant::now();
        let mut q: Deferred<&str, u32> = Deferred::default();
        assert!(matches!(
            q.submit("status.json", DeferredKind::Write, 1, t0, |_| Err(enospc())),
            Submitted::Deferred
        ));
        assert!(matches!(
            q.submit("status.json", DeferredKind::Write, 2, t0, |_| Err(enospc())),
            Submitted::Deferred
        ));
        assert_eq!(q.next_due(), Some(t0 + RETRY_INTERVAL));
        let mut written = Vec::new();
        assert!(
            q.retry_due(t0, |_, v| {
                written.push(*v);
                Ok(())
            })
            .is_empty()
        );
        assert!(written.is_empty(), "not due yet");
        q.retry_due(t0 + RETRY_INTERVAL, |_, _| Err(enospc()));
        assert_eq!(q.next_due(), Some(t0 + RETRY_INTERVAL * 2), "rescheduled");
        q.retry_due(t0 + RETRY_INTERVAL * 2, |_, v| {
            written.push(*v);
            Ok(())
        });
        assert_eq!(written, vec![2], "only the newest payload lands");
        assert!(q.is_empty());
    }

    #[test]
    fn a9_a_newer_success_discards_the_pending_retry_and_other_errors_are_dropped() {
        let t0 = Instant::now();
        let mut q: Deferred<&str, u32> = Deferred::default();
        q.submit("status.json", DeferredKind::Write, 1, t0, |_| Err(enospc()));
        assert!(matches!(
            q.submit("status.json", DeferredKind::Write, 2, t0, |_| Ok(())),
            Submitted::Done
        ));
        assert!(q.is_empty());
        assert!(matches!(
            q.submit("x", DeferredKind::Write, 1, t0, |_| Err(io::Error::from_raw_os_error(
                Errno::ACCESS.raw_os_error()
            ))),
            Submitted::Failed(_)
        ));
        assert!(q.is_empty());
    }

    #[test]
    fn f46_i7_pending_marks_are_dropped_after_the_terminal_status() {
        let t0 = Instant::now();
        let mut q: Deferred<&str, ()> = Deferred::default();
        q.submit("marker", DeferredKind::Mark, (), t0, |_| Err(enospc()));
        q.submit("status.json", DeferredKind::Write, (), t0, |_| Err(enospc()));
        q.terminal_written();
        let mut retried = Vec::new();
        q.retry_due(t0 + RETRY_INTERVAL, |k, _| {
            retried.push(*k);
            Ok(())
        });
        assert_eq!(retried, vec!["status.json"], "the mark is never retried");
        assert!(matches!(
            q.submit("marker", DeferredKind::Mark, (), t0, |_| panic!("must not write")),
            Submitted::Dropped
        ));
    }
}
