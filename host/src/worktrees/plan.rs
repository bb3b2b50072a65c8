//! Which steps of a plan get a worktree, from which repository and commit, checked before a
//! launch writes anything: git is there, each step's directory is inside a repository whose
//! base commit exists and holds that directory, the repository is clean when a clean base was
//! asked for, and a step that shares the worktree of the step before it has one to share.

use super::WorktreeOptions;
use super::error::WorktreeError;
use super::git::{Git, GitError};
use crate::environment::Environment;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use sublaunch_contract::{LaunchPlan, PlanStep};
use sublaunch_protocol::git::At;

/// How many changed paths a "not clean" refusal names.
const DIRTY_SHOWN: usize = 5;

/// The worktrees a launch will create, every check passed.
#[derive(Clone, Debug)]
pub struct WorktreePlan {
    pub(super) git: Git,
    pub(super) worktrees: Vec<Planned>,
    pub(super) dir: Option<PathBuf>,
}

/// One worktree to create, and the plan steps (flat indexes) that run in it.
#[derive(Clone, Debug)]
pub(super) struct Planned {
    /// `<step>` or `<step>-<task>`, 1-based.
    pub name: String,
    /// The top of the working tree holding the steps' directory.
    pub repository: PathBuf,
    /// The commit the worktree starts at.
    pub base_commit: String,
    /// Each step that runs in it, with its directory relative to the repository's top.
    pub steps: Vec<(usize, PathBuf)>,
}

/// `step 2 writer` or `step 2.1 writer`, as progress, `status` and `logs` name steps.
pub(super) fn label(step: &PlanStep) -> String {
    sublaunch_protocol::records::step_record::step_label(step.step_index, step.task_index, &step.agent)
}

fn name_of(step: &PlanStep) -> String {
    match step.task_index {
        Some(task) => format!("{}-{}", step.step_index + 1, task + 1),
        None => format!("{}", step.step_index + 1),
    }
}

/// The worktrees `plan` asks for (`None` when no step runs in one), or why the launch cannot
/// have them. `cwd` resolves a relative PATH entry when looking for git.
pub fn prepare(
    plan: &LaunchPlan,
    options: &WorktreeOptions,
    env: &Environment,
    cwd: &Path,
) -> Result<Option<WorktreePlan>, WorktreeError> {
    let asked: Vec<(usize, &PlanStep)> = plan
        .steps
        .iter()
        .enumerate()
        .filter(|(_, s)| s.worktree && s.machine.is_none())
        .collect();
    if asked.is_empty() {
        return Ok(None);
    }
    let git = Git::find(env, cwd)?;
    let mut checks = Checks {
        git: &git,
        options,
        tops: BTreeMap::new(),
        bases: BTreeMap::new(),
    };
    let mut worktrees: Vec<Planned> = Vec::new();
    for (index, step) in asked {
        let directory = canonical(&step.cwd).map_err(|error| WorktreeError::Directory {
            step: label(step),
            cwd: step.cwd.clone(),
            error,
        })?;
        let top = checks.top(&directory, step)?;
        let relative = directory.strip_prefix(&top).unwrap_or(Path::new("")).to_owned();
        if step.task_index.is_none() && options.share_previous.contains(&step.step_index) {
            let before = |flat: usize| {
                let other = &plan.steps[flat];
                other.task_index.is_none() && other.step_index + 1 == step.step_index
            };
            let previous = worktrees
                .iter_mut()
                .find(|w| w.steps.iter().any(|(flat, _)| before(*flat)))
                .ok_or_else(|| WorktreeError::NothingToShare { step: label(step) })?;
            if previous.repository != top {
                return Err(WorktreeError::SharedAcrossRepositories {
                    step: label(step),
                    previous: previous.repository.clone(),
                    directory,
                    repository: top,
                });
            }
            let base = previous.base_commit.clone();
            checks.holds(&top, &base, &relative, step)?;
            previous.steps.push((index, relative));
            continue;
        }
        let base = checks.base(&top)?;
        checks.holds(&top, &base, &relative, step)?;
        worktrees.push(Planned {
            name: name_of(step),
            repository: top,
            base_commit: base,
            steps: vec![(index, relative)],
        });
    }
    Ok(Some(WorktreePlan {
        git,
        worktrees,
        dir: options.dir.clone(),
    }))
}

/// The checks of [`prepare`], each git question asked once per repository.
struct Checks<'a> {
    git: &'a Git,
    options: &'a WorktreeOptions,
    tops: BTreeMap<PathBuf, PathBuf>,
    bases: BTreeMap<PathBuf, String>,
}

impl Checks<'_> {
    /// The top of the working tree holding `directory`.
    fn top(&mut self, directory: &Path, step: &PlanStep) -> Result<PathBuf, WorktreeError> {
        if let Some(top) = self.tops.get(directory) {
            return Ok(top.clone());
        }
        let top = match self
            .git
            .run(At::UserCheckout(directory), &["rev-parse", "--show-toplevel"])
        {
            Ok(out) => PathBuf::from(out.trim_end_matches('\n')),
            Err(GitError::Failed { .. }) => {
                return Err(WorktreeError::NotInRepository {
                    step: label(step),
                    directory: directory.to_owned(),
                });
            }
            Err(e) => return Err(e.into()),
        };
        self.tops.insert(directory.to_owned(), top.clone());
        Ok(top)
    }

    /// The base commit in `top`: `--base`, else `HEAD`; refused when it names no commit or
    /// when a clean base was asked for and `top` has uncommitted changes.
    fn base(&mut self, top: &Path) -> Result<String, WorktreeError> {
        if let Some(base) = self.bases.get(top) {
            return Ok(base.clone());
        }
        let asked = self.options.base.as_deref().unwrap_or("HEAD");
        if asked.starts_with('-') || asked.trim().is_empty() {
            return Err(WorktreeError::NotARevision(asked.to_owned()));
        }
        let spec = format!("{asked}^{{commit}}");
        let Some(commit) = self
            .git
            .ask(At::UserCheckout(top), &["rev-parse", "--verify", "--quiet", &spec])?
        else {
            return Err(if self.options.base.is_none() {
                WorktreeError::NoCommitYet(top.to_owned())
            } else {
                WorktreeError::BaseNotACommit {
                    base: asked.to_owned(),
                    repository: top.to_owned(),
                }
            });
        };
        let commit = commit.trim().to_owned();
        let changes = self.git.run(
            At::UserCheckout(top),
            &["status", "--porcelain=v1", "--untracked-files=normal"],
        )?;
        let changed: Vec<&str> = changes.lines().filter(|l| !l.is_empty()).collect();
        if !changed.is_empty() {
            let shown: Vec<&str> = changed.iter().take(DIRTY_SHOWN).map(|l| l.trim()).collect();
            let more = changed.len().saturating_sub(DIRTY_SHOWN);
            let listed = if more > 0 {
                format!("{} and {more} more", shown.join(", "))
            } else {
                shown.join(", ")
            };
            if self.options.require_clean {
                return Err(WorktreeError::NotClean {
                    repository: top.to_owned(),
                    changes: listed,
                });
            }
            log::warn!(
                "the worktrees start at {asked} ({}); the {} uncommitted change(s) in {} are not in them",
                &commit[..commit.len().min(12)],
                changed.len(),
                top.display()
            );
        }
        self.bases.insert(top.to_owned(), commit.clone());
        Ok(commit)
    }

    /// Refuses a step whose directory the base commit does not have (the worktree would
    /// have no such directory to run in).
    fn holds(&self, top: &Path, base: &str, relative: &Path, step: &PlanStep) -> Result<(), WorktreeError> {
        if relative.as_os_str().is_empty() {
            return Ok(());
        }
        let spec = format!("{base}:{}", relative.display());
        let tree = self.git.ask(At::UserCheckout(top), &["cat-file", "-t", &spec])?;
        if tree.as_deref().map(str::trim) == Some("tree") {
            return Ok(());
        }
        Err(WorktreeError::NotInBase {
            step: label(step),
            relative: relative.to_owned(),
            repository: top.to_owned(),
            base: base[..base.len().min(12)].to_owned(),
        })
    }
}

fn canonical(cwd: &str) -> std::io::Result<PathBuf> {
    std::fs::canonicalize(cwd)
}
