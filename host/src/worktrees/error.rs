//! Why a launch cannot have the worktrees its plan asks for: a check of [`super::prepare`]
//! failed, or making them ([`super::WorktreePlan::create`]) did. Each message says what is
//! wrong and how to fix it; the CLI puts `sublaunch run:` in front.

use super::git::GitError;
use std::io;
use std::path::PathBuf;

/// A launch refused, or undone, for its worktrees.
#[derive(Debug, thiserror::Error)]
pub enum WorktreeError {
    /// git could not be found or run, or a git command failed.
    #[error("{0}")]
    Git(GitError),
    /// A step's directory could not be resolved.
    #[error("the directory of {step} ({cwd}): {error}")]
    Directory {
        /// The step, as `step 2 writer`.
        step: String,
        /// Its directory, as the plan gives it.
        cwd: String,
        /// Why it could not be resolved.
        error: io::Error,
    },
    /// A step's directory is not inside a git repository.
    #[error("{step} asks for a managed worktree, but its directory {directory} is not inside a git repository")]
    NotInRepository {
        /// The step.
        step: String,
        /// Its directory.
        directory: PathBuf,
    },
    /// A step shares the worktree of the step before it, which has none.
    #[error(
        "{step} runs in the worktree of the step before it, which runs in none (it is not one step with worktree: true)"
    )]
    NothingToShare {
        /// The step.
        step: String,
    },
    /// A step shares the worktree of the step before it, a checkout of another repository.
    #[error(
        "{step} runs in the worktree of the step before it, a checkout of {previous}, but its directory {directory} is in {repository}"
    )]
    SharedAcrossRepositories {
        /// The step.
        step: String,
        /// The repository of the step before it.
        previous: PathBuf,
        /// The step's directory.
        directory: PathBuf,
        /// The repository holding it.
        repository: PathBuf,
    },
    /// `--base` is not a revision git may be given.
    #[error("'{0}' is not a git revision (--base)")]
    NotARevision(String),
    /// The repository has no commit to start from.
    #[error("the repository {0} has no commit yet; a worktree starts from a commit")]
    NoCommitYet(PathBuf),
    /// `--base` names no commit in the repository.
    #[error("the base '{base}' names no commit in the repository {repository}")]
    BaseNotACommit {
        /// The revision asked for.
        base: String,
        /// The repository.
        repository: PathBuf,
    },
    /// A clean base was asked for and the repository has uncommitted changes.
    #[error(
        "the repository {repository} has uncommitted changes ({changes}) and a clean base was asked for; commit or stash them first"
    )]
    NotClean {
        /// The repository.
        repository: PathBuf,
        /// The first changed paths, as `git status` lists them.
        changes: String,
    },
    /// The base commit does not have the step's directory.
    #[error(
        "{step} runs in {relative} of the repository {repository}, which its base commit {base} does not have (the directory is untracked or ignored), so its worktree would not have it"
    )]
    NotInBase {
        /// The step.
        step: String,
        /// Its directory relative to the repository's top.
        relative: PathBuf,
        /// The repository.
        repository: PathBuf,
        /// The base commit, abbreviated.
        base: String,
    },
    /// The run id cannot be part of a branch name.
    #[error("the run id '{0}' cannot be part of a git branch name (no '..', and no '.' or '.lock' at the end)")]
    RunIdNotABranch(String),
    /// The directory of the worktree records could not be made.
    #[error("cannot create the worktrees directory: {0}")]
    RecordsDir(io::Error),
    /// An earlier run of the same id still has worktrees on record.
    #[error(
        "worktrees of an earlier run '{0}' are still recorded; remove them with 'sublaunch worktrees prune' or choose another run id"
    )]
    StillRecorded(String),
    /// A worktree's branch exists already.
    #[error("the branch '{branch}' already exists in {repository}; choose another run id, or delete the branch")]
    BranchExists {
        /// The branch.
        branch: String,
        /// The repository.
        repository: String,
    },
    /// A worktree's directory exists already.
    #[error("the worktree directory {0} already exists; remove it or choose another run id")]
    DirectoryExists(String),
    /// The run's directory of worktrees could not be made.
    #[error("cannot create {dir}: {error}")]
    CreateDir {
        /// The directory.
        dir: PathBuf,
        /// Why not.
        error: io::Error,
    },
    /// The record of the worktrees could not be written.
    #[error("cannot record the worktrees: {0}")]
    Record(io::Error),
}

// By hand rather than `#[from]`, which would also make the git error this one's source: its
// message is already in this one's, and a reporter walking the chain would print it twice.
impl From<GitError> for WorktreeError {
    fn from(error: GitError) -> Self {
        Self::Git(error)
    }
}
