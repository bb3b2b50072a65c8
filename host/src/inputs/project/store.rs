//! The user's record of trusted projects, kept outside every project so that nothing a
//! repository ships can vouch for itself: one file per project,
//! `<config>/trusted/<hash of the root>.json` (by default under `~/.config/sublaunch/`).
//!
//! Each record is keyed by the project's root and carries the approvals of the programs its
//! configuration runs, each tied to the exact content the user saw when trusting it. A
//! command looks up its one project by name, so its cost does not grow with the number of
//! projects trusted; each record is replaced atomically, so two `sublaunch trust` at once
//! leave one whole record, never a torn one.

use crate::inputs::config_files;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use sublaunch_protocol::files::atomic::{Dir, Durability};

/// The directory of the records in the configuration directory.
pub const STORE_DIR: &str = "trusted";

/// What one program-running piece of project configuration is, as the user approved it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Approval {
    /// The file it is defined in, relative to the project root.
    pub file: PathBuf,
    /// What kind of program it is.
    pub kind: ProgramKind,
    /// The SHA-256 of the content that decides what runs.
    pub sha256: String,
    /// What runs, as shown to the user when it was approved.
    pub shows: String,
}

/// The kinds of project configuration that run a program as the user.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ProgramKind {
    /// `subagents.onEnd` in the project's settings: a shell command run after every run.
    CompletionHook,
    /// An agent file whose runner names its own program (`command`, a program in place of an
    /// adapter's, an external job).
    AgentProgram,
    /// A project agent that takes the name of a built-in or user agent.
    AgentInPlace,
    /// pi extensions in the project's `.pi/` (code pi loads into its own process).
    PiExtensions,
}

impl ProgramKind {
    /// How the kind reads in notes: "the completion hook", …
    pub fn label(self) -> &'static str {
        match self {
            Self::CompletionHook => "the completion hook (subagents.onEnd)",
            Self::AgentProgram => "the agent's own program",
            Self::AgentInPlace => "an agent in place of a built-in or user agent",
            Self::PiExtensions => "the project's pi extensions",
        }
    }
}

/// One trusted project: the record of `sublaunch trust`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TrustedProject {
    /// The project root (canonical).
    pub root: PathBuf,
    /// The programs its configuration runs, as approved.
    #[serde(default)]
    pub approved: Vec<Approval>,
}

/// Why the record cannot be read or written.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A record exists and cannot be used (unreadable, malformed, or writable by others).
    #[error("{0:#}")]
    Unreadable(anyhow::Error),
    /// The record or its directory cannot be written.
    #[error("cannot write {path}: {source}")]
    Write {
        /// The file or directory.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
}

/// The records in a configuration directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TrustStore {
    dir: PathBuf,
}

impl TrustStore {
    /// The records under `config_dir` (`<config_dir>/trusted/`).
    pub fn new(config_dir: &Path) -> Self {
        Self {
            dir: config_dir.join(STORE_DIR),
        }
    }

    /// The file that holds `root`'s record.
    pub fn file_of(&self, root: &Path) -> PathBuf {
        let digest = sublaunch_protocol::files::atomic::sha256_hex(root.as_os_str().as_encoded_bytes());
        self.dir.join(format!("{}.json", &digest[..32]))
    }

    /// The record of `root`, when trusted. A record must be the user's own and writable by
    /// nobody else, as it decides what runs as them, and must name `root`.
    pub fn get(&self, root: &Path) -> Result<Option<TrustedProject>, StoreError> {
        let file = self.file_of(root);
        let Some(record) = read_record(&file)? else {
            return Ok(None);
        };
        Ok((record.root == root).then_some(record))
    }

    /// Every record, in the order of their roots.
    pub fn list(&self) -> Result<Vec<TrustedProject>, StoreError> {
        let entries = match std::fs::read_dir(&self.dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(StoreError::Unreadable(anyhow::anyhow!("{}: {e}", self.dir.display()))),
        };
        let mut records = Vec::new();
        for entry in entries.flatten() {
            let path = entry.path();
            if path.extension().is_some_and(|e| e == "json")
                && let Some(record) = read_record(&path)?
            {
                records.push(record);
            }
        }
        records.sort_by(|a, b| a.root.cmp(&b.root));
        Ok(records)
    }

    /// Records `entry`, replacing what was recorded for its root (atomically, 0600, in a
    /// 0700 directory).
    pub fn record(&self, entry: &TrustedProject) -> Result<(), StoreError> {
        let write_error = |path: &Path| {
            let path = path.to_owned();
            move |source| StoreError::Write { path, source }
        };
        let dir = Dir::create_private(&self.dir).map_err(write_error(&self.dir))?;
        let file = self.file_of(&entry.root);
        let name = file.file_name().and_then(|n| n.to_str()).expect("a hex name");
        let mut bytes = serde_json::to_vec_pretty(entry).expect("a trust record serializes");
        bytes.push(b'\n');
        dir.write(name, &bytes, Durability::Durable).map_err(write_error(&file))
    }

    /// Forgets `root`; whether it was trusted.
    pub fn revoke(&self, root: &Path) -> Result<bool, StoreError> {
        let file = self.file_of(root);
        match std::fs::remove_file(&file) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(source) => Err(StoreError::Write { path: file, source }),
        }
    }
}

fn read_record(file: &Path) -> Result<Option<TrustedProject>, StoreError> {
    if let Some(dir) = file.parent()
        && let Err(untrusted) = crate::inputs::agents::trust::check(dir)
    {
        return Err(StoreError::Unreadable(anyhow::anyhow!("{untrusted}")));
    }
    if let Err(untrusted) = crate::inputs::agents::trust::check(file) {
        return Err(StoreError::Unreadable(anyhow::anyhow!("{untrusted}")));
    }
    config_files::read(file).map_err(StoreError::Unreadable)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt as _;

    fn project(root: &str) -> TrustedProject {
        TrustedProject {
            root: PathBuf::from(root),
            approved: Vec::new(),
        }
    }

    #[test]
    fn records_round_trip_and_concurrent_writers_leave_whole_records() {
        let tmp = tempfile::tempdir().unwrap();
        let store = TrustStore::new(&tmp.path().join("config"));
        assert_eq!(store.get(Path::new("/p1")).unwrap(), None);
        assert_eq!(store.list().unwrap(), Vec::new());
        let writers: Vec<_> = (0..8)
            .map(|i| {
                let store = store.clone();
                std::thread::spawn(move || {
                    for _ in 0..20 {
                        store.record(&project(&format!("/p{}", i % 4))).unwrap();
                    }
                })
            })
            .collect();
        for writer in writers {
            writer.join().unwrap();
        }
        let listed = store.list().unwrap();
        assert_eq!(listed.len(), 4, "one record per root");
        assert_eq!(store.get(Path::new("/p3")).unwrap(), Some(project("/p3")));
        let mode = std::fs::metadata(store.file_of(Path::new("/p3")))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        assert!(store.revoke(Path::new("/p3")).unwrap());
        assert!(!store.revoke(Path::new("/p3")).unwrap());
        assert_eq!(store.get(Path::new("/p3")).unwrap(), None);
    }

    #[test]
    fn a_record_others_can_write_or_naming_another_root_is_not_believed() {
        let tmp = tempfile::tempdir().unwrap();
        let store = TrustStore::new(tmp.path());
        store.record(&project("/x")).unwrap();
        let file = store.file_of(Path::new("/x"));
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o666)).unwrap();
        let error = store.get(Path::new("/x")).unwrap_err().to_string();
        assert!(error.contains("anyone can write it"), "{error}");
        // A record copied to another project's name vouches for nothing there.
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
        std::fs::copy(&file, store.file_of(Path::new("/y"))).unwrap();
        assert_eq!(store.get(Path::new("/y")).unwrap(), None);
    }
}
