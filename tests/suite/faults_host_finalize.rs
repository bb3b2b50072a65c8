//! Host fault rows after the commit (fault-matrix.md F35, F36, F47): a corrupt proof or status
//! at finalization (S7, S9), a phantom marker (I5). F33 has its own suite
//! (faults_host_unobserved.rs), which changes how this process reaps.

use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;
use sublaunch::launch::testing::{RecordingHooks, block_on, shell_plan, test_launch, test_options};
use sublaunch::launch::{HostEvent, LaunchOptions, launch};
use sublaunch_tests::bin;
use sublaunch_tests::launch_harness::{SHIM_FAULT_ENV, Scratch, events_of, names_in, read_json, status, wait_for};

fn options(scratch: &Scratch, hooks: &Arc<RecordingHooks>) -> LaunchOptions {
    let mut options = test_options(&scratch.root(), &bin("sublaunch-shim"));
    options.hooks = hooks.clone();
    options
}

fn process_terminal_events(hooks: &RecordingHooks) -> usize {
    hooks
        .snapshot()
        .events
        .iter()
        .filter(|e| matches!(e, HostEvent::ProcessTerminal { .. }))
        .count()
}

#[test]
fn f35_corrupt_proof_before_the_exit_is_preserved_and_recomputed() {
    let scratch = Scratch::new("f35");
    let hooks = Arc::new(RecordingHooks::default());
    let plan = shell_plan("sleep 1", &scratch.work());
    let opts = options(&scratch, &hooks);
    let (run_id, finished) = block_on(async {
        let launched = launch(test_launch(&plan), opts).await.expect("started");
        launched.handle.committed().await.expect("committed");
        std::fs::write(
            launched.run_dir.join("process-terminal.json"),
            br#"{"version":1,"state":"bogus"}"#,
        )
        .unwrap();
        let finished = launched.handle.finished().await.unwrap();
        (launched.run_id, finished)
    });
    let run = scratch.run_dir(&run_id);
    let preserved: Vec<String> = names_in(&run)
        .into_iter()
        .filter(|n| n.starts_with("process-terminal.json.corrupt-"))
        .collect();
    assert_eq!(preserved.len(), 1, "{:?}", names_in(&run));
    assert_eq!(
        std::fs::read(run.join(&preserved[0])).unwrap(),
        br#"{"version":1,"state":"bogus"}"#
    );
    let proof = read_json(&run.join("process-terminal.json")).unwrap();
    assert_eq!(proof["state"], "observed", "{proof}");
    assert_eq!(serde_json::to_value(&finished.proof).unwrap(), proof);
    assert_eq!(process_terminal_events(&hooks), 1, "emitted once");
    assert_eq!(events_of(&run, "subagent.run.process_terminal").len(), 1);
}

#[test]
fn f36_corrupt_status_at_overlay_time_is_left_alone() {
    let scratch = Scratch::new("f36");
    let hooks = Arc::new(RecordingHooks::default());
    let plan = shell_plan("true", &scratch.work());
    let opts = options(&scratch, &hooks).with_env(SHIM_FAULT_ENV, "before-exit:sleep:300");
    let runs = scratch.runs();
    let corrupter = std::thread::spawn(move || {
        wait_for("the shim's final candidate", Duration::from_secs(30), || {
            let run = std::fs::read_dir(&runs).ok()?.flatten().map(|e| e.path()).find(|p| {
                let hidden = p
                    .file_name()
                    .and_then(|n| n.to_str())
                    .is_none_or(|n| n.starts_with('.'));
                p.join("status.json").exists() && !hidden
            })?;
            let candidate = read_json(&run.join("process-terminal-candidate.json"))?;
            let terminal = status(&run)?["state"] == "complete";
            (terminal && candidate.get("expectedWriters").is_some()).then(|| {
                std::fs::write(run.join("status.json"), b"{corrupt").unwrap();
            })
        });
    });
    let (run_id, finished) = block_on(async {
        let launched = launch(test_launch(&plan), opts).await.expect("started");
        let finished = launched.handle.finished().await.unwrap();
        (launched.run_id, finished)
    });
    corrupter.join().unwrap();
    let run = scratch.run_dir(&run_id);
    assert_eq!(
        std::fs::read(run.join("status.json")).unwrap(),
        b"{corrupt",
        "untouched"
    );
    let proof = read_json(&run.join("process-terminal.json")).unwrap();
    assert_ne!(proof["state"], "pending");
    assert_eq!(events_of(&run, "subagent.run.process_terminal").len(), 1);
    assert!(finished.emitted);
    assert_eq!(process_terminal_events(&hooks), 1);
}

#[test]
fn f47_phantom_marker_is_released_by_a_listing() {
    let scratch = Scratch::new("f47");
    scratch.create_root();
    let active = scratch.runs().join(".active-runs");
    std::fs::create_dir_all(&active).unwrap();
    std::fs::write(active.join("ghost"), b"").unwrap();
    let output = scratch.cli(&["list", "--json"]).output().unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let listed: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(listed, Value::Array(vec![]), "the ghost is not reported");
    assert!(!active.join("ghost").exists(), "the marker is released");
}

#[test]
fn a_queued_run_whose_launching_host_died_is_failed_by_a_listing() {
    let scratch = Scratch::new("dead-launcher");
    scratch.create_root();
    let mut gone = std::process::Command::new("true").spawn().unwrap();
    let dead_pid = gone.id();
    gone.wait().unwrap();
    let run = scratch.run_dir("shell-deadhost");
    std::fs::create_dir(&run).unwrap();
    std::fs::write(
        run.join("status.json"),
        serde_json::to_vec_pretty(&serde_json::json!({
            "lifecycleArtifactVersion": 3,
            "runId": "shell-deadhost",
            "state": "queued",
            "startedAt": 1,
            "lastUpdate": 1,
            "steps": [{"agent": "shell", "status": "pending"}],
            "processTerminal": {"version": 1, "state": "pending", "runId": "shell-deadhost", "runnerProcessInstanceId": "uuid-1"},
            "launchHostPid": dead_pid,
        }))
        .unwrap(),
    )
    .unwrap();
    let output = scratch.cli(&["list", "--all", "--json"]).output().unwrap();
    assert!(output.status.success());
    let listed: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(listed[0]["state"], "failed", "{listed}");
    let status = status(&run).unwrap();
    assert_eq!(
        status["error"],
        format!("Launch host process {dead_pid} exited before the async runner was started.")
    );
    assert_eq!(status["processTerminal"]["state"], "not-started");
    assert_eq!(status["processTerminal"]["runnerProcessInstanceId"], "uuid-1");
}
