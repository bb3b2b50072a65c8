//! The run files under hostile or failing storage: planted symlinks (F38, F39), a full disk
//! during the run (F42, A9), a deferred mark after the terminal release (F46, I7) and an
//! unwritable result directory (F43).
//!
//! No tmpfs can be mounted here, so the full disk is simulated by the shim's test-hooks
//! filesystem seam (`SUBLAUNCH_SHIM_TEST_ENOSPC=<flag file>`): while the flag file exists,
//! creating the temp file of a `status.json` write and/or the active-run marker fails with
//! `ENOSPC`, exactly where a full disk would fail an atomic write.

mod support;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::{Duration, Instant};
use sublaunch_protocol::files::layout::names;
use support::*;

/// An agent that waits until `go` exists in its cwd, then prints `ok`.
const GATED: &str = "while [ ! -e go ]; do sleep 0.02; done; echo ok";

fn go(cwd: &Path) {
    std::fs::write(cwd.join("go"), b"").unwrap();
}

/// F38 (A5): a symlink planted at `status.json` after commit is replaced by the next write (the
/// rename replaces the link); the link target stays byte-identical and the file is 0600.
#[test]
fn f38_symlink_planted_at_status_json() {
    let root = Root::new();
    let cwd = root.scratch("cwd");
    let victim = root.scratch("victims").join("victim");
    std::fs::write(&victim, b"keep").unwrap();
    let mut run = root.launch(Spec::shell(GATED).fault("after-commit:sleep:500"));
    run.proceed();
    wait_for("the commit", LONG, || {
        (!run.path(names::RUNNER_STARTUP_PROCEED).exists()).then_some(())
    });
    std::fs::remove_file(run.path(names::STATUS)).unwrap();
    std::os::unix::fs::symlink(&victim, run.path(names::STATUS)).unwrap();
    go(&cwd);
    assert_eq!(run.wait_exit(LONG).code(), Some(0), "{}", run.stderr());
    let meta = std::fs::symlink_metadata(run.path(names::STATUS)).unwrap();
    assert!(meta.file_type().is_file(), "a regular file again");
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    assert_eq!(std::fs::read(&victim).unwrap(), b"keep");
    assert_eq!(run.status()["state"], "complete");
}

/// F39 (A10): a symlink at `events.jsonl` makes every append fail with ELOOP, logged to
/// `runner.stderr.log`; the run outcome is unaffected and the target untouched.
#[test]
fn f39_symlink_planted_at_events_jsonl() {
    let root = Root::new();
    let victim = root.scratch("victims").join("events-victim");
    std::fs::write(&victim, b"keep").unwrap();
    let mut spec = Spec::shell("echo ok");
    let target = victim.clone();
    spec.plant.push(Box::new(move |run: &Path| {
        std::os::unix::fs::symlink(&target, run.join(names::EVENTS)).unwrap();
    }));
    let mut run = root.launch(spec);
    run.proceed();
    assert_eq!(run.wait_exit(LONG).code(), Some(0));
    assert!(run.stderr().contains("ELOOP"), "{}", run.stderr());
    assert_eq!(std::fs::read(&victim).unwrap(), b"keep");
    assert!(
        std::fs::symlink_metadata(run.path(names::EVENTS))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(run.status()["state"], "complete");
    assert_eq!(run.result().unwrap()["success"], true);
}

/// F42 (A9): the disk is full from commit on: status writes are deferred (no crash); when
/// space returns the newest payload lands within ~1 s; final status, result present, marker
/// released, no stale state resurrected.
#[test]
fn f42_disk_full_during_the_run() {
    let root = Root::new();
    let cwd = root.scratch("cwd");
    let flag = root.scratch("flags").join("disk-full");
    std::fs::write(&flag, b"").unwrap();
    let mut run = root.launch(Spec::shell(GATED).env("SUBLAUNCH_SHIM_TEST_ENOSPC", flag.to_str().unwrap()));
    run.proceed();
    run.wait_event("subagent.step.started");
    let st = run.status();
    assert_eq!(st["steps"][0]["status"], "pending", "running status deferred: {st}");
    assert_eq!(st["pid"], 0, "still the host's initial status");
    assert!(!run.exited(), "no crash");
    std::fs::remove_file(&flag).unwrap();
    let freed = Instant::now();
    wait_for("the deferred status", LONG, || {
        (run.status()["steps"][0]["status"] == "running").then_some(())
    });
    let landed = freed.elapsed();
    assert!(
        landed <= Duration::from_millis(1_500),
        "landed {landed:?} after space returned"
    );
    assert_eq!(run.status()["pid"], run.pid, "the newest payload");
    go(&cwd);
    assert_eq!(run.wait_exit(LONG).code(), Some(0), "{}", run.stderr());
    assert_eq!(run.status()["state"], "complete");
    assert!(run.result().is_some());
    assert!(!run.marker_exists());
    assert!(run.stderr().contains("deferred"), "{}", run.stderr());
    assert_eq!(proof_json(&run.finalize(None))["state"], "observed");
}

/// F46 (I7): the "running" mark is deferred by ENOSPC; space returns right after the terminal
/// status; the pending mark is never retried, so no marker is resurrected.
#[test]
fn f46_deferred_mark_is_dropped_after_the_terminal_status() {
    let root = Root::new();
    let cwd = root.scratch("cwd");
    let flag = root.scratch("flags").join("disk-full");
    std::fs::write(&flag, b"").unwrap();
    let mut run = root.launch(
        Spec::shell(GATED)
            .env("SUBLAUNCH_SHIM_TEST_ENOSPC", flag.to_str().unwrap())
            .env("SUBLAUNCH_SHIM_TEST_ENOSPC_TARGETS", "marker")
            .fault("before-result:sleep:1500"),
    );
    run.proceed();
    run.wait_event("subagent.step.started");
    go(&cwd);
    wait_for("the terminal status", LONG, || {
        (run.status()["state"] == "complete").then_some(())
    });
    std::fs::remove_file(&flag).unwrap();
    assert_eq!(run.wait_exit(LONG).code(), Some(0), "{}", run.stderr());
    assert!(!run.marker_exists(), "no resurrected marker");
    assert!(
        root.runs()
            .join(".terminal-runs/test-session")
            .read_dir()
            .unwrap()
            .count()
            == 1
    );
}

/// F43 (S11, S12): an unwritable result directory. Permission bits bind an ordinary user
/// only: as root (CI) the whole test runs on a thread with an ordinary user's ids, so the
/// shim it spawns and every file it writes belong to that user.
#[test]
fn f43_unwritable_result_directory() {
    let anchor = tempfile::tempdir().unwrap();
    sublaunch_protocol::testing::as_unprivileged(anchor.path(), || {
        let root = Root::new();
        let cwd = root.scratch("cwd");
        let mut run = root.launch(Spec::shell(GATED));
        run.proceed();
        run.wait_event("subagent.step.started");
        std::fs::set_permissions(root.results(), std::fs::Permissions::from_mode(0o500)).unwrap();
        go(&cwd);
        assert_eq!(run.wait_exit(LONG).code(), Some(0));
        std::fs::set_permissions(root.results(), std::fs::Permissions::from_mode(0o700)).unwrap();
        let error = run.status()["error"].as_str().unwrap().to_owned();
        assert!(
            error.starts_with(&format!("Failed to write result file {}: EACCES", run.cfg.result_path)),
            "{error}"
        );
        assert_eq!(run.status()["state"], "failed");
        assert!(run.candidate()["expectedWriters"].is_object());
        assert_eq!(proof_json(&run.finalize(None))["state"], "observed");
    });
}

/// S11: without a sessionId the result cannot be written: status failed with the S11 error,
/// the rest of the end records are still written, exit 0.
#[test]
fn s11_missing_session_id_fails_the_result() {
    let root = Root::new();
    let mut spec = Spec::shell("echo ok");
    spec.session_id = None;
    let mut run = root.launch(spec);
    run.proceed();
    assert_eq!(run.wait_exit(LONG).code(), Some(0));
    let st = run.status();
    assert_eq!(st["state"], "failed");
    assert_eq!(
        st["error"],
        format!(
            "Failed to write result file {0}: Cannot write async result '{0}' without a sessionId.",
            run.cfg.result_path
        )
    );
    assert!(run.result().is_none());
    assert!(run.candidate()["expectedWriters"].is_object());
    let completed = run.wait_event("subagent.run.completed");
    assert_eq!(completed["status"], "failed");
}
