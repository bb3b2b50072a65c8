//! The user's record of trusted projects: `<config>/trust.json` (by default
//! `~/.config/sublaunch/trust.json`), kept outside every project so that nothing a repository
//! ships can vouch for itself.
//!
//! Each trusted project is keyed by its root and carries the approvals of the programs its
//! configuration runs, each tied to the exact content the user saw when trusting it. The file
//! is replaced atomically under an exclusive lock on the configuration directory, so two
//! `sublaunch trust` at once never lose each other's entry.

use crate::inputs::config_files;
use rustix::fs::FlockOperation;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use sublaunch_protocol::atomic::{Dir, Durability};

/// The store's file name in the configuration directory.
pub const STORE_FILE: &str = "trust.json";

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

/// One trusted project.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TrustedProject {
    /// The project root (canonical).
    pub root: PathBuf,
    /// The programs its configuration runs, as approved.
    #[serde(default)]
    pub approved: Vec<Approval>,
}

/// The whole record.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TrustStore {
    /// The format version (1).
    #[serde(default = "version_one")]
    pub version: u32,
    /// The trusted projects, in the order they were first trusted.
    #[serde(default)]
    pub projects: Vec<TrustedProject>,
}

fn version_one() -> u32 {
    1
}

/// Why the store cannot be read or written.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// No configuration directory (no `$HOME`, `$XDG_CONFIG_HOME` or `$SUBLAUNCH_CONFIG_DIR`).
    #[error("there is no configuration directory to keep trusted projects in (set HOME)")]
    NoConfigDir,
    /// The file exists and cannot be used.
    #[error("{0:#}")]
    Unreadable(anyhow::Error),
    /// The file or its directory cannot be written.
    #[error("cannot write {path}: {source}")]
    Write {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
}

impl TrustStore {
    /// The store in `config_dir`; an absent file is an empty store. The file must be the
    /// user's own and not writable by others, as it decides what runs as them.
    pub fn load(config_dir: &Path) -> Result<Self, StoreError> {
        let path = config_dir.join(STORE_FILE);
        if let Err(untrusted) = crate::inputs::agents::trust::check(&path) {
            return Err(StoreError::Unreadable(anyhow::anyhow!("{untrusted}")));
        }
        let store: Option<Self> = config_files::read(&path).map_err(StoreError::Unreadable)?;
        Ok(store.unwrap_or_default())
    }

    /// The entry for `root`, when trusted.
    pub fn get(&self, root: &Path) -> Option<&TrustedProject> {
        self.projects.iter().find(|p| p.root == root)
    }

    /// Records `entry` in the store in `config_dir`, replacing what was recorded for its root.
    pub fn record(config_dir: &Path, entry: &TrustedProject) -> Result<(), StoreError> {
        Self::update(config_dir, |store| {
            store.projects.retain(|p| p.root != entry.root);
            store.projects.push(entry.clone());
        })
    }

    /// Forgets the project at `root`; whether it was trusted.
    pub fn revoke(config_dir: &Path, root: &Path) -> Result<bool, StoreError> {
        Self::update(config_dir, |store| {
            let before = store.projects.len();
            store.projects.retain(|p| p.root != root);
            before != store.projects.len()
        })
    }

    /// Changes the store in `config_dir` with `change` under the store's lock, and writes it
    /// back atomically (0600). Returns what `change` returned.
    pub fn update<T>(config_dir: &Path, change: impl FnOnce(&mut Self) -> T) -> Result<T, StoreError> {
        let path = config_dir.join(STORE_FILE);
        let write_error = |source| StoreError::Write {
            path: path.clone(),
            source,
        };
        let dir = Dir::create_private(config_dir).map_err(write_error)?;
        // The lock is the directory itself: it needs no file of its own and is released when
        // this process dies.
        sublaunch_protocol::os::files::retry_eintr(|| rustix::fs::flock(dir.fd(), FlockOperation::LockExclusive))
            .map_err(|e| write_error(e.into()))?;
        let mut store = Self::load(config_dir)?;
        let answer = change(&mut store);
        let mut bytes = serde_json::to_vec_pretty(&store).expect("the trust store serializes");
        bytes.push(b'\n');
        dir.write(STORE_FILE, &bytes, Durability::Durable)
            .map_err(write_error)?;
        Ok(answer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_round_trip_and_concurrent_updates_keep_every_entry() {
        let tmp = tempfile::tempdir().unwrap();
        let config = tmp.path().join("config");
        assert_eq!(TrustStore::load(&config).unwrap(), TrustStore::default());
        let writers: Vec<_> = (0..8)
            .map(|i| {
                let config = config.clone();
                std::thread::spawn(move || {
                    TrustStore::update(&config, |store| {
                        store.projects.push(TrustedProject {
                            root: PathBuf::from(format!("/p{i}")),
                            approved: Vec::new(),
                        });
                    })
                    .unwrap();
                })
            })
            .collect();
        for writer in writers {
            writer.join().unwrap();
        }
        let store = TrustStore::load(&config).unwrap();
        assert_eq!(store.projects.len(), 8, "no update lost another");
        assert!(store.get(Path::new("/p3")).is_some());
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(config.join(STORE_FILE)).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    #[test]
    fn a_store_others_can_write_is_not_believed() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(
            tmp.path().join(STORE_FILE),
            r#"{"version":1,"projects":[{"root":"/x"}]}"#,
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(tmp.path().join(STORE_FILE), std::fs::Permissions::from_mode(0o666)).unwrap();
        let error = TrustStore::load(tmp.path()).unwrap_err().to_string();
        assert!(error.contains("anyone can write it"), "{error}");
    }
}
