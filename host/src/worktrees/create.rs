//! Making a launch's worktrees once its run id is chosen, and unmaking them when the launch
//! fails: a run that never started leaves no worktree, branch or record behind.

use super::WorktreePlan;
use super::error::WorktreeError;
use super::git::Git;
use super::record::{self, WorktreeEntry, WorktreeRecord};
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use sublaunch_protocol::files::dir::Dir;
use sublaunch_protocol::git::At;
use sublaunch_protocol::records::config::{StepConfig, StepWorktree};

/// The prefix of every branch sublaunch creates: `sublaunch/<run-id>/<step>[-<task>]`.
pub const BRANCH_PREFIX: &str = "sublaunch/";

/// The branch of worktree `name` of run `run_id`.
pub fn branch_name(run_id: &str, name: &str) -> String {
    format!("{BRANCH_PREFIX}{run_id}/{name}")
}

/// The worktrees of one launch, created.
#[derive(Debug)]
pub struct Created {
    git: Git,
    run_id: String,
    records: Dir,
    run_dir: PathBuf,
    entries: Vec<(WorktreeEntry, Vec<(usize, PathBuf)>)>,
}

impl WorktreePlan {
    /// Creates every worktree for run `run_id` under `root` (the state root): the record
    /// first, then one `git worktree add -b` each. On any failure what was made is removed
    /// again and the error says what failed.
    pub fn create(&self, run_id: &str, root: &Dir, now_ms: u64) -> Result<Created, WorktreeError> {
        if run_id.contains("..") || run_id.ends_with(".lock") || run_id.ends_with('.') {
            return Err(WorktreeError::RunIdNotABranch(run_id.to_owned()));
        }
        let records = record::records_dir(root).map_err(WorktreeError::RecordsDir)?;
        if records.stat(&format!("{run_id}.json")).ok().flatten().is_some() {
            return Err(WorktreeError::StillRecorded(run_id.to_owned()));
        }
        let base = match &self.dir {
            Some(dir) => dir.clone(),
            None => records.path().to_owned(),
        };
        let run_dir = base.join(run_id);
        let entries: Vec<(WorktreeEntry, Vec<(usize, PathBuf)>)> = self
            .worktrees
            .iter()
            .map(|w| {
                let entry = WorktreeEntry {
                    name: w.name.clone(),
                    path: run_dir.join(&w.name).to_string_lossy().into_owned(),
                    branch: branch_name(run_id, &w.name),
                    base_commit: w.base_commit.clone(),
                    repository: w.repository.to_string_lossy().into_owned(),
                };
                (entry, w.steps.clone())
            })
            .collect();
        for (entry, _) in &entries {
            let repository = Path::new(&entry.repository);
            let exists = self
                .git
                .ask(
                    At::UserCheckout(repository),
                    &[
                        "rev-parse",
                        "--verify",
                        "--quiet",
                        &format!("refs/heads/{}", entry.branch),
                    ],
                )?
                .is_some();
            if exists {
                return Err(WorktreeError::BranchExists {
                    branch: entry.branch.clone(),
                    repository: entry.repository.clone(),
                });
            }
            if Path::new(&entry.path).exists() {
                return Err(WorktreeError::DirectoryExists(entry.path.clone()));
            }
        }
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&run_dir)
            .map_err(|error| WorktreeError::CreateDir {
                dir: run_dir.clone(),
                error,
            })?;
        let mut created = Created {
            git: self.git.clone(),
            run_id: run_id.to_owned(),
            records,
            run_dir,
            entries: Vec::with_capacity(entries.len()),
        };
        let all: Vec<WorktreeEntry> = entries.iter().map(|(e, _)| e.clone()).collect();
        if let Err(e) = record::write(&created.records, &WorktreeRecord::new(run_id, now_ms, all)) {
            created.remove();
            return Err(WorktreeError::Record(e));
        }
        for (entry, steps) in entries {
            // The user's hooks and filters apply: the checkout is made as the user's own git
            // would make it, before any agent runs in it.
            let added = self.git.run(
                At::UserCheckout(Path::new(&entry.repository)),
                &[
                    "worktree",
                    "add",
                    "--quiet",
                    "-b",
                    &entry.branch,
                    &entry.path,
                    &entry.base_commit,
                ],
            );
            if let Err(e) = added {
                created.remove();
                return Err(e.into());
            }
            created.entries.push((entry, steps));
        }
        Ok(created)
    }
}

impl Created {
    /// Points each step that runs in a worktree at its directory there (the same path
    /// relative to the repository's top) and tells the shim which worktree it is.
    pub fn apply(&self, steps: &mut [StepConfig]) {
        for (entry, members) in &self.entries {
            for (index, relative) in members {
                let Some(step) = steps.get_mut(*index) else { continue };
                step.cwd = Some(Path::new(&entry.path).join(relative).to_string_lossy().into_owned());
                step.worktree = Some(StepWorktree {
                    path: entry.path.clone(),
                    branch: entry.branch.clone(),
                    base_commit: entry.base_commit.clone(),
                    repository: entry.repository.clone(),
                });
            }
        }
    }

    /// The worktrees, in step order.
    pub fn entries(&self) -> impl Iterator<Item = &WorktreeEntry> {
        self.entries.iter().map(|(entry, _)| entry)
    }

    /// Removes the worktrees, their branches, the run's directory of worktrees and the
    /// record (for a launch that failed: nothing of it ran in them, so git runs as the user's
    /// own would).
    pub fn remove(&mut self) {
        for (entry, _) in self.entries.drain(..).rev() {
            let repository = At::UserCheckout(Path::new(&entry.repository));
            if let Err(e) = self
                .git
                .run(repository, &["worktree", "remove", "--force", &entry.path])
            {
                log::warn!("could not remove the worktree {}: {e}", entry.path);
            }
            if let Err(e) = self.git.run(repository, &["branch", "-D", &entry.branch]) {
                log::warn!("could not delete the branch {}: {e}", entry.branch);
            }
        }
        let _ = std::fs::remove_dir(&self.run_dir);
        if let Err(e) = record::remove(&self.records, &self.run_id) {
            log::warn!("could not remove the worktree record of '{}': {e}", self.run_id);
        }
    }
}
