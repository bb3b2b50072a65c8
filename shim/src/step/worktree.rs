//! What a step left in its managed git worktree, read when its agent has exited: the branch
//! and commit it ended on, the commits made since the step started, and the changes left
//! uncommitted. Nothing is merged or cleaned; reading never takes git's index lock. The
//! agent could write the worktree, so git reaches it through the repository's own record of
//! it (never its `.git` file) and runs no program configuration or attributes name
//! ([`sublaunch_protocol::git`]).

use crate::process::bounded;
use std::path::Path;
use std::process::Command;
use std::time::Duration;
use sublaunch_protocol::git::{At, LinkedWorktree, Repository};
use sublaunch_protocol::records::config::StepWorktree;
use sublaunch_protocol::records::step_record::{CommitLine, Uncommitted, WorktreeReport};

/// How long one git question may take (a worktree of a huge repository, a slow disk); every
/// git command the runner runs over an agent's directory is bounded by it.
pub(crate) const GIT_LIMIT: Duration = Duration::from_secs(20);
/// The commits listed per step; more are counted, not listed.
const COMMITS_LISTED: usize = 500;

/// The state of a step's worktree at its end.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WorktreeEnd {
    /// The worktree.
    pub worktree: StepWorktree,
    /// The step's directory in it.
    pub cwd: String,
    /// The commit the step started at (the base, or where the step before it left off).
    pub start_commit: String,
    /// The commit checked out at the end.
    pub head: Option<String>,
    /// The branch checked out at the end (`None`: detached).
    pub branch: Option<String>,
    /// Commits made since `start_commit` (oldest first), as `(sha, subject)`.
    pub commits: Vec<(String, String)>,
    /// How many commits there are in all (`commits` lists at most 500).
    pub commit_count: usize,
    /// Tracked files with uncommitted changes.
    pub changed_files: u64,
    /// Lines added and removed by those changes.
    pub insertions: u64,
    /// Lines removed.
    pub deletions: u64,
    /// Untracked files (not ignored).
    pub untracked_files: u64,
    /// Why some of this could not be read.
    pub problem: Option<String>,
}

/// The git the shim runs (its own PATH's); the one program name every git command over an
/// agent's directory starts.
pub(crate) const GIT: &str = "git";

/// Runs `command` (whose subcommand is `what`) within [`GIT_LIMIT`]; its stdout (read as
/// UTF-8, lossily), or why it did not succeed.
pub(crate) fn run(command: Command, what: &str) -> Result<String, String> {
    let finished = bounded::run(command, None, GIT_LIMIT).map_err(|e| format!("git {what}: {e}"))?;
    if !finished.status.success() {
        return Err(format!("git {what} failed ({})", finished.status));
    }
    Ok(String::from_utf8_lossy(&finished.stdout).into_owned())
}

/// Runs `git args…` in `worktree`; its stdout.
fn git(worktree: &LinkedWorktree, args: &[&str]) -> Result<String, String> {
    let mut command = sublaunch_protocol::git::command(GIT, At::Worktree(worktree));
    command.args(args);
    run(command, args[0])
}

/// The worktree as its repository records it (never through its `.git` file), with the
/// repository's filter drivers known, so that every later command can turn them off.
pub(crate) fn locate(worktree: &StepWorktree) -> Result<LinkedWorktree, String> {
    let checkout = Path::new(&worktree.repository);
    let output = run(Repository::query(GIT, checkout), Repository::QUERY[0])?;
    let mut repository = Repository::parse(checkout, &output).map_err(|e| e.to_string())?;
    let mut keys = sublaunch_protocol::git::command(GIT, At::Repository(&repository));
    keys.args(Repository::FILTERS_QUERY);
    repository.set_filters(&run(keys, Repository::FILTERS_QUERY[0])?);
    repository
        .worktree(Path::new(&worktree.path))
        .map_err(|e| e.to_string())
}

/// Reads `worktree` after a step that ran in `cwd` there and started at `start_commit`.
pub fn capture(worktree: &StepWorktree, cwd: &str, start_commit: &str) -> WorktreeEnd {
    let mut end = WorktreeEnd {
        worktree: worktree.clone(),
        cwd: cwd.to_owned(),
        start_commit: start_commit.to_owned(),
        ..WorktreeEnd::default()
    };
    if let Err(problem) = read_into(&mut end) {
        end.problem = Some(problem);
    }
    end
}

fn read_into(end: &mut WorktreeEnd) -> Result<(), String> {
    let dir = locate(&end.worktree)?;
    // A submodule's own state would need git run in it, through a `.git` file the agent
    // could write: a submodule counts as changed when it is at another commit, not for
    // changes inside it.
    let status = git(
        &dir,
        &[
            "status",
            "--porcelain=v2",
            "--branch",
            "--untracked-files=normal",
            "--ignore-submodules=dirty",
            "-z",
        ],
    )?;
    let mut records = status.split('\0');
    while let Some(record) = records.next() {
        if let Some(oid) = record.strip_prefix("# branch.oid ") {
            end.head = (oid != "(initial)").then(|| oid.to_owned());
        } else if let Some(head) = record.strip_prefix("# branch.head ") {
            end.branch = (head != "(detached)").then(|| head.to_owned());
        } else if record.starts_with("1 ") || record.starts_with("u ") {
            end.changed_files += 1;
        } else if record.starts_with("2 ") {
            end.changed_files += 1;
            // A rename's original path is the next NUL-separated field.
            records.next();
        } else if record.starts_with("? ") {
            end.untracked_files += 1;
        }
    }
    if end.changed_files > 0 {
        let stat = git(
            &dir,
            &[
                "diff",
                "--no-ext-diff",
                "--no-textconv",
                "--ignore-submodules=dirty",
                "--shortstat",
                "HEAD",
            ],
        )?;
        for part in stat.split(',') {
            let mut words = part.split_whitespace();
            let (Some(n), Some(what)) = (words.next().and_then(|n| n.parse::<u64>().ok()), words.next()) else {
                continue;
            };
            if what.starts_with("insertion") {
                end.insertions = n;
            } else if what.starts_with("deletion") {
                end.deletions = n;
            }
        }
    }
    if end.head.as_deref().is_some_and(|head| head != end.start_commit) {
        let range = format!("{}..HEAD", end.start_commit);
        let log = git(
            &dir,
            &[
                "log",
                "--no-ext-diff",
                "--no-textconv",
                "--reverse",
                "--format=%H%x1f%s",
                &range,
            ],
        )?;
        let all: Vec<(String, String)> = log
            .lines()
            .filter_map(|line| line.split_once('\u{1f}'))
            .map(|(sha, subject)| (sha.to_owned(), subject.to_owned()))
            .collect();
        end.commit_count = all.len();
        end.commits = all.into_iter().take(COMMITS_LISTED).collect();
    }
    Ok(())
}

impl WorktreeEnd {
    /// The `worktree` record of the step's result and status entry.
    pub fn report(&self) -> WorktreeReport {
        WorktreeReport {
            path: self.worktree.path.clone(),
            cwd: self.cwd.clone(),
            branch: self.worktree.branch.clone(),
            repository: self.worktree.repository.clone(),
            base_commit: self.worktree.base_commit.clone(),
            start_commit: self.start_commit.clone(),
            head_commit: self.head.clone(),
            checked_out: self.branch.clone(),
            commits: self
                .commits
                .iter()
                .map(|(sha, subject)| CommitLine {
                    sha: sha.clone(),
                    subject: subject.clone(),
                })
                .collect(),
            commit_count: u64::try_from(self.commit_count).unwrap_or(u64::MAX),
            uncommitted: Uncommitted {
                changed_files: self.changed_files,
                insertions: self.insertions,
                deletions: self.deletions,
                untracked_files: self.untracked_files,
            },
            problem: self.problem.clone(),
        }
    }
}
