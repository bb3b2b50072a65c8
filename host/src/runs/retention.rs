//! Retention: ended runs are removed by themselves once they are older than the period the
//! user sets (`subagents.retention` in the user's settings, 30 days when unset, `"off"` to keep
//! every run). The check is due at most once a day per state root (a stamp in `<runs>`), and
//! it is [`super::prune`] with an age, of the runs the history index says are old enough: it never touches an active run, a run whose shim still
//! lives or whose proof is not final (a host may still be writing its end), nor a run whose
//! managed worktrees are still recorded (their work may not be merged; `sublaunch worktrees
//! prune` decides about those first).

use super::RunStore;
use super::prune::{PruneFilter, PruneReport, prune_among};
use std::collections::HashSet;
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
///
/// The candidates come from the history index (I10, I12), not from every run directory: the runs
/// whose newest entry ended (or, not known to have ended, started) before the cutoff; each is
/// then judged by its own directory as `prune` judges it. When the index holds more dead
/// lines (tombstones, lines of pruned or re-ended runs) than live runs, it is rebuilt, which
/// costs a walk of the live runs only and also records runs an older version ended.
pub fn apply(store: &RunStore, retention: Duration, now_ms: u64, dry_run: bool) -> io::Result<PruneReport> {
    if !dry_run {
        // Stamped first: of two processes finding the check due at once both may prune, which
        // is harmless (each run is removed whole or not at all).
        store.root().runs().stamp(STAMP)?;
    }
    let cutoff = now_ms.saturating_sub(u64::try_from(retention.as_millis()).unwrap_or(u64::MAX));
    let scan = scan_history(store, cutoff)?;
    let filter = PruneFilter {
        older_than: Some(retention),
        spare_worktree_runs: true,
        ..PruneFilter::default()
    };
    let report = prune_among(store, scan.old_enough, &filter, now_ms, dry_run)?;
    let live = scan.live.saturating_sub(report.removed.len());
    let dead = scan.lines.saturating_sub(live);
    if !dry_run && dead > live && dead >= COMPACT_AFTER_DEAD_LINES {
        super::history::rebuild(store)?;
    }
    Ok(report)
}

/// The history index is rebuilt once it has at least this many dead lines, and more of them
/// than live runs (so a rebuild's walk is paid for by the lines it drops).
pub const COMPACT_AFTER_DEAD_LINES: usize = 1000;

/// What one pass over the history found.
struct HistoryScan {
    /// The runs old enough to be pruned, if their directories agree.
    old_enough: Vec<String>,
    /// Runs whose newest line is not a tombstone.
    live: usize,
    /// Lines read.
    lines: usize,
}

/// Reads the whole history once, newest first: a run's newest line speaks for it.
fn scan_history(store: &RunStore, cutoff: u64) -> io::Result<HistoryScan> {
    let history = super::history::open_or_rebuild(store)?;
    let mut entries = history
        .newest_first(None)
        .map_err(|e| io::Error::other(e.to_string()))?;
    let mut seen = HashSet::new();
    let mut scan = HistoryScan {
        old_enough: Vec::new(),
        live: 0,
        lines: 0,
    };
    for (entry, _) in entries.by_ref() {
        scan.lines += 1;
        if !seen.insert(entry.run_id.clone()) || entry.pruned {
            continue;
        }
        scan.live += 1;
        // A run that ended before the cutoff also started before it; an entry written before
        // the run ended (by a rebuild) only knows its start.
        let since = if entry.is_terminal() {
            entry.ended_at
        } else {
            entry.started_at
        };
        if since.is_some_and(|at| at <= cutoff) {
            scan.old_enough.push(entry.run_id);
        }
    }
    match entries.take_error() {
        Some(e) => Err(e),
        None => Ok(scan),
    }
}
