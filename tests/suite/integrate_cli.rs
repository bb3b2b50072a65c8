//! `sublaunch integrate` (G82) through the real CLI, real git and real parallel writers in
//! managed worktrees: of three writers where two conflict and one breaks the tests exactly
//! the good one lands; the steps' own gates are used when none is given; the user's checkout
//! moves only with `--ff`, clean and fast-forward; an integration stopped (SIGTERM) or killed
//! (SIGKILL) in the middle of a gate leaves the branch at the last verified commit and
//! nothing of the gate running once the next integration starts; and the MCP tool lands the
//! same, refusing a client's own gate command unless shell was allowed.

use serde_json::{Value, json};
use std::path::Path;
use std::process::Output;
use std::time::Duration;
use sublaunch_tests::cli::{git, text, waited_run_id, write};
use sublaunch_tests::launch_harness::{Scratch, wait_for};

const LIMIT: Duration = Duration::from_secs(60);

/// A scratch whose `work/` is a repository with `notes.txt` and a test script that fails when
/// any text file says BROKEN.
fn repository(name: &str) -> Scratch {
    let scratch = Scratch::trusting(name);
    let work = scratch.init_repo();
    write(&work.join("notes.txt"), "first line\nsecond line\n");
    write(&work.join("test.sh"), "! grep -l BROKEN *.txt\n");
    git(&work, &["add", "-A"]);
    git(&work, &["commit", "-qm", "base"]);
    scratch
}

/// A shell fragment that commits everything with `message`.
fn commit(message: &str) -> String {
    format!("git add -A && git -c user.name=agent -c user.email=agent@example.invalid commit -qm '{message}'")
}

/// Runs a parallel group of shell writers, each `task` in its own worktree, to its end; the
/// run id. `group` adds fields to the group (a gate).
fn writers(scratch: &Scratch, tasks: &[String], group: Value) -> String {
    let parallel: Vec<Value> = tasks.iter().map(|t| json!({"agent": "shell", "task": t})).collect();
    let mut step = json!({"parallel": parallel, "worktree": true});
    for (key, value) in group.as_object().into_iter().flatten() {
        step[key] = value.clone();
    }
    let chain = write(
        &scratch.path().join("writers.json"),
        &json!({"steps": [step]}).to_string(),
    );
    let output = scratch
        .cli(&["run", "--chain", chain.to_str().unwrap(), "--wait"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", text(&output.stderr));
    waited_run_id(&output)
}

fn integrate(scratch: &Scratch, args: &[&str]) -> Output {
    let mut all = vec!["integrate"];
    all.extend(args);
    scratch.cli(&all).output().unwrap()
}

fn json_of(output: &Output) -> Value {
    serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", text(&output.stdout), text(&output.stderr)))
}

fn outcomes(report: &Value) -> Vec<String> {
    report["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["outcome"].as_str().unwrap().to_owned())
        .collect()
}

fn tip(repo: &Path, branch: &str) -> Option<String> {
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(["rev-parse", "--verify", "--quiet", &format!("refs/heads/{branch}")])
        .output()
        .unwrap();
    out.status.success().then(|| text(&out.stdout).trim().to_owned())
}

fn show(repo: &Path, commit: &str, file: &str) -> Option<String> {
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(["show", &format!("{commit}:{file}")])
        .output()
        .unwrap();
    out.status.success().then(|| text(&out.stdout))
}

#[test]
fn of_three_writers_where_two_conflict_and_one_breaks_the_tests_exactly_the_good_one_lands() {
    let scratch = repository("integrate-three");
    let work = scratch.work();
    let head_before = git(&work, &["rev-parse", "HEAD"]);
    let branch_before = git(&work, &["symbolic-ref", "HEAD"]);
    let id = writers(
        &scratch,
        &[
            // Good: a feature and a change to the first line.
            format!(
                "echo a > feature-a.txt && sed -i 's/first line/first line, by A/' notes.txt && {}",
                commit("A")
            ),
            // Conflicts with A: the same line, differently.
            format!("sed -i 's/first line/first line, by B/' notes.txt && {}", commit("B")),
            // Breaks the tests, in a file nobody else touches.
            format!("echo BROKEN > feature-c.txt && {}", commit("C")),
        ],
        json!({}),
    );
    let branch = format!("sublaunch/{id}/integration");

    // Stops at the first problem: A lands, B conflicts, C is not tried.
    let first = integrate(&scratch, &[&id, "--gate", "sh test.sh"]);
    assert_eq!(first.status.code(), Some(1), "{}", text(&first.stderr));
    let said = text(&first.stdout);
    assert!(said.contains("step 1.1 shell"), "{said}");
    assert!(said.contains("landed"), "{said}");
    assert!(
        said.contains("conflicts in notes.txt (also changed by step 1.1 shell)"),
        "{said}"
    );
    assert!(said.contains("not tried"), "{said}");
    assert!(
        said.contains(&format!(
            "to resolve a conflict by hand: git switch {branch} && git merge sublaunch/{id}/1-2"
        )),
        "{said}"
    );
    let landed = tip(&work, &branch).expect("the integration branch exists");
    assert_eq!(show(&work, &landed, "feature-a.txt").as_deref(), Some("a\n"));
    assert!(show(&work, &landed, "notes.txt").unwrap().contains("by A"));

    // Keeps going: B still conflicts, C fails the gate on the merged tree; nothing more lands.
    let second = integrate(&scratch, &[&id, "--gate", "sh test.sh", "--keep-going", "--json"]);
    assert_eq!(second.status.code(), Some(1), "{}", text(&second.stderr));
    let report = json_of(&second);
    assert_eq!(
        outcomes(&report),
        ["already-landed", "conflict", "gate-failed"],
        "{report}"
    );
    assert_eq!(report["entries"][1]["files"], json!(["notes.txt"]));
    let gate = &report["entries"][2]["gate"];
    assert_eq!(gate["status"], "failed", "{gate}");
    assert_eq!(gate["exitCode"], 1, "{gate}");
    assert!(gate["outputTail"].as_str().unwrap().contains("feature-c.txt"), "{gate}");
    let log = gate["log"].as_str().unwrap();
    assert!(std::fs::read_to_string(log).unwrap().contains("feature-c.txt"));
    assert_eq!(
        tip(&work, &branch).as_deref(),
        Some(landed.as_str()),
        "a failed gate moves nothing"
    );
    assert_eq!(show(&work, &landed, "feature-c.txt"), None);

    // The user's checkout was never touched, and every writer's branch is kept.
    assert_eq!(git(&work, &["rev-parse", "HEAD"]), head_before);
    assert_eq!(git(&work, &["symbolic-ref", "HEAD"]), branch_before);
    assert!(git(&work, &["status", "--porcelain"]).is_empty());
    assert!(!work.join("feature-a.txt").exists());
    for task in 1..=3 {
        assert!(tip(&work, &format!("sublaunch/{id}/1-{task}")).is_some());
    }
    // No scratch worktree is left registered in the repository.
    let worktrees = git(&work, &["worktree", "list", "--porcelain"]);
    assert!(!worktrees.contains(".integrate-"), "{worktrees}");
}

#[test]
fn the_steps_own_gates_are_used_and_the_checkout_moves_only_when_clean_and_asked() {
    let scratch = repository("integrate-ff");
    let work = scratch.work();
    let id = writers(
        &scratch,
        &[
            format!("echo one > one.txt && {}", commit("one")),
            format!("echo two > two.txt && {}", commit("two")),
        ],
        json!({"gate": "sh test.sh"}),
    );
    let branch = format!("sublaunch/{id}/integration");
    let head_before = git(&work, &["rev-parse", "HEAD"]).trim().to_owned();
    // A tracked file changed in the user's checkout: the fast-forward is refused.
    write(&work.join("notes.txt"), "mine, not committed\n");
    let dirty = integrate(&scratch, &[&id, "--ff", "--json"]);
    assert_eq!(dirty.status.code(), Some(1), "{}", text(&dirty.stderr));
    let report = json_of(&dirty);
    assert_eq!(outcomes(&report), ["landed", "landed"], "{report}");
    let gates = report["entries"][1]["gates"].as_array().unwrap();
    assert_eq!(gates.len(), 1, "the contracts' one command, once: {report}");
    assert_eq!(gates[0]["command"], "sh test.sh");
    assert_eq!(report["fastForward"]["done"], false);
    assert!(
        report["fastForward"]["reason"]
            .as_str()
            .unwrap()
            .contains("uncommitted changes"),
        "{report}"
    );
    assert_eq!(git(&work, &["rev-parse", "HEAD"]).trim(), head_before);
    assert_eq!(
        std::fs::read_to_string(work.join("notes.txt")).unwrap(),
        "mine, not committed\n"
    );
    let landed = tip(&work, &branch).unwrap();
    assert!(show(&work, &landed, "one.txt").is_some() && show(&work, &landed, "two.txt").is_some());

    // Clean again: the checked-out branch fast-forwards to the integration branch.
    git(&work, &["checkout", "--", "notes.txt"]);
    let clean = integrate(&scratch, &[&id, "--ff"]);
    assert!(
        clean.status.success(),
        "{}\n{}",
        text(&clean.stdout),
        text(&clean.stderr)
    );
    assert!(
        text(&clean.stdout).contains("fast-forwarded"),
        "{}",
        text(&clean.stdout)
    );
    assert_eq!(git(&work, &["rev-parse", "HEAD"]).trim(), landed);
    assert_eq!(std::fs::read_to_string(work.join("two.txt")).unwrap(), "two\n");
}

#[test]
fn an_integration_stopped_or_killed_in_a_gate_leaves_the_branch_at_the_last_verified_commit() {
    let scratch = repository("integrate-killed");
    let work = scratch.work();
    let id = writers(
        &scratch,
        &[
            format!("echo a > a.txt && {}", commit("a")),
            format!("echo b > b.txt && {}", commit("b")),
        ],
        json!({}),
    );
    let branch = format!("sublaunch/{id}/integration");
    let pid_file = scratch.path().join("gate.pid");
    // Hangs on the tree with b.txt, with a child of its own in the background.
    let gate = format!(
        "if [ -f b.txt ]; then sleep 3141 & echo $! > {}; wait; fi",
        pid_file.display()
    );
    let alive = |pid: u32| {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
            let state = stat.rsplit_once(')').map(|(_, rest)| rest.trim_start().chars().next());
            state != Some(Some('Z'))
        })
    };
    let started_gate = |child: &mut std::process::Child| -> u32 {
        wait_for("the gate's child", LIMIT, || {
            assert!(child.try_wait().unwrap().is_none(), "integrate ended early");
            std::fs::read_to_string(&pid_file).ok()?.trim().parse().ok()
        })
    };

    // SIGTERM: the gate and its child are stopped, the report says so, a.txt's merge stays.
    let mut child = scratch
        .cli(&["integrate", &id, "--gate", &gate, "--json"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let sleeper = started_gate(&mut child);
    let landed = tip(&work, &branch).expect("the first branch landed before the gate hung");
    assert_eq!(show(&work, &landed, "a.txt").as_deref(), Some("a\n"));
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(child.id() as i32).unwrap(),
        rustix::process::Signal::TERM,
    )
    .unwrap();
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(1));
    let report = json_of(&output);
    assert_eq!(outcomes(&report), ["landed", "gate-failed"], "{report}");
    assert_eq!(report["entries"][1]["gate"]["status"], "interrupted", "{report}");
    assert!(!alive(sleeper), "the gate's child outlived a stopped integration");
    assert_eq!(tip(&work, &branch).as_deref(), Some(landed.as_str()));

    // SIGKILL: nothing of the integration can act; the branch is still at the verified commit,
    // and the next integration ends what the gate left running before it does anything.
    std::fs::remove_file(&pid_file).unwrap();
    let mut child = scratch.cli(&["integrate", &id, "--gate", &gate]).spawn().unwrap();
    let sleeper = started_gate(&mut child);
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(tip(&work, &branch).as_deref(), Some(landed.as_str()));
    assert!(
        alive(sleeper),
        "a SIGKILL leaves the gate's child to the next integration"
    );
    // Without a gate of its own, the next integration still clears the killed one's scratch
    // worktree.
    let next = integrate(&scratch, &[&id, "--no-gate", "--json"]);
    assert!(next.status.success(), "{}", text(&next.stderr));
    assert!(!alive(sleeper), "the next integration ends a killed one's gate");
    let worktrees = git(&work, &["worktree", "list", "--porcelain"]);
    assert!(!worktrees.contains(".integrate-"), "{worktrees}");
    let report = json_of(&next);
    assert_eq!(outcomes(&report), ["already-landed", "landed"], "{report}");
    let head = tip(&work, &branch).unwrap();
    assert_eq!(show(&work, &head, "b.txt").as_deref(), Some("b\n"));
}

/// An integration SIGKILLed inside `git worktree add` leaves its scratch worktree registered
/// and locked ("initializing"), with or without its directory; the next integration clears
/// it before anything else (G82).
#[test]
fn a_scratch_worktree_left_locked_by_a_killed_integration_is_cleared_by_the_next() {
    let scratch = repository("integrate-locked-scratch");
    let work = scratch.work();
    let id = writers(&scratch, &[format!("echo a > a.txt && {}", commit("a"))], json!({}));
    let left = scratch.root().join("worktrees").join(format!(".integrate-{id}"));
    for keep_directory in [true, false] {
        let path = left.to_str().unwrap();
        git(&work, &["worktree", "add", "--detach", "--no-checkout", path, "HEAD"]);
        git(&work, &["worktree", "lock", "--reason", "initializing", path]);
        if !keep_directory {
            std::fs::remove_dir_all(&left).unwrap();
        }
        let next = integrate(&scratch, &[&id, "--no-gate", "--json"]);
        assert!(next.status.success(), "{}", text(&next.stderr));
        let worktrees = git(&work, &["worktree", "list", "--porcelain"]);
        assert!(!worktrees.contains(".integrate-"), "{worktrees}");
    }
}

#[test]
fn bad_requests_are_refused_with_what_and_where() {
    let scratch = repository("integrate-refusals");
    let work = scratch.work();
    // Not a run.
    let unknown = integrate(&scratch, &["r-nosuchrun"]);
    assert_eq!(unknown.status.code(), Some(3), "{}", text(&unknown.stderr));
    // A run without worktrees.
    let plain = scratch.finished_shell_run("echo hi");
    let refused = integrate(&scratch, &[&plain]);
    assert_eq!(refused.status.code(), Some(1));
    assert!(
        text(&refused.stderr).contains("has no managed worktrees"),
        "{}",
        text(&refused.stderr)
    );
    // An --onto that names nothing.
    let id = writers(&scratch, &[format!("echo x > x.txt && {}", commit("x"))], json!({}));
    let bad = integrate(&scratch, &[&id, "--onto", "no-such-ref"]);
    assert_eq!(bad.status.code(), Some(1));
    assert!(
        text(&bad.stderr).contains("'no-such-ref' names no commit"),
        "{}",
        text(&bad.stderr)
    );
    assert_eq!(tip(&work, &format!("sublaunch/{id}/integration")), None);
    // --gate and --no-gate together.
    let both = integrate(&scratch, &[&id, "--gate", "true", "--no-gate"]);
    assert_eq!(both.status.code(), Some(2));
}

#[test]
fn the_mcp_tool_lands_the_work_and_refuses_a_clients_gate_without_shell() {
    let scratch = repository("integrate-mcp");
    let work = scratch.work();
    let id = writers(&scratch, &[format!("echo m > m.txt && {}", commit("m"))], json!({}));
    let refused = crate::mcp_cli::drive_server(
        &scratch,
        &[],
        &[],
        &work,
        json!([{"tool": "integrate", "arguments": {"runId": id, "gate": "sh test.sh"}}]),
    );
    let call = &refused["calls"][0];
    assert_eq!(call["isError"], true, "{call}");
    assert!(call["text"].as_str().unwrap().contains("--allow-shell"), "{call}");
    assert_eq!(tip(&work, &format!("sublaunch/{id}/integration")), None);
    let landed = crate::mcp_cli::drive(
        &scratch,
        json!([{"tool": "integrate", "arguments": {"runId": id, "gate": "sh test.sh"}}]),
    );
    let call = &landed["calls"][0];
    assert_eq!(call["isError"], false, "{call}");
    assert_eq!(call["json"]["entries"][0]["outcome"], "landed", "{call}");
    let head = tip(&work, &format!("sublaunch/{id}/integration")).unwrap();
    assert_eq!(call["json"]["head"], head.as_str());
}
