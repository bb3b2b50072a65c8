use super::*;
use crate::files::atomic::Durability;
use crate::records::failure::FailureKind;
use crate::records::proof::{ProcessTree, WriterRecord};
use serde_json::json;

const PEER_FINAL: &str = include_str!("../../../fixtures/peer/status-final.json");
const PEER_INITIAL: &str = include_str!("../../../fixtures/peer/status-initial.json");
const PEER_RUNNING: &str = include_str!("../../../fixtures/peer/status-running.json");

fn run_dir() -> (tempfile::TempDir, Dir) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = Dir::open(tmp.path()).unwrap();
    (tmp, dir)
}

fn value_of(dir: &Dir, name: &str) -> Value {
    serde_json::from_slice(&dir.read(name).unwrap().unwrap()).unwrap()
}

#[test]
fn w9_peer_status_documents_round_trip_without_losing_fields() {
    for text in [PEER_FINAL, PEER_INITIAL, PEER_RUNNING] {
        let original: Value = serde_json::from_str(text).unwrap();
        let status: Status = serde_json::from_str(text).unwrap();
        assert_eq!(serde_json::to_value(&status).unwrap(), original);
    }
    let status: Status = serde_json::from_str(PEER_FINAL).unwrap();
    assert_eq!(status.state, Some(RunState::Complete));
    assert_eq!(status.proof_state(), Some(ProofState::Observed));
    assert!(status.extra.contains_key("steering"), "unknown fields kept in extra");
    let process = status.steps.as_ref().unwrap()[0].external_process.clone().unwrap();
    assert_eq!(process.pid, 16942);
    assert_eq!(process.end.map(|end| end.exit_code), Some(Some(0)));
    assert!(
        process.extra.contains_key("stdoutPath"),
        "a peer's own process fields are kept"
    );
}

#[test]
fn s2_initial_status_has_the_upstream_shape() {
    let status = Status::initial(&InitialStatus {
        run_id: "bench-normal-00-w9e9jd".into(),
        runner_process_instance_id: "b94c294f-4428-4afb-a340-f438ee93d394".into(),
        session_id: Some("bench-session".into()),
        completion_owner_id: Some("989b91f9-d2f6-4b03-8034-48a9ad6120f0".into()),
        tool_call_id: None,
        mode: "single".into(),
        steps: vec![("noop".into(), None)],
        pid: 16932,
        pid_namespace_scope: None,
        pid_start_identity: None,
        now: 1_795_999_085_065,
    });
    let peer: Value = serde_json::from_str(PEER_INITIAL).unwrap();
    assert_eq!(serde_json::to_value(&status).unwrap(), peer);
}

#[test]
fn s3_running_rewrite_keeps_host_and_foreign_fields() {
    let mut status = Status::initial(&InitialStatus {
        run_id: "r1".into(),
        runner_process_instance_id: "rp".into(),
        mode: "single".into(),
        steps: vec![("shell".into(), None)],
        pid: 10,
        pid_namespace_scope: Some("pid:[4026531836]".into()),
        now: 5,
        ..InitialStatus::default()
    });
    status.extra.insert("hostOnly".into(), json!({"keep": true}));
    status.mark_running(&RunningUpdate {
        run_id: "r1",
        runner_process_instance_id: "rp",
        pid: 10,
        pid_namespace_scope: None,
        pid_start_identity: Some("linux:77"),
        cwd: "/w",
        output_file: "/runs/r1/output-0.log",
        now: 9,
    });
    let v = serde_json::to_value(&status).unwrap();
    assert_eq!(v["pidNamespaceScope"], "pid:[4026531836]");
    assert_eq!(v["hostOnly"], json!({"keep": true}));
    assert_eq!(v["startedAt"], 9);
    assert_eq!(v["lastActivityAt"], 9);
    assert_eq!(v["outputFile"], "/runs/r1/output-0.log");
    assert_eq!(
        v["steps"][0]["processTerminal"],
        json!({"version": 1, "state": "pending", "runId": "r1", "runnerProcessInstanceId": "rp", "childIndex": 0})
    );
    assert_eq!(v["processTerminal"]["state"], "pending");
}

#[test]
fn s4_terminal_state_derivation_order() {
    let all = EndFacts {
        stop_requested: true,
        timed_out: true,
        interrupted: true,
        nonzero_exit: true,
        ..EndFacts::default()
    };
    assert_eq!(derive_terminal_state(&all), RunState::Stopped);
    assert_eq!(
        derive_terminal_state(&EndFacts {
            unexplained_signal: true,
            ..EndFacts::default()
        }),
        RunState::Stopped
    );
    assert_eq!(
        derive_terminal_state(&EndFacts {
            timed_out: true,
            interrupted: true,
            ..EndFacts::default()
        }),
        RunState::Failed
    );
    assert_eq!(
        derive_terminal_state(&EndFacts {
            spawn_failed: true,
            ..EndFacts::default()
        }),
        RunState::Failed
    );
    assert_eq!(
        derive_terminal_state(&EndFacts {
            protocol_failure: true,
            ..EndFacts::default()
        }),
        RunState::Failed
    );
    assert_eq!(
        derive_terminal_state(&EndFacts {
            interrupted: true,
            ..EndFacts::default()
        }),
        RunState::Paused
    );
    assert_eq!(derive_terminal_state(&EndFacts::default()), RunState::Complete);
}

#[test]
fn s4_failed_without_message_names_the_step() {
    let mut status: Status = serde_json::from_str(PEER_INITIAL).unwrap();
    status.mark_terminal(RunState::Failed, 7, None, None);
    assert_eq!(status.error.as_deref(), Some("Step failed: noop"));
    assert_eq!(status.failure_kind, Some(FailureKind::AgentError));
    assert_eq!(status.ended_at, Some(7));
    status.mark_terminal(RunState::Complete, 8, None, None);
    assert_eq!(status.error, None);
    assert_eq!(status.failure_kind, None);
    status.mark_terminal(RunState::Stopped, 9, None, None);
    assert_eq!(status.failure_kind, Some(FailureKind::Stopped));
}

#[test]
fn run_states_classify_and_keep_unknown_strings() {
    assert!(RunState::Queued.is_active() && RunState::Running.is_active());
    for s in ["complete", "failed", "paused", "stopped", "rejected"] {
        assert!(RunState::parse(s).is_terminal(), "{s}");
    }
    let other: RunState = serde_json::from_value(json!("bogus")).unwrap();
    assert_eq!(other, RunState::Other("bogus".into()));
    assert!(!other.is_active() && !other.is_terminal());
    assert_eq!(serde_json::to_value(&other).unwrap(), json!("bogus"));
}

fn failure(run_id: &str) -> StartupFailure {
    StartupFailure {
        run_id: run_id.into(),
        runner_process_instance_id: "rp-1".into(),
        session_id: Some("s".into()),
        error: "Async runner exited before startup state 'ready' (exit code 1, signal none).".into(),
        step_count: 2,
        now: 1000,
        ..StartupFailure::default()
    }
}

#[test]
fn f34_s5_corrupt_status_is_left_byte_identical_and_the_failure_recorded_aside() {
    let (_tmp, run) = run_dir();
    std::fs::write(run.join("status.json"), b"not-json").unwrap();
    std::fs::write(
        run.join("process-terminal-candidate.json"),
        b"{\"version\":1,\"runId\":\"r\",\"runnerProcessInstanceId\":\"rp-1\",\"writers\":{}}",
    )
    .unwrap();
    let before_candidate = std::fs::read(run.join("process-terminal-candidate.json")).unwrap();
    let outcome = persist_startup_failure(&run, &failure("r"), DurabilityPolicy::standard());
    assert!(
        matches!(
            outcome,
            StartupFailureOutcome::StatusUnusable { record_error: None, .. }
        ),
        "{outcome:?}"
    );
    assert_eq!(std::fs::read(run.join("status.json")).unwrap(), b"not-json");
    assert_eq!(
        std::fs::read(run.join("process-terminal-candidate.json")).unwrap(),
        before_candidate,
        "no candidate rewritten"
    );
    let record = value_of(&run, "runner-startup-failure.json");
    assert_eq!(
        record,
        json!({"version": 1, "runId": "r", "runnerProcessInstanceId": "rp-1",
               "error": "Async runner exited before startup state 'ready' (exit code 1, signal none).", "observedAt": 1000})
    );
    assert!(crate::testing::temp_files(run.path()).is_empty());
}

#[test]
fn s5_absent_status_starts_from_empty_and_writes_zero_writer_candidate() {
    let (_tmp, run) = run_dir();
    let outcome = persist_startup_failure(&run, &failure("r"), DurabilityPolicy::standard());
    assert!(matches!(outcome, StartupFailureOutcome::Persisted), "{outcome:?}");
    let status = value_of(&run, "status.json");
    assert_eq!(status["state"], "failed");
    assert_eq!(status["runId"], "r");
    assert_eq!(status["sessionId"], "s");
    assert_eq!(status["lastUpdate"], 1000);
    assert_eq!(
        status["processTerminal"],
        json!({"version": 1, "state": "not-started", "runId": "r", "runnerProcessInstanceId": "rp-1"})
    );
    let candidate = value_of(&run, "process-terminal-candidate.json");
    assert_eq!(candidate["writers"], json!({}));
    assert_eq!(candidate["expectedWriters"], json!({"0": 0, "1": 0}));
}

#[test]
fn s5_keeps_fields_final_proofs_and_candidate_lease_fields() {
    let (_tmp, run) = run_dir();
    let observed = json!({"version": 1, "state": "observed", "runId": "r", "runnerProcessInstanceId": "rp-1", "observedAt": 5,
        "instances": [{"kind": "runner", "processInstanceId": "rp-1", "closeObservedAt": 5, "exitCode": 1, "signal": null}]});
    run.write_doc("status.json", &json!({"runId": "r", "state": "running", "pidNamespaceScope": "pid:[1]", "custom": 1, "processTerminal": observed}), Durability::Atomic)
        .unwrap();
    run.write_doc(
        "process-terminal-candidate.json",
        &json!({"version": 1, "runId": "r", "runnerProcessInstanceId": "rp-1", "writers": {}, "sessionFile": "/s.jsonl", "revivalLeaseToken": "T", "other": true}),
        Durability::Atomic,
    )
    .unwrap();
    persist_startup_failure(&run, &failure("r"), DurabilityPolicy::standard());
    let status = value_of(&run, "status.json");
    assert_eq!(
        status["processTerminal"], observed,
        "an observed proof is never downgraded to not-started"
    );
    assert_eq!(status["custom"], 1);
    assert_eq!(status["pidNamespaceScope"], "pid:[1]");
    let candidate = value_of(&run, "process-terminal-candidate.json");
    assert_eq!(candidate["sessionFile"], "/s.jsonl");
    assert_eq!(candidate["revivalLeaseToken"], "T");
    assert_eq!(candidate["other"], true);
    assert_eq!(candidate["expectedWriters"], json!({"0": 0, "1": 0}));
}

#[test]
fn r16_never_overwrites_a_terminal_status() {
    let (_tmp, run) = run_dir();
    run.write_doc(
        "status.json",
        &json!({"runId": "r", "state": "complete"}),
        Durability::Atomic,
    )
    .unwrap();
    let mut f = failure("r");
    f.keep_terminal_status = true;
    let outcome = persist_startup_failure(&run, &f, DurabilityPolicy::standard());
    assert!(
        matches!(outcome, StartupFailureOutcome::StatusAlreadyTerminal),
        "{outcome:?}"
    );
    assert_eq!(
        value_of(&run, "status.json"),
        json!({"runId": "r", "state": "complete"})
    );
    assert_eq!(
        value_of(&run, "process-terminal-candidate.json")["expectedWriters"],
        json!({"0": 0, "1": 0})
    );
}

#[test]
fn a11_modify_refuses_corrupt_and_absent_documents() {
    let (_tmp, run) = run_dir();
    assert!(matches!(
        modify_status(&run, false, |_| (Change::Keep, ())),
        Err(ModifyError::Absent)
    ));
    std::fs::write(run.join("status.json"), b"{trunc").unwrap();
    let result = modify_status(&run, true, |s| {
        s.state = Some(RunState::Failed);
        (Change::Write(Durability::Atomic), ())
    });
    assert!(matches!(result, Err(ModifyError::Corrupt(_))));
    assert_eq!(std::fs::read(run.join("status.json")).unwrap(), b"{trunc");
}

#[test]
fn w9_modify_keeps_other_writers_fields() {
    let (_tmp, run) = run_dir();
    std::fs::write(run.join("status.json"), PEER_RUNNING).unwrap();
    modify_status(&run, false, |s| {
        s.state = Some(RunState::Stopped);
        (Change::Write(Durability::Atomic), ())
    })
    .unwrap();
    let mut expected: Value = serde_json::from_str(PEER_RUNNING).unwrap();
    expected["state"] = json!("stopped");
    assert_eq!(value_of(&run, "status.json"), expected);
}

#[test]
fn s8_candidate_records_writers_and_expectations() {
    let mut c = Candidate::initial("r", "rp");
    let record = WriterRecord {
        process_instance_id: "w1".into(),
        attempt: 0,
        close_observed_at: 3,
        exit_code: Some(0),
        signal: None,
        process_tree: ProcessTree::observed(42, 4, Some(1)),
        extra: Map::new(),
    };
    c.set_step_writers(0, std::slice::from_ref(&record));
    assert_eq!(c.expected(0), Some(1));
    assert_eq!(c.writer_records(0).unwrap(), vec![record]);
    let v = serde_json::to_value(&c).unwrap();
    assert_eq!(v["writers"]["0"][0]["processTree"]["adoptedDescendantsKilled"], 1);
    assert_eq!(v["writers"]["0"][0]["processTree"]["mechanism"], "posix-process-group");
}
