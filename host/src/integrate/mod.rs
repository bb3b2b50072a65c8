//! `sublaunch integrate`: the accepted work of a run's writers, landed on one branch (G82).
//!
//! A run whose steps worked in managed worktrees leaves one branch per step
//! (`sublaunch/<run>/<step>[-<task>]`). Integration takes the branches of the steps that
//! ended well and whose acceptance was not rejected ([`candidates`]), in step order, onto
//! `sublaunch/<run>/integration`, which starts at `--onto` (default: the run's base commit):
//! - each branch is first merged in git's object store only (`git merge-tree --write-tree`),
//!   so a conflict is found without touching any checkout, and named with the files and the
//!   already-landed branches that touched them;
//! - the merged tree is checked out in a scratch worktree under the state root and the gate
//!   is run there ([`gate`]): the commands the steps' contracts verified (or `--gate`);
//! - only then does the integration branch move, by a compare-and-swap of its ref
//!   (`git update-ref <ref> <new> <old>`), so an integration killed at any moment leaves the
//!   branch at the last verified commit, and a second integration of the same run (a lock
//!   keeps them apart) continues from there: branches already in it are not merged again.
//!
//! Integration stops at the first conflict or failed gate (or, with `keep_going`, skips that
//! branch and tries the rest). Nothing of the user's checkout changes, unless a fast-forward
//! was asked for: then the checked-out branch moves to the integration branch when the
//! checkout is clean and the move is a fast-forward ([`fast_forward`]).
//!
//! Every git command runs at [`At::Repository`]: the branches hold agents' work, and neither
//! their `.gitattributes` nor anything they wrote into the repository's configuration may
//! start a program (merge drivers, filters, hooks).

pub mod candidates;
pub mod fast_forward;
pub mod gate;
pub mod lock;
pub mod report;

pub use candidates::{Candidate, Candidates};
pub use report::{Entry, FastForward, GateRun, GateStatus, Integration, Outcome};

use crate::runs::RunStore;
use crate::worktrees::{Git, GitError};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;
use sublaunch_protocol::git::At;

/// The branch integration builds: `sublaunch/<run-id>/integration`.
pub fn integration_branch(run_id: &str) -> String {
    format!("{}{run_id}/integration", crate::worktrees::BRANCH_PREFIX)
}

/// Which commands gate each merge.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GateChoice {
    /// The verification commands the steps' own acceptance contracts ran, those of every
    /// branch landed so far (a merge may break an earlier branch's tests).
    Contracts,
    /// This one command after every merge.
    Command(String),
    /// No gate: a merge without conflicts lands.
    None,
}

/// How `integrate` goes about it.
#[derive(Clone, Debug)]
pub struct IntegrateOptions {
    /// Where the integration branch starts when it does not exist yet (a revision); the run's
    /// base commit when `None`.
    pub onto: Option<String>,
    /// The gate after each merge.
    pub gate: GateChoice,
    /// How long one gate command may run.
    pub gate_timeout: Duration,
    /// Skip a branch that conflicts or fails its gate, and try the rest.
    pub keep_going: bool,
    /// Fast-forward the repository's checked-out branch to the integration branch at the end
    /// (only when it is clean and the move is a fast-forward).
    pub fast_forward: bool,
}

impl Default for IntegrateOptions {
    fn default() -> Self {
        Self {
            onto: None,
            gate: GateChoice::Contracts,
            gate_timeout: gate::DEFAULT_TIMEOUT,
            keep_going: false,
            fast_forward: false,
        }
    }
}

/// Why a run cannot be integrated at all.
#[derive(Debug, thiserror::Error)]
pub enum IntegrateError {
    /// No such run.
    #[error("no run '{0}'")]
    NoSuchRun(String),
    /// The run has not ended: its branches may still move.
    #[error("run '{run_id}' is {state}; integrate it once it has ended (`sublaunch wait {run_id}`)")]
    NotEnded {
        /// The run.
        run_id: String,
        /// Its state.
        state: String,
    },
    /// The run ended without a result (it was stopped before its runner recorded any step).
    #[error("run '{run_id}' ended {state} without a result: no step recorded work to integrate")]
    NoResult {
        /// The run.
        run_id: String,
        /// How it ended.
        state: String,
    },
    /// Its result could not be read.
    #[error("{0}")]
    Result(#[from] crate::runs::AnswerError),
    /// No step of the run worked in a managed worktree.
    #[error("run '{0}' has no managed worktrees: there are no branches to integrate (a run gets them with --worktree)")]
    NoWorktrees(String),
    /// Its worktrees belong to more than one repository.
    #[error("run '{run_id}' worked in more than one repository ({first} and {second}); integrate takes one")]
    Repositories {
        /// The run.
        run_id: String,
        /// One repository.
        first: String,
        /// Another.
        second: String,
    },
    /// `--onto` names no commit.
    #[error("'{onto}' names no commit in {repository} (--onto)")]
    Onto {
        /// The revision given.
        onto: String,
        /// The repository.
        repository: PathBuf,
    },
    /// The integration branch exists, and does not start from the commit asked for.
    #[error(
        "the branch {branch} already exists at {head}, which is not built on '{onto}'; delete it (git branch -D {branch}) to start over"
    )]
    Diverged {
        /// The integration branch.
        branch: String,
        /// Where it is.
        head: String,
        /// What `--onto` asked for.
        onto: String,
    },
    /// Another `integrate` of the run holds its lock.
    #[error("another `sublaunch integrate` of run '{0}' is under way")]
    Busy(String),
    /// The integration branch moved while this integration ran (somebody else wrote it).
    #[error("the branch {0} was changed by something else during the integration; run integrate again")]
    Raced(String),
    /// git failed.
    #[error("{0}")]
    Git(#[from] GitError),
    /// A file of the state root could not be written.
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// Integrates `run_id` (see the module documentation): what landed, and why the rest did not.
pub async fn integrate(
    store: &RunStore,
    git: &Git,
    run_id: &str,
    options: &IntegrateOptions,
    interrupt: &mut (dyn gate::Interrupt + Send),
) -> Result<Integration, IntegrateError> {
    let run = store
        .run_dir(run_id)?
        .ok_or_else(|| IntegrateError::NoSuchRun(run_id.to_owned()))?;
    store.reconcile_run(&run);
    let ended = match crate::runs::status_of(&run) {
        Some(status) if status.is_terminal() => status.state.as_ref().map_or("ended", |s| s.as_str()).to_owned(),
        status => {
            return Err(IntegrateError::NotEnded {
                run_id: run_id.to_owned(),
                state: status
                    .as_ref()
                    .and_then(|s| s.state.as_ref())
                    .map_or("not ended", |s| s.as_str())
                    .to_owned(),
            });
        }
    };
    let payload = match crate::runs::settled_result(store, run_id, &run).await {
        Err(crate::runs::AnswerError::NotYet(_)) => {
            return Err(IntegrateError::NoResult {
                run_id: run_id.to_owned(),
                state: ended,
            });
        }
        other => other?,
    };
    let found = Candidates::of(&payload)?;
    let repository = git.repository(Path::new(&found.repository))?;
    let lock = lock::Lock::take(&run, run_id)?;
    gate::Scratch::remove_left(git, &repository, store, run_id)?;
    let branch = integration_branch(run_id);
    let reference = format!("refs/heads/{branch}");
    let at = At::Repository(&repository);
    let onto = match &options.onto {
        Some(onto) => resolve(git, at, onto)?.ok_or_else(|| IntegrateError::Onto {
            onto: onto.clone(),
            repository: repository.checkout.clone(),
        })?,
        None => found.base.clone(),
    };
    let existing = git.ask(
        at,
        &["rev-parse", "--verify", "--quiet", &format!("{reference}^{{commit}}")],
    )?;
    let existing = existing.map(|s| s.trim().to_owned()).filter(|s| !s.is_empty());
    if let Some(head) = &existing
        && !is_ancestor(git, at, &onto, head)?
    {
        return Err(IntegrateError::Diverged {
            branch,
            head: head.clone(),
            onto: options.onto.clone().unwrap_or(onto),
        });
    }
    let mut integration = Integration {
        run_id: run_id.to_owned(),
        repository: repository.checkout.display().to_string(),
        branch: branch.clone(),
        onto: onto.clone(),
        head: existing.clone(),
        entries: Vec::new(),
        fast_forward: None,
    };
    let mut tip = existing.clone().unwrap_or_else(|| onto.clone());
    let mut ref_value = existing;
    let identity = committer_arguments(git, at)?;
    let mut scratch: Option<gate::Scratch> = None;
    let mut landed: Vec<&Candidate> = Vec::new();
    let mut stopped = false;
    for candidate in &found.candidates {
        let mut entry = Entry::of(candidate);
        let Some(commit) = candidate.commit.as_deref().filter(|_| candidate.refusal.is_none()) else {
            entry.outcome = candidate.refusal.clone().unwrap_or(Outcome::NothingToLand {
                reason: "nothing was committed".into(),
            });
            integration.entries.push(entry);
            continue;
        };
        if stopped {
            entry.outcome = Outcome::NotTried;
            integration.entries.push(entry);
            continue;
        }
        if is_ancestor(git, at, commit, &tip)? {
            entry.outcome = Outcome::AlreadyLanded;
            landed.push(candidate);
            integration.entries.push(entry);
            continue;
        }
        let merged = if is_ancestor(git, at, &tip, commit)? {
            Merged::FastForward(commit.to_owned())
        } else {
            merge(git, at, &tip, candidate, commit, run_id, &identity, &landed)?
        };
        let new = match merged {
            Merged::Conflict { files, with } => {
                entry.outcome = Outcome::Conflict { files, with };
                integration.entries.push(entry);
                stopped = !options.keep_going;
                continue;
            }
            Merged::FastForward(ref new) | Merged::Commit(ref new) => new.clone(),
        };
        let mut gates_run = Vec::new();
        let commands = gate_commands(options, candidate, &landed);
        if !commands.is_empty() {
            if scratch.is_none() {
                scratch = Some(gate::Scratch::make(git, &repository, store, run_id, &new)?);
            }
            let scratch = scratch.as_ref().expect("made above");
            scratch.check_out(git, &new)?;
            for (index, command) in commands.iter().enumerate() {
                let log = run.join(format!("integrate-{}-{}.log", integration.entries.len() + 1, index + 1));
                let ran = scratch
                    .run(command, &log, options.gate_timeout, &lock, &mut *interrupt)
                    .await;
                let passed = ran.status == GateStatus::Passed;
                gates_run.push(ran);
                if !passed {
                    break;
                }
            }
        }
        if let Some(failed) = gates_run.iter().find(|g| g.status != GateStatus::Passed) {
            // An interrupted integration stops, whatever it was asked to skip.
            stopped = !options.keep_going || failed.status == GateStatus::Interrupted;
            entry.outcome = Outcome::GateFailed { gate: failed.clone() };
            integration.entries.push(entry);
            continue;
        }
        move_ref(git, at, &reference, &new, ref_value.as_deref(), &branch)?;
        ref_value = Some(new.clone());
        tip = new.clone();
        integration.head = Some(new.clone());
        entry.outcome = Outcome::Landed {
            commit: new,
            fast_forward: matches!(merged, Merged::FastForward(_)),
            gates: gates_run,
        };
        landed.push(candidate);
        integration.entries.push(entry);
    }
    if let Some(scratch) = scratch {
        scratch.remove(git);
    }
    if options.fast_forward {
        integration.fast_forward = Some(fast_forward::run(git, &repository, integration.head.as_deref()));
    }
    Ok(integration)
}

/// What merging one branch gave.
enum Merged {
    /// The integration tip is an ancestor of the branch: the branch's commit itself.
    FastForward(String),
    /// A merge commit.
    Commit(String),
    /// It conflicts.
    Conflict {
        /// The files in conflict.
        files: Vec<String>,
        /// The landed steps that changed them.
        with: Vec<String>,
    },
}

/// Merges `commit` into `tip` in the object store: a merge commit, or the conflicting files.
#[allow(clippy::too_many_arguments)]
fn merge(
    git: &Git,
    at: At<'_>,
    tip: &str,
    candidate: &Candidate,
    commit: &str,
    run_id: &str,
    identity: &[String],
    landed: &[&Candidate],
) -> Result<Merged, IntegrateError> {
    let args = [
        "merge-tree",
        "--write-tree",
        "--name-only",
        "--no-messages",
        "-z",
        tip,
        commit,
    ];
    let (clean, out) = git.run_status(at, &args)?;
    let mut fields = out.split('\0').filter(|f| !f.is_empty());
    let tree = fields.next().unwrap_or_default().trim().to_owned();
    if !clean {
        let files: BTreeSet<String> = fields.map(str::to_owned).collect();
        let mut with = Vec::new();
        for other in landed {
            let Some(their) = other.commit.as_deref() else { continue };
            let base = other.base.as_str();
            let changed = git.run(
                at,
                &[
                    "diff",
                    "--no-ext-diff",
                    "--no-textconv",
                    "--name-only",
                    "-z",
                    base,
                    their,
                ],
            )?;
            if changed.split('\0').any(|f| files.contains(f)) {
                with.push(other.label.clone());
            }
        }
        return Ok(Merged::Conflict {
            files: files.into_iter().collect(),
            with,
        });
    }
    let message = format!(
        "Integrate {} of run {run_id}\n\nBranch {} at {commit}, merged by sublaunch integrate.",
        candidate.label, candidate.branch
    );
    let mut args: Vec<String> = identity.to_vec();
    args.extend(["commit-tree", &tree, "-p", tip, "-p", commit, "-m", &message].map(str::to_owned));
    let new = git.run(at, &args)?.trim().to_owned();
    Ok(Merged::Commit(new))
}

/// The gate commands after merging `candidate`, each once, with the directory (relative to
/// the worktree's top) it runs in.
fn gate_commands(options: &IntegrateOptions, candidate: &Candidate, landed: &[&Candidate]) -> Vec<gate::Command> {
    match &options.gate {
        GateChoice::None => Vec::new(),
        GateChoice::Command(command) => vec![gate::Command {
            command: command.clone(),
            dir: candidate.dir.clone(),
        }],
        GateChoice::Contracts => {
            let mut out: Vec<gate::Command> = Vec::new();
            for one in landed.iter().copied().chain([candidate]) {
                for command in &one.gates {
                    if !out.contains(command) {
                        out.push(command.clone());
                    }
                }
            }
            out
        }
    }
}

/// Moves the integration branch from `old` (absent: it must not exist) to `new`, failing when
/// something else moved it meanwhile.
fn move_ref(
    git: &Git,
    at: At<'_>,
    reference: &str,
    new: &str,
    old: Option<&str>,
    branch: &str,
) -> Result<(), IntegrateError> {
    let zero = "0".repeat(new.len());
    let old = old.unwrap_or(&zero);
    let message = "sublaunch integrate";
    match git.run(at, &["update-ref", "-m", message, reference, new, old]) {
        Ok(_) => Ok(()),
        Err(GitError::Failed { .. }) => Err(IntegrateError::Raced(branch.to_owned())),
        Err(e) => Err(e.into()),
    }
}

/// The commit a revision names, or `None`.
fn resolve(git: &Git, at: At<'_>, revision: &str) -> Result<Option<String>, GitError> {
    if revision.starts_with('-') {
        return Ok(None);
    }
    let out = git.ask(
        at,
        &[
            "rev-parse",
            "--verify",
            "--quiet",
            "--end-of-options",
            &format!("{revision}^{{commit}}"),
        ],
    )?;
    Ok(out.map(|s| s.trim().to_owned()).filter(|s| !s.is_empty()))
}

/// Whether `ancestor` is an ancestor of (or is) `of`.
fn is_ancestor(git: &Git, at: At<'_>, ancestor: &str, of: &str) -> Result<bool, GitError> {
    Ok(git.run_status(at, &["merge-base", "--is-ancestor", ancestor, of])?.0)
}

/// `-c user.name=… -c user.email=…` when the repository names no committer (a fresh CI
/// machine), so the merge commits can still be made; nothing when it does.
fn committer_arguments(git: &Git, at: At<'_>) -> Result<Vec<String>, GitError> {
    if git.ask(at, &["var", "GIT_COMMITTER_IDENT"])?.is_some() {
        return Ok(Vec::new());
    }
    Ok(["-c", "user.name=sublaunch", "-c", "user.email=sublaunch@localhost"]
        .map(str::to_owned)
        .to_vec())
}
