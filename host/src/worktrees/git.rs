//! Running git: the program found on the caller's PATH, one command at a time, with its exit
//! and stderr turned into an error that says which command failed where. Each command is
//! built by [`sublaunch_protocol::git`], which says where it runs and which of the
//! repository's configured programs it may start (none, once an agent has run in a worktree).

use crate::environment::Environment;
use crate::inputs::agents::locate_program;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use sublaunch_protocol::git::{At, LocateError, Repository, command};

/// A git command that did not succeed.
#[derive(Debug, thiserror::Error)]
pub enum GitError {
    /// git is not installed (or not on PATH).
    #[error("managed worktrees need git, and {0}. Install git.")]
    Missing(String),
    /// git could not be started.
    #[error("cannot run git in {dir}: {error}")]
    Spawn {
        /// Where it was run.
        dir: PathBuf,
        /// Why it did not start.
        error: std::io::Error,
    },
    /// git ran and failed.
    #[error("`git {command}` failed in {dir}: {stderr}")]
    Failed {
        /// The arguments, space-separated.
        command: String,
        /// Where it ran.
        dir: PathBuf,
        /// What git said (trimmed), or its exit status.
        stderr: String,
    },
    /// A worktree's repository, or the repository's record of it, could not be found.
    #[error("{0}")]
    Locate(#[from] LocateError),
}

/// The git program of a launch or a prune.
#[derive(Clone, Debug)]
pub struct Git {
    program: PathBuf,
}

impl Git {
    /// git as found on `env`'s PATH (relative PATH entries against `cwd`).
    pub fn find(env: &Environment, cwd: &Path) -> Result<Self, GitError> {
        locate_program("git", cwd, env.var("PATH"))
            .map(|program| Self { program })
            .map_err(|missing| GitError::Missing(missing.to_string()))
    }

    /// Runs `git args…` at `at`; its stdout on success.
    pub fn run<S: AsRef<OsStr>>(&self, at: At<'_>, args: &[S]) -> Result<String, GitError> {
        let mut git = command(&self.program, at);
        git.args(args);
        finish(git, at.dir(), args)
    }

    /// The repository of the user's checkout `checkout`, for commands at
    /// [`At::Repository`] and for finding its worktrees ([`Repository::worktree`]).
    pub fn repository(&self, checkout: &Path) -> Result<Repository, GitError> {
        let output = finish(Repository::query(&self.program, checkout), checkout, Repository::QUERY)?;
        let mut repository = Repository::parse(checkout, &output)?;
        let keys = self.run(At::Repository(&repository), Repository::FILTERS_QUERY)?;
        repository.set_filters(&keys);
        Ok(repository)
    }

    /// Runs a command whose exit 1 is an answer (`merge-base --is-ancestor`, `merge-tree`
    /// with conflicts): whether it exited 0, and its stdout; any other failure is an error.
    pub fn run_status<S: AsRef<OsStr>>(&self, at: At<'_>, args: &[S]) -> Result<(bool, String), GitError> {
        let mut git = command(&self.program, at);
        git.args(args);
        let dir = at.dir();
        let output = git.stdin(Stdio::null()).output().map_err(|error| GitError::Spawn {
            dir: dir.to_owned(),
            error,
        })?;
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        match output.status.code() {
            Some(0) => Ok((true, stdout)),
            Some(1) => Ok((false, stdout)),
            _ => Err(failure(&output, dir, args)),
        }
    }

    /// Like [`Git::run`], but a failure is `None` (for questions whose "no" is a failure:
    /// `rev-parse --verify`, `show-ref`); a git that cannot start is still an error.
    pub fn ask<S: AsRef<OsStr>>(&self, at: At<'_>, args: &[S]) -> Result<Option<String>, GitError> {
        match self.run(at, args) {
            Ok(out) => Ok(Some(out)),
            Err(GitError::Failed { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }
}

/// Runs `git` (whose arguments end with `args`, for messages) in `dir`; its stdout.
fn finish<S: AsRef<OsStr>>(mut git: Command, dir: &Path, args: &[S]) -> Result<String, GitError> {
    let output = git.stdin(Stdio::null()).output().map_err(|error| GitError::Spawn {
        dir: dir.to_owned(),
        error,
    })?;
    if output.status.success() {
        return Ok(String::from_utf8_lossy(&output.stdout).into_owned());
    }
    Err(failure(&output, dir, args))
}

/// The error of a git command that failed.
fn failure<S: AsRef<OsStr>>(output: &std::process::Output, dir: &Path, args: &[S]) -> GitError {
    let stderr = String::from_utf8_lossy(&output.stderr).trim().to_owned();
    GitError::Failed {
        command: args
            .iter()
            .map(|a| a.as_ref().to_string_lossy())
            .collect::<Vec<_>>()
            .join(" "),
        dir: dir.to_owned(),
        stderr: if stderr.is_empty() {
            output.status.to_string()
        } else {
            stderr
        },
    }
}
