//! Listing the recorded worktrees and removing those of ended runs. A worktree is removed
//! only when its run has ended (a run that is running or queued keeps it), it is still on its
//! own branch (one where someone checked out another branch is theirs now), and it has no
//! uncommitted changes; its branch goes too unless it carries commits not merged into the
//! repository's HEAD (what `git branch -d` refuses to lose). `force` removes uncommitted
//! changes and branches with unmerged commits; it never touches a running run's worktree or a
//! branch git reports checked out somewhere (git refuses to delete those).
//!
//! Where a run stands is not this module's to judge: the caller passes it in as a
//! [`RunPhase`] per run id (the CLI and embedders use the run store's, through
//! `runs::worktrees`), so the worktrees depend on no run bookkeeping above them.

use super::git::Git;
use super::record::{self, WorktreeEntry, WorktreeRecord};
use std::io;
use std::path::Path;
use sublaunch_protocol::files::dir::Dir;
use sublaunch_protocol::files::lock::StatusLock;
use sublaunch_protocol::git::{At, Repository};

/// What became of a run, as far as its worktrees care.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RunPhase {
    /// Running or queued: its worktrees are in use.
    Active(String),
    /// Ended in this state.
    Ended(String),
    /// Its run directory is gone (pruned, or a launch that never started).
    Gone,
}

impl RunPhase {
    /// `running`, `complete`, … or `gone`.
    pub fn word(&self) -> &str {
        match self {
            Self::Active(state) | Self::Ended(state) => state,
            Self::Gone => "gone",
        }
    }
}

/// One recorded worktree as it is now.
#[derive(Clone, Debug)]
pub struct Listed {
    /// The run it was made for.
    pub run_id: String,
    /// Where that run stands.
    pub phase: RunPhase,
    /// The record.
    pub entry: WorktreeEntry,
    /// Whether its directory exists.
    pub exists: bool,
    /// Whether its branch exists.
    pub branch_exists: bool,
    /// Commits on its branch since the base commit.
    pub commits: u64,
    /// Whether the branch's commits are all in the repository's HEAD (merged, as
    /// `git branch -d` judges; true for a branch without commits).
    pub merged: bool,
    /// Uncommitted changes (lines of `git status --porcelain`).
    pub changes: u64,
    /// The branch checked out in it when that is not its own (`detached` for none).
    pub other_branch: Option<String>,
    /// Why its repository or its state could not be read (it is then left alone).
    pub problem: Option<String>,
}

/// What [`prune`] did (or, in a dry run, would do) per worktree.
#[derive(Clone, Debug)]
pub struct Pruned {
    /// The worktree as listed before.
    pub listed: Listed,
    /// Its directory was removed.
    pub removed_worktree: bool,
    /// Its branch was deleted.
    pub removed_branch: bool,
    /// Why something of it was left.
    pub kept: Option<String>,
}

/// Every worktree recorded under the state root `root`, each with the phase `phase_of` gives
/// its run, and the records that could not be read.
pub fn list(
    root: &Dir,
    git: &Git,
    mut phase_of: impl FnMut(&str) -> RunPhase,
) -> io::Result<(Vec<Listed>, Vec<String>)> {
    let mut listed = Vec::new();
    let mut problems = Vec::new();
    for record in record::read_all(root)? {
        match record {
            Ok(record) => {
                let phase = phase_of(&record.run_id);
                listed.extend(record.worktrees.iter().map(|e| look(git, &record.run_id, &phase, e).0));
            }
            Err(problem) => problems.push(problem.to_string()),
        }
    }
    Ok((listed, problems))
}

/// The worktree of `entry` as it is now, and its repository when git names one. Every git
/// command runs no program the repository's configuration or the agent's files name, and
/// those in the worktree reach it through the repository's record of it, not its `.git`.
fn look(git: &Git, run_id: &str, phase: &RunPhase, entry: &WorktreeEntry) -> (Listed, Option<Repository>) {
    let path = Path::new(&entry.path);
    let mut listed = Listed {
        run_id: run_id.to_owned(),
        phase: phase.clone(),
        entry: entry.clone(),
        exists: path.is_dir(),
        branch_exists: false,
        commits: 0,
        merged: false,
        changes: 0,
        other_branch: None,
        problem: None,
    };
    if !Path::new(&entry.repository).is_dir() {
        // Nothing of it is left to ask git about; pruning says so.
        return (listed, None);
    }
    let repository = match git.repository(Path::new(&entry.repository)) {
        Ok(repository) => repository,
        Err(e) => {
            listed.problem = Some(e.to_string());
            return (listed, None);
        }
    };
    let at = At::Repository(&repository);
    let branch_ref = format!("refs/heads/{}", entry.branch);
    listed.branch_exists = git
        .ask(at, &["rev-parse", "--verify", "--quiet", &branch_ref])
        .ok()
        .flatten()
        .is_some();
    if listed.branch_exists {
        listed.commits = git
            .ask(
                at,
                &["rev-list", "--count", &format!("{}..{}", entry.base_commit, branch_ref)],
            )
            .ok()
            .flatten()
            .and_then(|n| n.trim().parse().ok())
            .unwrap_or(0);
        listed.merged = git
            .ask(at, &["merge-base", "--is-ancestor", &branch_ref, "HEAD"])
            .ok()
            .flatten()
            .is_some();
    }
    if listed.exists {
        let state = repository
            .worktree(path)
            .map_err(super::GitError::from)
            .and_then(|worktree| {
                let at = At::Worktree(&worktree);
                let status = git.run(
                    at,
                    &[
                        "status",
                        "--porcelain=v1",
                        "--untracked-files=normal",
                        "--ignore-submodules=dirty",
                    ],
                )?;
                let head = git.ask(at, &["symbolic-ref", "--quiet", "--short", "HEAD"])?;
                Ok((status, head))
            });
        match state {
            Ok((status, head)) => {
                listed.changes = status.lines().filter(|l| !l.is_empty()).count() as u64;
                listed.other_branch = match head.map(|b| b.trim().to_owned()) {
                    Some(branch) if branch == entry.branch => None,
                    Some(branch) => Some(branch),
                    None => Some("detached".to_owned()),
                };
            }
            Err(e) => listed.problem = Some(e.to_string()),
        }
    }
    (listed, Some(repository))
}

/// Removes the worktrees (and branches) of ended runs under the state root `root`, as the
/// module documentation says, each run's phase given by `phase_of`; `dry_run` only says what
/// would go. Prunes of one state root run one at a time.
pub fn prune(
    root: &Dir,
    git: &Git,
    mut phase_of: impl FnMut(&str) -> RunPhase,
    force: bool,
    dry_run: bool,
) -> io::Result<(Vec<Pruned>, Vec<String>)> {
    let records_dir = record::records_dir(root)?;
    let _serial = StatusLock::acquire(&records_dir)?;
    let mut out = Vec::new();
    let mut problems = Vec::new();
    for record in record::read_all(root)? {
        let record = match record {
            Ok(record) => record,
            Err(problem) => {
                problems.push(problem.to_string());
                continue;
            }
        };
        let phase = phase_of(&record.run_id);
        let mut left = Vec::new();
        for entry in &record.worktrees {
            let (listed, repository) = look(git, &record.run_id, &phase, entry);
            let pruned = prune_one(git, listed, repository.as_ref(), force, dry_run);
            // An active run's worktree may not exist yet: its launch is still making it.
            // A worktree whose state could not be read is kept on record: what is left of it
            // is not known.
            let remains = matches!(phase, RunPhase::Active(_))
                || pruned.listed.problem.is_some()
                || pruned.listed.exists && !pruned.removed_worktree
                || pruned.listed.branch_exists && !pruned.removed_branch;
            if remains {
                left.push(entry.clone());
            }
            out.push(pruned);
        }
        if dry_run || left.len() == record.worktrees.len() {
            continue;
        }
        let kept = WorktreeRecord {
            worktrees: left,
            ..record.clone()
        };
        let written = if kept.worktrees.is_empty() {
            record::remove(&records_dir, &record.run_id)
        } else {
            record::write(&records_dir, &kept)
        };
        if let Err(e) = written {
            problems.push(format!("cannot update the worktree record of '{}': {e}", record.run_id));
        }
        if let Some(dir) = record.worktrees.first().and_then(|e| Path::new(&e.path).parent()) {
            // Empty once every worktree of the run is gone; kept otherwise.
            let _ = std::fs::remove_dir(dir);
        }
    }
    Ok((out, problems))
}

fn prune_one(git: &Git, listed: Listed, repository: Option<&Repository>, force: bool, dry_run: bool) -> Pruned {
    let mut pruned = Pruned {
        removed_worktree: false,
        removed_branch: false,
        kept: None,
        listed,
    };
    let listed = &pruned.listed;
    if let RunPhase::Active(state) = &listed.phase {
        pruned.kept = Some(format!("its run is {state}"));
        return pruned;
    }
    if !Path::new(&listed.entry.repository).is_dir() {
        pruned.kept = Some(format!("its repository {} is gone", listed.entry.repository));
        return pruned;
    }
    let (Some(repository), None) = (repository, &listed.problem) else {
        pruned.kept = listed.problem.clone();
        return pruned;
    };
    let at = At::Repository(repository);
    if let Some(other) = &listed.other_branch {
        pruned.kept = Some(format!(
            "the worktree is on {other} now, not its own branch; it is left to whoever checked that out"
        ));
        return pruned;
    }
    if listed.exists {
        if listed.changes > 0 && !force {
            pruned.kept = Some(format!(
                "it has {}; --force removes them",
                count(listed.changes, "uncommitted change", "uncommitted changes")
            ));
            return pruned;
        }
        if !dry_run {
            let mut args = vec!["worktree", "remove"];
            if force {
                args.push("--force");
            }
            args.push(&listed.entry.path);
            if let Err(e) = git.run(at, &args) {
                pruned.kept = Some(e.to_string());
                return pruned;
            }
        }
        pruned.removed_worktree = true;
    } else if !dry_run {
        // A directory removed by hand leaves git's registration behind.
        let _ = git.run(at, &["worktree", "prune"]);
    }
    if listed.branch_exists {
        if listed.commits > 0 && !listed.merged && !force {
            pruned.kept = Some(format!(
                "its branch {} carries {} not merged into HEAD and is kept; merge it, or --force deletes it",
                listed.entry.branch,
                count(listed.commits, "commit", "commits")
            ));
            return pruned;
        }
        if !dry_run && let Err(e) = git.run(at, &["branch", "-D", &listed.entry.branch]) {
            pruned.kept = Some(e.to_string());
            return pruned;
        }
        pruned.removed_branch = true;
    }
    pruned
}

/// `1 commit`, `2 commits`.
fn count(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}
