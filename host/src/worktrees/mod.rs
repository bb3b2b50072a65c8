//! Managed git worktrees: a step that asks for one (`worktree: true`, `run --worktree`) runs
//! in its own checkout of the repository holding its directory, on a new branch
//! `sublaunch/<run-id>/<step>[-<task>]` made by `git worktree add` at the base commit, under
//! `<root>/worktrees/<run-id>/` (or a configured directory), in the same directory relative
//! to the repository's top. [`plan`] checks everything before a launch writes anything,
//! [`create`] makes them once the run id is chosen (and unmakes them for a launch that fails),
//! [`prune`] lists them and removes those of ended runs. A run merges nothing (`sublaunch
//! integrate` does, when asked): the shim records, per step, the commits made and what was
//! left uncommitted.

pub mod create;
pub mod error;
pub mod git;
pub mod plan;
pub mod prune;
pub mod record;

pub use create::{BRANCH_PREFIX, Created, branch_name};
pub use error::WorktreeError;
pub use git::{Git, GitError};
pub use plan::{WorktreePlan, prepare};

use std::collections::BTreeSet;
use std::path::PathBuf;

/// How a launch's worktrees are made.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WorktreeOptions {
    /// The revision the worktrees start at (`--base`); `HEAD` when `None`.
    pub base: Option<String>,
    /// Refuse to launch when the repository has uncommitted changes.
    pub require_clean: bool,
    /// Where the worktrees go (`<dir>/<run-id>/…`); `<root>/worktrees` when `None`.
    pub dir: Option<PathBuf>,
    /// Request steps (`stepIndex`) that run in the worktree of the step before them instead
    /// of one of their own.
    pub share_previous: BTreeSet<u32>,
}
