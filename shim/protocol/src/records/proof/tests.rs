use super::*;
use crate::files::atomic::Durability;
use crate::files::dir::Dir;
use crate::files::doc::ReadDoc;
use crate::files::durability::DurabilityPolicy;
use crate::os::Os;
use crate::os::clock::ManualClock;
use crate::os::processes::Processes;
use crate::procinfo::Liveness;
use crate::records::index::ActiveRunIndex;
use crate::records::status::{RunState, StartupFailure, Status, persist_startup_failure};
use crate::testing::{Op, ScriptedFs};
use serde_json::json;
use std::path::Path;
use std::sync::Arc;

const PEER_OBSERVED: &str = include_str!("../../../fixtures/peer/proof-observed.json");
const PEER_OBSERVED_REVIVAL: &str = include_str!("../../../fixtures/peer/proof-observed-revival.json");
const PEER_CANDIDATE: &str = include_str!("../../../fixtures/peer/candidate-final.json");
const PEER_CANDIDATE_REVIVAL: &str = include_str!("../../../fixtures/peer/candidate-revival.json");

const RUN: &str = "run-1";
const RP: &str = "rp-1";

fn exit(code: Option<i32>, signal: Option<&str>) -> RunnerInstance {
    RunnerInstance {
        process_instance_id: RP.into(),
        close_observed_at: 5_000,
        exit_code: code,
        signal: signal.map(str::to_owned),
    }
}

fn ctx<'a>(
    exit: RunnerInstance,
    lease: &'a dyn Fn(&str) -> LeaseProbe,
    exists: &'a dyn Fn(&str) -> bool,
) -> FinalizeContext<'a> {
    FinalizeContext {
        run_id: RUN,
        runner_process_instance_id: RP,
        exit,
        lease_probe: lease,
        session_file_exists: exists,
        cluster: None,
    }
}

fn free(_: &str) -> LeaseProbe {
    LeaseProbe::Free
}

fn no_file(_: &str) -> bool {
    false
}

fn writer(attempt: u32, tree: ProcessTree) -> WriterRecord {
    WriterRecord {
        process_instance_id: format!("w{attempt}"),
        attempt,
        close_observed_at: 4_000,
        exit_code: Some(0),
        signal: None,
        process_tree: tree,
        extra: Default::default(),
    }
}

fn candidate_with(records: &[WriterRecord]) -> Candidate {
    let mut c = Candidate::initial(RUN, RP);
    c.set_step_writers(0, records);
    c
}

fn decide_with(candidate: ReadDoc<Candidate>, state: Option<RunState>) -> ProcessTerminal {
    decide(
        &candidate,
        state.as_ref(),
        Path::new("/runs/run-1"),
        &ctx(exit(Some(0), None), &free, &no_file),
    )
}

#[test]
fn s6_peer_proofs_and_candidates_round_trip() {
    for text in [PEER_OBSERVED, PEER_OBSERVED_REVIVAL] {
        let value: serde_json::Value = serde_json::from_str(text).unwrap();
        let proof: ProcessTerminal = serde_json::from_str(text).unwrap();
        assert_eq!(proof.to_value(), value);
        let run = value["runId"].as_str().unwrap();
        let rp = value["runnerProcessInstanceId"].as_str().unwrap();
        assert_eq!(validate_stored_proof(&value, Path::new("/d"), run, rp).unwrap(), proof);
    }
    for text in [PEER_CANDIDATE, PEER_CANDIDATE_REVIVAL] {
        let value: serde_json::Value = serde_json::from_str(text).unwrap();
        let c: Candidate = serde_json::from_str(text).unwrap();
        assert_eq!(serde_json::to_value(&c).unwrap(), value);
    }
}

#[test]
fn s6_validation_diagnostics() {
    let d = Path::new("/runs/x");
    let check = |v: serde_json::Value| validate_stored_proof(&v, d, RUN, RP).unwrap_err();
    assert_eq!(
        check(json!({"version": 1, "state": "bogus"})),
        "Invalid process-terminal proof in '/runs/x'."
    );
    assert_eq!(check(json!([])), "Invalid process-terminal proof in '/runs/x'.");
    assert_eq!(
        check(json!({"version": 1, "state": "pending", "runId": "other", "runnerProcessInstanceId": RP})),
        "Process-terminal proof in '/runs/x' belongs to run 'other', expected 'run-1'."
    );
    assert_eq!(
        check(json!({"version": 1, "state": "pending", "runId": RUN, "runnerProcessInstanceId": "zz"})),
        "Process-terminal proof in '/runs/x' belongs to runner 'zz', expected 'rp-1'."
    );
    let observed = |extra: serde_json::Value| {
        let mut v = json!({"version": 1, "state": "observed", "runId": RUN, "runnerProcessInstanceId": RP});
        v.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        v
    };
    assert_eq!(
        check(observed(json!({}))),
        "Observed process-terminal proof in '/runs/x' is missing observedAt."
    );
    assert_eq!(
        check(observed(json!({"observedAt": 1}))),
        "Observed process-terminal proof in '/runs/x' is missing instances."
    );
    assert_eq!(
        check(observed(
            json!({"observedAt": 1, "instances": [{"kind": "runner", "processInstanceId": "x", "closeObservedAt": 1, "exitCode": 0, "signal": null}]})
        )),
        "Observed process-terminal proof in '/runs/x' has no matching runner instance."
    );
    assert_eq!(
        check(json!({"version": 1, "state": "unknown", "runId": RUN, "runnerProcessInstanceId": RP})),
        "Invalid process-terminal proof in '/runs/x'."
    );
}

#[test]
fn s7_step2_missing_or_corrupt_candidate() {
    let p = decide_with(ReadDoc::Absent, None);
    assert_eq!(
        (p.state, p.reason),
        (ProofState::Unknown, Some(UnknownReason::RunnerCandidateMissing))
    );
    assert_eq!(
        p.instances,
        Some(vec![Instance::Runner(exit(Some(0), None))]),
        "the finalizer attaches the runner record"
    );
    let p = decide_with(
        ReadDoc::Corrupt(crate::files::doc::Corrupt {
            bytes: b"x".to_vec(),
            error: "eof".into(),
        }),
        None,
    );
    assert_eq!(p.reason, Some(UnknownReason::RunnerCandidateMissing));
}

#[test]
fn s7_step3_instance_mismatch() {
    let mut c = candidate_with(&[]);
    c.runner_process_instance_id = "other".into();
    assert_eq!(
        decide_with(ReadDoc::Present(c), None).reason,
        Some(UnknownReason::RunnerInstanceMismatch)
    );
}

#[test]
fn s7_steps4_5_lease_checks() {
    let mut c = candidate_with(&[]);
    c.session_file = Some("/s.jsonl".into());
    let owned = |_: &str| LeaseProbe::Owned;
    let unreadable = |_: &str| LeaseProbe::Unreadable("EACCES".into());
    let p = decide(
        &ReadDoc::Present(c.clone()),
        None,
        Path::new("/d"),
        &ctx(exit(Some(0), None), &owned, &no_file),
    );
    assert_eq!(p.reason, Some(UnknownReason::CanonicalSessionLeaseActive));
    let p = decide(
        &ReadDoc::Present(c.clone()),
        None,
        Path::new("/d"),
        &ctx(exit(Some(0), None), &unreadable, &no_file),
    );
    assert_eq!(
        (p.reason, p.diagnostic.as_deref()),
        (Some(UnknownReason::CanonicalSessionUnavailable), Some("EACCES"))
    );
    c.revival_lease_token = Some("T".into());
    assert_eq!(
        decide_with(ReadDoc::Present(c.clone()), None).reason,
        Some(UnknownReason::CanonicalSessionReleaseUnverified)
    );
    c.revival_lease_release_acknowledged = Some(true);
    let exists = |_: &str| true;
    let p = decide(
        &ReadDoc::Present(c),
        Some(&RunState::Complete),
        Path::new("/d"),
        &ctx(exit(Some(0), None), &free, &exists),
    );
    assert_eq!(p.state, ProofState::Observed);
    assert_eq!(p.resume_disposition, Some(ResumeDisposition::Resumable));
    let session = p.canonical_session.unwrap();
    assert_eq!(session.lease_disposition, "released");
    assert_eq!(
        session.canonical_session_id,
        crate::files::atomic::sha256_hex(b"/s.jsonl")
    );
    assert_eq!(session.canonical_session_lease_released, Some(true));
}

#[test]
fn s7_step6_writer_consistency() {
    let no_expectation = Candidate::initial(RUN, RP);
    assert_eq!(
        decide_with(ReadDoc::Present(no_expectation), None).reason,
        Some(UnknownReason::WriterCloseUnverified),
        "H14 candidate"
    );
    let mut short = candidate_with(&[writer(0, ProcessTree::observed(9, 1, None))]);
    short.expected_writers.as_mut().unwrap().insert("0".into(), 2);
    assert_eq!(
        decide_with(ReadDoc::Present(short), None).reason,
        Some(UnknownReason::WriterCloseUnverified)
    );
    let mut extra = candidate_with(&[]);
    extra.writers.insert(
        "1".into(),
        vec![serde_json::to_value(writer(0, ProcessTree::observed(9, 1, None))).unwrap()],
    );
    assert_eq!(
        decide_with(ReadDoc::Present(extra), None).reason,
        Some(UnknownReason::WriterCloseUnverified)
    );
    let mut garbage = candidate_with(&[]);
    garbage.expected_writers.as_mut().unwrap().insert("0".into(), 1);
    garbage.writers.insert("0".into(), vec![json!({"kind": "nonsense"})]);
    assert_eq!(
        decide_with(ReadDoc::Present(garbage), None).reason,
        Some(UnknownReason::WriterCloseUnverified)
    );
}

#[test]
fn s7_step7_unverified_tree() {
    let c = candidate_with(&[writer(
        0,
        ProcessTree::Unknown {
            reason: "verification-failed".into(),
            diagnostic: Some("pid 7".into()),
        },
    )]);
    assert_eq!(
        decide_with(ReadDoc::Present(c), None).reason,
        Some(UnknownReason::ProcessTreeUnverified)
    );
}

#[test]
fn s7_step8_observed_with_runner_then_writers_and_resume_disposition() {
    let c = candidate_with(&[writer(0, ProcessTree::observed(9, 1, Some(0)))]);
    let p = decide_with(ReadDoc::Present(c.clone()), Some(RunState::Complete));
    assert_eq!(p.state, ProofState::Observed);
    assert_eq!(p.observed_at, Some(5_000), "observedAt = closeObservedAt");
    let instances = p.instances.unwrap();
    assert_eq!(instances.len(), 2);
    assert_eq!(instances[0], Instance::Runner(exit(Some(0), None)));
    assert!(matches!(&instances[1], Instance::Writer(w) if w.process_instance_id == "w0"));
    assert_eq!(p.resume_disposition, Some(ResumeDisposition::Unavailable));
    assert_eq!(
        decide_with(ReadDoc::Present(c), Some(RunState::Stopped)).resume_disposition,
        Some(ResumeDisposition::NonResumable)
    );
}

fn run_dir(os: Os) -> (tempfile::TempDir, Dir, Dir) {
    let tmp = tempfile::tempdir().unwrap();
    let os = os.shared();
    let runs = Dir::create_private_with(&tmp.path().join("runs"), os.clone()).unwrap();
    let run = runs.ensure_child(RUN).unwrap();
    (tmp, runs, run)
}

fn read(run: &Dir, name: &str) -> serde_json::Value {
    serde_json::from_slice(&run.read(name).unwrap().unwrap()).unwrap()
}

fn event_types(run: &Dir) -> Vec<String> {
    run.read("events.jsonl")
        .unwrap()
        .map(|b| {
            String::from_utf8(b)
                .unwrap()
                .lines()
                .map(|l| {
                    serde_json::from_str::<serde_json::Value>(l).unwrap()["type"]
                        .as_str()
                        .unwrap()
                        .to_owned()
                })
                .collect()
        })
        .unwrap_or_default()
}

fn host_bookkeeping(run: &Dir) {
    let status = Status::initial(&crate::records::status::InitialStatus {
        run_id: RUN.into(),
        runner_process_instance_id: RP.into(),
        session_id: Some("s".into()),
        mode: "single".into(),
        steps: vec![("shell".into(), None)],
        pid: 4242,
        now: 1_000,
        ..Default::default()
    });
    run.write_doc("status.json", &status, Durability::Atomic).unwrap();
    run.write_doc(
        "process-terminal-candidate.json",
        &Candidate::initial(RUN, RP),
        Durability::Atomic,
    )
    .unwrap();
    run.write_doc(
        "process-terminal.json",
        &ProcessTerminal::pending(RUN, RP),
        Durability::Atomic,
    )
    .unwrap();
}

#[test]
fn f28_s7_pre_proceed_exit_42_is_observed_with_the_runner_only() {
    let (_tmp, runs, run) = run_dir(Os::system());
    host_bookkeeping(&run);
    let index = ActiveRunIndex::new(&runs, DurabilityPolicy::standard()).unwrap();
    index.mark(RUN, None).unwrap();
    let error = "Async runner exited before startup state 'acknowledged' (exit code 42, signal none).";
    let failure = StartupFailure {
        run_id: RUN.into(),
        runner_process_instance_id: RP.into(),
        error: error.into(),
        step_count: 1,
        now: 4_900,
        ..Default::default()
    };
    persist_startup_failure(&run, &failure, DurabilityPolicy::standard());
    let outcome = finalize(
        &run,
        &ctx(exit(Some(42), None), &free, &no_file),
        Some(&index),
        DurabilityPolicy::standard(),
    )
    .unwrap();
    assert!(outcome.should_emit());
    let stored = read(&run, "process-terminal.json");
    assert_eq!(stored["state"], "observed");
    assert_eq!(
        stored["instances"],
        json!([{"kind": "runner", "processInstanceId": RP, "closeObservedAt": 5_000, "exitCode": 42, "signal": null}])
    );
    assert_eq!(
        outcome.proof.to_value(),
        stored,
        "the emitted proof deep-equals the file"
    );
    let status = read(&run, "status.json");
    assert_eq!(
        status["processTerminal"], stored,
        "status.processTerminal deep-equals the file"
    );
    assert_eq!(
        (status["state"].as_str(), status["error"].as_str()),
        (Some("failed"), Some(error))
    );
    assert_eq!(status["steps"][0]["processTerminal"]["state"], "not-started");
    assert_eq!(
        read(&run, "process-terminal-candidate.json")["expectedWriters"],
        json!({"0": 0})
    );
    assert!(
        !runs.join(".active-runs").join(RUN).exists(),
        "marker released when observed"
    );
    assert_eq!(event_types(&run), vec!["subagent.run.process_terminal"]);
}

#[test]
fn f35_corrupt_proof_is_preserved_and_recomputed_and_emitted_once() {
    let clock = Arc::new(ManualClock::new(1_795_999_000_123));
    let (_tmp, _runs, run) = run_dir(Os::system().with_clock(clock));
    host_bookkeeping(&run);
    let mut candidate = Candidate::initial(RUN, RP);
    candidate.set_step_writers(0, &[writer(0, ProcessTree::observed(77, 4_500, None))]);
    run.write_doc("process-terminal-candidate.json", &candidate, Durability::Atomic)
        .unwrap();
    run.write_doc(
        "status.json",
        &json!({"runId": RUN, "state": "complete", "steps": [{"agent": "shell", "status": "complete"}]}),
        Durability::Atomic,
    )
    .unwrap();
    std::fs::write(run.join("process-terminal.json"), br#"{"version":1,"state":"bogus"}"#).unwrap();

    let first = finalize(
        &run,
        &ctx(exit(Some(0), None), &free, &no_file),
        None,
        DurabilityPolicy::standard(),
    )
    .unwrap();
    assert_eq!(
        first.corrupt_preserved_as.as_deref(),
        Some("process-terminal.json.corrupt-1795999000123")
    );
    assert_eq!(
        std::fs::read(run.join("process-terminal.json.corrupt-1795999000123")).unwrap(),
        br#"{"version":1,"state":"bogus"}"#
    );
    assert_eq!(first.proof.state, ProofState::Observed);
    assert!(first.should_emit());
    let status = read(&run, "status.json");
    assert_eq!(status["steps"][0]["processTerminal"]["state"], "observed");
    assert_eq!(
        status["steps"][0]["processTerminal"]["instances"][1]["kind"],
        "pi-writer"
    );

    let second = finalize(
        &run,
        &ctx(exit(Some(0), None), &free, &no_file),
        None,
        DurabilityPolicy::standard(),
    )
    .unwrap();
    assert!(!second.should_emit(), "idempotent");
    assert_eq!(second.proof, first.proof);
    assert_eq!(
        event_types(&run),
        vec!["subagent.run.process_terminal"],
        "event emitted once"
    );
}

#[test]
fn f36_corrupt_status_at_overlay_time_is_untouched() {
    let (_tmp, _runs, run) = run_dir(Os::system());
    host_bookkeeping(&run);
    std::fs::write(run.join("status.json"), b"not-json").unwrap();
    let outcome = finalize(
        &run,
        &ctx(exit(Some(0), None), &free, &no_file),
        None,
        DurabilityPolicy::standard(),
    )
    .unwrap();
    assert!(!outcome.overlay_applied);
    assert_eq!(std::fs::read(run.join("status.json")).unwrap(), b"not-json");
    assert_eq!(read(&run, "process-terminal.json")["state"], "unknown");
    assert_eq!(event_types(&run), vec!["subagent.run.process_terminal"]);
}

#[test]
fn s7_proof_write_failure_emits_nothing() {
    let fs = ScriptedFs::new();
    let (_tmp, _runs, run) = run_dir(Os::system().with_files(fs.clone()));
    host_bookkeeping(&run);
    fs.fail_next(Op::Rename, [rustix::io::Errno::NOSPC]);
    let outcome = finalize(
        &run,
        &ctx(exit(Some(0), None), &free, &no_file),
        None,
        DurabilityPolicy::standard(),
    )
    .unwrap();
    assert!(!outcome.should_emit());
    assert_eq!(outcome.proof.reason, Some(UnknownReason::ProofWriteFailed));
    assert_eq!(
        outcome.proof.diagnostic.as_deref(),
        Some("Failed to persist process-terminal proof.")
    );
    assert!(event_types(&run).is_empty());
    assert_eq!(read(&run, "process-terminal.json")["state"], "pending");
    assert!(crate::testing::temp_files(run.path()).is_empty());
}

/// A4 after a power loss: once finalization returns, the proof and the status it was overlaid
/// into survive (the model of [`ScriptedFs::durable`]): both files are fsynced before their
/// renames and share one fsync of the run directory after them.
#[test]
fn a4_a_finalized_proof_and_its_overlay_survive_a_power_loss() {
    let fs = ScriptedFs::new();
    let (_tmp, runs, run) = run_dir(Os::system().with_files(fs.clone()));
    host_bookkeeping(&run);
    let index = ActiveRunIndex::new(&runs, DurabilityPolicy::standard()).unwrap();
    let before = fs.calls(Op::Fsync);
    let outcome = finalize(
        &run,
        &ctx(exit(Some(0), None), &free, &no_file),
        Some(&index),
        DurabilityPolicy::standard(),
    )
    .unwrap();
    assert!(outcome.overlay_applied);
    let dir = std::fs::canonicalize(run.path()).unwrap();
    let durable = fs.durable();
    for name in ["process-terminal.json", "status.json"] {
        assert!(durable.contains(&dir.join(name)), "{name} survives: {durable:?}");
    }
    assert_eq!(fs.calls(Op::Fsync) - before, 3, "two files, one directory");
}

#[test]
fn f38_symlinked_proof_is_replaced_on_finalize() {
    let (tmp, _runs, run) = run_dir(Os::system());
    host_bookkeeping(&run);
    let victim = tmp.path().join("victim");
    std::fs::write(&victim, b"v").unwrap();
    std::fs::remove_file(run.join("process-terminal.json")).unwrap();
    std::os::unix::fs::symlink(&victim, run.join("process-terminal.json")).unwrap();
    finalize(
        &run,
        &ctx(exit(Some(0), None), &free, &no_file),
        None,
        DurabilityPolicy::standard(),
    )
    .unwrap();
    assert!(
        std::fs::symlink_metadata(run.join("process-terminal.json"))
            .unwrap()
            .is_file()
    );
    assert_eq!(std::fs::read(&victim).unwrap(), b"v");
}

#[test]
fn s9_step_proofs() {
    let observed = decide_with(
        ReadDoc::Present(candidate_with(&[writer(0, ProcessTree::observed(9, 1, None))])),
        Some(RunState::Complete),
    );
    let mut c = candidate_with(&[writer(0, ProcessTree::observed(9, 1, None))]);
    c.expected_writers.as_mut().unwrap().insert("1".into(), 0);
    assert_eq!(step_proof(&observed, Some(&c), 0).state, ProofState::Observed);
    assert_eq!(step_proof(&observed, Some(&c), 0).child_index, Some(0));
    assert_eq!(step_proof(&observed, Some(&c), 1).state, ProofState::NotStarted);
    assert_eq!(
        step_proof(&observed, None, 0).reason,
        Some(UnknownReason::WriterCloseUnverified)
    );
    let pending = ProcessTerminal::pending(RUN, RP);
    assert_eq!(step_proof(&pending, None, 0).state, ProofState::Pending);
    let unknown = ProcessTerminal::unknown(RUN, RP, UnknownReason::CanonicalSessionLeaseActive, None);
    assert_eq!(
        step_proof(&unknown, Some(&c), 0).reason,
        Some(UnknownReason::CanonicalSessionLeaseActive)
    );
}

#[derive(Debug)]
struct FixedOracle(Liveness);

impl Processes for FixedOracle {
    fn liveness(&self, _pid: u32, _identity: Option<&str>) -> Liveness {
        self.0.clone()
    }
}

#[test]
fn f33_s13_dead_runner_of_a_terminal_run_gets_observer_unavailable_once() {
    let (_tmp, runs, run) = run_dir(Os::system());
    host_bookkeeping(&run);
    run.write_doc(
        "status.json",
        &json!({"runId": RUN, "state": "complete", "pid": 4242, "endedAt": 9}),
        Durability::Atomic,
    )
    .unwrap();
    let index = ActiveRunIndex::new(&runs, DurabilityPolicy::standard()).unwrap();
    let dead = FixedOracle(Liveness::Dead);
    let request = lister(&dead);
    let outcome = repair_orphan(&run, &request, Some(&index), DurabilityPolicy::standard())
        .unwrap()
        .unwrap();
    assert!(outcome.repaired.is_none());
    assert_eq!(
        read(&run, "process-terminal.json"),
        json!({"version": 1, "state": "unknown", "runId": RUN, "runnerProcessInstanceId": RP, "reason": "observer-unavailable"})
    );
    let status = read(&run, "status.json");
    assert_eq!(status["state"], "complete", "a terminal state is kept");
    assert_eq!(status["processTerminal"]["reason"], "observer-unavailable");
    assert!(
        repair_orphan(&run, &request, Some(&index), DurabilityPolicy::standard())
            .unwrap()
            .is_none(),
        "acts once"
    );
    assert_eq!(event_types(&run), vec!["subagent.run.process_terminal"]);
}

#[test]
fn s13_stale_repair_of_a_running_run_quotes_the_stderr_tail() {
    let (_tmp, runs, run) = run_dir(Os::system());
    host_bookkeeping(&run);
    let index = ActiveRunIndex::new(&runs, DurabilityPolicy::standard()).unwrap();
    index.mark(RUN, None).unwrap();
    let stderr: String = (0..40).map(|i| format!("line {i}\n")).collect();
    std::fs::write(run.join("runner.stderr.log"), stderr).unwrap();
    let dead = FixedOracle(Liveness::Dead);
    let request = lister(&dead);
    let outcome = repair_orphan(&run, &request, Some(&index), DurabilityPolicy::standard())
        .unwrap()
        .unwrap();
    assert!(outcome.repaired.is_some());
    assert_eq!(outcome.proof.reason, Some(UnknownReason::StaleRepair));
    let status = read(&run, "status.json");
    assert_eq!(status["state"], "failed");
    let error = status["error"].as_str().unwrap();
    assert!(error.starts_with("Async runner process 4242 exited or disappeared before writing a result. Marked run failed by stale-run reconciliation.\n\nRunner stderr tail:\nline 10\n"), "{error}");
    assert!(error.ends_with("line 39"));
    assert!(!runs.join(".active-runs").join(RUN).exists());
}

/// A4 and S13 after a power loss: the pending proof is written at launch without an fsync of
/// its content, while its name is made durable by the commit, so the reboot can leave
/// `process-terminal.json` as zeros. The runner the power loss killed is repaired from the
/// proof the status carries, the unreadable bytes are kept aside, and nothing is written while
/// the runner lives.
#[test]
fn s13_a_proof_left_unreadable_by_a_power_loss_does_not_keep_a_dead_run_running() {
    let (_tmp, runs, run) = run_dir(Os::system());
    host_bookkeeping(&run);
    let index = ActiveRunIndex::new(&runs, DurabilityPolicy::standard()).unwrap();
    index.mark(RUN, None).unwrap();
    let zeros = vec![0_u8; 120];
    run.write("process-terminal.json", &zeros, Durability::Atomic).unwrap();
    let alive = AliveOnly(vec![4242]);
    assert!(repair_seen_by(&run, &index, &alive).is_none());
    assert_eq!(run.read("process-terminal.json").unwrap().unwrap(), zeros);
    assert!(names_in(run.path()).iter().all(|n| !n.contains(".corrupt-")));

    let dead = AliveOnly(vec![]);
    let outcome = repair_seen_by(&run, &index, &dead).unwrap();
    assert!(outcome.proof_written);
    assert_eq!(outcome.proof.reason, Some(UnknownReason::StaleRepair));
    assert_eq!(
        read(&run, "process-terminal.json"),
        json!({"version": 1, "state": "unknown", "runId": RUN, "runnerProcessInstanceId": RP, "reason": "stale-repair"})
    );
    let status = read(&run, "status.json");
    assert_eq!(status["state"], "failed");
    assert_eq!(status["processTerminal"]["reason"], "stale-repair");
    assert!(!runs.join(".active-runs").join(RUN).exists(), "marker released");
    let kept: Vec<String> = names_in(run.path())
        .into_iter()
        .filter(|n| n.starts_with("process-terminal.json.corrupt-"))
        .collect();
    assert_eq!(kept.len(), 1, "{kept:?}");
    assert_eq!(run.read(&kept[0]).unwrap().unwrap(), zeros);
    assert_eq!(event_types(&run), vec!["subagent.run.process_terminal"]);
}

/// After a power loss, a run that had ended (its terminal status durable) with nobody left to
/// finalize it: the pending proof and the final candidate (neither fsynced) are zeros. The
/// repair writes the orphan proof and keeps the run's end as recorded.
#[test]
fn s13_an_ended_run_whose_proof_and_candidate_a_power_loss_emptied_keeps_its_end() {
    let (_tmp, runs, run) = run_dir(Os::system());
    host_bookkeeping(&run);
    let mut status: Status = serde_json::from_value(read(&run, "status.json")).unwrap();
    status.mark_terminal(RunState::Complete, 9_000, None, None);
    run.write_doc("status.json", &status, Durability::Durable).unwrap();
    run.write("process-terminal.json", &[0; 64], Durability::Atomic)
        .unwrap();
    run.write("process-terminal-candidate.json", &[0; 200], Durability::Atomic)
        .unwrap();
    let index = ActiveRunIndex::new(&runs, DurabilityPolicy::standard()).unwrap();
    let dead = AliveOnly(vec![]);
    let request = lister(&dead);
    let outcome = repair_orphan(&run, &request, Some(&index), DurabilityPolicy::standard())
        .unwrap()
        .unwrap();
    assert!(outcome.repaired.is_none(), "an ended run is not failed");
    assert_eq!(outcome.proof.reason, Some(UnknownReason::ObserverUnavailable));
    let status = read(&run, "status.json");
    assert_eq!(status["state"], "complete");
    assert_eq!(status["endedAt"], 9_000);
    assert_eq!(status["processTerminal"]["reason"], "observer-unavailable");
    assert_eq!(status["steps"][0]["processTerminal"]["reason"], "observer-unavailable");
}

fn names_in(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect()
}

/// The proof in the status stands in only for its own run.
#[test]
fn s13_an_unreadable_proof_with_a_status_naming_another_run_is_left_alone() {
    let (_tmp, runs, run) = run_dir(Os::system());
    host_bookkeeping(&run);
    let mut status: Status = serde_json::from_value(read(&run, "status.json")).unwrap();
    status.process_terminal = Some(ProcessTerminal::pending("another-run", RP).to_value());
    run.write_doc("status.json", &status, Durability::Atomic).unwrap();
    run.write("process-terminal.json", b"", Durability::Atomic).unwrap();
    let index = ActiveRunIndex::new(&runs, DurabilityPolicy::standard()).unwrap();
    let dead = AliveOnly(vec![]);
    let request = lister(&dead);
    assert!(
        repair_orphan(&run, &request, Some(&index), DurabilityPolicy::standard())
            .unwrap()
            .is_none()
    );
    assert_eq!(read(&run, "status.json")["state"], "running");
}

#[test]
fn s13_no_action_for_live_own_or_foreign_namespace_runners() {
    let (_tmp, _runs, run) = run_dir(Os::system());
    host_bookkeeping(&run);
    let status: Status = serde_json::from_value(read(&run, "status.json")).unwrap();
    let pending = ProcessTerminal::pending(RUN, RP);
    let alive = FixedOracle(Liveness::Alive);
    let dead = FixedOracle(Liveness::Dead);
    let req = |spawned_here, oracle: &'static dyn Processes, ns| OrphanRequest {
        spawned_here,
        oracle,
        own_pid_namespace: ns,
    };
    let alive: &'static FixedOracle = Box::leak(Box::new(alive));
    let dead: &'static FixedOracle = Box::leak(Box::new(dead));
    assert!(matches!(
        decide_orphan(&pending, &status, &req(false, alive, None), None),
        OrphanDecision::NotOrphan(_)
    ));
    assert!(matches!(
        decide_orphan(&pending, &status, &req(true, dead, None), None),
        OrphanDecision::NotOrphan(_)
    ));
    let mut foreign = status.clone();
    foreign.pid_namespace_scope = Some("pid:[1]".into());
    assert!(matches!(
        decide_orphan(&pending, &foreign, &req(false, dead, Some("pid:[2]")), None),
        OrphanDecision::NotOrphan(_)
    ));
    assert!(
        matches!(decide_orphan(&pending, &status, &req(false, dead, None), Some("boom")), OrphanDecision::StaleRepair(m) if m.ends_with("Runner stderr tail:\nboom"))
    );
}

/// Alive for the listed pids, dead for every other.
#[derive(Debug)]
struct AliveOnly(Vec<u32>);

impl Processes for AliveOnly {
    fn liveness(&self, pid: u32, _identity: Option<&str>) -> Liveness {
        if self.0.contains(&pid) {
            Liveness::Alive
        } else {
            Liveness::Dead
        }
    }
}

/// A lister in another process, with `oracle` judging liveness.
fn lister(oracle: &dyn Processes) -> OrphanRequest<'_> {
    OrphanRequest {
        spawned_here: false,
        oracle,
        own_pid_namespace: None,
    }
}

/// S13 as such a lister runs it.
fn repair_seen_by(run: &Dir, index: &ActiveRunIndex, oracle: &dyn Processes) -> Option<OrphanOutcome> {
    repair_orphan(run, &lister(oracle), Some(index), DurabilityPolicy::standard()).unwrap()
}

fn with_launch_host(mut status: Status, host: u32) -> Status {
    status.launch_host_pid = Some(host);
    status
}

#[test]
fn s13_a_live_launching_host_keeps_the_proof_and_a_dead_one_does_not() {
    let (_tmp, _runs, run) = run_dir(Os::system());
    host_bookkeeping(&run);
    let status: Status = serde_json::from_value(read(&run, "status.json")).unwrap();
    let status = with_launch_host(status, 777);
    let pending = ProcessTerminal::pending(RUN, RP);
    let host_alive = AliveOnly(vec![777]);
    assert_eq!(
        decide_orphan(&pending, &status, &lister(&host_alive), None),
        OrphanDecision::NotOrphan("the launching host observes the runner")
    );
    let all_dead = AliveOnly(vec![]);
    assert!(matches!(
        decide_orphan(&pending, &status, &lister(&all_dead), None),
        OrphanDecision::StaleRepair(_)
    ));
}

#[test]
fn a_final_proof_with_an_active_status_and_a_dead_runner_fails_the_run_and_keeps_the_proof() {
    let (_tmp, runs, run) = run_dir(Os::system());
    host_bookkeeping(&run);
    let index = ActiveRunIndex::new(&runs, DurabilityPolicy::standard()).unwrap();
    index.mark(RUN, None).unwrap();
    let proof = ProcessTerminal::unknown(RUN, RP, UnknownReason::WriterCloseUnverified, None);
    run.write_doc("process-terminal.json", &proof, Durability::Atomic)
        .unwrap();
    let alive = AliveOnly(vec![4242]);
    assert!(repair_seen_by(&run, &index, &alive).is_none());
    let dead = AliveOnly(vec![]);
    let outcome = repair_seen_by(&run, &index, &dead).unwrap();
    assert!(!outcome.proof_written);
    assert_eq!(outcome.proof, proof);
    assert_eq!(
        read(&run, "process-terminal.json")["reason"],
        "writer-close-unverified",
        "the proof is kept"
    );
    let status = read(&run, "status.json");
    assert_eq!(status["state"], "failed");
    assert!(
        status["error"]
            .as_str()
            .unwrap()
            .starts_with("Async runner process 4242 exited or disappeared")
    );
    assert!(!runs.join(".active-runs").join(RUN).exists(), "marker released");
    assert!(
        repair_seen_by(&run, &index, &dead).is_none(),
        "a failed run with a final proof is left alone"
    );
}

/// A process group leading its own session, like an agent under a runner that is gone:
/// `sh` backgrounds one sleep and becomes another.
fn detached_group() -> (u32, String) {
    let mut child = std::process::Command::new("setsid")
        .args(["sh", "-c", "sleep 60 & exec sleep 60"])
        .spawn()
        .unwrap();
    let pid = child.id();
    let identity = crate::procinfo::start_identity(pid).unwrap().unwrap();
    // Reap in the background so the killed leader does not linger as our zombie.
    std::thread::spawn(move || child.wait());
    (pid, identity)
}

fn status_with_agent(session: u32, pgid: u32, identity: &str) -> Status {
    serde_json::from_value(json!({
        "runId": RUN, "state": "running", "pid": session,
        "steps": [{"agent": "a", "status": "running", "externalProcess": {"pid": pgid, "startIdentity": identity}}]
    }))
    .unwrap()
}

#[test]
fn x8_the_agents_of_a_dead_runner_are_found_by_group_session_and_start_time_and_ended() {
    let (pid, identity) = detached_group();
    let status = status_with_agent(pid, pid, &identity);
    let members = wait_until(|| Some(leftover_agents(&status)).filter(|m| m.len() == 2));
    assert!(members.contains(&pid), "{members:?}");
    let later = format!("linux:{}", crate::procinfo::start_ticks(&identity).unwrap() + 1_000_000);
    assert!(
        leftover_agents(&status_with_agent(pid, pid, &later)).is_empty(),
        "a group started after the record is not ours"
    );
    assert!(
        leftover_agents(&status_with_agent(pid + 1, pid, &identity)).is_empty(),
        "another session is not ours"
    );
    assert_eq!(end_leftover_agents(&status, &crate::os::processes::RealProcesses), 2);
    wait_until(|| leftover_agents(&status).is_empty().then_some(()));
    for member in members {
        let alive = crate::procinfo::ProcStat::read(member)
            .unwrap()
            .is_some_and(|s| !s.is_zombie());
        assert!(!alive, "{member} ended");
    }
}

fn wait_until<T>(mut probe: impl FnMut() -> Option<T>) -> T {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        if let Some(value) = probe() {
            return value;
        }
        assert!(std::time::Instant::now() < deadline, "condition not reached in 10 s");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// G33: the repair removes a step's `sublaunch-<run>-<step>` directory from its recorded
/// sandbox, and nothing else: not another step's name, not a link put in its place.
#[test]
fn g33_only_the_steps_own_temporary_directories_are_removed() {
    let temp = tempfile::tempdir().unwrap();
    let dir = |name: &str| {
        let path = temp.path().join(name);
        std::fs::create_dir(&path).unwrap();
        std::fs::write(path.join("scratch"), "x").unwrap();
        path
    };
    let own = dir("sublaunch-r1-0");
    let other_name = dir("sublaunch-r1-9");
    let target = dir("precious");
    let link = temp.path().join("sublaunch-r1-1");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let step = |writable: Vec<&Path>| crate::records::status::StepStatus {
        facts: crate::records::step_record::StepFacts {
            sandbox: Some(crate::records::sandbox::AppliedSandbox {
                writable: writable.iter().map(|p| p.display().to_string()).collect(),
                ..Default::default()
            }),
            ..Default::default()
        },
        ..Default::default()
    };
    let status = Status {
        run_id: Some("r1".into()),
        steps: Some(vec![step(vec![&own, &other_name]), step(vec![&link])]),
        ..Default::default()
    };
    super::orphan::remove_sandbox_tmpdirs(&status);
    assert!(!own.exists());
    assert!(other_name.join("scratch").exists());
    assert!(target.join("scratch").exists() && link.exists());
}
