//! Host fault rows of the revival handshake (fault-matrix.md F19–F30, F32, F34, F56 and the
//! host part of F59): every wait outcome of K4/K5, the control writes of K6, the termination
//! of X1, the startup-failure persistence of S5 and the monotonic deadlines of K13.

use regex_lite_free::matches_exit_label;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use sublaunch::launch::testing::{RecordingHooks, block_on, shell_plan, test_launch, test_options};
use sublaunch::launch::{Finished, HostEvent, LaunchFailure, LaunchOptions, launch};
use sublaunch_protocol::os::Os;
use sublaunch_protocol::os::clock::{Clock, SystemClock};
use sublaunch_protocol::os::faults::HostFaults;
use sublaunch_protocol::os::processes::RealProcesses;
use sublaunch_protocol::records::config::RevivalLease;
use sublaunch_protocol::records::lease::{LeaseIdentity, LeaseOwner, LeaseRequest, lease_id};
use sublaunch_tests::launch_harness::{
    CONTROL_TIMEOUT_ENV, SHIM_FAULT_ENV, Scratch, events_of, hostname, read_json, status,
};
use sublaunch_tests::{assert_starts_with, bin};

/// A tiny matcher for `exited before startup state '(acknowledged|confirmed)' (…)` without a
/// regex dependency.
mod regex_lite_free {
    pub fn matches_exit_label(text: &str, labels: &[&str], suffix: &str) -> bool {
        labels.iter().any(|label| {
            text.contains(&format!("exited before startup state '{label}' {suffix}"))
                || text.contains(&format!("exited after startup state '{label}' before proceed {suffix}"))
        })
    }
}

const STARTUP_TIMEOUT: Duration = Duration::from_millis(300);

struct Revival {
    scratch: Scratch,
    session_file: PathBuf,
    hooks: Arc<RecordingHooks>,
}

impl Revival {
    fn new(name: &str) -> Self {
        let scratch = Scratch::new(name);
        let session_file = scratch.work().join("session.json");
        std::fs::write(&session_file, b"{\"session\":\"source\"}").unwrap();
        Self {
            scratch,
            session_file,
            hooks: Arc::new(RecordingHooks::default()),
        }
    }

    fn options(&self, shim_faults: &str, host_faults: &str) -> LaunchOptions {
        let mut options = test_options(&self.scratch.root(), &bin("sublaunch-shim"));
        options.faults = Some(HostFaults::parse(host_faults).unwrap());
        options.hooks = self.hooks.clone();
        options.timeouts.startup = Some(STARTUP_TIMEOUT);
        options = options.with_env(CONTROL_TIMEOUT_ENV, "600");
        if !shim_faults.is_empty() {
            options = options.with_env(SHIM_FAULT_ENV, shim_faults);
        }
        options
    }

    fn fail(&self, options: LaunchOptions) -> (LaunchFailure, Finished, Duration) {
        let mut run = test_launch(&shell_plan("echo revived", &self.scratch.work()));
        run.caller.revival_lease = Some(RevivalLease {
            session_file: self.session_file.to_string_lossy().into_owned(),
            run_id: String::new(),
            source_run_id: "source-run".into(),
            parent_session_id: None,
        });
        let start = Instant::now();
        block_on(async {
            let failure = launch(run, options).await.expect_err("the revival must fail");
            let elapsed = start.elapsed();
            let finished = failure.handle().cloned().expect("supervised").finished().await.unwrap();
            (failure, finished, elapsed)
        })
    }

    fn run(&self, failure: &LaunchFailure) -> PathBuf {
        self.scratch.run_dir(failure.run_id().unwrap())
    }

    fn canonical_session(&self) -> String {
        std::fs::canonicalize(&self.session_file)
            .unwrap()
            .to_string_lossy()
            .into_owned()
    }

    fn lease_dir(&self) -> PathBuf {
        self.scratch
            .root()
            .join("session-leases")
            .join(lease_id(&self.canonical_session()))
    }

    fn assert_failed_without_start(&self, failure: &LaunchFailure) -> Value {
        let run = self.run(failure);
        let status = status(&run).expect("status");
        assert_eq!(status["state"], "failed", "{status}");
        assert_eq!(status["error"], failure.error.to_string().as_str());
        assert!(!run.join("runner-startup-proceed.json").exists(), "no proceed file");
        assert!(events_of(&run, "subagent.run.started").is_empty());
        assert!(!run.join("output-0.log").exists(), "no agent");
        let id = failure.run_id().unwrap();
        assert!(!self.scratch.results().join(format!("{id}.json")).exists(), "no result");
        assert!(!self.scratch.runs().join(".active-runs").join(id).exists(), "no marker");
        assert_eq!(self.hooks.snapshot().capacity_used(), 0);
        status
    }
}

fn startup_path(run: &Path) -> String {
    run.join("runner-startup.json").to_string_lossy().into_owned()
}

fn proof(run: &Path) -> Value {
    read_json(&run.join("process-terminal.json")).expect("a proof")
}

#[test]
fn f19_shim_exits_before_ready() {
    let r = Revival::new("f19");
    let (failure, finished, elapsed) = r.fail(r.options("before-ready:exit:1", ""));
    assert_eq!(
        failure.error.to_string(),
        "Async runner exited before startup state 'ready' (exit code 1, signal none)."
    );
    assert!(elapsed < Duration::from_secs(5), "{elapsed:?}");
    let status = r.assert_failed_without_start(&failure);
    let run = r.run(&failure);
    assert_eq!(
        status["processTerminal"],
        proof(&run),
        "status proof deep-equals the file"
    );
    assert_eq!(proof(&run)["state"], "observed");
    assert_eq!(finished.exit.exit_code, Some(1));
    assert!(!r.lease_dir().exists(), "lease free");
}

#[test]
fn f20_lease_held_by_a_live_owner() {
    let r = Revival::new("f20");
    r.scratch.create_root();
    let canonical = r.canonical_session();
    let request = LeaseRequest {
        canonical_session_file: canonical.clone(),
        run_id: "other-run".into(),
        source_run_id: "other-source".into(),
        parent_session_id: None,
    };
    let this_process = LeaseIdentity {
        pid: std::process::id(),
        hostname: hostname(),
        process_start_identity: sublaunch_protocol::procinfo::own_start_identity(),
        oracle: &RealProcesses,
    };
    let owner = LeaseOwner::new("other-token".into(), &request, &this_process, 1);
    let lease_dir = r.lease_dir();
    std::fs::create_dir_all(&lease_dir).unwrap();
    let owner_bytes = serde_json::to_vec_pretty(&owner).unwrap();
    std::fs::write(lease_dir.join("owner.json"), &owner_bytes).unwrap();
    let (failure, finished, _) = r.fail(r.options("", ""));
    assert!(
        failure.error.to_string().starts_with("Direct revival of session '")
            && failure
                .error
                .to_string()
                .contains("is already owned by run 'other-run'")
            && failure.error.to_string().ends_with(
                "Wait for that revival to finish or start a separate continuation without reusing this session file."
            ),
        "{}",
        failure.error.to_string()
    );
    r.assert_failed_without_start(&failure);
    assert_eq!(
        std::fs::read(lease_dir.join("owner.json")).unwrap(),
        owner_bytes,
        "the other owner's record is unchanged"
    );
    assert_eq!(finished.exit.exit_code, Some(3));
}

#[test]
fn f21_ready_with_a_null_token() {
    let r = Revival::new("f21");
    let (failure, _, _) = r.fail(r.options("before-ready:token:null", ""));
    let run = r.run(&failure);
    assert_eq!(
        failure.error.to_string(),
        format!(
            "Async runner wrote an invalid ready startup handshake: {}",
            startup_path(&run)
        )
    );
    assert!(!run.join("runner-startup-ack.json").exists(), "no ack");
    assert!(failure.termination_observed());
    r.assert_failed_without_start(&failure);
}

#[test]
fn f22_acknowledged_with_a_wrong_token() {
    let r = Revival::new("f22");
    let (failure, _, _) = r.fail(r.options("after-ready:token:wrong", ""));
    let run = r.run(&failure);
    assert_eq!(
        failure.error.to_string(),
        format!(
            "Async runner wrote an invalid acknowledged startup handshake: {}",
            startup_path(&run)
        )
    );
    assert!(!run.join("runner-startup-confirm.json").exists(), "no confirm");
    r.assert_failed_without_start(&failure);
    assert_eq!(proof(&run)["state"], "observed");
}

#[test]
fn f23_startup_report_is_not_json() {
    let r = Revival::new("f23");
    let (failure, _, _) = r.fail(r.options("after-ready:corrupt", ""));
    let run = r.run(&failure);
    assert_starts_with(
        &failure.error.to_string(),
        &format!(
            "Failed to read async runner startup handshake '{}': ",
            startup_path(&run)
        ),
    );
    r.assert_failed_without_start(&failure);
}

#[test]
fn f24_shim_never_writes_ready() {
    let r = Revival::new("f24");
    let (failure, _, elapsed) = r.fail(r.options("before-ready:hang", ""));
    assert_eq!(
        failure.error.to_string(),
        "Timed out after 300ms waiting for the async runner startup state 'ready'."
    );
    assert!(failure.termination_observed(), "SIGTERM ends it");
    assert!(elapsed < STARTUP_TIMEOUT + Duration::from_millis(1200), "{elapsed:?}");
    r.assert_failed_without_start(&failure);
}

#[test]
fn f25_shim_never_acknowledges() {
    let r = Revival::new("f25");
    let (failure, _, _) = r.fail(r.options("after-ready:hang", ""));
    assert_eq!(
        failure.error.to_string(),
        "Timed out after 300ms waiting for the async runner startup state 'acknowledged'."
    );
    assert!(!r.run(&failure).join("runner-startup-confirm.json").exists());
    r.assert_failed_without_start(&failure);
}

#[test]
fn f26_shim_ignoring_sigterm_is_killed() {
    let r = Revival::new("f26");
    let (failure, finished, elapsed) = r.fail(r.options("before-ready:hang-noterm", ""));
    assert!(failure.termination_observed());
    assert!(elapsed < STARTUP_TIMEOUT + Duration::from_millis(2300), "{elapsed:?}");
    assert!(
        elapsed >= STARTUP_TIMEOUT + Duration::from_millis(1000),
        "SIGKILL only after the grace"
    );
    assert_eq!(finished.exit.signal.as_deref(), Some("SIGKILL"));
    let run = r.run(&failure);
    let proof = proof(&run);
    assert_eq!(proof["state"], "observed", "{proof}");
    assert_eq!(proof["instances"][0]["signal"], "SIGKILL");
    r.assert_failed_without_start(&failure);
}

#[test]
fn f28_shim_exits_right_after_acknowledged() {
    let r = Revival::new("f28");
    let at_emission: Arc<Mutex<Option<(Value, Value)>>> = Arc::new(Mutex::new(None));
    let root = r.scratch.runs();
    let seen = at_emission.clone();
    let hooks = Arc::new(RecordingHooks {
        on_event: Some(Box::new(move |event| {
            if let HostEvent::ProcessTerminal { run_id, proof } = event {
                let status = status(&root.join(run_id)).unwrap_or(Value::Null);
                *seen.lock().unwrap() = Some((status, serde_json::to_value(proof).unwrap()));
            }
        })),
        ..RecordingHooks::default()
    });
    let mut opts = r.options("after-acknowledged:exit:42", "");
    opts.hooks = hooks.clone();
    let (failure, finished, elapsed) = r.fail(opts);
    assert!(
        matches_exit_label(
            &failure.error.to_string(),
            &["acknowledged", "confirmed"],
            "(exit code 42, signal none)"
        ),
        "{}",
        failure.error.to_string()
    );
    assert!(elapsed < Duration::from_secs(5));
    let id = failure.run_id().map(str::to_owned).unwrap();
    let status_now = status(&r.run(&failure)).unwrap();
    assert_eq!(
        failure.message(),
        format!(
            "Failed to start async run '{id}': {}",
            status_now["error"].as_str().unwrap()
        )
    );
    let run = r.run(&failure);
    let proof = proof(&run);
    assert_eq!(proof["state"], "observed");
    let instances = proof["instances"].as_array().unwrap();
    assert_eq!(instances.len(), 1);
    assert_eq!(instances[0]["kind"], "runner");
    assert_eq!(
        instances[0]["processInstanceId"],
        failure.runner_process_instance_id().map(str::to_owned).unwrap()
    );
    assert_eq!(instances[0]["exitCode"], 42);
    assert_eq!(instances[0]["signal"], Value::Null);
    assert!(instances[0]["closeObservedAt"].is_number());
    let (status_at_emission, emitted) = at_emission.lock().unwrap().clone().expect("emitted once");
    assert_eq!(emitted, proof, "the emitted proof deep-equals the file");
    assert_eq!(status_at_emission["state"], "failed");
    assert_eq!(status_at_emission["error"], failure.error.to_string().as_str());
    assert!(finished.emitted);
    let candidate = read_json(&run.join("process-terminal-candidate.json")).unwrap();
    let expected = candidate["expectedWriters"].as_object().unwrap();
    assert!(!expected.is_empty() && expected.values().all(|v| v == 0), "{candidate}");
    assert_eq!(hooks.snapshot().capacity_used(), 0);
    assert!(!r.scratch.results().join(format!("{id}.json")).exists());
    assert!(!run.join("runner-startup-proceed.json").exists());
}

#[test]
fn f29_shim_exits_after_confirmed() {
    let r = Revival::new("f29");
    // The shim releases its lease before exiting; the host sleeps before its commit check so
    // the exit is observed first (otherwise H20 catches the death after proceed).
    let (failure, _, _) = r.fail(r.options("after-confirmed:exit:7", "proceed:sleep:300"));
    assert!(
        matches_exit_label(&failure.error.to_string(), &["confirmed"], "(exit code 7, signal none)"),
        "{}",
        failure.error.to_string()
    );
    r.assert_failed_without_start(&failure);
    assert_eq!(proof(&r.run(&failure))["state"], "observed");
}

#[test]
fn f30_ack_write_fails() {
    let r = Revival::new("f30");
    let (failure, _, _) = r.fail(r.options("", "ack:EACCES"));
    assert_starts_with(
        &failure.error.to_string(),
        "Failed to acknowledge async runner startup: EACCES",
    );
    assert!(failure.termination_observed());
    r.assert_failed_without_start(&failure);
    assert!(!r.lease_dir().exists(), "the shim released the lease on SIGTERM");
}

#[test]
fn f32_without_doorbell_the_shim_times_out_waiting_for_ack() {
    // The host stalls before writing ack (the row kills it; an in-process host cannot be
    // killed, so it merely sleeps past the shim's control timeout). Without the doorbell the
    // shim notices only by its own timeout.
    let r = Revival::new("f32");
    let mut opts = r.options("", "ack:sleep:1500");
    opts.doorbell = false;
    let (failure, finished, _) = r.fail(opts);
    assert_eq!(
        failure.error.to_string(),
        "Timed out after 600ms waiting for runner startup control 'ack'."
    );
    assert_eq!(finished.exit.exit_code, Some(3));
    assert!(!r.lease_dir().exists(), "lease free");
}

#[test]
fn f34_corrupt_status_when_the_failure_is_persisted() {
    let r = Revival::new("f34");
    let mut opts = r.options("after-ready:hang", "");
    opts.timeouts.startup = Some(Duration::from_millis(1500));
    let runs = r.scratch.runs();
    let corrupter = std::thread::spawn(move || {
        sublaunch_tests::launch_harness::wait_for("ready", Duration::from_secs(20), || {
            let run = std::fs::read_dir(&runs)
                .ok()?
                .flatten()
                .map(|e| e.path())
                .find(|p| p.join("runner-startup.json").exists())?;
            let report = read_json(&run.join("runner-startup.json"))?;
            // The shim may report ready before the host wrote its initial status (the one
            // with the shim's pid, H13); corrupting earlier would be overwritten by it.
            let initial = read_json(&run.join("status.json")).is_some_and(|s| s.get("pid").is_some());
            (report["state"] == "ready" && initial).then(|| {
                std::fs::write(run.join("status.json"), b"not-json").unwrap();
            })
        });
    });
    let (failure, finished, _) = r.fail(opts);
    corrupter.join().unwrap();
    assert_eq!(
        failure.error.to_string(),
        "Timed out after 1500ms waiting for the async runner startup state 'acknowledged'.",
        "the launch error is unchanged"
    );
    let run = r.run(&failure);
    assert_eq!(
        std::fs::read(run.join("status.json")).unwrap(),
        b"not-json",
        "byte-identical"
    );
    let record = read_json(&run.join("runner-startup-failure.json")).expect("the failure record");
    assert_eq!(record["runId"], failure.run_id().map(str::to_owned).unwrap());
    assert_eq!(
        record["runnerProcessInstanceId"],
        failure.runner_process_instance_id().map(str::to_owned).unwrap()
    );
    assert_eq!(record["error"], failure.error.to_string().as_str());
    let candidate = read_json(&run.join("process-terminal-candidate.json")).unwrap();
    assert!(
        candidate.get("expectedWriters").is_none(),
        "the candidate was not rewritten"
    );
    let proof = serde_json::to_value(&finished.proof).unwrap();
    assert_eq!(proof["state"], "unknown");
    assert_eq!(proof["reason"], "writer-close-unverified");
}

/// A clock whose wall time jumps back one hour 100 ms after it was created (F56).
#[derive(Debug)]
struct JumpingClock {
    created: Instant,
}

impl Clock for JumpingClock {
    fn monotonic(&self) -> Instant {
        Instant::now()
    }

    fn wall_ms(&self) -> u64 {
        let wall = SystemClock.wall_ms();
        if self.created.elapsed() >= Duration::from_millis(100) {
            wall - 3_600_000
        } else {
            wall
        }
    }
}

#[test]
fn f56_a_wall_clock_jump_does_not_move_the_handshake_deadline() {
    let r = Revival::new("f56");
    let mut opts = r.options("before-ready:hang", "");
    opts.os = Some(
        Os::system()
            .with_clock(Arc::new(JumpingClock {
                created: Instant::now(),
            }))
            .shared(),
    );
    let (failure, _, elapsed) = r.fail(opts);
    assert_eq!(
        failure.error.to_string(),
        "Timed out after 300ms waiting for the async runner startup state 'ready'."
    );
    assert!(elapsed >= STARTUP_TIMEOUT, "{elapsed:?}");
    assert!(elapsed < STARTUP_TIMEOUT + Duration::from_millis(1200), "{elapsed:?}");
}

#[test]
fn f59_corrupt_cfg_makes_the_revival_fail_before_ready() {
    let r = Revival::new("f59");
    let (failure, finished, _) = r.fail(r.options("", "cfg:corrupt"));
    assert_eq!(
        failure.error.to_string(),
        "Async runner exited before startup state 'ready' (exit code 2, signal none)."
    );
    assert_eq!(finished.exit.exit_code, Some(2));
    let stderr = std::fs::read_to_string(r.run(&failure).join("runner.stderr.log")).unwrap();
    assert!(
        stderr.contains("Subagent runner error: Invalid runner configuration"),
        "{stderr}"
    );
    let id = failure.run_id().map(str::to_owned).unwrap();
    assert!(
        !r.scratch.root().join(format!("async-cfg-{id}.json")).exists(),
        "cfg file unlinked"
    );
}
