//! Preflight (H1–H3): nothing is written and nothing is started until the effective cwd is a
//! directory, the shim exists and the root is trusted. These errors carry no
//! `Failed to start async run` prefix.

use super::options::RunnerError;
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use sublaunch_protocol::files::layout::Layout;
use sublaunch_protocol::files::trust::{RootError, TrustedRoot, UntrustedRoot};
use sublaunch_protocol::os::Os;

/// One cwd to check: the effective path and the one the caller asked for.
#[derive(Clone, Debug)]
pub(crate) struct CwdCheck {
    /// The effective (resolved) cwd.
    pub effective: String,
    /// The requested cwd, when it differs.
    pub requested: Option<String>,
}

/// H1: a working directory the launch cannot use.
#[derive(Clone, Debug)]
pub enum CwdError {
    /// It does not exist.
    Missing {
        /// The effective path, and the one asked for when it differs.
        cwd: CwdNames,
    },
    /// It is not a directory.
    NotADirectory {
        /// The effective path, and the one asked for when it differs.
        cwd: CwdNames,
    },
    /// It cannot be looked at.
    Inaccessible {
        /// The effective path, and the one asked for when it differs.
        cwd: CwdNames,
        /// Why.
        source: Arc<io::Error>,
    },
}

/// A working directory as checked, and as the caller asked for it when that differs.
#[derive(Clone, Debug)]
pub struct CwdNames {
    /// The effective (resolved) path.
    pub effective: String,
    /// The path asked for, when it differs.
    pub requested: Option<String>,
}

impl fmt::Display for CwdNames {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.effective)?;
        match &self.requested {
            Some(requested) => write!(f, "\n(resolved from \"{requested}\")"),
            None => Ok(()),
        }
    }
}

impl fmt::Display for CwdError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Missing { cwd } => write!(f, "Subagent launch aborted: cwd does not exist: {cwd}"),
            Self::NotADirectory { cwd } => write!(f, "Subagent launch aborted: cwd is not a directory: {cwd}"),
            Self::Inaccessible { cwd, source } => {
                write!(f, "Subagent launch aborted: cwd could not be accessed: {cwd}\n{source}")
            }
        }
    }
}

impl std::error::Error for CwdError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Inaccessible { source, .. } => Some(source.as_ref()),
            _ => None,
        }
    }
}

/// H3: a state root the launch cannot use.
#[derive(Clone, Debug, thiserror::Error)]
pub enum RootFailure {
    /// It exists but cannot be trusted.
    #[error(transparent)]
    Untrusted(#[from] UntrustedRoot),
    /// Creating or opening it failed.
    #[error("Cannot open the sublaunch state directory '{}': {source}", root.display())]
    Io {
        /// The root.
        root: PathBuf,
        /// Why.
        source: Arc<io::Error>,
    },
    /// The check did not finish (its blocking task was cancelled).
    #[error("Cannot open the sublaunch state directory.")]
    Unfinished,
}

/// A deadline the run cannot keep.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DeadlineError {
    /// The deadline (wall ms) has passed.
    #[error("the deadline {} has passed", sublaunch_protocol::os::clock::iso8601_utc(*.at))]
    Passed {
        /// The deadline.
        at: u64,
    },
    /// The agents are to wrap up before a deadline the run does not have.
    #[error(
        "the agents are to be asked to wrap up {} before the deadline, and the run has none: give it a timeout or a deadline",
        crate::inputs::age::exact(*.checkpoint_ms)
    )]
    NoDeadline {
        /// How long before the deadline.
        checkpoint_ms: u64,
    },
    /// The agents are to wrap up before the run would even start.
    #[error(
        "the agents are to be asked to wrap up {} before the deadline, and the run has only {}",
        crate::inputs::age::exact(*.checkpoint_ms),
        crate::inputs::age::exact(*.until_deadline_ms)
    )]
    TooShort {
        /// How long before the deadline.
        checkpoint_ms: u64,
        /// How long until the deadline.
        until_deadline_ms: u64,
    },
}

/// H1: each cwd must exist and be a directory (followed through symlinks, as a process's
/// cwd is).
pub(crate) fn check_cwds(checks: &[CwdCheck]) -> Result<(), CwdError> {
    checks.iter().try_for_each(check_cwd)
}

fn check_cwd(check: &CwdCheck) -> Result<(), CwdError> {
    let cwd = || CwdNames {
        effective: check.effective.clone(),
        requested: check.requested.clone().filter(|r| *r != check.effective),
    };
    match std::fs::metadata(&check.effective) {
        Ok(meta) if meta.is_dir() => Ok(()),
        Ok(_) => Err(CwdError::NotADirectory { cwd: cwd() }),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Err(CwdError::Missing { cwd: cwd() }),
        Err(e) => Err(CwdError::Inaccessible {
            cwd: cwd(),
            source: Arc::new(e),
        }),
    }
}

/// H2: the shim must exist (whether it is executable is the spawn's business, H11).
pub(crate) fn check_shim(shim: &Path) -> Result<(), RunnerError> {
    match std::fs::metadata(shim) {
        Ok(meta) if meta.is_file() => Ok(()),
        _ => Err(RunnerError::NotFound(shim.to_owned())),
    }
}

/// H3: opens (creating 0700) and verifies the root, `runs/` and `results/`.
pub(crate) fn open_root(layout: &Layout, os: Arc<Os>) -> Result<TrustedRoot, RootFailure> {
    TrustedRoot::open(layout, os).map_err(|e| match e {
        RootError::Untrusted(untrusted) => RootFailure::Untrusted(untrusted),
        RootError::Io(e) => RootFailure::Io {
            root: layout.root().to_owned(),
            source: Arc::new(e),
        },
    })
}

/// A12: the first launch under a root in this process sweeps the temp files dead writers left
/// there, in the background (the launch does not wait for it), when the root's sweep stamp is
/// older than the orphan age ([`sublaunch_protocol::sweep::sweep_root_if_due`]). A process
/// that exits soon after waits for a sweep it started, so at most once per ten minutes.
pub(crate) fn sweep_once(root: &std::sync::Arc<TrustedRoot>) {
    static SWEPT: std::sync::Mutex<std::collections::BTreeSet<std::path::PathBuf>> =
        std::sync::Mutex::new(std::collections::BTreeSet::new());
    let path = root.root().path().to_owned();
    if !SWEPT
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .insert(path)
        || !sublaunch_protocol::sweep::sweep_due(root)
    {
        return;
    }
    let root = root.clone();
    tokio::task::spawn_blocking(move || {
        let oracle = sublaunch_protocol::os::processes::RealProcesses;
        let errors = sublaunch_protocol::sweep::sweep_root_if_due(&root, &oracle).map(|r| r.errors);
        for error in errors.into_iter().flatten() {
            log::warn!("orphan temp sweep: {error}");
        }
    });
}

/// A deadline that has passed refuses the launch, and so does a checkpoint with no deadline
/// to count back from (neither a timeout nor `deadlineAt`) or no time before it.
pub(crate) fn check_deadline(
    plan: &sublaunch_contract::LaunchPlan,
    limits: &super::RunLimits,
    now: u64,
) -> Result<(), DeadlineError> {
    if let Some(at) = limits.deadline_at
        && at <= now
    {
        return Err(DeadlineError::Passed { at });
    }
    let Some(checkpoint) = plan.steps.iter().find_map(|s| s.checkpoint_before_deadline_ms) else {
        return Ok(());
    };
    let until_deadline = [limits.timeout_ms, limits.deadline_at.map(|at| at - now)]
        .into_iter()
        .flatten()
        .min()
        .ok_or(DeadlineError::NoDeadline {
            checkpoint_ms: checkpoint,
        })?;
    if checkpoint >= until_deadline {
        return Err(DeadlineError::TooShort {
            checkpoint_ms: checkpoint,
            until_deadline_ms: until_deadline,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn h1_messages() {
        let tmp = tempfile::tempdir().unwrap();
        let missing = tmp.path().join("nope").to_string_lossy().into_owned();
        let check = |effective: &str, requested: Option<&str>| {
            check_cwds(&[CwdCheck {
                effective: effective.into(),
                requested: requested.map(Into::into),
            }])
        };
        assert_eq!(
            check(&missing, None).unwrap_err().to_string(),
            format!("Subagent launch aborted: cwd does not exist: {missing}")
        );
        assert_eq!(
            check(&missing, Some("nope")).unwrap_err().to_string(),
            format!("Subagent launch aborted: cwd does not exist: {missing}\n(resolved from \"nope\")")
        );
        let file = tmp.path().join("f");
        std::fs::write(&file, b"").unwrap();
        let file = file.to_string_lossy().into_owned();
        assert_eq!(
            check(&file, Some(&file)).unwrap_err().to_string(),
            format!("Subagent launch aborted: cwd is not a directory: {file}")
        );
        check(&tmp.path().to_string_lossy(), None).unwrap();
    }
}
