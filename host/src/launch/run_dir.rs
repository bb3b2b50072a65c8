//! The run directory. A new `<runs>/<runId>` appears atomically together with a preliminary
//! `status.json` (`state: "queued"`, no pid, the launching host's pid): it is prepared under a
//! hidden staging name and renamed into place, so whenever the host dies every run directory
//! is either absent or holds a valid status. A launch that fails before the shim is spawned
//! removes the directory it created the same way (renamed aside, then emptied).

use rustix::fs::RenameFlags;
use rustix::io::Errno;
use std::io;
use sublaunch_protocol::errors::os_error;
use sublaunch_protocol::files::dir::Dir;
use sublaunch_protocol::files::durability::{DocKind, DurabilityPolicy};
use sublaunch_protocol::files::layout::names;
use sublaunch_protocol::procinfo;
use sublaunch_protocol::records::proof::ProcessTerminal;
use sublaunch_protocol::records::run_id_index::RunIdIndex;
use sublaunch_protocol::records::status::{LIFECYCLE_ARTIFACT_VERSION, RunState, Status, StepStatus, write_status};

/// Suffix of a staging directory (`.<runId>.<pid>.<rand>.creating`).
pub const STAGING_SUFFIX: &str = ".creating";
/// Suffix of a directory being removed (`.<runId>.<pid>.<rand>.removing`).
pub const REMOVING_SUFFIX: &str = ".removing";

/// Whether the launch created the run directory or found it (a caller-chosen id).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Origin {
    /// Created by this launch (removed again if the launch fails before spawning).
    Created,
    /// Existed before (left in place).
    Existing,
}

/// What the preliminary status says.
pub(crate) struct Preliminary<'a> {
    pub run_id: &'a str,
    pub runner_process_instance_id: &'a str,
    pub session_id: Option<&'a str>,
    pub completion_owner_id: Option<&'a str>,
    pub tool_call_id: Option<&'a str>,
    pub mode: &'a str,
    pub cwd: &'a str,
    pub steps: Vec<(String, Option<String>)>,
    pub now: u64,
}

/// The preliminary `queued` status.
pub(crate) fn preliminary_status(p: &Preliminary<'_>) -> Status {
    let mut status = Status {
        lifecycle_artifact_version: Some(LIFECYCLE_ARTIFACT_VERSION),
        run_id: Some(p.run_id.to_owned()),
        session_id: p.session_id.map(str::to_owned),
        completion_owner_id: p.completion_owner_id.map(str::to_owned),
        tool_call_id: p.tool_call_id.map(str::to_owned),
        mode: Some(p.mode.to_owned()),
        state: Some(RunState::Queued),
        started_at: Some(p.now),
        last_update: Some(p.now),
        cwd: Some(p.cwd.to_owned()),
        current_step: Some(0),
        chain_step_count: Some(u32::try_from(p.steps.len().max(1)).unwrap_or(u32::MAX)),
        steps: Some(
            p.steps
                .iter()
                .map(|(agent, model)| StepStatus::pending(agent, model.as_deref()))
                .collect(),
        ),
        process_terminal: Some(ProcessTerminal::pending(p.run_id, p.runner_process_instance_id).to_value()),
        ..Status::default()
    };
    add_host_identity(&mut status);
    status
}

/// Adds the launching host's pid and start identity to a status, as `/proc` names it, with the
/// scope of that view (G45): a host inside a contained agent's pid namespace (a nested launch)
/// is then judged by an outside `list` by the pid it knows, and a lister inside, which could
/// not probe it, leaves it alone.
pub(crate) fn add_host_identity(status: &mut Status) {
    status.launch_host_pid = Some(procinfo::own_host_pid());
    status.launch_host_start_identity = procinfo::own_start_identity();
    status.pid_namespace_scope = procinfo::host_pid_namespace_scope();
}

/// Creates `<runs>/<runId>` holding `status` atomically. `Ok(None)` when the name is taken.
pub(crate) fn create(runs: &Dir, run_id: &str, status: &Status, policy: DurabilityPolicy) -> io::Result<Option<Dir>> {
    // I14: the id is indexed before its directory exists, so a prefix finds every run.
    RunIdIndex::new(runs).record(run_id)?;
    let staging = hidden_name(runs, run_id, STAGING_SUFFIX);
    let dir = runs.ensure_child(&staging)?;
    if let Err(e) = write_status(&dir, status, policy.for_kind(DocKind::RunningStatus)) {
        remove_hidden(runs, &staging);
        return Err(e);
    }
    match rustix::fs::renameat_with(runs.fd(), staging.as_str(), runs.fd(), run_id, RenameFlags::NOREPLACE) {
        Ok(()) => {}
        Err(Errno::EXIST | Errno::NOTEMPTY) => {
            remove_hidden(runs, &staging);
            return Ok(None);
        }
        Err(Errno::INVAL | Errno::NOSYS) if runs.stat(run_id)?.is_none() => {
            // A filesystem without RENAME_NOREPLACE: a plain rename (cannot replace a
            // non-empty directory; the name was checked just before).
            if let Err(e) = runs.rename_to(&staging, runs, run_id) {
                remove_hidden(runs, &staging);
                return Err(e);
            }
        }
        Err(e) => {
            remove_hidden(runs, &staging);
            return Err(os_error(e, "rename", &runs.join(run_id)));
        }
    }
    // A4: the run's name in <runs> is made durable with the initial status, before the commit
    // (`bookkeeping::initial_status`), not here: a power loss before the commit only loses a
    // run nobody was told about.
    runs.open_child(run_id)?
        .map(Some)
        .ok_or_else(|| os_error(Errno::NOENT, "open", &runs.join(run_id)))
}

/// Why the run directory of a launch cannot be had.
#[derive(Clone, Debug, thiserror::Error)]
pub enum RunDirError {
    /// The run id the caller chose is not a valid one.
    #[error(transparent)]
    InvalidId(#[from] sublaunch_protocol::files::layout::InvalidRunId),
    /// The run id the caller chose names another run.
    #[error("Run '{0}' already exists.")]
    Exists(String),
    /// A caller-chosen run directory that exists cannot be opened or looked into.
    #[error("{0}")]
    Open(#[source] std::sync::Arc<std::io::Error>),
    /// The run directory cannot be created.
    #[error("Failed to create the run directory of '{run_id}': {source}")]
    Create {
        /// The run id.
        run_id: String,
        /// Why.
        source: std::sync::Arc<std::io::Error>,
    },
    /// Every random run id tried was taken.
    #[error("Failed to choose a free run id.")]
    NoFreeId,
    /// The creation did not finish (its blocking task was cancelled).
    #[error("Failed to create the run directory.")]
    Unfinished,
}

/// Opens a caller-chosen run directory that already exists; a directory that already holds a
/// `status.json` belongs to another run and is refused.
pub(crate) fn open_existing(runs: &Dir, run_id: &str) -> Result<Option<Dir>, RunDirError> {
    let open = |e: std::io::Error| RunDirError::Open(std::sync::Arc::new(e));
    let dir = match runs.open_child(run_id) {
        Ok(Some(dir)) => dir,
        Ok(None) => return Ok(None),
        Err(e) => return Err(open(e)),
    };
    match dir.stat(names::STATUS) {
        Ok(None) => Ok(Some(dir)),
        Ok(Some(_)) => Err(RunDirError::Exists(run_id.to_owned())),
        Err(e) => Err(open(e)),
    }
}

/// Removes a run directory this launch created: renamed aside first (so it disappears at
/// once), then emptied and removed. Best effort.
pub(crate) fn discard(runs: &Dir, run_id: &str) {
    if let Ok(aside) = aside(runs, run_id) {
        remove_hidden(runs, &aside);
    }
}

/// Renames `<runs>/<run_id>` to a hidden removing name (one step that takes the run out of
/// every listing; a crash after it leaves a directory the sweep removes); returns that name.
pub(crate) fn aside(runs: &Dir, run_id: &str) -> std::io::Result<String> {
    let aside = hidden_name(runs, run_id, REMOVING_SUFFIX);
    runs.rename_to(run_id, runs, &aside)?;
    Ok(aside)
}

/// Empties and removes a hidden staging/removing directory, subdirectories included (an
/// ended run's `control/` or pi's sessions), without following symbolic links. Best effort.
pub(crate) fn remove_hidden(runs: &Dir, name: &str) {
    if let Ok(Some(dir)) = runs.open_child(name) {
        empty(&dir, 0);
    }
    let _ = runs.remove_empty_dir(name);
}

/// Removes what `dir` holds, at most 16 directories deep.
fn empty(dir: &Dir, depth: usize) {
    let Ok(entries) = dir.entries() else { return };
    for entry in entries {
        let Some(name) = entry.name.to_str() else { continue };
        if entry.file_type == rustix::fs::FileType::Directory {
            if depth < 16
                && let Ok(Some(child)) = dir.open_child(name)
            {
                empty(&child, depth + 1);
            }
            let _ = dir.remove_empty_dir(name);
        } else {
            let _ = dir.remove(name);
        }
    }
}

/// The pid of a hidden staging/removing directory name, if it is one.
pub fn hidden_dir_pid(name: &str) -> Option<u32> {
    let inner = name
        .strip_prefix('.')?
        .strip_suffix(STAGING_SUFFIX)
        .or_else(|| name.strip_prefix('.')?.strip_suffix(REMOVING_SUFFIX))?;
    let mut parts = inner.rsplitn(3, '.');
    let _random = parts.next()?;
    parts.next()?.parse().ok()
}

fn hidden_name(runs: &Dir, run_id: &str, suffix: &str) -> String {
    let os = runs.os();
    format!(".{run_id}.{}.{:016x}{suffix}", std::process::id(), os.random.next_u64())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_run_dir_appears_with_its_status_and_collisions_are_reported() {
        let tmp = tempfile::tempdir().unwrap();
        let runs = Dir::open(tmp.path()).unwrap();
        let status = preliminary_status(&Preliminary {
            run_id: "shell-1",
            runner_process_instance_id: "uuid",
            session_id: Some("s"),
            completion_owner_id: None,
            tool_call_id: None,
            mode: "single",
            cwd: "/w",
            steps: vec![("shell".into(), None)],
            now: 1,
        });
        let dir = create(&runs, "shell-1", &status, DurabilityPolicy::standard())
            .unwrap()
            .unwrap();
        assert!(dir.stat("status.json").unwrap().is_some());
        assert!(
            create(&runs, "shell-1", &status, DurabilityPolicy::standard())
                .unwrap()
                .is_none()
        );
        let mut names: Vec<_> = std::fs::read_dir(tmp.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        names.sort();
        assert_eq!(
            names,
            [".ids", "shell-1"],
            "no staging directory left, the id indexed (I14)"
        );
        assert_eq!(
            open_existing(&runs, "shell-1").unwrap_err().to_string(),
            "Run 'shell-1' already exists."
        );
        discard(&runs, "shell-1");
        assert!(!tmp.path().join("shell-1").exists(), "discarded");
        assert_eq!(hidden_dir_pid(".shell-1.4242.00ff00ff00ff00ff.creating"), Some(4242));
        assert_eq!(hidden_dir_pid(".a.b.1.ff.removing"), Some(1));
        assert_eq!(hidden_dir_pid("shell-1"), None);
    }
}
