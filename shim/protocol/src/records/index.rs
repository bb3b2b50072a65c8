//! The active-run index (I1–I8): `<runs>/.active-runs/<runId>` empty marker files, tool-call
//! aliases `<runs>/.active-runs/tool-calls/<enc(toolCallId)>/<runId>`, and terminal-run entries
//! `<runs>/.terminal-runs/<enc(sessionId)>/<16-digit endedAt>-<enc(runId)>.json`.
//!
//! A directory of per-run files, not a shared document: there is no whole-index lost update.
//! Aliases are created with mkdir+create retried on `ENOENT` (another process may have removed
//! the then-empty directory) and empty directories are removed only with `rmdir` (I6).

use crate::errors::{has_errno, is_capacity_error};
use crate::files::dir::Dir;
use crate::files::doc::ReadDoc;
use crate::files::durability::{DocKind, DurabilityPolicy};
use crate::files::layout::{enc, enc_candidates, names};
use crate::records::history::History;
use crate::records::status::{RunState, Status, read_status};
use rustix::fs::FileType;
use rustix::io::Errno;
use serde::Serialize;
use std::io;
use std::time::Duration;

/// Retries of an alias/marker create after `ENOENT` (I6 a).
pub const CREATE_RETRIES: usize = 3;
/// A marker of a terminal run is released after this age even without an observed proof (I5).
pub const STALE_TERMINAL_MARKER: Duration = Duration::from_secs(24 * 3600);

/// A terminal-run entry (I4): `version` 1, `endedAt` in wall ms.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct TerminalRunEntry<'a> {
    version: u32,
    run_id: &'a str,
    session_id: &'a str,
    ended_at: u64,
}

/// What [`ActiveRunIndex::mark`] did.
#[derive(Debug, Default)]
pub struct MarkOutcome {
    /// The alias failed (logged by the caller, never fatal, I2).
    pub alias_error: Option<io::Error>,
    /// I7: the status was already terminal, so the new marker was removed again.
    pub withdrawn: bool,
}

/// What [`ActiveRunIndex::release`] did.
#[derive(Debug, Default)]
pub struct ReleaseOutcome {
    /// The marker existed and was removed.
    pub marker_removed: bool,
    /// Aliases removed.
    pub aliases_removed: usize,
    /// The terminal-run entry was written.
    pub terminal_entry_written: bool,
    /// Non-fatal problems (alias removal, non-capacity terminal-entry errors), to be logged.
    pub warnings: Vec<String>,
}

/// One marker of [`ActiveRunIndex::list`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Marker {
    /// The run id (the file name).
    pub run_id: String,
    /// The marker's mtime in epoch ms.
    pub mtime_ms: u64,
}

/// The active-run index of one `<runs>` directory.
#[derive(Debug)]
pub struct ActiveRunIndex {
    runs: Dir,
    policy: DurabilityPolicy,
}

impl ActiveRunIndex {
    /// The index of `runs` (`<root>/runs`).
    pub fn new(runs: &Dir, policy: DurabilityPolicy) -> io::Result<Self> {
        Ok(Self {
            runs: runs.try_clone()?,
            policy,
        })
    }

    /// I2: create-or-touch the marker (and the alias when `tool_call_id` is known). A marker
    /// failure is an error; an alias failure is reported in the outcome.
    pub fn mark(&self, run_id: &str, tool_call_id: Option<&str>) -> io::Result<MarkOutcome> {
        self.touch_file(&[names::ACTIVE_RUNS_DIR], run_id)?;
        let alias_error = tool_call_id.and_then(|tc| {
            self.touch_file(&[names::ACTIVE_RUNS_DIR, names::TOOL_CALLS_DIR, &enc(tc)], run_id)
                .err()
        });
        Ok(MarkOutcome {
            alias_error,
            withdrawn: false,
        })
    }

    /// I2 + I7: mark, then re-read `status.json`; if the run is already terminal, remove the
    /// marker again (no resurrection).
    pub fn mark_checked(&self, run_id: &str, tool_call_id: Option<&str>, run: &Dir) -> io::Result<MarkOutcome> {
        let mut outcome = self.mark(run_id, tool_call_id)?;
        if let Ok(ReadDoc::Present(status)) = read_status(run)
            && status.is_terminal()
        {
            self.unmark(run_id, tool_call_id)?;
            outcome.withdrawn = true;
        }
        Ok(outcome)
    }

    /// I4: release for a non-active `state`. Unlinks the marker (other errors than ENOENT
    /// propagate), removes the aliases (straight to the tool call's directory when known, from
    /// `tool_call_id` or the status; otherwise a scan), then writes the terminal-run entry when
    /// `status.json` has exactly `state` and a `sessionId` (capacity errors propagate).
    pub fn release(
        &self,
        run_id: &str,
        state: &RunState,
        tool_call_id: Option<&str>,
        run: Option<&Dir>,
    ) -> io::Result<ReleaseOutcome> {
        let status = run.and_then(|r| read_status(r).ok()).and_then(ReadDoc::present);
        // I13: the history entry before the marker goes, so an ended run is always in one
        // of the two indexes; a capacity error keeps the marker for a later release.
        let history_warning = match status.as_ref().filter(|s| s.is_terminal()) {
            Some(status) => match History::record_end(&self.runs, run_id, status, self.policy) {
                Err(e) if is_capacity_error(&e) => return Err(e),
                Err(e) => Some(format!("Failed to record run '{run_id}' in the history: {e}")),
                Ok(()) => None,
            },
            None => None,
        };
        let mut outcome = ReleaseOutcome {
            marker_removed: self.unlink_marker(run_id)?,
            warnings: history_warning.into_iter().collect(),
            ..ReleaseOutcome::default()
        };
        let tool_call = tool_call_id
            .map(str::to_owned)
            .or_else(|| status.as_ref().and_then(|s| s.tool_call_id.clone()));
        match self.remove_aliases(run_id, tool_call.as_deref()) {
            Ok(n) => outcome.aliases_removed = n,
            Err(e) => outcome
                .warnings
                .push(format!("Failed to remove tool-call alias of run '{run_id}': {e}")),
        }
        if let Some(status) = status.filter(|s| s.state.as_ref() == Some(state))
            && let Some(session_id) = status.session_id.clone()
        {
            let ended_at = status
                .ended_at
                .or(status.last_update)
                .unwrap_or_else(|| self.runs.os().clock.wall_ms());
            match self.write_terminal_entry(&session_id, run_id, ended_at) {
                Ok(()) => outcome.terminal_entry_written = true,
                Err(e) if is_capacity_error(&e) => return Err(e),
                Err(e) => outcome
                    .warnings
                    .push(format!("Failed to record terminal run '{run_id}': {e}")),
            }
        }
        Ok(outcome)
    }

    /// Removes the marker and aliases without writing a terminal entry (I7 withdrawal, phantom
    /// markers of I5).
    pub fn unmark(&self, run_id: &str, tool_call_id: Option<&str>) -> io::Result<()> {
        self.unlink_marker(run_id)?;
        self.remove_aliases(run_id, tool_call_id)?;
        Ok(())
    }

    /// Writes `.terminal-runs/<enc(sid)>/<16-digit endedAt>-<enc(runId)>.json` (I4), unless it
    /// is there already: the shim wrote it durably when it released the run, and the host's
    /// release after the shim exited finds it (the name holds everything the entry says).
    pub fn write_terminal_entry(&self, session_id: &str, run_id: &str, ended_at: u64) -> io::Result<()> {
        let name = names::terminal_run_entry(ended_at, run_id);
        if let Ok(Some(dir)) = self.runs.open_path(&[names::TERMINAL_RUNS_DIR, &enc(session_id)])
            && let Ok(Some(stat)) = dir.stat(&name)
            && rustix::fs::FileType::from_raw_mode(stat.st_mode) == FileType::RegularFile
            && stat.st_size > 0
        {
            return Ok(());
        }
        let entry = TerminalRunEntry {
            version: 1,
            run_id,
            session_id,
            ended_at,
        };
        let options = self.policy.for_kind(DocKind::TerminalRunEntry);
        retry_enoent(|| {
            let dir = self
                .runs
                .ensure_path_synced(&[names::TERMINAL_RUNS_DIR, &enc(session_id)])?;
            dir.write_doc(&name, &entry, options)
        })
    }

    /// I8: the markers (regular files only); `Ok(None)` when there is no index directory.
    pub fn list(&self) -> io::Result<Option<Vec<Marker>>> {
        let Some(active) = self.runs.open_child(names::ACTIVE_RUNS_DIR)? else {
            return Ok(None);
        };
        let mut markers = Vec::new();
        for entry in active.entries()? {
            if entry.file_type != FileType::RegularFile {
                continue;
            }
            let Some(run_id) = entry.name.to_str() else { continue };
            let Some(stat) = active.stat(run_id)? else { continue };
            #[allow(clippy::useless_conversion)] // the field types differ between platforms
            let mtime_ms = u64::try_from(stat.st_mtime).unwrap_or(0) * 1000
                + u64::try_from(stat.st_mtime_nsec).unwrap_or(0) / 1_000_000;
            markers.push(Marker {
                run_id: run_id.to_owned(),
                mtime_ms,
            });
        }
        markers.sort_by(|a, b| a.run_id.cmp(&b.run_id));
        Ok(Some(markers))
    }

    /// I8: run ids aliased under a tool call; `[]` when the directory is missing or not a
    /// directory.
    pub fn list_tool_call(&self, tool_call_id: &str) -> io::Result<Vec<String>> {
        let mut out = Vec::new();
        for name in enc_candidates(tool_call_id) {
            let dir = match self
                .runs
                .open_path(&[names::ACTIVE_RUNS_DIR, names::TOOL_CALLS_DIR, &name])
            {
                Ok(Some(dir)) => dir,
                Ok(None) => continue,
                Err(e) if has_errno(&e, Errno::NOTDIR) || has_errno(&e, Errno::LOOP) => continue,
                Err(e) => return Err(e),
            };
            for entry in dir.entries()? {
                if entry.file_type == FileType::RegularFile
                    && let Some(id) = entry.name.to_str()
                    && !out.iter().any(|o| o == id)
                {
                    out.push(id.to_owned());
                }
            }
        }
        out.sort();
        Ok(out)
    }

    fn unlink_marker(&self, run_id: &str) -> io::Result<bool> {
        let Some(active) = self.runs.open_child(names::ACTIVE_RUNS_DIR)? else {
            return Ok(false);
        };
        let existed = active.stat(run_id)?.is_some();
        active.remove(run_id)?;
        Ok(existed)
    }

    fn remove_aliases(&self, run_id: &str, tool_call_id: Option<&str>) -> io::Result<usize> {
        let Some(tool_calls) = self.runs.open_path(&[names::ACTIVE_RUNS_DIR, names::TOOL_CALLS_DIR])? else {
            return Ok(0);
        };
        let dirs: Vec<String> = match tool_call_id {
            Some(tc) => enc_candidates(tc),
            None => tool_calls
                .entries()?
                .into_iter()
                .filter(|e| e.file_type == FileType::Directory)
                .filter_map(|e| e.name.into_string().ok())
                .collect(),
        };
        let mut removed = 0;
        for name in dirs {
            let Some(dir) = tool_calls.open_child(&name)? else {
                continue;
            };
            if dir.stat(run_id)?.is_some() {
                dir.remove(run_id)?;
                removed += 1;
            }
            // I6 b: never recursive; ENOTEMPTY (another run's alias) is fine.
            tool_calls.remove_empty_dir(&name)?;
        }
        Ok(removed)
    }

    /// Creates or touches `name` inside the nested directory, retrying mkdir+create on ENOENT.
    fn touch_file(&self, components: &[&str], name: &str) -> io::Result<()> {
        // I2 ⊕: `Dir::touch` sets the mtime explicitly, so it reflects the latest mark.
        retry_enoent(|| self.runs.ensure_path_synced(components)?.touch(name))
    }
}

/// Runs `op`, retrying up to [`CREATE_RETRIES`] times when it fails with ENOENT (I6 a): another
/// process may have removed the then-empty directory.
pub(crate) fn retry_enoent<T>(mut op: impl FnMut() -> io::Result<T>) -> io::Result<T> {
    let mut attempt = 0;
    loop {
        match op() {
            Err(e) if has_errno(&e, Errno::NOENT) && attempt < CREATE_RETRIES => attempt += 1,
            other => return other,
        }
    }
}

/// A lister's verdict on one marker (I5).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MarkerVerdict {
    /// Report the run as active.
    Active,
    /// The run directory is missing: release the marker as `failed` and do not report it.
    Phantom,
    /// The run is terminal and its proof observed (or the marker is older than 24 h): release.
    ReleaseTerminal(RunState),
    /// The run is terminal but not yet finalized: keep the marker, do not report it as active.
    TerminalPending,
}

/// I5: what a lister does with a marker, given whether the run directory exists, its status
/// (if readable) and the marker's age.
pub fn judge_marker(run_dir_exists: bool, status: Option<&Status>, marker_age: Duration) -> MarkerVerdict {
    if !run_dir_exists {
        return MarkerVerdict::Phantom;
    }
    match status {
        Some(status) if status.is_terminal() => {
            // ⊕ A final proof (observed, unknown, not-started) will not change any more, so the
            // marker of an ended run goes at once; a pending one waits for its observer.
            let settled = status
                .proof_state()
                .is_some_and(|state| state != crate::records::proof::ProofState::Pending);
            if settled || marker_age > STALE_TERMINAL_MARKER {
                MarkerVerdict::ReleaseTerminal(status.state.clone().unwrap_or(RunState::Failed))
            } else {
                MarkerVerdict::TerminalPending
            }
        }
        _ => MarkerVerdict::Active,
    }
}

#[cfg(test)]
mod tests;
