//! Managed git worktrees, through the real CLI and real git: parallel writers each commit on
//! their own branch and never see each other's files, a chain step shares the worktree of the
//! step before when asked, bad input is refused before anything starts (and leaves no run,
//! worktree, branch or record), a launch that fails takes its worktrees with it, and
//! `sublaunch worktrees prune` removes only what belongs to ended runs — also while new runs
//! launch beside it and `list` observers run.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;
use sublaunch_tests::cli::{git, ok, text, waited_run_id, write};
use sublaunch_tests::launch_harness::{HOST_FAULT_ENV, Scratch, names_in, wait_terminal};
use sublaunch_tests::stop_flag::StopFlag;

const LIMIT: Duration = Duration::from_secs(60);

/// A scratch whose `work/` is a repository with one commit: `README` and `pkg/lib.txt`.
fn repository(name: &str) -> Scratch {
    let scratch = Scratch::trusting(name);
    let work = scratch.init_repo();
    write(&work.join("README"), "hello\n");
    write(&work.join("pkg/lib.txt"), "lib\n");
    git(&work, &["add", "-A"]);
    git(&work, &["commit", "-qm", "base"]);
    scratch
}

/// A shell fragment that commits everything with `message`.
fn commit(message: &str) -> String {
    format!("git add -A && git -c user.name=agent -c user.email=agent@example.invalid commit -qm '{message}'")
}

/// Branches under `sublaunch/`.
fn sublaunch_branches(repo: &Path) -> Vec<String> {
    git(
        repo,
        &["for-each-ref", "--format=%(refname:short)", "refs/heads/sublaunch/"],
    )
    .lines()
    .map(str::to_owned)
    .collect()
}

/// `<root>/worktrees`'s entries (records and run directories of worktrees).
fn worktree_entries(scratch: &Scratch) -> Vec<String> {
    let dir = scratch.root().join("worktrees");
    if !dir.exists() {
        return Vec::new();
    }
    names_in(&dir).into_iter().filter(|n| !n.starts_with('.')).collect()
}

/// Runs `list --json` and `status` of every listed run in a loop until `stop`, asserting
/// each call works (observers beside the runs under test).
fn observe(scratch: &Scratch, stop: &StopFlag) -> usize {
    let mut rounds = 0;
    while !stop.raised() {
        let out = scratch.cli(&["list", "--all", "--json"]).output().unwrap();
        assert!(out.status.success(), "list: {}", text(&out.stderr));
        let listed = ok(&scratch.cli(&["worktrees", "list", "--json"]).output().unwrap());
        let document: Value = serde_json::from_str(&listed).unwrap();
        assert!(document.is_array(), "{listed}");
        rounds += 1;
    }
    rounds
}

/// A shell fragment that waits (bounded) until `count` files are in `dir`: a barrier, so the
/// parallel tasks all have written their file before any looks around.
fn barrier(dir: &Path, me: &str, count: usize) -> String {
    let dir = dir.display();
    format!(
        "touch {dir}/{me}; i=0; while [ $(ls {dir} | wc -l) -lt {count} ] && [ $i -lt 2000 ]; do i=$((i+1)); sleep 0.01; done"
    )
}

#[test]
fn parallel_writers_commit_on_their_own_branches_and_never_see_each_other() {
    let scratch = repository("wt-parallel");
    let work = scratch.work();
    let base = git(&work, &["rev-parse", "HEAD"]).trim().to_owned();
    let gate = scratch.path().join("barrier");
    std::fs::create_dir_all(&gate).unwrap();
    let tasks: Vec<Value> = (1..=3)
        .map(|n| {
            let task = format!(
                "echo {n} > mine-{n}.txt && {} && {} && echo \"$(pwd)|$(ls | tr '\\n' ' ')\"",
                barrier(&gate, &n.to_string(), 3),
                commit(&format!("task {n}"))
            );
            serde_json::json!({"agent": "shell", "task": task})
        })
        .collect();
    let chain = write(
        &scratch.path().join("writers.json"),
        &serde_json::json!({"cwd": "pkg", "steps": [{"parallel": tasks, "worktree": true}]}).to_string(),
    );
    let stop = StopFlag::new();
    let output = std::thread::scope(|threads| {
        let stop_observer = stop.raise_on_drop();
        let observer = threads.spawn(|| observe(&scratch, &stop));
        let output = scratch
            .cli(&["run", "--chain", chain.to_str().unwrap(), "--wait"])
            .output()
            .unwrap();
        drop(stop_observer);
        assert!(observer.join().unwrap() > 0);
        output
    });
    let stderr = text(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    let id = waited_run_id(&output);
    assert!(
        stderr.contains(&format!(
            "worktree {}",
            scratch.root().join("worktrees").join(&id).join("1-1").display()
        )),
        "{stderr}"
    );
    let result = scratch.result_json(&id);
    let steps = result["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 3);
    for (n, step) in (1..=3).zip(steps) {
        let name = format!("1-{n}");
        let top = scratch.root().join("worktrees").join(&id).join(&name);
        let (pwd, seen) = step["output"].as_str().unwrap().trim().split_once('|').unwrap();
        // The same directory relative to the repository's top, inside its own worktree.
        assert_eq!(Path::new(pwd), top.join("pkg"), "task {n}");
        let mut files: Vec<&str> = seen.split_whitespace().collect();
        files.sort_unstable();
        assert_eq!(
            files,
            ["lib.txt", &format!("mine-{n}.txt")],
            "task {n} sees only its own file"
        );
        let worktree = &step["worktree"];
        let branch = format!("sublaunch/{id}/{name}");
        assert_eq!(worktree["branch"], branch.as_str());
        assert_eq!(worktree["path"], top.to_str().unwrap());
        assert_eq!(worktree["baseCommit"], base.as_str());
        assert_eq!(worktree["commitCount"], 1);
        assert_eq!(worktree["commits"][0]["subject"], format!("task {n}").as_str());
        assert_eq!(worktree["uncommitted"]["changedFiles"], 0);
        assert_eq!(worktree["uncommitted"]["untrackedFiles"], 0);
        // The branch holds this task's file and none of the others'.
        let tree = git(&work, &["ls-tree", "--name-only", &branch, "pkg/"]);
        let mut tree: Vec<&str> = tree.lines().collect();
        tree.sort_unstable();
        assert_eq!(tree, ["pkg/lib.txt", &format!("pkg/mine-{n}.txt")]);
    }
    // Nothing is merged: the user's checkout is as it was.
    assert_eq!(git(&work, &["rev-parse", "HEAD"]).trim(), base);
    assert_eq!(git(&work, &["status", "--porcelain"]), "");
    assert_eq!(sublaunch_branches(&work).len(), 3);
}

#[test]
fn a_chain_step_shares_the_worktree_of_the_step_before_when_asked() {
    let scratch = repository("wt-chain");
    let chain = write(
        &scratch.path().join("chain.yaml"),
        &format!(
            "steps:\n  - agent: shell\n    worktree: true\n    task: \"echo one > one.txt && {}\"\n  - agent: shell\n    worktree: previous\n    task: \"cat one.txt && echo two > two.txt\"\n  - agent: shell\n    worktree: true\n    task: \"ls\"\n",
            commit("one")
        ),
    );
    let output = scratch
        .cli(&["run", "--chain", chain.to_str().unwrap(), "--wait"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", text(&output.stderr));
    let id = waited_run_id(&output);
    let result = scratch.result_json(&id);
    let steps = result["steps"].as_array().unwrap();
    assert_eq!(
        steps[1]["output"].as_str().unwrap().trim(),
        "one",
        "step 2 sees step 1's commit"
    );
    assert_eq!(steps[0]["worktree"]["path"], steps[1]["worktree"]["path"]);
    assert_eq!(steps[0]["worktree"]["commitCount"], 1);
    // Step 2 counts only what it did: no commit, one untracked file.
    assert_eq!(steps[1]["worktree"]["commitCount"], 0);
    assert_eq!(steps[1]["worktree"]["startCommit"], steps[0]["worktree"]["headCommit"]);
    assert_eq!(steps[1]["worktree"]["uncommitted"]["untrackedFiles"], 1);
    // Step 3 has a worktree of its own, at the base: no one.txt there.
    assert_ne!(steps[2]["worktree"]["path"], steps[0]["worktree"]["path"]);
    assert!(!steps[2]["output"].as_str().unwrap().contains("one.txt"));
    assert_eq!(
        sublaunch_branches(&scratch.work()),
        [format!("sublaunch/{id}/1"), format!("sublaunch/{id}/3")]
    );
}

#[test]
fn an_agent_that_writes_asks_for_its_worktree_in_its_frontmatter() {
    let scratch = repository("wt-agent");
    write(
        &scratch.work().join(".sublaunch/agents/writer.md"),
        "---\ndescription: writes\nworktree: true\nrunner:\n  type: external-cli\n  adapter: shell\n---\n",
    );
    git(&scratch.work(), &["add", "-A"]);
    git(&scratch.work(), &["commit", "-qm", "agent"]);
    let output = scratch
        .cli(&["run", "--agent", "writer", "--task", "pwd", "--wait"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", text(&output.stderr));
    let id = waited_run_id(&output);
    let expected = scratch.root().join("worktrees").join(&id).join("1");
    assert_eq!(Path::new(text(&output.stdout).trim()), expected);
    // A run of the same agent in a chain can say no.
    let chain = write(
        &scratch.path().join("no.json"),
        r#"{"steps": [{"agent": "writer", "task": "pwd", "worktree": false}]}"#,
    );
    let output = scratch
        .cli(&["run", "--chain", chain.to_str().unwrap(), "--wait"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert_eq!(Path::new(text(&output.stdout).trim()), scratch.work());
}

/// A launch refused before anything starts: exit non-zero with `message` on stderr, and no
/// run, worktree, record or branch left.
#[track_caller]
fn refused(scratch: &Scratch, mut command: Command, message: &str) {
    let output = command.output().unwrap();
    let stderr = text(&output.stderr);
    assert!(!output.status.success(), "launched: {stderr}");
    assert!(stderr.contains(message), "expected {message:?} in {stderr}");
    let runs = if scratch.runs().exists() {
        names_in(&scratch.runs())
    } else {
        Vec::new()
    };
    assert!(runs.iter().all(|n| n.starts_with('.')), "a run was left: {runs:?}");
    assert_eq!(worktree_entries(scratch), Vec::<String>::new());
    if scratch.work().join(".git").exists() {
        assert_eq!(sublaunch_branches(&scratch.work()), Vec::<String>::new());
    }
}

#[test]
fn bad_input_is_refused_before_anything_starts() {
    let run = |scratch: &Scratch, extra: &[&str]| {
        let mut args = vec!["run", "--agent", "shell", "--task", "echo never"];
        args.extend_from_slice(extra);
        scratch.cli(&args)
    };
    // Not in a repository.
    let plain = Scratch::new("wt-plain");
    refused(&plain, run(&plain, &["--worktree"]), "is not inside a git repository");
    // A repository without a commit.
    let empty = Scratch::new("wt-empty");
    empty.init_repo();
    refused(&empty, run(&empty, &["--worktree"]), "has no commit yet");

    let scratch = repository("wt-bad");
    let work = scratch.work();
    refused(
        &scratch,
        run(&scratch, &["--worktree", "--base", "nope"]),
        "the base 'nope' names no commit",
    );
    refused(
        &scratch,
        run(&scratch, &["--worktree", "--base=--all"]),
        "is not a git revision",
    );
    refused(
        &scratch,
        run(&scratch, &["--base", "HEAD"]),
        "no step of this run runs in one",
    );
    // A directory the base commit does not have.
    std::fs::create_dir_all(work.join("scratchpad")).unwrap();
    write(&work.join(".gitignore"), "scratchpad/\n");
    git(&work, &["add", ".gitignore"]);
    git(&work, &["commit", "-qm", "ignore"]);
    refused(
        &scratch,
        run(&scratch, &["--worktree", "--cwd", "scratchpad"]),
        "which its base commit",
    );
    // Uncommitted changes when a clean base is asked for (on the command line or in settings).
    write(&work.join("README"), "changed\n");
    refused(
        &scratch,
        run(&scratch, &["--worktree", "--require-clean"]),
        "has uncommitted changes (M README)",
    );
    write(
        &scratch.path().join("home/.config/sublaunch/settings.json"),
        r#"{"subagents": {"worktrees": {"requireClean": true}}}"#,
    );
    refused(&scratch, run(&scratch, &["--worktree"]), "a clean base was asked for");
    std::fs::remove_file(scratch.path().join("home/.config/sublaunch/settings.json")).unwrap();
    git(&work, &["checkout", "-q", "README"]);
    // A branch that already exists (the run id chosen by the caller).
    git(&work, &["branch", "sublaunch/fixed/1"]);
    let output = run(&scratch, &["--worktree", "--run-id", "fixed"]).output().unwrap();
    assert!(!output.status.success());
    assert!(
        text(&output.stderr).contains("the branch 'sublaunch/fixed/1' already exists"),
        "{}",
        text(&output.stderr)
    );
    assert!(!scratch.run_dir("fixed").exists(), "the run directory is taken back");
    assert_eq!(worktree_entries(&scratch), Vec::<String>::new());
    git(&work, &["branch", "-D", "sublaunch/fixed/1"]);
    // A run id git cannot take as part of a branch name.
    refused(
        &scratch,
        run(&scratch, &["--worktree", "--run-id", "a..b"]),
        "cannot be part of a git branch name",
    );
    // git missing: a PATH with sh and nothing else.
    let bin = scratch.path().join("only-sh");
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink("/bin/sh", bin.join("sh")).unwrap();
    let mut no_git = run(&scratch, &["--worktree"]);
    no_git.env("PATH", &bin);
    refused(&scratch, no_git, "managed worktrees need git, and 'git' is not on PATH");
    // Chain files: "previous" needs a step of its own before it; tasks take their group's.
    for (file, message) in [
        (
            r#"{"steps": [{"agent": "shell", "task": "a", "worktree": "previous"}]}"#,
            "steps[0].worktree: \"previous\" needs a step before it",
        ),
        (
            r#"{"steps": [{"parallel": [{"agent": "shell", "task": "a"}], "worktree": true}, {"agent": "shell", "task": "b", "worktree": "previous"}]}"#,
            "but steps[0] is a parallel group",
        ),
        (
            r#"{"steps": [{"parallel": [{"agent": "shell", "task": "a", "worktree": true}]}]}"#,
            "steps[0].parallel[0].worktree: a task of a parallel group runs in its group's",
        ),
        (
            r#"{"steps": [{"agent": "shell", "task": "a", "worktree": "yes"}]}"#,
            "steps[0].worktree: expected true, false or \"previous\", got \"yes\"",
        ),
        (
            r#"{"steps": [{"agent": "shell", "task": "a"}, {"agent": "shell", "task": "b", "worktree": "previous"}]}"#,
            "runs in the worktree of the step before it, which runs in none",
        ),
    ] {
        let chain = write(&scratch.path().join("bad.json"), file);
        refused(
            &scratch,
            scratch.cli(&["run", "--chain", chain.to_str().unwrap()]),
            message,
        );
    }
}

#[test]
fn a_launch_that_fails_takes_its_worktrees_with_it() {
    let scratch = repository("wt-fail");
    // Before the shim exists (the runner configuration cannot be written): nothing is left.
    let mut command = scratch.cli(&["run", "--agent", "shell", "--task", "echo never", "--worktree"]);
    command.env(HOST_FAULT_ENV, "cfg:EACCES");
    refused(&scratch, command, "Permission denied");
    // After the shim was spawned, before the run committed (the proceed file cannot be
    // written): the run is recorded failed, and its worktree, branch and record are gone.
    let output = scratch
        .cli(&[
            "run",
            "--agent",
            "shell",
            "--task",
            "echo never",
            "--worktree",
            "--json",
        ])
        .env(HOST_FAULT_ENV, "proceed:EACCES")
        .output()
        .unwrap();
    assert!(!output.status.success());
    assert!(
        text(&output.stderr).contains("Failed to authorize async runner startup"),
        "{}",
        text(&output.stderr)
    );
    let failed: Vec<String> = names_in(&scratch.runs())
        .into_iter()
        .filter(|n| !n.starts_with('.'))
        .collect();
    assert_eq!(failed.len(), 1, "{failed:?}");
    assert_eq!(wait_terminal(&scratch.run_dir(&failed[0]), LIMIT)["state"], "failed");
    assert_eq!(worktree_entries(&scratch), Vec::<String>::new());
    assert_eq!(sublaunch_branches(&scratch.work()), Vec::<String>::new());
    assert_eq!(
        git(&scratch.work(), &["worktree", "list", "--porcelain"])
            .matches("worktree ")
            .count(),
        1,
        "only the main working tree"
    );
}

/// Launches a worktree run of `task` and returns its id (without waiting).
fn launch(scratch: &Scratch, task: &str) -> String {
    ok(&scratch
        .cli(&["run", "--agent", "shell", "--worktree", "--task", task])
        .output()
        .unwrap())
    .trim()
    .to_owned()
}

/// Launches a worktree run of `task` and waits for its end.
fn finished(scratch: &Scratch, task: &str) -> String {
    let id = launch(scratch, task);
    wait_terminal(&scratch.run_dir(&id), LIMIT);
    ok(&scratch.cli(&["wait", &id]).output().unwrap());
    id
}

fn listed(scratch: &Scratch) -> Vec<Value> {
    let listed = ok(&scratch.cli(&["worktrees", "list", "--json"]).output().unwrap());
    // One document: a JSON array, one object per worktree.
    match serde_json::from_str(&listed) {
        Ok(Value::Array(items)) => items,
        other => panic!("not a JSON array: {other:?}: {listed}"),
    }
}

fn entry_of<'a>(list: &'a [Value], id: &str) -> Option<&'a Value> {
    list.iter().find(|e| e["runId"] == id)
}

/// #30: a branch whose commits were merged goes without --force, as `git branch -d` would
/// delete it; one not merged stays; counts are said in words.
#[test]
fn prune_deletes_a_merged_branch_as_git_branch_d_does() {
    let scratch = repository("wt-merged");
    let work = scratch.work();
    let merged = finished(&scratch, &format!("echo m > m.txt && {}", commit("m")));
    let unmerged = finished(&scratch, &format!("echo u > u.txt && {}", commit("u")));
    git(&work, &["merge", "-q", "--no-edit", &format!("sublaunch/{merged}/1")]);
    let list = listed(&scratch);
    assert_eq!(entry_of(&list, &merged).unwrap()["merged"], true);
    assert_eq!(entry_of(&list, &unmerged).unwrap()["merged"], false);

    let out = ok(&scratch.cli(&["worktrees", "prune"]).output().unwrap());
    assert!(
        out.contains(&format!(", deleted branch sublaunch/{merged}/1\n")),
        "{out}"
    );
    assert!(
        out.contains(&format!(
            "; kept the rest: its branch sublaunch/{unmerged}/1 carries 1 commit not merged into HEAD and is kept; merge it, or --force deletes it\n"
        )),
        "{out}"
    );
    assert!(out.ends_with("\nremoved 2 worktrees, deleted 1 branch\n"), "{out}");
    assert_eq!(sublaunch_branches(&work), vec![format!("sublaunch/{unmerged}/1")]);
}

#[test]
fn prune_removes_only_what_belongs_to_ended_runs() {
    let scratch = repository("wt-prune");
    let work = scratch.work();
    let committed = finished(&scratch, &format!("echo c > c.txt && {}", commit("c")));
    let clean = finished(&scratch, "true");
    let dirty = finished(&scratch, "echo d > d.txt");
    let taken = finished(&scratch, "true");
    let fifo = scratch.path().join("gate");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let running = launch(&scratch, &format!("read line < {}; echo released", fifo.display()));
    // The user took one worktree over with a branch of their own.
    let taken_path = PathBuf::from(entry_of(&listed(&scratch), &taken).unwrap()["path"].as_str().unwrap());
    git(&taken_path, &["checkout", "-q", "-b", "mine"]);

    let list = listed(&scratch);
    assert_eq!(list.len(), 5);
    assert_eq!(entry_of(&list, &committed).unwrap()["commits"], 1);
    assert_eq!(entry_of(&list, &dirty).unwrap()["uncommittedChanges"], 1);
    assert_eq!(entry_of(&list, &running).unwrap()["runState"], "running");
    assert_eq!(entry_of(&list, &taken).unwrap()["checkedOut"], "mine");

    let dry = ok(&scratch.cli(&["worktrees", "prune", "--dry-run"]).output().unwrap());
    assert!(
        dry.ends_with("\nwould remove 2 worktrees, would delete 1 branch\n"),
        "{dry}"
    );
    assert_eq!(listed(&scratch).len(), 5, "a dry run removes nothing");

    let out = ok(&scratch.cli(&["worktrees", "prune"]).output().unwrap());
    assert!(out.contains(&format!("{clean} (1): removed ")), "{out}");
    assert!(
        out.contains(&format!(
            "; kept the rest: its branch sublaunch/{committed}/1 carries 1 commit not merged into HEAD and is kept; merge it, or --force deletes it\n"
        )),
        "{out}"
    );
    assert!(
        out.contains(&format!(
            "{dirty} (1): left alone: it has 1 uncommitted change; --force removes them\n"
        )),
        "{out}"
    );
    assert!(out.contains("is on mine now"), "{out}");
    assert!(
        out.contains(&format!("{running} (1): left alone: its run is running")),
        "{out}"
    );
    let list = listed(&scratch);
    assert!(entry_of(&list, &clean).is_none(), "clean: worktree and branch gone");
    let kept = entry_of(&list, &committed).unwrap();
    assert_eq!(
        (kept["exists"].as_bool(), kept["branchExists"].as_bool()),
        (Some(false), Some(true))
    );
    assert!(Path::new(entry_of(&list, &running).unwrap()["path"].as_str().unwrap()).is_dir());

    let out = ok(&scratch.cli(&["worktrees", "prune", "--force"]).output().unwrap());
    assert!(
        out.contains(&format!("{committed} (1): deleted branch sublaunch/{committed}/1")),
        "{out}"
    );
    assert!(out.contains(&format!("{dirty} (1): removed ")), "{out}");
    let list = listed(&scratch);
    assert_eq!(
        list.iter()
            .map(|e| e["runId"].as_str().unwrap())
            .collect::<Vec<_>>()
            .len(),
        2,
        "{list:?}"
    );
    assert!(entry_of(&list, &taken).is_some() && entry_of(&list, &running).is_some());
    // The user's branch and worktree are theirs.
    assert!(taken_path.is_dir());
    assert!(sublaunch_branches(&work).contains(&format!("sublaunch/{taken}/1")));

    std::fs::write(&fifo, "go\n").unwrap();
    ok(&scratch.cli(&["wait", &running]).output().unwrap());
    let out = ok(&scratch.cli(&["worktrees", "prune"]).output().unwrap());
    assert!(out.contains(&format!("{running} (1): removed ")), "{out}");
    assert!(!scratch.root().join("worktrees").join(&running).exists());
    assert!(
        !scratch
            .root()
            .join("worktrees")
            .join(format!("{running}.json"))
            .exists()
    );
    assert_eq!(
        git(&work, &["status", "--porcelain"]),
        "",
        "the user's checkout is untouched"
    );
}

#[test]
fn pruning_racing_new_launches_never_takes_a_running_runs_worktree() {
    let scratch = repository("wt-race");
    let stop = StopFlag::new();
    let ids = std::thread::scope(|threads| {
        let stop_observers = stop.raise_on_drop();
        let pruner = threads.spawn(|| {
            let mut rounds = 0;
            while !stop.raised() {
                let out = scratch.cli(&["worktrees", "prune", "--force"]).output().unwrap();
                assert!(out.status.success(), "{}", text(&out.stderr));
                rounds += 1;
            }
            rounds
        });
        let observer = threads.spawn(|| observe(&scratch, &stop));
        // Each run checks, at its end, that its worktree is still whole.
        let ids: Vec<String> = (0..6)
            .map(|i| {
                finished(
                    &scratch,
                    &format!("test -f README && echo {i} > f && git status --porcelain"),
                )
            })
            .collect();
        drop(stop_observers);
        assert!(pruner.join().unwrap() > 0);
        assert!(observer.join().unwrap() > 0);
        ids
    });
    for id in &ids {
        let result = scratch.result_json(id);
        assert_eq!(result["state"], "complete", "{id}: {result}");
        assert_eq!(result["answer"].as_str().unwrap().trim(), "?? f", "{id}");
    }
    let out = ok(&scratch.cli(&["worktrees", "prune", "--force"]).output().unwrap());
    let total = out.lines().last().unwrap_or_default();
    // The count is whatever the racing pruner left; the words agree with it.
    let counted = |n: &str, one: &str, many: &str, noun: &str| {
        n.parse::<u32>().is_ok_and(|n| noun == if n == 1 { one } else { many })
    };
    let words: Vec<&str> = total.split([' ', ',']).filter(|w| !w.is_empty()).collect();
    assert!(
        matches!(
            words.as_slice(),
            ["removed", n, worktrees, "deleted", m, branches]
                if counted(n, "worktree", "worktrees", worktrees)
                    && counted(m, "branch", "branches", branches)
        ),
        "{out}"
    );
    assert_eq!(listed(&scratch), Vec::<Value>::new(), "{out}");
    assert_eq!(sublaunch_branches(&scratch.work()), Vec::<String>::new(), "{out}");
    assert_eq!(
        git(&scratch.work(), &["worktree", "list", "--porcelain"])
            .matches("worktree ")
            .count(),
        1
    );
}

#[test]
fn an_agent_that_repoints_its_worktrees_git_file_runs_nothing_and_falsifies_nothing() {
    let scratch = repository("wt-hostile-git");
    let tmp = scratch.path();
    let pwned = tmp.join("PWNED");
    let trap = sublaunch_tests::cli::executable(
        &tmp.join("trap.sh"),
        &format!("#!/bin/sh\necho \"$0 $*\" >> {}\nexec cat\n", pwned.display()),
    );
    let (trap, evil, hooks) = (trap.display(), tmp.join("evilgit"), tmp.join("hooks"));
    let evil = evil.display();
    // Everything that names a program, in a copy of the repository (still on its first
    // branch) and in the repository itself: the agent is not sandboxed and can write both.
    let plant = |git_dir: &str| {
        [
            format!("core.fsmonitor {trap}"),
            format!("core.hooksPath {}", hooks.display()),
            format!("diff.external {trap}"),
            format!("'filter.evil.clean' '{trap} clean'"),
            format!("'diff.evil.textconv' '{trap} textconv'"),
        ]
        .map(|setting| format!("git --git-dir={git_dir} config {setting}"))
        .join(" && ")
    };
    let task = format!(
        "echo mine > mine.txt && {commit} && common=$(git rev-parse --git-common-dir) && cp -r \"$common\" {evil} && \
         mkdir {hooks} && ln -s {trap} {hooks}/reference-transaction && ln -s {trap} {hooks}/post-checkout && \
         {plant_evil} && {plant_real} && \
         echo '* filter=evil diff=evil' > .gitattributes && touch -d 2001-01-01 README && \
         echo \"gitdir: {evil}\" > .git",
        commit = commit("mine"),
        hooks = hooks.display(),
        plant_evil = plant(&evil.to_string()),
        plant_real = plant("\"$common\""),
    );
    let output = scratch
        .cli(&["run", "--agent", "shell", "--worktree", "--task", &task, "--wait"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", text(&output.stderr));
    let id = waited_run_id(&output);
    let ran = || std::fs::read_to_string(&pwned).unwrap_or_default();
    assert_eq!(ran(), "", "the step's end ran a program the agent planted");

    // The record is the real worktree's: its branch, its commit, the file it left untracked
    // (README was touched but not changed).
    let branch = format!("sublaunch/{id}/1");
    let tip = git(&scratch.work(), &["rev-parse", &branch]).trim().to_owned();
    let worktree = &scratch.result_json(&id)["steps"][0]["worktree"];
    assert_eq!(worktree["checkedOut"], branch.as_str(), "{worktree}");
    assert_eq!(worktree["headCommit"], tip.as_str());
    assert_eq!(worktree["commitCount"], 1);
    assert_eq!(worktree["commits"][0]["subject"], "mine");
    assert_eq!(worktree["uncommitted"]["changedFiles"], 0);
    assert_eq!(worktree["uncommitted"]["untrackedFiles"], 1);
    assert!(worktree.get("problem").is_none(), "{worktree}");

    ok(&scratch.cli(&["worktrees"]).output().unwrap());
    let list = listed(&scratch);
    let entry = entry_of(&list, &id).unwrap();
    assert_eq!(entry["checkedOut"], Value::Null, "{entry}");
    assert_eq!(entry["commits"], 1);
    assert_eq!(entry["uncommittedChanges"], 1);
    assert_eq!(entry["problem"], Value::Null);
    assert_eq!(ran(), "", "listing ran a program the agent planted");

    // git refuses to remove a worktree whose `.git` names another repository; it is kept,
    // saying so, and still nothing runs.
    let out = ok(&scratch.cli(&["worktrees", "prune"]).output().unwrap());
    assert!(
        out.contains("it has 1 uncommitted change; --force removes them"),
        "{out}"
    );
    let out = ok(&scratch.cli(&["worktrees", "prune", "--force"]).output().unwrap());
    assert!(out.contains("validation failed, cannot remove working tree"), "{out}");
    assert!(Path::new(entry["path"].as_str().unwrap()).is_dir());
    assert_eq!(ran(), "", "pruning ran a program the agent planted");
}
