//! The unfinalized-run index (I9) from the CLI: `list` repairs a detached run's pending proof
//! (S13) through the index rather than a walk of every run, settles entries left behind, builds
//! the index once on a root that has none, and no longer reads ended, finalized runs.

use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::time::Duration;
use sublaunch_tests::cli::{ok, text};
use sublaunch_tests::launch_harness::{Scratch, pid_alive, read_json, status, wait_for, wait_terminal};

fn unfinalized(scratch: &Scratch) -> PathBuf {
    scratch.runs().join(".unfinalized")
}

fn list(scratch: &Scratch) -> (Value, String) {
    let output = scratch.cli(&["list", "--json"]).output().unwrap();
    (serde_json::from_str(&ok(&output)).unwrap(), text(&output.stderr))
}

fn proof(run: &Path) -> Value {
    read_json(&run.join("process-terminal.json")).unwrap()
}

/// A pid that names no live process.
fn dead_pid() -> u32 {
    let mut gone = std::process::Command::new("true").spawn().unwrap();
    let pid = gone.id();
    gone.wait().unwrap();
    pid
}

/// An ended run whose runner is gone and whose proof nobody finalized, planted by hand (as an
/// older version or a peer would have left it: no index entry).
fn plant_pending_run(scratch: &Scratch, run_id: &str) -> PathBuf {
    let run = scratch.run_dir(run_id);
    std::fs::create_dir(&run).unwrap();
    let pending = json!({"version": 1, "state": "pending", "runId": run_id, "runnerProcessInstanceId": "uuid-1"});
    let status = json!({
        "lifecycleArtifactVersion": 3,
        "runId": run_id,
        "state": "complete",
        "startedAt": 1,
        "lastUpdate": 2,
        "endedAt": 2,
        "pid": dead_pid(),
        "steps": [{"agent": "shell", "status": "complete"}],
        "processTerminal": pending,
    });
    std::fs::write(run.join("status.json"), serde_json::to_vec_pretty(&status).unwrap()).unwrap();
    std::fs::write(
        run.join("process-terminal.json"),
        serde_json::to_vec_pretty(&pending).unwrap(),
    )
    .unwrap();
    run
}

#[test]
fn i9_list_repairs_a_detached_run_through_the_index_and_settles_its_entry() {
    let scratch = Scratch::new("i9-detached");
    let id = ok(&scratch
        .cli(&["run", "--agent", "shell", "--task", "echo detached"])
        .output()
        .unwrap())
    .trim()
    .to_owned();
    let run = scratch.run_dir(&id);
    assert!(
        unfinalized(&scratch).join(&id).is_file(),
        "recorded at the launch commit"
    );
    let done = wait_terminal(&run, Duration::from_secs(30));
    let shim = u32::try_from(done["pid"].as_u64().unwrap()).unwrap();
    wait_for("the shim to exit", Duration::from_secs(30), || {
        (!pid_alive(shim)).then_some(())
    });
    assert!(
        !scratch.runs().join(".active-runs").join(&id).exists(),
        "the shim released its marker"
    );
    assert_eq!(proof(&run)["state"], "pending", "nobody finalized the detached run");

    let (listed, _) = list(&scratch);
    assert_eq!(listed, json!([]));
    assert!(unfinalized(&scratch).join(".built").is_file());
    let proof = proof(&run);
    assert_eq!(proof["state"], "unknown", "{proof}");
    assert_eq!(proof["reason"], "observer-unavailable", "{proof}");
    assert!(
        !unfinalized(&scratch).join(&id).exists(),
        "the final proof settled the entry"
    );
}

#[test]
fn i9_a_waited_run_leaves_no_entry_and_leftover_entries_are_settled_by_the_next_lister() {
    let scratch = Scratch::new("i9-leftover");
    let id = scratch.finished_shell_run("true");
    assert!(
        !unfinalized(&scratch).join(&id).exists(),
        "the observing host settled it"
    );
    list(&scratch);

    // A host that crashed between the final proof and the entry's removal, and a launch whose
    // run directory went: both entries go, the finalized run stays as it was.
    std::fs::write(unfinalized(&scratch).join(&id), b"").unwrap();
    std::fs::write(unfinalized(&scratch).join("shell-gone"), b"").unwrap();
    let before = std::fs::read(scratch.run_dir(&id).join("status.json")).unwrap();
    let (listed, warnings) = list(&scratch);
    assert_eq!(listed, json!([]));
    assert_eq!(warnings, "");
    assert!(!unfinalized(&scratch).join(&id).exists());
    assert!(!unfinalized(&scratch).join("shell-gone").exists());
    assert_eq!(std::fs::read(scratch.run_dir(&id).join("status.json")).unwrap(), before);
}

#[test]
fn i9_a_root_without_the_index_gets_it_built_once_then_only_the_index_is_walked() {
    let scratch = Scratch::new("i9-old-root");
    scratch.create_root();
    let old = plant_pending_run(&scratch, "shell-old");
    let (listed, _) = list(&scratch);
    assert_eq!(listed, json!([]));
    assert_eq!(
        proof(&old)["reason"],
        "observer-unavailable",
        "the building walk repaired it (S13)"
    );
    assert!(unfinalized(&scratch).join(".built").is_file());
    assert!(!unfinalized(&scratch).join("shell-old").exists());

    // Once built, the index is believed: a run planted without an entry is not visited...
    let planted = plant_pending_run(&scratch, "shell-planted");
    list(&scratch);
    assert_eq!(proof(&planted)["state"], "pending", "list walked only the index");
    // ... until it has one, as every launch gives its run.
    std::fs::write(unfinalized(&scratch).join("shell-planted"), b"").unwrap();
    list(&scratch);
    assert_eq!(proof(&planted)["reason"], "observer-unavailable");
    assert!(!unfinalized(&scratch).join("shell-planted").exists());
    // `status` repairs a run it names whatever the index says (S13).
    let unindexed = plant_pending_run(&scratch, "shell-unindexed");
    ok(&scratch.cli(&["status", "shell-unindexed", "--json"]).output().unwrap());
    assert_eq!(proof(&unindexed)["reason"], "observer-unavailable");
}

#[test]
fn i9_list_does_not_read_ended_finalized_runs() {
    let scratch = Scratch::new("i9-not-read");
    let id = scratch.finished_shell_run("true");
    let (_, warnings) = list(&scratch);
    assert_eq!(warnings, "");
    let run = scratch.run_dir(&id);
    assert_eq!(status(&run).unwrap()["processTerminal"]["state"], "observed");
    // A damaged completion-hook record: the reconciler warns about it whenever it opens the
    // run (the whole-root walk did on every `list`).
    std::fs::write(run.join("hook.json"), b"garbage").unwrap();
    let (listed, warnings) = list(&scratch);
    assert_eq!(listed, json!([]));
    assert_eq!(warnings, "", "list opened an ended, finalized run");
    let named = scratch.cli(&["status", &id]).output().unwrap();
    assert!(
        text(&named.stderr).contains("hook.json"),
        "status still reads the run it names"
    );
}
