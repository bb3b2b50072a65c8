//! The managed worktrees of runs as the run store sees them: listing them and pruning those
//! of ended runs ([`crate::worktrees::prune`]), each run's phase judged here, after the
//! store reconciled it (S13), since a worktree outlives the launch that made it.

use super::{RunStore, status_of};
use crate::worktrees::Git;
use crate::worktrees::prune::{self, Listed, Pruned, RunPhase};
use std::io;
use sublaunch_protocol::records::status::Status;

/// Every recorded worktree of the store's root, and the records that could not be read.
pub fn list(store: &RunStore, git: &Git) -> io::Result<(Vec<Listed>, Vec<String>)> {
    prune::list(store.root().root(), git, |run_id| phase_of(store, run_id))
}

/// Removes the worktrees (and branches) of the store's ended runs (see
/// [`crate::worktrees::prune`]); `dry_run` only says what would go.
pub fn prune(store: &RunStore, git: &Git, force: bool, dry_run: bool) -> io::Result<(Vec<Pruned>, Vec<String>)> {
    prune::prune(
        store.root().root(),
        git,
        |run_id| phase_of(store, run_id),
        force,
        dry_run,
    )
}

/// Where the run `run_id` stands, reconciled first so a run whose shim died unobserved counts
/// as ended.
pub fn phase_of(store: &RunStore, run_id: &str) -> RunPhase {
    let Ok(Some(run)) = store.run_dir(run_id) else {
        return RunPhase::Gone;
    };
    store.reconcile_run(&run);
    match status_of(&run) {
        Some(status) if status.is_terminal() => RunPhase::Ended(state_word(&status)),
        // A status that cannot be read is a run we cannot prove ended.
        Some(status) => RunPhase::Active(state_word(&status)),
        None => RunPhase::Active("unknown".into()),
    }
}

fn state_word(status: &Status) -> String {
    status.state.as_ref().map_or("unknown", |s| s.as_str()).to_owned()
}
