//! The record of a run's worktrees: `<root>/worktrees/<run-id>.json`, written before the
//! first `git worktree add` and removed after the last worktree of the run is gone. It lives
//! beside the run directory, not in it, so that pruning a run (`sublaunch prune`) leaves what
//! is needed to find its worktrees in the user's repositories.

use serde::{Deserialize, Serialize};
use std::io;
use std::path::PathBuf;
use sublaunch_protocol::files::atomic::Durability;
use sublaunch_protocol::files::dir::Dir;
use sublaunch_protocol::files::doc::ReadDoc;

/// The directory under the state root that holds the records (and, by default, the
/// worktrees: `<root>/worktrees/<run-id>/<step>[-<task>]`).
pub const WORKTREES_DIR: &str = "worktrees";
const VERSION: u32 = 1;

/// One worktree of a run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorktreeEntry {
    /// `<step>` or `<step>-<task>`, 1-based: the last part of its branch and directory.
    pub name: String,
    /// The worktree's directory.
    pub path: String,
    /// Its branch, `sublaunch/<run-id>/<name>`.
    pub branch: String,
    /// The commit it was created at.
    pub base_commit: String,
    /// The main working tree of its repository.
    pub repository: String,
}

/// Every worktree of one run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorktreeRecord {
    /// Format version (1).
    pub version: u32,
    /// The run.
    pub run_id: String,
    /// When the launch created them (wall ms).
    pub created_at: u64,
    /// The worktrees, in step order.
    pub worktrees: Vec<WorktreeEntry>,
}

impl WorktreeRecord {
    /// A record of `worktrees` for `run_id`.
    pub fn new(run_id: &str, created_at: u64, worktrees: Vec<WorktreeEntry>) -> Self {
        Self {
            version: VERSION,
            run_id: run_id.to_owned(),
            created_at,
            worktrees,
        }
    }
}

fn file_name(run_id: &str) -> String {
    format!("{run_id}.json")
}

/// `<root>/worktrees`, created (0700) when missing.
pub fn records_dir(root: &Dir) -> io::Result<Dir> {
    root.ensure_child_synced(WORKTREES_DIR)
}

/// Writes (or replaces) `record`, durably: it is the only trace of directories and branches
/// made outside the state root.
pub fn write(dir: &Dir, record: &WorktreeRecord) -> io::Result<()> {
    dir.write_doc(&file_name(&record.run_id), record, Durability::Durable)
}

/// Removes the record of `run_id` (absent is fine).
pub fn remove(dir: &Dir, run_id: &str) -> io::Result<()> {
    dir.remove(&file_name(run_id))
}

/// A worktree record that could not be read (pruning reports it and leaves its worktrees).
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// Written by a sublaunch of another format version.
    #[error("{path}: format version {version} is not one this sublaunch reads")]
    Version {
        /// The record file.
        path: PathBuf,
        /// Its format version.
        version: u32,
    },
    /// Not a worktree record.
    #[error("{0}: not a worktree record")]
    NotARecord(PathBuf),
    /// It could not be read.
    #[error("{path}: {error}")]
    Read {
        /// The record file.
        path: PathBuf,
        /// Why not.
        error: io::Error,
    },
}

impl RecordError {
    /// The record file (named after its run: `<runId>.json`).
    pub fn path(&self) -> &std::path::Path {
        match self {
            Self::Version { path, .. } | Self::NotARecord(path) | Self::Read { path, .. } => path,
        }
    }
}

/// Every record under `<root>/worktrees`, by run id; a record that does not parse is
/// reported by name, not dropped silently.
pub fn read_all(root: &Dir) -> io::Result<Vec<Result<WorktreeRecord, RecordError>>> {
    let Some(dir) = root.open_child(WORKTREES_DIR)? else {
        return Ok(Vec::new());
    };
    let mut names: Vec<String> = dir
        .entries()?
        .into_iter()
        .filter_map(|e| e.name.into_string().ok())
        .filter(|n| n.ends_with(".json") && !n.starts_with('.'))
        .collect();
    names.sort();
    let mut out = Vec::with_capacity(names.len());
    for name in names {
        let path = dir.join(&name);
        out.push(match dir.read_doc::<WorktreeRecord>(&name) {
            Ok(ReadDoc::Present(record)) if record.version == VERSION => Ok(record),
            Ok(ReadDoc::Present(record)) => Err(RecordError::Version {
                path,
                version: record.version,
            }),
            Ok(ReadDoc::Absent) => continue,
            Ok(ReadDoc::Corrupt(_)) => Err(RecordError::NotARecord(path)),
            Err(error) => Err(RecordError::Read { path, error }),
        });
    }
    Ok(out)
}
