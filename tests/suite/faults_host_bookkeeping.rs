//! Host fault rows of the pre-commit bookkeeping and the fresh commit (fault-matrix.md
//! F09–F18): initial status and marker (H13), sidecars (H14), capacity (H15), proceed (H16,
//! K16) and the death of the shim around the commit (H20). Each failing launch must end with
//! "no start": no proceed file, no `subagent.run.started`, no result, no marker, capacity 0.

use serde_json::Value;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};
use sublaunch::launch::testing::{RecordingHooks, block_on, shell_plan, test_launch, test_options};
use sublaunch::launch::{CommitError, Finished, LaunchFailure, LaunchOptions, Launched, launch};
use sublaunch_protocol::files::durability::DurabilityPolicy;
use sublaunch_protocol::os::faults::HostFaults;
use sublaunch_tests::launch_harness::{SHIM_FAULT_ENV, Scratch, events_of, read_json, status, temp_files};
use sublaunch_tests::{assert_starts_with, bin};

fn options(scratch: &Scratch, host_faults: &str, hooks: &Arc<RecordingHooks>) -> LaunchOptions {
    let mut options = test_options(&scratch.root(), &bin("sublaunch-shim"));
    options.faults = Some(HostFaults::parse(host_faults).unwrap());
    options.hooks = hooks.clone();
    options
}

/// Launches and expects a failure; returns it with the finalization of its shim.
fn failed_launch(scratch: &Scratch, options: LaunchOptions) -> (LaunchFailure, Finished) {
    let plan = shell_plan("echo should-not-run", &scratch.work());
    block_on(async {
        let failure = launch(test_launch(&plan), options)
            .await
            .expect_err("the launch must fail");
        let handle = failure.handle().cloned().expect("a spawned shim is supervised");
        let finished = handle.finished().await.expect("finalized");
        (failure, finished)
    })
}

fn assert_no_start(scratch: &Scratch, run_id: &str, hooks: &RecordingHooks) {
    let run = scratch.run_dir(run_id);
    assert!(!run.join("runner-startup-proceed.json").exists(), "no proceed file");
    assert!(events_of(&run, "subagent.run.started").is_empty(), "no run.started");
    assert!(
        !scratch.results().join(format!("{run_id}.json")).exists(),
        "no result file"
    );
    assert!(!scratch.runs().join(".active-runs").join(run_id).exists(), "no marker");
    assert!(!run.join("output-0.log").exists(), "the agent never ran");
    let recorded = hooks.snapshot();
    assert_eq!(recorded.capacity_used(), 0, "capacity rolled back: {recorded:?}");
    assert!(
        !recorded
            .events
            .iter()
            .any(|e| matches!(e, sublaunch::launch::HostEvent::AsyncStarted { .. })),
        "no subagent:async-started"
    );
}

fn assert_clean(scratch: &Scratch) {
    let temps = temp_files(&scratch.root());
    assert!(temps.is_empty(), "temp files left: {temps:?}");
}

/// `process-terminal.json` is observed with exactly the runner's record, and the status
/// carries the same proof.
fn assert_runner_only_proof(run: &Path) -> Value {
    let proof = read_json(&run.join("process-terminal.json")).expect("a proof");
    assert_eq!(proof["state"], "observed", "{proof}");
    let instances = proof["instances"].as_array().expect("instances");
    assert_eq!(instances.len(), 1, "{proof}");
    assert_eq!(instances[0]["kind"], "runner");
    let status = status(run).expect("status");
    assert_eq!(status["processTerminal"], proof, "status carries the proof");
    proof
}

fn run_id(failure: &LaunchFailure) -> String {
    failure.run_id().map(str::to_owned).expect("a run id")
}

#[test]
fn f09_enospc_on_the_initial_status() {
    let scratch = Scratch::new("f09");
    let hooks = Arc::new(RecordingHooks::default());
    let (failure, finished) = failed_launch(&scratch, options(&scratch, "status-initial:ENOSPC", &hooks));
    let id = run_id(&failure);
    assert_starts_with(
        &failure.error.to_string(),
        "Failed to persist initial async status: ENOSPC",
    );
    assert!(failure.termination_observed());
    assert!(matches!(
        failure.stage,
        sublaunch::launch::LaunchStage::NotCommitted { .. }
    ));
    let run = scratch.run_dir(&id);
    let status = status(&run).unwrap();
    assert_eq!(status["state"], "failed");
    assert_eq!(status["error"], failure.error.to_string().as_str());
    assert_runner_only_proof(&run);
    assert!(finished.emitted);
    assert_no_start(&scratch, &id, &hooks);
    assert_clean(&scratch);
}

#[test]
fn f10_every_write_fails() {
    let scratch = Scratch::new("f10");
    let hooks = Arc::new(RecordingHooks::default());
    let started = Instant::now();
    let (failure, finished) = failed_launch(
        &scratch,
        options(
            &scratch,
            "status-initial:ENOSPC;startup-failure:ENOSPC;proof:ENOSPC",
            &hooks,
        ),
    );
    let id = run_id(&failure);
    // The launch error is unchanged by the later failures.
    assert_starts_with(
        &failure.error.to_string(),
        "Failed to persist initial async status: ENOSPC",
    );
    assert!(failure.termination_observed(), "the shim is dead");
    assert!(started.elapsed() < Duration::from_millis(2500) + Duration::from_secs(1));
    let run = scratch.run_dir(&id);
    assert!(!run.join("runner-startup-proceed.json").exists());
    assert_eq!(
        serde_json::to_value(&finished.proof).unwrap()["reason"],
        "proof-write-failed"
    );
    assert!(!finished.emitted, "nothing reported for this run");
    assert!(hooks.snapshot().events.is_empty(), "no subagent:process-terminal");
    assert_clean(&scratch);
}

#[test]
fn f11_marker_cannot_be_created() {
    // The row's injection, chmod 0500 .active-runs, binds an ordinary user only: as root (CI)
    // the CLI runs as one. The `index` fault below raises the same EACCES at the same step.
    let scratch = Scratch::new("f11-chmod");
    scratch.create_root();
    let active = scratch.runs().join(".active-runs");
    std::fs::create_dir(&active).unwrap();
    let mut command = scratch.cli_unprivileged(&["run", "--agent", "shell", "--task", "true"]);
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&active, std::fs::Permissions::from_mode(0o500)).unwrap();
    let output = command.output().unwrap();
    std::fs::set_permissions(&active, std::fs::Permissions::from_mode(0o700)).unwrap();
    let stderr = sublaunch_tests::cli::text(&output.stderr);
    assert!(!output.status.success(), "{stderr}");
    assert!(
        stderr.contains("Failed to persist initial async status: EACCES"),
        "{stderr}"
    );

    let scratch = Scratch::new("f11");
    let hooks = Arc::new(RecordingHooks::default());
    let (failure, _) = failed_launch(&scratch, options(&scratch, "index:EACCES", &hooks));
    let id = run_id(&failure);
    assert_starts_with(
        &failure.error.to_string(),
        "Failed to persist initial async status: EACCES",
    );
    let run = scratch.run_dir(&id);
    assert_eq!(status(&run).unwrap()["state"], "failed");
    assert_runner_only_proof(&run);
    assert_no_start(&scratch, &id, &hooks);
}

#[test]
fn f12_fsync_error_on_the_candidate_in_strict_mode() {
    let scratch = Scratch::new("f12");
    let hooks = Arc::new(RecordingHooks::default());
    let mut opts = options(&scratch, "sidecar:EIO@fsync", &hooks);
    opts.durability = Some(DurabilityPolicy::strict());
    let (failure, _) = failed_launch(&scratch, opts);
    let id = run_id(&failure);
    assert_starts_with(
        &failure.error.to_string(),
        "Failed to establish async runner lifecycle sidecar: EIO",
    );
    assert_no_start(&scratch, &id, &hooks);
    assert_clean(&scratch);
}

#[test]
fn f13_capacity_hook_failure_rolls_back() {
    for rollback_before_proceed in [true, false] {
        let scratch = Scratch::new("f13");
        let hooks = Arc::new(RecordingHooks {
            fail_mark_started: Some("no slot left".into()),
            rollback_before_proceed_returns: Some(rollback_before_proceed),
            ..RecordingHooks::default()
        });
        let (failure, _) = failed_launch(&scratch, options(&scratch, "", &hooks));
        assert_eq!(
            failure.error.to_string(),
            "Failed to establish async runner capacity ownership: no slot left"
        );
        let recorded = hooks.snapshot();
        if rollback_before_proceed {
            assert_eq!(recorded.rolled_back_before_proceed.len(), 1);
            assert_eq!(recorded.rolled_back, 0);
        } else {
            assert_eq!(recorded.rolled_back, 1, "falls back to rollback()");
        }
        assert_no_start(&scratch, &run_id(&failure), &hooks);
    }
}

#[test]
fn f14_proceed_write_fails() {
    let scratch = Scratch::new("f14");
    let hooks = Arc::new(RecordingHooks::default());
    let (failure, _) = failed_launch(&scratch, options(&scratch, "proceed:EACCES", &hooks));
    let id = run_id(&failure);
    assert_starts_with(
        &failure.error.to_string(),
        "Failed to authorize async runner startup: EACCES",
    );
    assert!(
        failure.termination_observed(),
        "the shim does not wait 30 s for proceed"
    );
    let run = scratch.run_dir(&id);
    assert_eq!(status(&run).unwrap()["state"], "failed");
    assert_runner_only_proof(&run);
    assert_no_start(&scratch, &id, &hooks);
    assert_clean(&scratch);
}

#[test]
fn f15_fsync_error_on_the_proceed_file() {
    let scratch = Scratch::new("f15");
    let hooks = Arc::new(RecordingHooks::default());
    let (failure, _) = failed_launch(&scratch, options(&scratch, "proceed:EIO@fsync", &hooks));
    assert_starts_with(
        &failure.error.to_string(),
        "Failed to authorize async runner startup: EIO",
    );
    assert_no_start(&scratch, &run_id(&failure), &hooks);
    assert_clean(&scratch);
}

/// K8 with A4: the directory fsync fails after the proceed file was renamed into place. The
/// launch fails, and the proceed file is gone, so the shim never starts the agent.
#[test]
fn k8_a_proceed_whose_directory_fsync_fails_is_removed() {
    let scratch = Scratch::new("k8-dirfsync");
    let hooks = Arc::new(RecordingHooks::default());
    // A shim that reads the file in the moment between its rename and its withdrawal lingers
    // before taking it, so the host's withdrawal comes first whenever the shim looks.
    let opts = options(&scratch, "proceed:EIO@dirfsync", &hooks).with_env(SHIM_FAULT_ENV, "before-commit:sleep:300");
    let (failure, _) = failed_launch(&scratch, opts);
    assert_starts_with(
        &failure.error.to_string(),
        "Failed to authorize async runner startup: EIO",
    );
    let id = run_id(&failure);
    let run = scratch.run_dir(&id);
    assert!(
        !run.join("runner-startup-proceed.json").exists(),
        "no proceed file afterwards"
    );
    assert_eq!(status(&run).unwrap()["state"], "failed");
    assert_no_start(&scratch, &id, &hooks);
    assert_clean(&scratch);
}

/// K8: the shim saw the proceed file of a failed write (its safety tick falls inside the
/// host's held-open withdrawal) and then finds it withdrawn when it goes to take it: it keeps
/// waiting, is terminated, and the agent never runs.
#[test]
fn k8_a_shim_that_saw_a_withdrawn_proceed_does_not_start() {
    let scratch = Scratch::new("k8-withdrawn");
    let hooks = Arc::new(RecordingHooks::default());
    let opts = options(&scratch, "proceed:EIO@dirfsync;withdraw:sleep:1500", &hooks)
        .with_env(SHIM_FAULT_ENV, "before-commit:sleep:2000");
    let (failure, _) = failed_launch(&scratch, opts);
    assert_starts_with(
        &failure.error.to_string(),
        "Failed to authorize async runner startup: EIO",
    );
    let id = run_id(&failure);
    let run = scratch.run_dir(&id);
    assert_eq!(status(&run).unwrap()["state"], "failed");
    assert_no_start(&scratch, &id, &hooks);
    let stderr = std::fs::read_to_string(run.join("runner.stderr.log")).unwrap_or_default();
    assert!(!stderr.contains("should-not-run"), "{stderr}");
    assert_clean(&scratch);
}

#[test]
fn f16_shim_exits_before_the_host_writes_proceed() {
    let scratch = Scratch::new("f16");
    let hooks = Arc::new(RecordingHooks::default());
    let opts = options(&scratch, "capacity:sleep:200", &hooks).with_env(SHIM_FAULT_ENV, "start:exit:9");
    let (failure, finished) = failed_launch(&scratch, opts);
    let id = run_id(&failure);
    assert_eq!(
        failure.error.to_string(),
        "Async runner exited before startup commit (exit code 9, signal none)."
    );
    assert_eq!(finished.exit.exit_code, Some(9));
    let run = scratch.run_dir(&id);
    let status = status(&run).unwrap();
    assert_eq!(status["state"], "failed");
    assert_eq!(status["error"], failure.error.to_string().as_str());
    assert_runner_only_proof(&run);
    assert_no_start(&scratch, &id, &hooks);
}

#[test]
fn f17_shim_dies_after_proceed_before_committing() {
    let scratch = Scratch::new("f17");
    let hooks = Arc::new(RecordingHooks::default());
    let opts = options(&scratch, "", &hooks).with_env(SHIM_FAULT_ENV, "before-commit:sigkill-self");
    let plan = shell_plan("echo should-not-run", &scratch.work());
    let (launched, committed, finished): (Launched, Result<(), CommitError>, Finished) = block_on(async {
        let launched = launch(test_launch(&plan), opts).await.expect("the host committed");
        let committed = launched.handle.committed().await;
        let finished = launched.handle.finished().await.unwrap();
        (launched, committed, finished)
    });
    let expected = "Async runner exited before startup commit (exit code unknown, signal SIGKILL).";
    assert_eq!(committed, Err(CommitError::Failed(expected.into())));
    assert_eq!(finished.startup_failure.as_deref(), Some(expected));
    let run = scratch.run_dir(&launched.run_id);
    let status = status(&run).unwrap();
    assert_eq!(status["state"], "failed");
    assert_eq!(status["error"], expected);
    assert_runner_only_proof(&run);
    assert!(
        !scratch.runs().join(".active-runs").join(&launched.run_id).exists(),
        "marker released"
    );
    assert!(!scratch.results().join(format!("{}.json", launched.run_id)).exists());
}

#[test]
fn f18_stale_proceed_file_is_removed_before_spawn() {
    let scratch = Scratch::new("f18");
    scratch.create_root();
    let run = scratch.run_dir("shell-f18");
    std::fs::create_dir(&run).unwrap();
    std::fs::write(
        run.join("runner-startup-proceed.json"),
        br#"{"action":"proceed","token":"foreign-token"}"#,
    )
    .unwrap();
    let hooks = Arc::new(RecordingHooks::default());
    let opts = options(&scratch, "", &hooks);
    let plan = shell_plan("echo fresh", &scratch.work());
    let mut asked = test_launch(&plan);
    asked.run_id = Some("shell-f18".into());
    let finished = block_on(async {
        let launched = launch(asked, opts).await.expect("started");
        launched.handle.committed().await.expect("committed");
        launched.handle.finished().await.unwrap()
    });
    assert_eq!(status(&run).unwrap()["state"], "complete");
    assert_eq!(serde_json::to_value(&finished.proof).unwrap()["state"], "observed");
}
