//! What an ended run sheds once its proof is final (issue 34): its empty runner logs and its
//! empty control inbox go, whether the host saw the end or a later reconciliation found it;
//! status, proof, candidate, events, the launch plan and the step outputs stay, and every
//! command reads the run as before.

use serde_json::Value;
use std::path::Path;
use std::time::Duration;
use sublaunch_tests::cli::{ok, text, waited_run_id};
use sublaunch_tests::launch_harness::{Scratch, wait_for, wait_terminal};

/// What a trivial run no longer keeps once it ended.
const SHED: [&str; 3] = ["control", "runner.stdout.log", "runner.stderr.log"];
/// What it keeps: what the spec and the commands read.
const KEPT: [&str; 6] = [
    "status.json",
    "events.jsonl",
    "process-terminal.json",
    "process-terminal-candidate.json",
    "launch-plan.json",
    "output-0.log",
];

fn names(run: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(run)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

fn assert_kept(run: &Path) {
    for name in KEPT {
        assert!(run.join(name).exists(), "{name} must stay: {:?}", names(run));
    }
}

fn json(scratch: &Scratch, args: &[&str]) -> Value {
    serde_json::from_str(&ok(&scratch.cli(args).output().unwrap())).unwrap()
}

#[test]
fn a_run_the_host_saw_end_sheds_its_scratch_files_and_every_command_still_reads_it() {
    let scratch = Scratch::new("shed-observed");
    let output = scratch
        .cli(&["run", "--agent", "shell", "--task", "echo hello", "--wait"])
        .output()
        .unwrap();
    assert_eq!(ok(&output), "hello\n");
    let id = waited_run_id(&output);
    let run = scratch.run_dir(&id);
    for name in SHED {
        assert!(!run.join(name).exists(), "{name} is shed: {:?}", names(&run));
    }
    assert_kept(&run);

    assert_eq!(json(&scratch, &["status", &id, "--json"])["state"], "complete");
    assert!(ok(&scratch.cli(&["status", &id]).output().unwrap()).contains("state    complete"));
    assert!(ok(&scratch.cli(&["wait", &id]).output().unwrap()).contains("complete"));
    assert_eq!(scratch.result_json(&id)["state"], "complete");
    assert!(ok(&scratch.cli(&["result", &id]).output().unwrap()).contains("hello"));
    assert!(ok(&scratch.cli(&["logs", &id]).output().unwrap()).contains("hello"));
    let all = json(&scratch, &["list", "--all", "--json"]);
    assert!(
        all.as_array().unwrap().iter().any(|r| r["runId"] == id.as_str()),
        "{all}"
    );
    let stopped = scratch.cli(&["stop", &id]).output().unwrap();
    assert_eq!(stopped.status.code(), Some(0), "{}", text(&stopped.stderr));
    let resumed = json(&scratch, &["resume", &id, "--wait", "--json"]);
    assert_eq!(resumed["state"], "complete", "{resumed}");
    assert_eq!(json(&scratch, &["status", &id, "--json"])["state"], "complete");
}

#[test]
fn a_run_whose_end_nobody_saw_sheds_its_inbox_once_reconciled() {
    let scratch = Scratch::new("shed-orphan");
    let id = ok(&scratch
        .cli(&["run", "--agent", "shell", "--task", "sleep 30"])
        .output()
        .unwrap())
    .trim()
    .to_owned();
    let run = scratch.run_dir(&id);
    wait_for("the shim's inbox", Duration::from_secs(30), || {
        run.join("control").is_dir().then_some(())
    });
    // The CLI that launched it is gone: the stop request reaches the shim through the inbox,
    // and the proof is written by the reconciliation of a later command.
    let stopped = scratch.cli(&["stop", &id]).output().unwrap();
    assert_eq!(stopped.status.code(), Some(0), "{}", text(&stopped.stderr));
    wait_terminal(&run, Duration::from_secs(30));
    let waited = scratch.cli(&["wait", &id]).output().unwrap();
    assert_eq!(waited.status.code(), Some(15), "stopped is not complete");
    ok(&scratch.cli(&["list", "--all"]).output().unwrap());
    let proof: Value = serde_json::from_slice(&std::fs::read(run.join("process-terminal.json")).unwrap()).unwrap();
    assert_ne!(proof["state"], "pending", "{proof}");
    assert!(
        !run.join("control").exists(),
        "the consumed inbox is shed: {:?}",
        names(&run)
    );
    assert!(!run.join("runner.stdout.log").exists(), "{:?}", names(&run));
    assert_kept(&run);
    assert_eq!(json(&scratch, &["status", &id, "--json"])["state"], "stopped");
    assert!(ok(&scratch.cli(&["logs", &id]).output().unwrap()).is_empty());
}
