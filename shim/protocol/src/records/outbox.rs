//! The outbox (D7): one entry per end of a run that a consumer (the completion hook) has not
//! got yet, in `<root>/outbox/<deliveryId>.json`, written durably with the end
//! ([`crate::records::stream::record_end`]) before anything is notified, and removed only after
//! the consumer got it.
//!
//! A delivery is made under an exclusive `flock` on the run's `hook.json` ([`DeliveryLock`]),
//! so two deliverers never run one hook at once; the kernel releases it when the deliverer
//! dies, and the next sweep tries again. Before running the hook a deliverer checks
//! `hook-end.json`: an attempt that succeeded for this key is never made again. A hook that
//! fails is tried again after [`backoff`], at most [`MAX_ATTEMPTS`] times unless the user
//! asks (`sublaunch deliver`).

use crate::files::dir::Dir;
use crate::files::doc::ReadDoc;
use crate::files::durability::{DocKind, DurabilityPolicy};
use crate::os::files::retry_eintr;
use crate::records::failure::FailureKind;
use crate::records::hook::{self, HookOutcome};
use rustix::fd::OwnedFd;
use rustix::fs::{self, FlockOperation, Mode, OFlags};
use rustix::io::Errno;
use serde::{Deserialize, Serialize};
use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// `<root>/outbox`.
pub const OUTBOX_DIR: &str = "outbox";
/// How many times a failing hook is tried before it is given up (until `sublaunch deliver`).
pub const MAX_ATTEMPTS: u32 = 8;
/// The wait before the first retry; each retry waits four times longer, up to [`MAX_BACKOFF`].
pub const FIRST_BACKOFF: Duration = Duration::from_secs(5);
/// The longest wait between two attempts.
pub const MAX_BACKOFF: Duration = Duration::from_secs(3600);

/// Who an end is delivered to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Consumer {
    /// The run's completion hook.
    Hook,
}

impl Consumer {
    /// Its name in events.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Hook => "hook",
        }
    }
}

/// One undelivered end.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Delivery {
    /// Always 1.
    pub version: u32,
    /// The idempotency key: `<runId>.<end seq>`.
    pub delivery_id: String,
    /// The run.
    pub run_id: String,
    /// `<run>`.
    pub run_dir: PathBuf,
    /// Who gets it.
    pub consumer: Consumer,
    /// The run's terminal state.
    pub state: String,
    /// Why it did not complete.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_kind: Option<FailureKind>,
    /// The `ended` event's cursor.
    pub cursor: u64,
    /// Attempts made so far.
    pub attempts: u32,
    /// Wall ms before which no sweep tries it (0: at once).
    pub next_attempt_at: u64,
    /// Why the last attempt failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    /// Tried [`MAX_ATTEMPTS`] times: only `sublaunch deliver` tries it again.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub gave_up: bool,
}

impl Delivery {
    /// A first delivery of an end to the hook.
    pub fn new(
        delivery_id: &str,
        run_id: &str,
        run_dir: &Path,
        state: &str,
        failure_kind: Option<FailureKind>,
        cursor: u64,
    ) -> Self {
        Self {
            version: 1,
            delivery_id: delivery_id.to_owned(),
            run_id: run_id.to_owned(),
            run_dir: run_dir.to_owned(),
            consumer: Consumer::Hook,
            state: state.to_owned(),
            failure_kind,
            cursor,
            attempts: 0,
            next_attempt_at: 0,
            last_error: None,
            gave_up: false,
        }
    }

    /// Whether a sweep at `now` (wall ms) tries it; `forced` (`sublaunch deliver`) tries
    /// every one.
    pub fn due(&self, now: u64, forced: bool) -> bool {
        forced || (!self.gave_up && self.next_attempt_at <= now)
    }

    /// Records a failed attempt at `now`: the next one after [`backoff`], or none after
    /// [`MAX_ATTEMPTS`].
    pub fn failed(&mut self, attempt: u32, now: u64, error: String) {
        self.attempts = attempt;
        self.last_error = Some(error);
        self.gave_up = attempt >= MAX_ATTEMPTS;
        let wait = u64::try_from(backoff(attempt).as_millis()).unwrap_or(u64::MAX);
        self.next_attempt_at = now.saturating_add(wait);
    }
}

/// The wait after `attempts` failed attempts: 5 s, 20 s, 80 s, … up to an hour.
pub fn backoff(attempts: u32) -> Duration {
    let factor = 4u32.saturating_pow(attempts.saturating_sub(1));
    FIRST_BACKOFF.saturating_mul(factor).min(MAX_BACKOFF)
}

/// The outbox of one state root.
#[derive(Clone, Debug)]
pub struct Outbox {
    dir: PathBuf,
}

impl Outbox {
    /// The outbox under `root`.
    pub fn under(root: &Path) -> Self {
        Self {
            dir: root.join(OUTBOX_DIR),
        }
    }

    fn open(&self) -> io::Result<Dir> {
        match Dir::open(&self.dir) {
            Ok(dir) => Ok(dir),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                let parent = self.dir.parent().unwrap_or(Path::new("/"));
                Dir::open(parent)?.ensure_child_synced(OUTBOX_DIR)
            }
            Err(e) => Err(e),
        }
    }

    /// Writes `delivery` durably (replacing its earlier state).
    pub fn put(&self, delivery: &Delivery) -> io::Result<()> {
        let dir = self.open()?;
        dir.write_doc(
            &file_name(&delivery.delivery_id),
            delivery,
            DurabilityPolicy::standard().for_kind(DocKind::TerminalStatus),
        )
    }

    /// The entry of `delivery_id`, if it is still undelivered.
    pub fn get(&self, delivery_id: &str) -> io::Result<Option<Delivery>> {
        let dir = match Dir::open(&self.dir) {
            Ok(dir) => dir,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e),
        };
        Ok(dir.read_doc::<Delivery>(&file_name(delivery_id))?.present())
    }

    /// Removes the entry of a delivery made.
    pub fn remove(&self, delivery_id: &str) -> io::Result<()> {
        match Dir::open(&self.dir) {
            Ok(dir) => dir.remove(&file_name(delivery_id)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Every undelivered end, oldest end first; entries that cannot be read are named in the
    /// second list.
    pub fn list(&self) -> io::Result<(Vec<Delivery>, Vec<String>)> {
        let dir = match Dir::open(&self.dir) {
            Ok(dir) => dir,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok((Vec::new(), Vec::new())),
            Err(e) => return Err(e),
        };
        let mut deliveries = Vec::new();
        let mut unreadable = Vec::new();
        for entry in dir.entries()? {
            let Some(name) = entry.name.to_str() else { continue };
            if !name.ends_with(".json") || name.starts_with('.') {
                continue;
            }
            match dir.read_doc::<Delivery>(name) {
                Ok(ReadDoc::Present(delivery)) => deliveries.push(delivery),
                Ok(ReadDoc::Absent) => {}
                Ok(ReadDoc::Corrupt(corrupt)) => unreadable.push(format!("{name}: {}", corrupt.error)),
                Err(e) => unreadable.push(format!("{name}: {e}")),
            }
        }
        deliveries.sort_by_key(|d| d.cursor);
        Ok((deliveries, unreadable))
    }
}

fn file_name(delivery_id: &str) -> String {
    format!("{delivery_id}.json")
}

/// The right to deliver a run's ends: an exclusive `flock` on its `hook.json`.
#[derive(Debug)]
pub struct DeliveryLock {
    fd: OwnedFd,
}

impl DeliveryLock {
    /// Takes the lock if nobody holds it; `Ok(None)` when a deliverer does (or the run has no
    /// hook).
    pub fn try_take(run: &Dir) -> io::Result<Option<Self>> {
        let Some(fd) = open_spec(run)? else { return Ok(None) };
        match retry_eintr(|| fs::flock(&fd, FlockOperation::NonBlockingLockExclusive)) {
            Ok(()) => Ok(Some(Self { fd })),
            Err(Errno::WOULDBLOCK) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }
}

impl DeliveryLock {
    /// Waits until nobody delivers the run's ends, then takes the lock; `Ok(None)` when the run
    /// has no hook.
    pub fn take(run: &Dir) -> io::Result<Option<Self>> {
        let Some(fd) = open_spec(run)? else { return Ok(None) };
        retry_eintr(|| fs::flock(&fd, FlockOperation::LockExclusive))?;
        Ok(Some(Self { fd }))
    }
}

/// The run's `hook.json`, opened for its lock (`Ok(None)`: the run has no hook).
fn open_spec(run: &Dir) -> io::Result<Option<OwnedFd>> {
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    match retry_eintr(|| {
        run.os()
            .files
            .openat(run.fd(), Path::new(hook::SPEC_FILE), flags, Mode::empty())
    }) {
        Ok(fd) => Ok(Some(fd)),
        Err(Errno::NOENT) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

impl Drop for DeliveryLock {
    fn drop(&mut self) {
        let _ = fs::flock(&self.fd, FlockOperation::Unlock);
    }
}

/// Whether the hook got `delivery_id` already (an attempt for this key succeeded).
pub fn delivered(run: &Dir, delivery_id: &str) -> bool {
    matches!(
        run.read_doc::<HookOutcome>(hook::OUTCOME_FILE),
        Ok(ReadDoc::Present(outcome))
            if outcome.delivery_id.as_deref() == Some(delivery_id) && outcome.succeeded()
    )
}

/// Whether a finished-again end may put `delivery` back: nobody is delivering it, it is not
/// in the outbox, and it was not delivered.
pub(crate) fn may_put_again(run: &Dir, outbox: &Outbox, delivery: &Delivery) -> bool {
    let Ok(Some(_lock)) = DeliveryLock::try_take(run) else {
        return false;
    };
    !delivered(run, &delivery.delivery_id) && matches!(outbox.get(&delivery.delivery_id), Ok(None))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn d7_backoff_grows_fourfold_to_an_hour_and_gives_up_after_the_last_attempt() {
        assert_eq!(backoff(1), Duration::from_secs(5));
        assert_eq!(backoff(2), Duration::from_secs(20));
        assert_eq!(backoff(3), Duration::from_secs(80));
        assert_eq!(backoff(7), MAX_BACKOFF);
        let mut delivery = Delivery::new("r.1", "r", Path::new("/runs/r"), "failed", None, 3);
        assert!(delivery.due(0, false));
        delivery.failed(1, 1000, "exit 1".into());
        assert!(!delivery.due(1000, false));
        assert!(delivery.due(1000, true));
        assert!(delivery.due(6000, false));
        delivery.failed(MAX_ATTEMPTS, 7000, "exit 1".into());
        assert!(delivery.gave_up);
        assert!(!delivery.due(u64::MAX, false));
    }

    #[test]
    fn d7_entries_round_trip_and_list_in_end_order() {
        let tmp = tempfile::tempdir().unwrap();
        let outbox = Outbox::under(tmp.path());
        assert!(outbox.list().unwrap().0.is_empty());
        let late = Delivery::new("b.1", "b", Path::new("/runs/b"), "complete", None, 9);
        let early = Delivery::new(
            "a.1",
            "a",
            Path::new("/runs/a"),
            "failed",
            Some(FailureKind::Timeout),
            4,
        );
        outbox.put(&late).unwrap();
        outbox.put(&early).unwrap();
        std::fs::write(tmp.path().join(OUTBOX_DIR).join("c.1.json"), "{").unwrap();
        let (list, unreadable) = outbox.list().unwrap();
        assert_eq!(list, vec![early.clone(), late]);
        assert_eq!(unreadable.len(), 1);
        assert_eq!(outbox.get("a.1").unwrap(), Some(early));
        outbox.remove("a.1").unwrap();
        outbox.remove("a.1").unwrap();
        assert_eq!(outbox.get("a.1").unwrap(), None);
    }

    #[test]
    fn d7_one_deliverer_at_a_time_and_none_without_a_hook() {
        let tmp = tempfile::tempdir().unwrap();
        let run = Dir::open(tmp.path()).unwrap();
        assert!(DeliveryLock::try_take(&run).unwrap().is_none());
        std::fs::write(tmp.path().join(hook::SPEC_FILE), "{}").unwrap();
        let held = DeliveryLock::try_take(&run).unwrap().unwrap();
        assert!(DeliveryLock::try_take(&run).unwrap().is_none());
        drop(held);
        assert!(DeliveryLock::try_take(&run).unwrap().is_some());
    }
}
