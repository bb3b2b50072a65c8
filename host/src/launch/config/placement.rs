//! Placed steps: a step the plan put on a Herdr machine runs `ssh` from the launch's
//! local directory, with the machine's directory in `steps[i].placement` (P-H3, P-H5).

use std::path::Path;
use sublaunch_contract::PlanStep;
use sublaunch_protocol::records::config::{Placement, StepConfig};

pub use crate::environment::{SSH_CONFIG_VAR as SSH_CONFIG_ENV, SSH_CONTROL_DIR_VAR as CONTROL_DIR_ENV};

/// A socket path is at most 108 bytes and ssh adds a 17-byte suffix while it creates one;
/// `%C` is 40 hex characters. Roots longer than this get the short fallback directory.
const SOCKET_PATH_BUDGET: usize = 100;

/// What every placed step of a launch shares.
#[derive(Clone, Debug)]
pub struct Placer {
    local_cwd: String,
    control_dir: String,
    /// The user named the control directory (`$SUBLAUNCH_SSH_CONTROL_DIR`).
    control_dir_given: bool,
    ssh_config: Option<String>,
}

impl Placer {
    /// Placement for a launch rooted at `root` whose local directory is `local_cwd`.
    pub fn new(root: &Path, local_cwd: String, env: &crate::Environment) -> Self {
        Self {
            local_cwd,
            control_dir: control_dir(root, env),
            control_dir_given: env.ssh_control_dir().is_some(),
            ssh_config: env.ssh_config(),
        }
    }

    /// Makes `config` (built for plan step `index`) run on its machine, or says why it cannot.
    /// Whether the adapter can be wrapped was settled by admission ([`crate::launch::admission`]).
    pub fn place(&self, step: &PlanStep, config: &mut StepConfig) -> Result<(), ControlDirError> {
        let Some(machine) = &step.machine else { return Ok(()) };
        if self.control_dir_given {
            check_given_control_dir(&self.control_dir)?;
        }
        config.cwd = Some(self.local_cwd.clone());
        if let Some(command) = &mut config.command {
            command.cwd = Some(self.local_cwd.clone());
        }
        config.placement = Some(Placement {
            machine: machine.label.clone().unwrap_or_else(|| machine.id.clone()),
            target: machine.target.trim().to_owned(),
            cwd: machine.cwd.clone(),
            control_dir: self.control_dir.clone(),
            ssh_config: self.ssh_config.clone(),
        });
        Ok(())
    }
}

/// Why the ssh control directory the user named cannot be used.
#[derive(Clone, Debug, thiserror::Error)]
pub enum ControlDirError {
    /// It cannot be looked at.
    #[error(
        "the ssh control directory {dir} ({CONTROL_DIR_ENV}) cannot be used: {source}. Create it with `mkdir -m 700 {dir}`."
    )]
    Unusable {
        /// The directory.
        dir: String,
        /// Why.
        source: std::sync::Arc<std::io::Error>,
    },
    /// It is not private.
    #[error("the ssh control directory {dir} ({CONTROL_DIR_ENV}) is not private: {problem}.")]
    NotPrivate {
        /// The directory.
        dir: String,
        /// What is wrong with it.
        problem: NotPrivate,
    },
}

/// What makes a control directory not private.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NotPrivate {
    /// It is not a directory.
    NotADirectory,
    /// Another user owns it.
    Owner {
        /// Its owner.
        uid: u32,
        /// This user.
        me: u32,
    },
    /// Other users can reach it: its mode, and the directory to `chmod`.
    Reachable {
        /// Its permission bits.
        mode: u32,
        /// The directory.
        dir: String,
    },
}

impl std::fmt::Display for NotPrivate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::NotADirectory => f.write_str("it is not a directory"),
            Self::Owner { uid, me } => write!(f, "it belongs to uid {uid}, not to you (uid {me})"),
            Self::Reachable { mode, dir } => write!(
                f,
                "other users can reach it (mode {mode:04o}); make it private with `chmod 700 {dir}`"
            ),
        }
    }
}

/// A control directory the user named must already be private: a directory (not a
/// symlink) of this user's that nobody else can enter. sublaunch never changes the mode of a
/// directory it was pointed at; a shared one is refused, since anyone who can write there
/// can plant a socket that ssh would then use as its connection.
pub fn check_given_control_dir(dir: &str) -> Result<(), ControlDirError> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::symlink_metadata(dir).map_err(|e| ControlDirError::Unusable {
        dir: dir.to_owned(),
        source: std::sync::Arc::new(e),
    })?;
    let me = rustix::process::geteuid().as_raw();
    let problem = if !meta.file_type().is_dir() {
        Some(NotPrivate::NotADirectory)
    } else if meta.uid() != me {
        Some(NotPrivate::Owner { uid: meta.uid(), me })
    } else if meta.mode() & 0o077 != 0 {
        Some(NotPrivate::Reachable {
            mode: meta.mode() & 0o7777,
            dir: dir.to_owned(),
        })
    } else {
        None
    };
    match problem {
        Some(problem) => Err(ControlDirError::NotPrivate {
            dir: dir.to_owned(),
            problem,
        }),
        None => Ok(()),
    }
}

/// `$SUBLAUNCH_SSH_CONTROL_DIR`, else `<root>/ssh` when its socket paths fit, else
/// `/tmp/sublaunch-ssh-<uid>` (the shim creates it 0700 and refuses one that is not ours).
pub fn control_dir(root: &Path, env: &crate::Environment) -> String {
    if let Some(dir) = env.ssh_control_dir() {
        return dir;
    }
    let beside_root = root.join("ssh").to_string_lossy().into_owned();
    if beside_root.len() + 1 + 40 + 17 <= SOCKET_PATH_BUDGET {
        beside_root
    } else {
        format!("/tmp/sublaunch-ssh-{}", rustix::process::geteuid().as_raw())
    }
}
