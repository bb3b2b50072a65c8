//! `sublaunch worktrees [list|prune] [--json]`: the managed git worktrees of runs, and removing
//! those of ended runs (and their branches, unless they carry commits not merged into the
//! repository's HEAD, as `git branch -d` judges, or `--force` is given). `--json` prints one
//! JSON array, as every command that does not stream prints one document.

use super::runs::say;
use super::runs::{fail, open_store};
use serde_json::json;
use std::process::ExitCode;
use sublaunch::runs::worktrees::{list, prune};
use sublaunch::worktrees::Git;
use sublaunch::worktrees::prune::{Listed, Pruned};

/// Arguments of `sublaunch worktrees`.
#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    action: Option<Action>,
    /// Print a JSON array: an object per worktree.
    #[arg(short, long, global = true)]
    json: bool,
}

#[derive(clap::Subcommand)]
enum Action {
    /// List the worktrees made for runs (the default).
    List,
    /// Remove the worktrees of ended runs, and their branches unless they carry commits that
    /// are not merged into the repository's HEAD.
    Prune {
        /// Also remove uncommitted changes and branches that carry unmerged commits.
        #[arg(long)]
        force: bool,
        /// Say what would be removed, and remove nothing.
        #[arg(short = 'n', long)]
        dry_run: bool,
    },
}

/// Runs `sublaunch worktrees`.
pub fn run(args: Args) -> ExitCode {
    let store = match open_store("worktrees") {
        Ok(store) => store,
        Err(code) => return code,
    };
    let here = std::env::current_dir().unwrap_or_else(|_| "/".into());
    let git = match Git::find(&super::environment(), &here) {
        Ok(git) => git,
        Err(e) => return fail("worktrees", e),
    };
    let json = args.json;
    let problems = match args.action.unwrap_or(Action::List) {
        Action::List => match list(&store, &git) {
            Ok((listed, problems)) => {
                if json {
                    let items: Vec<_> = listed.iter().map(listed_json).collect();
                    say!("{}", serde_json::Value::Array(items));
                } else if listed.is_empty() {
                    say!("no worktrees");
                } else {
                    let rows: Vec<[String; 6]> = listed.iter().map(row).collect();
                    super::print_table(["RUN", "STATE", "BRANCH", "COMMITS", "CHANGES", "PATH"], &rows);
                    for item in listed.iter().filter(|i| i.problem.is_some()) {
                        let problem = item.problem.as_deref().unwrap_or_default();
                        eprintln!("sublaunch worktrees: {} ({}): {problem}", item.run_id, item.entry.name);
                    }
                }
                problems
            }
            Err(e) => return fail("worktrees", e),
        },
        Action::Prune { force, dry_run } => match prune(&store, &git, force, dry_run) {
            Ok((pruned, problems)) => {
                report(&pruned, dry_run, json);
                problems
            }
            Err(e) => return fail("worktrees", e),
        },
    };
    for problem in &problems {
        eprintln!("sublaunch worktrees: {problem}");
    }
    if problems.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

fn row(item: &Listed) -> [String; 6] {
    let changes = match (&item.other_branch, item.exists) {
        (_, false) => "(removed)".to_owned(),
        _ if item.problem.is_some() => "(unknown)".to_owned(),
        (Some(other), true) => format!("on {other}"),
        (None, true) => item.changes.to_string(),
    };
    let branch = if item.branch_exists {
        item.entry.branch.clone()
    } else {
        format!("{} (deleted)", item.entry.branch)
    };
    [
        item.run_id.clone(),
        item.phase.word().to_owned(),
        branch,
        item.commits.to_string(),
        changes,
        item.entry.path.clone(),
    ]
}

fn listed_json(item: &Listed) -> serde_json::Value {
    json!({
        "runId": item.run_id,
        "runState": item.phase.word(),
        "name": item.entry.name,
        "path": item.entry.path,
        "exists": item.exists,
        "branch": item.entry.branch,
        "branchExists": item.branch_exists,
        "repository": item.entry.repository,
        "baseCommit": item.entry.base_commit,
        "commits": item.commits,
        "merged": item.merged,
        "uncommittedChanges": item.changes,
        "checkedOut": item.other_branch,
        "problem": item.problem,
    })
}

fn report(pruned: &[Pruned], dry_run: bool, json: bool) {
    let (worktree_verb, branch_verb) = if dry_run {
        ("would remove", "would delete")
    } else {
        ("removed", "deleted")
    };
    if json {
        let items: Vec<_> = pruned
            .iter()
            .map(|p| {
                let mut value = listed_json(&p.listed);
                if let Some(fields) = value.as_object_mut() {
                    fields.insert("removedWorktree".into(), json!(p.removed_worktree));
                    fields.insert("removedBranch".into(), json!(p.removed_branch));
                    fields.insert("kept".into(), json!(p.kept));
                    fields.insert("dryRun".into(), json!(dry_run));
                }
                value
            })
            .collect();
        say!("{}", serde_json::Value::Array(items));
        return;
    }
    for p in pruned {
        let mut done = Vec::new();
        if p.removed_worktree {
            done.push(format!("{worktree_verb} {}", p.listed.entry.path));
        }
        if p.removed_branch {
            done.push(format!("{branch_verb} branch {}", p.listed.entry.branch));
        }
        let who = format!("{} ({})", p.listed.run_id, p.listed.entry.name);
        match (&p.kept, done.is_empty()) {
            (Some(why), true) => say!("{who}: left alone: {why}"),
            (Some(why), false) => say!("{who}: {}; kept the rest: {why}", done.join(", ")),
            (None, false) => say!("{who}: {}", done.join(", ")),
            (None, true) => {}
        }
    }
    let worktrees = pruned.iter().filter(|p| p.removed_worktree).count();
    let branches = pruned.iter().filter(|p| p.removed_branch).count();
    say!(
        "{worktree_verb} {}, {branch_verb} {}",
        super::prune::plural(worktrees, "worktree", "worktrees"),
        super::prune::plural(branches, "branch", "branches")
    );
}
