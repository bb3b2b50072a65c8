//! Capability ceilings of nested runs (rules G60–G66) against the real binaries: a `shell`
//! agent runs `sublaunch` (the CLI, and the MCP server through the official SDK client) the
//! way a hostile agent would — with `SUBLAUNCH_DEPTH` removed and another state root named —
//! and every launch that asks for more than its run allows is refused naming that run, while
//! a launch within the ceiling runs, inherits the sandbox and is recorded inside its parent.

use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::time::Duration;
use sublaunch_tests::cli::{ok, waited_run_id, write};
use sublaunch_tests::launch_harness::{Scratch, read_json, status, wait_terminal};
use sublaunch_tests::real_agents;

const LIMIT: Duration = Duration::from_secs(60);

/// A shell function the agents' scripts use: `try NAME CMD…` runs the command with its
/// output in `NAME.out` / `NAME.err` and appends `NAME ok` or `NAME refused` to `tries.txt`.
const TRY: &str = r#"try() { name=$1; shift; if "$@" >"$name.out" 2>"$name.err"; then echo "$name ok"; else echo "$name refused"; fi >> tries.txt; }"#;

fn sublaunch() -> PathBuf {
    sublaunch_tests::bin("sublaunch")
}

fn tries(scratch: &Scratch) -> Vec<String> {
    sublaunch_tests::cli::lines(&scratch.work().join("tries.txt"))
}

fn said(scratch: &Scratch, name: &str) -> String {
    std::fs::read_to_string(scratch.work().join(format!("{name}.err"))).unwrap_or_default()
}

/// The run directory of the one run under `root`.
fn only_run(root: &Path) -> PathBuf {
    let runs: Vec<PathBuf> = std::fs::read_dir(root.join("runs"))
        .map(|entries| {
            entries
                .flatten()
                .map(|e| e.path())
                .filter(|p| !p.file_name().unwrap().to_string_lossy().starts_with('.'))
                .collect()
        })
        .unwrap_or_default();
    assert_eq!(runs.len(), 1, "{runs:?}");
    runs[0].clone()
}

/// G60, G61, G63, G64, G66: inside a sandboxed run that allows one level of `shell` runs, the
/// agent's launches that loosen the sandbox or start another agent are refused naming the run
/// — with `SUBLAUNCH_DEPTH` gone and another root named, since the ceiling comes from the
/// run's records — and the one within the ceiling runs, in the same sandbox, recorded in
/// the parent's `nested` directory, and cannot go a level deeper.
#[test]
fn a_sandboxed_agent_cannot_launch_a_run_wider_or_deeper_than_its_own() {
    let scratch = Scratch::new("nested-sandboxed");
    scratch.create_root();
    let sl = sublaunch();
    let sl = sl.display();
    let script = format!(
        r#"{TRY}
try loosen env -u SUBLAUNCH_DEPTH SUBLAUNCH_ROOT="$TMPDIR/root" {sl} run --agent shell --sandbox none --task 'echo loose' --wait
try other-agent env -u SUBLAUNCH_DEPTH {sl} run --agent codex --task 'x' --wait
try within env -u SUBLAUNCH_DEPTH {sl} run --agent shell --wait --task '{TRY}
try deeper env -u SUBLAUNCH_DEPTH {sl} run --agent shell --task "echo deeper" --wait
try inner-write-outside sh -c "echo x > {outside}"
echo inner-done'
echo outer-done"#,
        outside = scratch.path().join("outside.txt").display(),
    );
    let output = scratch
        .cli(&[
            "run",
            "--agent",
            "shell",
            "--sandbox",
            "workspace",
            "--max-depth",
            "1",
            "--nested-agents",
            "shell",
            "--wait",
            "--task",
            &script,
        ])
        .output()
        .unwrap();
    assert!(ok(&output).contains("outer-done"));
    let outer_id = waited_run_id(&output);
    let tries = tries(&scratch);
    let source = format!("run {outer_id}, step 1 (agent shell)");
    for refused in ["loosen", "other-agent", "deeper", "inner-write-outside"] {
        assert!(tries.contains(&format!("{refused} refused")), "{refused}: {tries:?}");
    }
    assert!(
        tries.contains(&"within ok".to_owned()),
        "{tries:?}\n{}",
        said(&scratch, "within")
    );
    let loosen = said(&scratch, "loosen");
    assert!(
        loosen.contains(&source) && loosen.contains("sandbox none") && loosen.contains("workspace sandbox"),
        "{loosen}"
    );
    let other = said(&scratch, "other-agent");
    assert!(
        other.contains(&source) && other.contains("allows only the agents shell"),
        "{other}"
    );
    let deeper = said(&scratch, "deeper");
    assert!(deeper.contains("may not launch nested runs"), "{deeper}");
    assert!(!deeper.contains("G6"), "no rule ids in messages: {deeper}");
    assert!(!scratch.path().join("outside.txt").exists());

    // The nested run: in the parent's `nested` root, launched from the parent's step, in the
    // parent's sandbox.
    let outer = scratch.run_dir(&outer_id);
    assert_eq!(wait_terminal(&outer, LIMIT)["state"], "complete");
    let inner = only_run(&outer.join("nested"));
    let inner_status = wait_terminal(&inner, LIMIT);
    assert_eq!(inner_status["state"], "complete", "{inner_status}");
    assert_eq!(status(&inner).unwrap()["steps"][0]["sandbox"]["profile"], "workspace");
    let record = read_json(&inner.join("launch-plan.json")).unwrap();
    assert_eq!(
        record["launchedFrom"],
        json!({"runId": outer_id, "source": source}),
        "{record}"
    );
    let permissions = &record["plan"]["steps"][0]["permissions"];
    assert_eq!(permissions["nested"], false, "its depth is used up: {permissions}");
    let shown = ok(&scratch.cli(&["status", &outer_id]).output().unwrap());
    assert!(shown.contains("nested   runs its sandboxed agents launched"), "{shown}");
}

/// G60, G62: without a sandbox the ceiling still comes from the run's records: an agent of a
/// run without nested runs cannot launch one, even after removing `SUBLAUNCH_DEPTH`; the
/// same launch from a run that allows it runs (so the refusal is the ceiling's).
#[test]
fn an_agent_of_a_run_without_nested_runs_cannot_launch_one() {
    let scratch = Scratch::new("nested-off");
    scratch.create_root();
    let script = format!(
        "env -u SUBLAUNCH_DEPTH {} run --agent shell --task 'echo nested-ran' --wait 2>&1",
        sublaunch().display()
    );
    let output = scratch
        .cli(&["run", "--agent", "shell", "--no-nested", "--wait", "--task", &script])
        .output()
        .unwrap();
    let run_id = waited_run_id(&output);
    let answer = sublaunch_tests::cli::text(&output.stdout);
    assert!(
        answer.contains(&format!(
            "run {run_id}, step 1 (agent shell), which may not launch nested runs"
        )),
        "{answer}"
    );
    assert!(!answer.contains("nested-ran"), "{answer}");
    let output = scratch
        .cli(&["run", "--agent", "shell", "--wait", "--task", &script])
        .output()
        .unwrap();
    assert!(ok(&output).contains("nested-ran"));
}

/// G60, G61, G64 through the MCP server: an agent that starts `sublaunch mcp` with a clean
/// environment of its own and asks it for an agent its run does not allow is refused naming
/// the run; the server goes on answering. A server allowed one level refuses any run, since
/// the run it was started inside counts though `SUBLAUNCH_DEPTH` is gone.
#[test]
fn the_mcp_server_an_agent_starts_keeps_its_runs_ceiling() {
    real_agents::require_installed();
    let scratch = Scratch::new("nested-mcp");
    scratch.create_root();
    let home = scratch.path().join("home");
    let client = json!({
        "nodeModules": crate::mcp_cli::node_modules(),
        "command": sublaunch(),
        "args": ["mcp", "--allow-shell"],
        "env": {"PATH": "/usr/bin:/bin", "HOME": home, "SUBLAUNCH_ROOT": scratch.path().join("mcp-root")},
        "cwd": scratch.work(),
        "calls": [
            {"tool": "run", "arguments": {"agent": "shell", "task": "echo nested-ran", "wait": true}},
            {"tool": "list", "arguments": {}},
        ],
    });
    let file = write(&scratch.path().join("client.json"), &client.to_string());
    // The same server told to allow one level: the run it runs inside counts, though the
    // environment no longer says so.
    let mut shallow = client.clone();
    shallow["args"] = json!(["mcp", "--allow-shell", "--max-depth", "1"]);
    shallow["calls"] =
        json!([{"tool": "run", "arguments": {"agent": "shell", "task": "echo nested-ran", "wait": true}}]);
    let shallow = write(&scratch.path().join("shallow.json"), &shallow.to_string());
    let driver = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/driver.cjs");
    let node = real_agents::bin_dir().join("node");
    let script = format!(
        "env -u SUBLAUNCH_DEPTH {node} {driver} {file} > transcript.json; env -u SUBLAUNCH_DEPTH {node} {driver} {shallow} > shallow.json",
        node = node.display(),
        driver = driver.display(),
        file = file.display(),
        shallow = shallow.display(),
    );
    let output = scratch
        .cli(&[
            "run",
            "--agent",
            "shell",
            "--nested-agents",
            "codex",
            "--wait",
            "--task",
            &script,
        ])
        .output()
        .unwrap();
    ok(&output);
    let run_id = waited_run_id(&output);
    let transcript: Value =
        serde_json::from_str(&std::fs::read_to_string(scratch.work().join("transcript.json")).unwrap()).unwrap();
    let calls = transcript["calls"].as_array().unwrap();
    assert_eq!(calls[0]["isError"], true, "{}", calls[0]);
    let refusal = calls[0]["text"].as_str().unwrap();
    assert!(
        refusal.contains(&format!(
            "run {run_id}, step 1 (agent shell), which allows only the agents codex"
        )),
        "{refusal}"
    );
    assert_eq!(calls[1]["isError"], false, "{}", calls[1]);
    let shallow: Value =
        serde_json::from_str(&std::fs::read_to_string(scratch.work().join("shallow.json")).unwrap()).unwrap();
    let call = &shallow["calls"][0];
    assert_eq!(call["isError"], true, "{call}");
    assert!(
        call["text"].as_str().unwrap().contains("inside sublaunch runs 1 deep"),
        "{call}"
    );
}

/// G61: a resumed plan is not planned again, so from inside a run the agent can resume a run
/// it launched itself but not one started outside (whose plan may allow more).
#[test]
fn from_inside_a_run_only_its_own_runs_can_be_resumed() {
    let scratch = Scratch::new("nested-resume");
    scratch.create_root();
    let outside = scratch.finished_shell_run("echo outside");
    let sl = sublaunch();
    let sl = sl.display();
    let script = format!(
        r#"{TRY}
try resume-outside env -u SUBLAUNCH_DEPTH {sl} resume {outside} --wait
env -u SUBLAUNCH_DEPTH {sl} run --agent shell --task 'echo mine' --wait 2> mine.txt
mine=$(head -n 1 mine.txt)
try resume-mine env -u SUBLAUNCH_DEPTH {sl} resume "$mine" --wait
echo outer-done"#
    );
    let output = scratch
        .cli(&["run", "--agent", "shell", "--wait", "--task", &script])
        .output()
        .unwrap();
    assert!(ok(&output).contains("outer-done"));
    let outer_id = waited_run_id(&output);
    let tries = tries(&scratch);
    assert!(tries.contains(&"resume-outside refused".to_owned()), "{tries:?}");
    assert!(
        tries.contains(&"resume-mine ok".to_owned()),
        "{tries:?}\n{}",
        said(&scratch, "resume-mine")
    );
    let refusal = said(&scratch, "resume-outside");
    assert!(
        refusal.contains(&format!("run '{outside}' was not launched from inside run {outer_id}")),
        "{refusal}"
    );
}

/// G45: a run launched from inside a contained agent (its launching host lives in the agent's
/// pid namespace) records pids `/proc` names, so an outside `list` judges that host by the very
/// process: while the nested launch waits for its agent, the recorded launching host is that
/// `sublaunch` process, and the outside listers leave the run running.
#[test]
fn a_run_launched_inside_a_contained_agent_records_the_pids_an_outside_list_probes() {
    let scratch = Scratch::new("nested-pids");
    scratch.create_root();
    let release = scratch.path().join("release");
    let sl = sublaunch();
    let inner = format!(
        "touch inner-started; while [ ! -e {} ]; do sleep 0.05; done",
        release.display()
    );
    let script = format!(
        "env -u SUBLAUNCH_DEPTH {} run --agent shell --wait --task '{inner}'",
        sl.display()
    );
    let outer = ok(&scratch
        .cli(&["run", "--agent", "shell", "--task", &script])
        .output()
        .unwrap());
    let outer = outer.lines().next().unwrap().trim().to_owned();
    let nested = sublaunch_tests::launch_harness::wait_for("the nested run's agent", LIMIT, || {
        scratch.work().join("inner-started").exists().then_some(())?;
        sublaunch_tests::launch_harness::names_in(&scratch.runs())
            .into_iter()
            .find(|name| !name.starts_with('.') && *name != outer)
    });
    let run = scratch.run_dir(&nested);
    let recorded = status(&run).unwrap();
    let host = recorded["launchHostPid"].as_u64().unwrap();
    let stat = std::fs::read_to_string(format!("/proc/{host}/stat")).unwrap_or_default();
    let start = stat
        .rsplit(')')
        .next()
        .and_then(|rest| rest.split_whitespace().nth(19))
        .unwrap_or_default();
    assert_eq!(
        recorded["launchHostStartIdentity"].as_str(),
        Some(format!("linux:{start}").as_str()),
        "launchHostPid {host} does not name the launching host: {stat}"
    );
    let cmdline = std::fs::read(format!("/proc/{host}/cmdline")).unwrap_or_default();
    assert!(String::from_utf8_lossy(&cmdline).contains("sublaunch"));
    ok(&scratch.cli(&["list"]).output().unwrap());
    assert_eq!(status(&run).unwrap()["state"], "running");
    write(&release, "");
    let ended = wait_terminal(&run, LIMIT);
    assert_eq!(ended["state"], "complete", "{ended}");
    wait_terminal(&scratch.run_dir(&outer), LIMIT);
}
