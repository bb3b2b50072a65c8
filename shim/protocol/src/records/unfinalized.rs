//! The unfinalized-run index (I9): `<runs>/.unfinalized/<runId>` empty files, one per run
//! whose proof is not final yet, so that a lister finds the runs S13 may have to repair (a
//! detached run ends with a pending proof nobody finalizes, and its shim already released its
//! active marker, I4) without opening every run directory of the root.
//!
//! Like the active-run index (I1, I6): per-run files, no shared document; created with
//! mkdir+create retried on `ENOENT`; every operation idempotent; readers list regular files
//! only (I8). The host records a run when its directory is created and again beside the active
//! marker at the launch commit (I3); whoever makes the proof final settles the entry. An entry
//! left behind by a crash is settled by the next lister; a missing one can only come from a
//! root written by an older version, so a lister that finds the index not built yet (no
//! [`names::UNFINALIZED_BUILT`]) walks every run once and builds it.

use crate::errors::has_errno;
use crate::files::dir::Dir;
use crate::files::doc::ReadDoc;
use crate::files::durability::DurabilityPolicy;
use crate::files::layout::{names, validate_run_id};
use crate::records::history::History;
use crate::records::index::retry_enoent;
use crate::records::proof::{ProcessTerminal, ProofState};
use crate::records::status::read_status;
use rustix::fs::FileType;
use rustix::io::Errno;
use std::io;

/// The unfinalized-run index of one `<runs>` directory.
#[derive(Debug)]
pub struct UnfinalizedRuns<'a> {
    runs: &'a Dir,
}

impl<'a> UnfinalizedRuns<'a> {
    /// The index of `runs` (`<root>/runs`).
    pub fn new(runs: &'a Dir) -> Self {
        Self { runs }
    }

    /// Records `run_id` as unfinalized (create or touch; the directory created on demand).
    /// `durable`: the entry's name is fsynced too, as the launch commit's is (A4), so that a
    /// power loss cannot keep a pending proof while losing the entry that leads to it.
    pub fn record(&self, run_id: &str, durable: bool) -> io::Result<()> {
        retry_enoent(|| {
            let dir = self.runs.ensure_path_synced(&[names::UNFINALIZED_DIR])?;
            dir.touch(run_id)?;
            if durable { dir.sync() } else { Ok(()) }
        })
    }

    /// Removes the entry of `run_id` when the run is [`settled`] (or its directory is gone);
    /// returns whether the run no longer needs one. A missing entry is fine (idempotent).
    ///
    /// The run's history entry is written first (I13): an ended run leaves this index only
    /// for the history, even one that never had an active marker to release (a launch whose
    /// host died before the commit, failed by a lister). An identical entry just written by
    /// the marker's release is not written twice.
    pub fn settle_if_final(&self, run_id: &str, run: Option<&Dir>, policy: DurabilityPolicy) -> io::Result<bool> {
        if let Some(run) = run {
            // D6: the end goes into the stream (and the outbox) before the run leaves the index.
            let root = self.runs.path().parent().unwrap_or(self.runs.path());
            crate::records::stream::record_end_if_ended(root, run)?;
            if !settled(run) {
                return Ok(false);
            }
            if let Ok(ReadDoc::Present(status)) = read_status(run)
                && status.is_terminal()
            {
                History::record_end(self.runs, run_id, &status, policy)?;
            }
        }
        self.remove(run_id)?;
        Ok(true)
    }

    /// The recorded run ids, sorted (regular files named like a run only, I8); `Ok(None)` when
    /// the index was never built under this root (see [`Self::mark_built`]).
    pub fn list(&self) -> io::Result<Option<Vec<String>>> {
        let dir = match self.runs.open_child(names::UNFINALIZED_DIR) {
            Ok(Some(dir)) => dir,
            Ok(None) => return Ok(None),
            Err(e) if has_errno(&e, Errno::NOTDIR) || has_errno(&e, Errno::LOOP) => return Ok(None),
            Err(e) => return Err(e),
        };
        if dir.stat(names::UNFINALIZED_BUILT)?.is_none() {
            return Ok(None);
        }
        let mut ids: Vec<String> = dir
            .entries()?
            .into_iter()
            .filter(|e| e.file_type == FileType::RegularFile)
            .filter_map(|e| e.name.into_string().ok())
            .filter(|name| validate_run_id(name).is_ok())
            .collect();
        ids.sort();
        Ok(Some(ids))
    }

    /// Says the index holds every unfinalized run of the root: called by the lister that
    /// walked all run directories and recorded what it found.
    pub fn mark_built(&self) -> io::Result<()> {
        retry_enoent(|| {
            self.runs
                .ensure_path_synced(&[names::UNFINALIZED_DIR])?
                .touch(names::UNFINALIZED_BUILT)
        })
    }

    fn remove(&self, run_id: &str) -> io::Result<()> {
        match self.runs.open_child(names::UNFINALIZED_DIR) {
            Ok(Some(dir)) => dir.remove(run_id),
            Ok(None) => Ok(()),
            // No index directory (I8): nothing to remove.
            Err(e) if has_errno(&e, Errno::NOTDIR) || has_errno(&e, Errno::LOOP) => Ok(()),
            Err(e) => Err(e),
        }
    }
}

/// Whether nothing is left for anyone to settle on `run`: its status is terminal, its proof
/// file is final (observed, unknown or not-started), and its end is in the event stream (D6;
/// its completion hook, if it has one, then waits in the outbox). A run whose status or proof
/// cannot be read is not settled: it stays in the index, where listers keep looking at it.
pub fn settled(run: &Dir) -> bool {
    let Ok(ReadDoc::Present(status)) = read_status(run) else {
        return false;
    };
    if !status.is_terminal() {
        return false;
    }
    let proof_final = matches!(
        run.read_doc::<ProcessTerminal>(names::PROCESS_TERMINAL),
        Ok(ReadDoc::Present(proof)) if proof.state != ProofState::Pending
    );
    if !proof_final {
        return false;
    }
    crate::records::stream::end_recorded(run, &status)
}

#[cfg(test)]
mod tests;
