//! Retention: ended runs are removed by themselves once they are older than the period the
//! user sets (`subagents.retention` in the user's settings, 30 days when unset, `"off"` to keep
//! every run). The check is due at most once a day per state root (a stamp in `<runs>`), and
//! it is [`super::prune`] with an age: it never touches an active run, a run whose shim still
//! lives or whose proof is not final (a host may still be writing its end), nor a run whose
//! managed worktrees are still recorded (their work may not be merged; `sublaunch worktrees
//! prune` decides about those first).

use super::RunStore;
use super::prune::{PruneFilter, PruneReport, prune};
use std::io;
use std::time::Duration;

/// How often a state root is checked for runs past their retention.
pub const CHECK_EVERY: Duration = Duration::from_secs(24 * 3600);

/// The stamp of the last check, in `<runs>` (a hidden name: never a run id).
pub const STAMP: &str = ".retention-checked";

/// Whether the root's last retention check is older than [`CHECK_EVERY`] (one `stat`). A root
/// never checked is stamped now and is not due: its runs are first looked at a day later, so
/// a fresh root (every test's, every new user's) never starts a pruner. A stamp from the
/// future (the clock was set back) does not postpone the check.
pub fn check_due(store: &RunStore, now_ms: u64) -> bool {
    let every = u64::try_from(CHECK_EVERY.as_millis()).unwrap_or(u64::MAX);
    match store.root().runs().mtime_ms(STAMP) {
        Ok(Some(last)) => !(last <= now_ms && now_ms - last < every),
        Ok(None) => {
            let _ = store.root().runs().stamp(STAMP);
            false
        }
        Err(_) => false,
    }
}

/// Removes the ended runs older than `retention` (see the module doc) and stamps the check;
/// `dry_run` only reports them and leaves the stamp alone.
pub fn apply(store: &RunStore, retention: Duration, now_ms: u64, dry_run: bool) -> io::Result<PruneReport> {
    if !dry_run {
        // Stamped first: of two processes finding the check due at once both may prune, which
        // is harmless (each run is removed whole or not at all).
        store.root().runs().stamp(STAMP)?;
    }
    let filter = PruneFilter {
        older_than: Some(retention),
        spare_worktree_runs: true,
        ..PruneFilter::default()
    };
    prune(store, &filter, now_ms, dry_run)
}
