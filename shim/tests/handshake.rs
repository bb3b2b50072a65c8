//! The runner half of the startup handshake: fresh and revival commits (K3, K9–K15, R5, R6,
//! R6a), pre-commit failures (K10, R7, R8) and the lease rows F17, F20, F31, F32, F60, F61, F62.

mod support;

use serde_json::{Value, json};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::time::Instant;
use sublaunch_protocol::files::dir::Dir;
use sublaunch_protocol::files::durability::{DocKind, DurabilityPolicy};
use sublaunch_protocol::files::layout::names;
use sublaunch_protocol::os::processes::RealProcesses;
use sublaunch_protocol::procinfo::hostname;
use sublaunch_protocol::records::handshake::{ControlAction, Doorbell};
use sublaunch_protocol::records::lease::{LeaseIdentity, LeaseOwner, LeaseRequest, lease_id};
use support::*;

fn session_file(root: &Root) -> PathBuf {
    let dir = root.scratch("sessions");
    let file = dir.join("session.jsonl");
    std::fs::write(&file, b"{}\n").unwrap();
    file.canonicalize().unwrap()
}

fn lease_dir(root: &Root, session: &Path) -> PathBuf {
    root.root
        .join("session-leases")
        .join(lease_id(session.to_str().unwrap()))
}

fn plant_owner(root: &Root, session: &Path, pid: u32, token: &str) -> PathBuf {
    let dir = lease_dir(root, session);
    std::fs::create_dir_all(&dir).unwrap();
    let request = LeaseRequest {
        canonical_session_file: session.to_string_lossy().into_owned(),
        run_id: "other-run".into(),
        source_run_id: "other-source".into(),
        parent_session_id: None,
    };
    let holder = LeaseIdentity {
        pid,
        hostname: hostname(),
        process_start_identity: None,
        oracle: &RealProcesses,
    };
    let owner = LeaseOwner::new(token.into(), &request, &holder, 1);
    Dir::open(&dir)
        .unwrap()
        .write_doc(
            names::LEASE_OWNER,
            &owner,
            DurabilityPolicy::standard().for_kind(DocKind::LeaseOwner),
        )
        .unwrap();
    dir
}

fn assert_no_start(run: &Launched) {
    assert!(!run.path(names::EVENTS).exists(), "no subagent.run.started, no agent");
    assert!(run.result().is_none(), "no result file");
}

/// R6/K3: ready(T, owner) → ack → acknowledged → confirm → confirmed → proceed → commit; the
/// lease is released at the end and acknowledged in the candidate (X11); the host's proof is
/// `observed` with the canonical session released.
#[test]
fn r6_revival_handshake_commits_and_releases_the_lease() {
    let root = Root::new();
    let session = session_file(&root);
    let mut run = root.launch(Spec::shell("echo revived").revival(&session));
    let ready = run.wait_report("ready");
    assert_eq!(ready["pid"], run.pid);
    assert_eq!(ready["owner"]["pid"], run.pid);
    assert_eq!(ready["owner"]["canonicalSessionFile"], session.to_str().unwrap());
    assert_eq!(ready["owner"]["token"], ready["token"]);
    assert!(
        lease_dir(&root, &session).join("owner.json").is_file(),
        "lease held from ready on"
    );
    assert!(run.doorbell_messages().contains(&Doorbell::State("ready".into())));
    let token = run.complete_revival();
    assert_eq!(run.wait_exit(LONG).code(), Some(0), "{}", run.stderr());
    assert_eq!(run.status()["state"], "complete");
    for name in [
        names::RUNNER_STARTUP_ACK,
        names::RUNNER_STARTUP_CONFIRM,
        names::RUNNER_STARTUP_PROCEED,
    ] {
        assert!(!run.path(name).exists(), "K12: {name}");
    }
    assert!(!lease_dir(&root, &session).exists(), "lease released");
    let candidate = run.candidate();
    assert_eq!(candidate["sessionFile"], session.to_str().unwrap());
    assert_eq!(candidate["revivalLeaseToken"], token.as_str());
    assert_eq!(candidate["revivalLeaseReleaseAcknowledged"], true);
    let proof = proof_json(&run.finalize(None));
    assert_eq!(proof["state"], "observed", "{proof}");
    assert_eq!(proof["canonicalSession"]["leaseDisposition"], "released");
    assert_eq!(proof["resumeDisposition"], "resumable");
}

/// K15: the shim accepts `confirm` from the ack file too (0.69 wrote it there).
#[test]
fn k15_confirm_is_accepted_from_the_ack_file() {
    let root = Root::new();
    let session = session_file(&root);
    let mut run = root.launch(Spec::shell("true").revival(&session));
    let token = run.wait_report("ready")["token"].as_str().unwrap().to_owned();
    run.control(ControlAction::Ack, &token);
    run.wait_report("acknowledged");
    Dir::open(&run.run)
        .unwrap()
        .write_doc(
            names::RUNNER_STARTUP_ACK,
            &json!({"action": "confirm", "token": token}),
            DurabilityPolicy::standard().for_kind(DocKind::HandshakeControl),
        )
        .unwrap();
    run.wait_report("confirmed");
    run.control(ControlAction::Proceed, &token);
    assert_eq!(run.wait_exit(LONG).code(), Some(0));
    assert_eq!(run.status()["state"], "complete");
}

/// §T hooks on the revival states: `token:null` changes the next write, `token:<v>` after a
/// point changes the following one, `state:` replaces the state, `exit:<n>` releases the lease
/// (the shim side of F21, F22, F28).
#[test]
fn t_state_write_hooks() {
    let root = Root::new();
    let session = session_file(&root);
    let mut run = root.launch(Spec::shell("true").revival(&session).fault("before-ready:token:null"));
    let ready = run.wait_report("ready");
    assert_eq!(ready["token"], Value::Null, "F21: ready with a null token");
    run.signal(libc::SIGTERM);
    assert_eq!(run.wait_exit(LONG).code(), Some(3));
    assert!(!lease_dir(&root, &session).exists());

    let mut run = root.launch(
        Spec::shell("true")
            .revival(&session)
            .fault("after-ready:token:wrong;after-acknowledged:exit:42"),
    );
    let token = run.wait_report("ready")["token"].as_str().unwrap().to_owned();
    run.control(ControlAction::Ack, &token);
    let acknowledged = run.wait_report("acknowledged");
    assert_eq!(
        acknowledged["token"], "wrong",
        "F22: the next state carries the hooked token"
    );
    assert_eq!(
        run.wait_exit(LONG).code(),
        Some(42),
        "F28: exit right after acknowledged"
    );
    assert!(!lease_dir(&root, &session).exists(), "exit:<n> releases the lease");
    assert!(!run.path(names::RUNNER_STARTUP_CONFIRM).exists());
    assert_no_start(&run);

    let mut run = root.launch(Spec::shell("true").revival(&session).fault("after-ready:corrupt"));
    let token = run.wait_report("ready")["token"].as_str().unwrap().to_owned();
    run.control(ControlAction::Ack, &token);
    wait_for("a corrupt runner-startup.json (F23)", LONG, || {
        let bytes = std::fs::read(run.path(names::RUNNER_STARTUP)).ok()?;
        serde_json::from_slice::<Value>(&bytes).is_err().then_some(())
    });
    run.signal(libc::SIGTERM);
    assert_eq!(run.wait_exit(LONG).code(), Some(3));
}

/// F17: the shim dies after the host wrote proceed but before consuming it. The proceed file
/// and the absent `subagent.run.started` are the host's H20 evidence: status `failed` with
/// `Async runner exited before startup commit (exit code unknown, signal SIGKILL).`, proof
/// `observed`, marker released, no result.
#[test]
fn f17_shim_dies_before_consuming_proceed() {
    let root = Root::new();
    let mut run = root.launch(Spec::shell("echo never").fault("before-commit:sigkill-self"));
    run.proceed();
    let status = run.wait_exit(LONG);
    assert_eq!(status.signal(), Some(libc::SIGKILL));
    assert!(run.path(names::RUNNER_STARTUP_PROCEED).exists(), "proceed not consumed");
    assert_no_start(&run);
    let proof = proof_json(&run.finalize(None));
    assert_eq!(proof["state"], "observed", "{proof}");
    let st = run.status();
    assert_eq!(st["state"], "failed");
    assert_eq!(
        st["error"],
        "Async runner exited before startup commit (exit code unknown, signal SIGKILL)."
    );
    assert!(!run.marker_exists());
}

/// F31/R8: the host is SIGKILLed after `ready`: the shim sees doorbell EOF at once, publishes
/// `Host closed the startup channel before proceed.` in runner-startup.json and status.json
/// (`not-started` proof, zero-writer candidate), releases the lease and exits 4 — within
/// 200 ms of the host's death.
#[test]
fn f31_host_killed_mid_handshake() {
    let root = Root::new();
    let session = session_file(&root);
    let mut spec = Spec::shell("echo never").revival(&session);
    spec.doorbell = DoorbellMode::HeldBySubprocess;
    let mut run = root.launch(spec);
    run.wait_report("ready");
    let killed_at = wall_ms();
    let started = Instant::now();
    run.holder.as_mut().unwrap().kill().unwrap();
    let status = run.wait_exit(LONG);
    let elapsed = started.elapsed();
    assert_eq!(status.code(), Some(4), "{}", run.stderr());
    let report = read_json(&run.path(names::RUNNER_STARTUP)).unwrap();
    assert_eq!(report["state"], "error");
    assert_eq!(report["error"], "Host closed the startup channel before proceed.");
    let st = run.status();
    assert_eq!(st["state"], "failed");
    assert_eq!(st["error"], "Host closed the startup channel before proceed.");
    assert_eq!(st["processTerminal"]["state"], "not-started");
    let handled_after = st["lastUpdate"].as_u64().unwrap().saturating_sub(killed_at);
    assert!(
        handled_after <= 200,
        "EOF handled {handled_after} ms after the host died (shim exit observed after {elapsed:?})"
    );
    assert_eq!(run.candidate()["expectedWriters"], json!({"0": 0}));
    assert!(!lease_dir(&root, &session).exists(), "lease free");
    let marker = run.root.join("runs").join(".active-runs").join(&run.cfg.id);
    assert!(
        !marker.exists(),
        "no observer will release the marker, so the shim does (X12)"
    );
    assert!(
        run.stderr()
            .contains("Subagent runner error: Host closed the startup channel before proceed.")
    );
    assert_no_start(&run);
}

/// A valid commit although the host closed the doorbell: it wrote proceed and exited at once
/// (K14: EOF makes the shim check the proceed file once more).
#[test]
fn k14_proceed_then_host_exit_is_a_commit() {
    let root = Root::new();
    let mut spec = Spec::shell("echo ok");
    spec.doorbell = DoorbellMode::HeldBySubprocess;
    let mut run = root.launch(spec);
    run.proceed();
    run.holder.as_mut().unwrap().kill().unwrap();
    assert_eq!(run.wait_exit(LONG).code(), Some(0), "{}", run.stderr());
    assert_eq!(run.status()["state"], "complete");
}

/// F32: the same without a doorbell: the shim only notices by its control timeout
/// (`Timed out after 600ms waiting for runner startup control 'ack'.`), exit 3, lease free.
#[test]
fn f32_no_doorbell_times_out() {
    let root = Root::new();
    let session = session_file(&root);
    let mut spec = Spec::shell("echo never").revival(&session);
    spec.doorbell = DoorbellMode::Off;
    spec.control_timeout_ms = 600;
    let mut run = root.launch(spec);
    run.wait_report("ready");
    assert_eq!(run.wait_exit(LONG).code(), Some(3));
    let report = read_json(&run.path(names::RUNNER_STARTUP)).unwrap();
    assert_eq!(report["state"], "error");
    assert_eq!(
        report["error"],
        "Timed out after 600ms waiting for runner startup control 'ack'."
    );
    assert!(!lease_dir(&root, &session).exists());
    assert_no_start(&run);
}

/// K13 fallback: a fresh launch without a doorbell commits by polling.
#[test]
fn k13_fresh_launch_without_doorbell_polls() {
    let root = Root::new();
    let mut spec = Spec::shell("echo polled");
    spec.doorbell = DoorbellMode::Off;
    let mut run = root.launch(spec);
    run.proceed();
    assert_eq!(run.wait_exit(LONG).code(), Some(0));
    assert_eq!(run.result().unwrap()["results"][0]["output"], "polled");
}

/// F62: `doorbell-only` rings `ready` without writing the file; the host ignores it (file
/// wins) and terminates the shim after its timeout: exit 3, no agent, lease free.
#[test]
fn f62_doorbell_message_without_file() {
    let root = Root::new();
    let session = session_file(&root);
    let mut run = root.launch(
        Spec::shell("echo never")
            .revival(&session)
            .fault("before-ready:doorbell-only"),
    );
    wait_for("the ready doorbell message", LONG, || {
        run.doorbell_messages()
            .contains(&Doorbell::State("ready".into()))
            .then_some(())
    });
    assert!(!run.path(names::RUNNER_STARTUP).exists(), "no ready file");
    run.signal(libc::SIGTERM);
    assert_eq!(run.wait_exit(LONG).code(), Some(3));
    assert_eq!(
        read_json(&run.path(names::RUNNER_STARTUP)).unwrap()["error"],
        "Runner received SIGTERM before startup commit."
    );
    assert!(!lease_dir(&root, &session).exists());
    assert_no_start(&run);
}

/// R7/X9: SIGTERM before commit → K10 error, exit 3, status untouched by the shim.
#[test]
fn r7_signal_before_commit() {
    let root = Root::new();
    let mut run = root.launch(Spec::shell("echo never"));
    let before = std::fs::read(run.path(names::STATUS)).unwrap();
    // The shim handles SIGTERM once its handler is installed (SigCgt).
    wait_for("the shim's SIGTERM handler", LONG, || {
        catches(run.pid, libc::SIGTERM).then_some(())
    });
    run.signal(libc::SIGTERM);
    assert_eq!(run.wait_exit(LONG).code(), Some(3));
    let report = read_json(&run.path(names::RUNNER_STARTUP)).unwrap();
    assert_eq!(
        report,
        json!({"state": "error", "pid": run.pid, "error": "Runner received SIGTERM before startup commit."})
    );
    assert_eq!(std::fs::read(run.path(names::STATUS)).unwrap(), before);
    assert_no_start(&run);
}

/// K9: a wrong token and an unknown action fail the handshake with the K9 texts.
#[test]
fn k9_bad_controls() {
    let root = Root::new();
    for (control, error) in [
        (
            json!({"action": "proceed", "token": "not-the-token"}),
            "Runner startup control token does not match.",
        ),
        (
            json!({"action": "explode", "token": Value::Null}),
            "Runner startup control action is invalid.",
        ),
    ] {
        let mut run = root.launch(Spec::shell("echo never"));
        let mut control = control;
        if control["token"].is_null() {
            control["token"] = json!(run.barrier_token());
        }
        Dir::open(&run.run)
            .unwrap()
            .write_doc(
                names::RUNNER_STARTUP_PROCEED,
                &control,
                DurabilityPolicy::standard().for_kind(DocKind::Proceed),
            )
            .unwrap();
        assert_eq!(run.wait_exit(LONG).code(), Some(3));
        assert_eq!(read_json(&run.path(names::RUNNER_STARTUP)).unwrap()["error"], error);
        assert_no_start(&run);
    }
}

/// F20: a lease held by a live owner on this host: the conflict text, exit 3, the owner's
/// record untouched.
#[test]
fn f20_lease_conflict() {
    let root = Root::new();
    let session = session_file(&root);
    let dir = plant_owner(&root, &session, std::process::id(), "owner-token");
    let before = std::fs::read(dir.join("owner.json")).unwrap();
    let mut run = root.launch(Spec::shell("echo never").revival(&session));
    assert_eq!(run.wait_exit(LONG).code(), Some(3));
    let error = read_json(&run.path(names::RUNNER_STARTUP)).unwrap()["error"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        error.starts_with(&format!(
            "Direct revival of session '{}' is already owned by run 'other-run'",
            session.display()
        )),
        "{error}"
    );
    assert!(error.ends_with(
        "Wait for that revival to finish or start a separate continuation without reusing this session file."
    ));
    assert_eq!(std::fs::read(dir.join("owner.json")).unwrap(), before);
}

/// F60: a stale lease (owner pid dead, same host, writer none) is moved to a tombstone and
/// reclaimed; the run completes and the proof is `observed` with the lease released.
#[test]
fn f60_stale_lease_is_reclaimed() {
    let root = Root::new();
    let session = session_file(&root);
    let mut dead = std::process::Command::new("true").spawn().unwrap();
    let dead_pid = dead.id();
    dead.wait().unwrap();
    let dir = plant_owner(&root, &session, dead_pid, "0ld-t0ken");
    let mut run = root.launch(Spec::shell("echo ok").revival(&session));
    run.complete_revival();
    assert_eq!(run.wait_exit(LONG).code(), Some(0), "{}", run.stderr());
    let tombstone = PathBuf::from(format!("{}.stale-0ld-t0ken", dir.display()));
    assert!(tombstone.join("owner.json").is_file(), "tombstone kept");
    assert_eq!(run.status()["state"], "complete");
    let proof = proof_json(&run.finalize(None));
    assert_eq!(proof["state"], "observed", "{proof}");
    assert_eq!(proof["canonicalSession"]["leaseDisposition"], "released");
}

/// F61: a shim SIGKILLed after commit leaves its lease; the host's proof is
/// `unknown/canonical-session-lease-active`; the next revival reclaims the lease.
#[test]
fn f61_sigkill_after_commit_keeps_the_lease_until_reclaimed() {
    let root = Root::new();
    let session = session_file(&root);
    let mut run = root.launch(
        Spec::shell("echo never")
            .revival(&session)
            .fault("after-commit:sigkill-self"),
    );
    run.complete_revival();
    assert_eq!(run.wait_exit(LONG).signal(), Some(libc::SIGKILL));
    assert!(
        lease_dir(&root, &session).join("owner.json").is_file(),
        "lease left behind"
    );
    let candidate = run.candidate();
    assert_eq!(
        candidate["sessionFile"],
        session.to_str().unwrap(),
        "lease recorded at commit"
    );
    let proof = proof_json(&run.finalize(None));
    assert_eq!(proof["state"], "unknown");
    assert_eq!(proof["reason"], "canonical-session-lease-active");
    assert_eq!(
        run.status()["state"],
        "running",
        "the finalized proof alone leaves the status"
    );
    // The host's initial status names the shim (H13); this harness writes it before the spawn.
    let mut recorded = run.status();
    recorded["pid"] = serde_json::json!(run.pid);
    std::fs::write(run.run.join("status.json"), recorded.to_string()).unwrap();
    let repaired = run.reconcile().expect("the next reconciliation repairs the run");
    assert!(!repaired.proof_written, "the proof is kept");
    let status = run.status();
    assert_eq!(status["state"], "failed");
    let error = status["error"].as_str().unwrap();
    assert!(
        error.starts_with(&format!(
            "Async runner process {} exited or disappeared before writing a result.",
            status["pid"]
        )),
        "{error}"
    );
    assert_eq!(
        proof_json(&serde_json::from_value(status["processTerminal"].clone()).unwrap())["reason"],
        "canonical-session-lease-active"
    );
    assert!(run.reconcile().is_none(), "once");

    let mut next = root.launch(Spec::shell("echo again").revival(&session));
    next.complete_revival();
    assert_eq!(next.wait_exit(LONG).code(), Some(0), "{}", next.stderr());
    assert_eq!(next.status()["state"], "complete");
    assert!(!lease_dir(&root, &session).exists());
}
