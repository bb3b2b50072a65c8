//! Removing ended runs: their directories, result files and result-index entries. A run is
//! removed whole or not at all as others see it: its directory is first renamed aside to a
//! hidden name (one atomic step that takes it out of every listing), then emptied; a removal
//! cut short by a crash leaves only that hidden directory, which the next reconciliation
//! sweeps. Active runs are never touched, nor ended runs whose shim still lives (it may be
//! writing the result or running the completion hook) or whose proof is not final yet (the
//! host that observed the end is still writing it).

use super::RunStore;
use crate::launch::run_dir;
use rustix::fs::FileType;
use std::io;
use std::time::Duration;
use sublaunch_protocol::files::dir::Dir;
use sublaunch_protocol::files::layout::{enc, names};
use sublaunch_protocol::os::processes::{Processes, RealProcesses};
use sublaunch_protocol::procinfo::Liveness;
use sublaunch_protocol::records::history::History;
use sublaunch_protocol::records::status::{RunState, Status};

/// Which ended runs to remove.
#[derive(Clone, Debug, Default)]
pub struct PruneFilter {
    /// Only runs that ended at least this long ago.
    pub older_than: Option<Duration>,
    /// Only runs in these states (empty: every ended state).
    pub states: Vec<RunState>,
    /// Keep the runs whose managed worktrees are still recorded (their work may not be
    /// merged yet): what retention does, where `prune` by hand leaves the choice to the user.
    pub spare_worktree_runs: bool,
}

/// One run removed (or, in a dry run, that would be).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Removed {
    /// The run id.
    pub run_id: String,
    /// Its terminal state.
    pub state: String,
    /// When it ended (wall ms).
    pub ended_at: Option<u64>,
    /// Bytes of its directory and result file.
    pub bytes: u64,
}

/// What a prune did.
#[derive(Clone, Debug, Default)]
pub struct PruneReport {
    /// The runs removed, oldest first.
    pub removed: Vec<Removed>,
    /// Bytes freed (or that would be).
    pub freed_bytes: u64,
    /// Runs that could not be removed, and why.
    pub problems: Vec<String>,
}

/// Removes the ended runs of `store` that `filter` selects (`now_ms`: the wall clock);
/// `dry_run` only reports them.
pub fn prune(store: &RunStore, filter: &PruneFilter, now_ms: u64, dry_run: bool) -> io::Result<PruneReport> {
    prune_among(store, store.run_ids()?, filter, now_ms, dry_run)
}

/// [`prune`] of the runs `ids` only (ids of missing runs are skipped): retention hands it the
/// runs the history says are old enough, so that it does not read every run directory.
pub fn prune_among(
    store: &RunStore,
    ids: Vec<String>,
    filter: &PruneFilter,
    now_ms: u64,
    dry_run: bool,
) -> io::Result<PruneReport> {
    let active = store.active_run_ids()?;
    let with_worktrees: Vec<String> = if filter.spare_worktree_runs {
        // A record that cannot be read still names its run (`<runId>.json`): that run is
        // spared too, since what its worktrees hold is unknown.
        crate::worktrees::record::read_all(store.root().root())?
            .into_iter()
            .filter_map(|record| match record {
                Ok(record) => Some(record.run_id),
                Err(e) => Some(e.path().file_stem()?.to_string_lossy().into_owned()),
            })
            .collect()
    } else {
        Vec::new()
    };
    let cutoff = filter
        .older_than
        .map(|age| now_ms.saturating_sub(u64::try_from(age.as_millis()).unwrap_or(u64::MAX)));
    let mut candidates = Vec::new();
    for id in ids {
        if active.contains(&id) || with_worktrees.contains(&id) {
            continue;
        }
        let Some(run) = store.run_dir(&id)? else { continue };
        store.reconcile_run(&run);
        let Some(status) = super::status_of(&run).filter(Status::is_terminal) else {
            continue;
        };
        let Some(state) = status.state.clone() else { continue };
        if !filter.states.is_empty() && !filter.states.contains(&state) {
            continue;
        }
        if cutoff.is_some_and(|cutoff| status.ended_at.is_none_or(|ended| ended > cutoff)) {
            continue;
        }
        // The shim gone and the proof final: nobody writes into the run any more (a host
        // that observed the end writes the proof last).
        if shim_alive(&status) || !proof_final(&status) {
            continue;
        }
        candidates.push((id, run, status));
    }
    candidates.sort_by_key(|(id, _, status)| (status.ended_at.unwrap_or(0), id.clone()));
    let results = store.root().results();
    let mut report = PruneReport::default();
    for (id, run, status) in candidates {
        let result_file = format!("{id}.json");
        let bytes = tree_bytes(&run)
            + results
                .stat(&result_file)?
                .map_or(0, |s| u64::try_from(s.st_size).unwrap_or(0));
        drop(run);
        if !dry_run && let Err(e) = remove_run(store, &id) {
            report.problems.push(format!("run '{id}' was not removed: {e}"));
            continue;
        }
        report.freed_bytes += bytes;
        report.removed.push(Removed {
            run_id: id,
            state: status.state.as_ref().map_or("unknown", RunState::as_str).to_owned(),
            ended_at: status.ended_at,
            bytes,
        });
    }
    Ok(report)
}

/// Whether the run's shim (by pid and start identity) is still alive.
fn shim_alive(status: &Status) -> bool {
    status
        .pid
        .is_some_and(|pid| RealProcesses.liveness(pid, status.pid_start_identity.as_deref()) != Liveness::Dead)
}

/// Whether the run's process-terminal proof is no longer `pending`.
fn proof_final(status: &Status) -> bool {
    status
        .process_terminal
        .as_ref()
        .and_then(|proof| proof.get("state"))
        .and_then(serde_json::Value::as_str)
        .is_some_and(|state| state != "pending")
}

/// Takes the run out of `<runs>` in one rename, then removes its result and index entry and
/// the renamed tree.
fn remove_run(store: &RunStore, run_id: &str) -> io::Result<()> {
    let runs = store.root().runs();
    let aside = run_dir::aside(runs, run_id)?;
    let results = store.root().results();
    remove_missing_ok(results, &format!("{run_id}.json"))?;
    if let Some(index) = results.open_path(&[names::RESULT_INDEX_DIR, names::RESULT_INDEX_RUNS_DIR])? {
        remove_missing_ok(&index, &format!("{}.json", enc(run_id)))?;
    }
    run_dir::remove_hidden(runs, &aside);
    // I12: best effort, a listing drops an entry whose directory is gone anyway.
    if let Err(e) = History::record_pruned(runs, run_id, store.policy()) {
        log::warn!("could not record pruned run '{run_id}' in the history: {e}");
    }
    Ok(())
}

fn remove_missing_ok(dir: &Dir, name: &str) -> io::Result<()> {
    match dir.remove(name) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        other => other,
    }
}

/// The bytes of the files under `dir` (symbolic links are not followed).
fn tree_bytes(dir: &Dir) -> u64 {
    let Ok(entries) = dir.entries() else { return 0 };
    entries
        .iter()
        .filter_map(|entry| Some((entry.name.to_str()?, entry.file_type)))
        .map(|(name, kind)| {
            if kind == FileType::Directory {
                dir.open_child(name)
                    .ok()
                    .flatten()
                    .map_or(0, |child| tree_bytes(&child))
            } else {
                dir.stat(name)
                    .ok()
                    .flatten()
                    .map_or(0, |stat| u64::try_from(stat.st_size).unwrap_or(0))
            }
        })
        .sum()
}
