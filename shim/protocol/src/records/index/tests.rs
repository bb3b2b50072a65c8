use super::*;
use crate::files::atomic::Durability;
use crate::os::Os;
use crate::testing::{Op, ScriptedFs};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier, mpsc};

fn setup() -> (tempfile::TempDir, Dir, ActiveRunIndex) {
    let tmp = tempfile::tempdir().unwrap();
    let runs = Dir::create_private(&tmp.path().join("runs")).unwrap();
    let index = ActiveRunIndex::new(&runs, DurabilityPolicy::standard()).unwrap();
    (tmp, runs, index)
}

fn alias_path(runs: &Path, tc: &str, run_id: &str) -> PathBuf {
    runs.join(".active-runs/tool-calls").join(enc(tc)).join(run_id)
}

#[test]
fn i2_mark_creates_an_empty_private_marker_and_refreshes_its_mtime() {
    let (_tmp, runs, index) = setup();
    index.mark("r1", Some("call/1")).unwrap();
    let marker = runs.join(".active-runs/r1");
    let meta = std::fs::symlink_metadata(&marker).unwrap();
    assert!(meta.is_file());
    assert_eq!(meta.len(), 0);
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    assert!(alias_path(runs.path(), "call/1", "r1").is_file());

    let old = std::time::SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
    std::fs::File::options()
        .write(true)
        .open(&marker)
        .unwrap()
        .set_modified(old)
        .unwrap();
    index.mark("r1", None).unwrap();
    let listed = index.list().unwrap().unwrap();
    assert_eq!(listed.len(), 1);
    assert!(
        listed[0].mtime_ms > 1_000_000_000,
        "futimens refreshed the mtime: {}",
        listed[0].mtime_ms
    );
}

#[test]
fn i2_marker_symlink_is_not_followed() {
    let (tmp, runs, index) = setup();
    let victim = tmp.path().join("victim");
    std::fs::write(&victim, b"v").unwrap();
    std::fs::create_dir(runs.join(".active-runs")).unwrap();
    std::os::unix::fs::symlink(&victim, runs.join(".active-runs/r1")).unwrap();
    assert!(index.mark("r1", None).unwrap_err().to_string().contains("ELOOP"));
    assert_eq!(std::fs::read(&victim).unwrap(), b"v");
}

#[test]
fn i4_release_removes_marker_alias_and_empty_alias_dir_and_records_terminal_entry() {
    let (_tmp, runs, index) = setup();
    let run = runs.ensure_child("r1").unwrap();
    run.write_doc("status.json", &json!({"runId": "r1", "state": "complete", "sessionId": "s/1", "toolCallId": "tc", "endedAt": 1_795_999_088_717u64}), Durability::Atomic)
        .unwrap();
    index.mark("r1", Some("tc")).unwrap();
    index.mark("r2", Some("tc")).unwrap();

    let outcome = index.release("r1", &RunState::Complete, None, Some(&run)).unwrap();
    assert!(outcome.marker_removed);
    assert_eq!(outcome.aliases_removed, 1, "alias found through status.toolCallId");
    assert!(outcome.terminal_entry_written);
    assert!(!runs.join(".active-runs/r1").exists());
    assert!(
        alias_path(runs.path(), "tc", "r2").exists(),
        "the other run's alias stays"
    );
    let entry = runs
        .join(".terminal-runs")
        .join(enc("s/1"))
        .join("0001795999088717-r1.json");
    let value: serde_json::Value = serde_json::from_slice(&std::fs::read(entry).unwrap()).unwrap();
    assert_eq!(
        value,
        json!({"version": 1, "runId": "r1", "sessionId": "s/1", "endedAt": 1_795_999_088_717u64})
    );

    index.release("r2", &RunState::Failed, Some("tc"), None).unwrap();
    assert!(
        !runs.join(".active-runs/tool-calls").join(enc("tc")).exists(),
        "empty alias dir removed by rmdir"
    );
    let again = index.release("r2", &RunState::Failed, Some("tc"), None).unwrap();
    assert!(!again.marker_removed, "idempotent");
}

/// I4: the second release of a run (the host's, after the shim's) finds the terminal entry
/// and writes nothing; a damaged (empty) entry is written again.
#[test]
fn i4_a_second_release_keeps_the_terminal_entry_it_finds() {
    let fs = ScriptedFs::new();
    let tmp = tempfile::tempdir().unwrap();
    let runs =
        Dir::create_private_with(&tmp.path().join("runs"), Os::system().with_files(fs.clone()).shared()).unwrap();
    let index = ActiveRunIndex::new(&runs, DurabilityPolicy::standard()).unwrap();
    let run = runs.ensure_child("r1").unwrap();
    run.write_doc(
        "status.json",
        &json!({"runId": "r1", "state": "complete", "sessionId": "s", "endedAt": 7u64}),
        Durability::Atomic,
    )
    .unwrap();
    let entry = runs.join(".terminal-runs/s/0000000000000007-r1.json");
    assert!(
        index
            .release("r1", &RunState::Complete, None, Some(&run))
            .unwrap()
            .terminal_entry_written
    );
    let (renames, fsyncs) = (fs.calls(Op::Rename), fs.calls(Op::Fsync));
    assert!(
        index
            .release("r1", &RunState::Complete, None, Some(&run))
            .unwrap()
            .terminal_entry_written
    );
    assert_eq!(
        (fs.calls(Op::Rename), fs.calls(Op::Fsync)),
        (renames, fsyncs),
        "nothing rewritten"
    );
    std::fs::write(&entry, b"").unwrap();
    index.release("r1", &RunState::Complete, None, Some(&run)).unwrap();
    assert_eq!(fs.calls(Op::Rename), renames + 1, "an empty entry is replaced");
    assert!(std::fs::metadata(&entry).unwrap().len() > 0);
}

#[test]
fn i4_no_terminal_entry_when_the_status_has_another_state_or_no_session() {
    let (_tmp, runs, index) = setup();
    let run = runs.ensure_child("r1").unwrap();
    run.write_doc(
        "status.json",
        &json!({"state": "running", "sessionId": "s"}),
        Durability::Atomic,
    )
    .unwrap();
    index.mark("r1", None).unwrap();
    assert!(
        !index
            .release("r1", &RunState::Failed, None, Some(&run))
            .unwrap()
            .terminal_entry_written
    );
    run.write_doc("status.json", &json!({"state": "failed"}), Durability::Atomic)
        .unwrap();
    assert!(
        !index
            .release("r1", &RunState::Failed, None, Some(&run))
            .unwrap()
            .terminal_entry_written
    );
    assert!(!runs.join(".terminal-runs").exists());
}

#[test]
fn i4_alias_removal_falls_back_to_a_scan() {
    let (_tmp, runs, index) = setup();
    index.mark("r1", Some("a")).unwrap();
    index.mark("r1", Some("b")).unwrap();
    let outcome = index.release("r1", &RunState::Failed, None, None).unwrap();
    assert_eq!(outcome.aliases_removed, 2);
    assert_eq!(
        std::fs::read_dir(runs.join(".active-runs/tool-calls")).unwrap().count(),
        0
    );
}

#[test]
fn i7_a_mark_after_the_terminal_status_is_withdrawn() {
    let (_tmp, runs, index) = setup();
    let run = runs.ensure_child("r1").unwrap();
    run.write_doc("status.json", &json!({"state": "running"}), Durability::Atomic)
        .unwrap();
    assert!(!index.mark_checked("r1", Some("tc"), &run).unwrap().withdrawn);
    assert!(runs.join(".active-runs/r1").exists());
    run.write_doc("status.json", &json!({"state": "complete"}), Durability::Atomic)
        .unwrap();
    index.release("r1", &RunState::Complete, None, Some(&run)).unwrap();
    // A deferred (capacity) retry of the running mark arrives late:
    let outcome = index.mark_checked("r1", Some("tc"), &run).unwrap();
    assert!(outcome.withdrawn);
    assert!(!runs.join(".active-runs/r1").exists(), "no resurrection");
    assert!(!alias_path(runs.path(), "tc", "r1").exists());
}

#[test]
fn i8_listing_reads_regular_files_only_and_tolerates_missing_dirs() {
    let (_tmp, runs, index) = setup();
    assert_eq!(index.list().unwrap(), None);
    assert_eq!(index.list_tool_call("tc").unwrap(), Vec::<String>::new());
    index.mark("b", Some("tc")).unwrap();
    index.mark("a", Some("tc")).unwrap();
    std::os::unix::fs::symlink("/etc/passwd", runs.join(".active-runs/link")).unwrap();
    std::fs::create_dir(runs.join(".active-runs/dir")).unwrap();
    let ids: Vec<String> = index.list().unwrap().unwrap().into_iter().map(|m| m.run_id).collect();
    assert_eq!(ids, vec!["a", "b"]);
    assert_eq!(index.list_tool_call("tc").unwrap(), vec!["a", "b"]);
    std::fs::write(runs.join(".active-runs/tool-calls").join(enc("file")), b"").unwrap();
    assert_eq!(
        index.list_tool_call("file").unwrap(),
        Vec::<String>::new(),
        "ENOTDIR → []"
    );
}

#[test]
fn f47_i5_lister_verdicts() {
    let age = Duration::from_secs(60);
    assert_eq!(judge_marker(false, None, age), MarkerVerdict::Phantom);
    assert_eq!(judge_marker(true, None, age), MarkerVerdict::Active);
    let running: Status = serde_json::from_value(json!({"state": "running"})).unwrap();
    assert_eq!(judge_marker(true, Some(&running), age), MarkerVerdict::Active);
    let pending: Status =
        serde_json::from_value(json!({"state": "complete", "processTerminal": {"state": "pending"}})).unwrap();
    assert_eq!(judge_marker(true, Some(&pending), age), MarkerVerdict::TerminalPending);
    assert_eq!(
        judge_marker(true, Some(&pending), STALE_TERMINAL_MARKER + age),
        MarkerVerdict::ReleaseTerminal(RunState::Complete)
    );
    let observed: Status =
        serde_json::from_value(json!({"state": "stopped", "processTerminal": {"state": "observed"}})).unwrap();
    assert_eq!(
        judge_marker(true, Some(&observed), age),
        MarkerVerdict::ReleaseTerminal(RunState::Stopped)
    );
    // An unknown proof is final too: the runner died after its terminal status, and nothing
    // will ever observe more.
    let unknown: Status =
        serde_json::from_value(json!({"state": "complete", "processTerminal": {"state": "unknown"}})).unwrap();
    assert_eq!(
        judge_marker(true, Some(&unknown), age),
        MarkerVerdict::ReleaseTerminal(RunState::Complete)
    );
}

#[test]
fn f47_phantom_marker_is_removed_by_unmark() {
    let (_tmp, runs, index) = setup();
    std::fs::create_dir(runs.join(".active-runs")).unwrap();
    std::fs::write(runs.join(".active-runs/ghost"), b"").unwrap();
    let marker = &index.list().unwrap().unwrap()[0];
    assert_eq!(
        judge_marker(runs.join(&marker.run_id).exists(), None, Duration::ZERO),
        MarkerVerdict::Phantom
    );
    index.release("ghost", &RunState::Failed, None, None).unwrap();
    assert_eq!(index.list().unwrap().unwrap(), vec![]);
}

#[test]
fn f11_marker_creation_failure_propagates() {
    use std::os::unix::fs::PermissionsExt;
    let (tmp, runs, index) = setup();
    std::fs::create_dir(runs.join(".active-runs")).unwrap();
    // Permission bits bind an ordinary user only; as root (CI) the test drops to one.
    let error = crate::testing::as_unprivileged(tmp.path(), || {
        std::fs::set_permissions(runs.join(".active-runs"), std::fs::Permissions::from_mode(0o500)).unwrap();
        index.mark("r1", None).unwrap_err()
    });
    assert!(error.to_string().contains("EACCES"), "{error}");
}

#[test]
fn i6_create_is_retried_on_enoent() {
    let (tmp, _runs, _) = setup();
    let fs = ScriptedFs::new();
    let runs = Dir::open_with(&tmp.path().join("runs"), Os::system().with_files(fs.clone()).shared()).unwrap();
    let index = ActiveRunIndex::new(&runs, DurabilityPolicy::standard()).unwrap();
    // Marker open fails ENOENT three times, then succeeds on the fourth attempt.
    fs.set_hook({
        let fs = Arc::downgrade(&fs);
        let armed = Arc::new(AtomicBool::new(true));
        move |op, name| {
            if op == Op::Open
                && name == Path::new("r1")
                && armed.swap(false, Ordering::SeqCst)
                && let Some(fs) = fs.upgrade()
            {
                fs.fail_next(Op::Open, [Errno::NOENT]);
            }
        }
    });
    index.mark("r1", None).unwrap();
    assert!(tmp.path().join("runs/.active-runs/r1").exists());

    let fs = ScriptedFs::new();
    let runs = Dir::open_with(&tmp.path().join("runs"), Os::system().with_files(fs.clone()).shared()).unwrap();
    let index = ActiveRunIndex::new(&runs, DurabilityPolicy::standard()).unwrap();
    fs.set_hook({
        let fs = Arc::downgrade(&fs);
        move |op, name| {
            if op == Op::Open
                && name == Path::new("r2")
                && let Some(fs) = fs.upgrade()
            {
                fs.fail_next(Op::Open, [Errno::NOENT]);
            }
        }
    });
    assert!(index.mark("r2", None).is_err(), "gives up after the retries");
    assert_eq!(
        fs.names(Op::Open).iter().filter(|n| *n == Path::new("r2")).count(),
        1 + CREATE_RETRIES
    );
}

/// F45: an alias create racing the release of the last alias in the same tool-call directory.
/// The seam pauses the creator after its mkdir (before opening the directory, or before
/// creating the file in it) while another thread removes the last alias and rmdirs the
/// directory. After every iteration the created alias must exist.
#[test]
fn f45_alias_create_racing_release_never_loses_the_alias() {
    let (tmp, plain_runs, _) = setup();
    let releaser = ActiveRunIndex::new(&plain_runs, DurabilityPolicy::standard()).unwrap();
    let tc = "tool/call";
    let tc_dir = enc(tc);
    for iteration in 0..40 {
        let new_id = format!("new-{iteration}");
        let old_id = format!("old-{iteration}");
        releaser.mark(&old_id, Some(tc)).unwrap();

        let fs = ScriptedFs::new();
        let runs = Dir::open_with(&tmp.path().join("runs"), Os::system().with_files(fs.clone()).shared()).unwrap();
        let creator = ActiveRunIndex::new(&runs, DurabilityPolicy::standard()).unwrap();
        let (go_tx, go_rx) = mpsc::channel::<()>();
        let (done_tx, done_rx) = mpsc::channel::<()>();
        let done_rx = Arc::new(std::sync::Mutex::new(done_rx));
        let armed = Arc::new(AtomicBool::new(true));
        let pause_on_dir_open = iteration % 2 == 0;
        let (pause_name, skip) = if pause_on_dir_open {
            (PathBuf::from(&tc_dir), 0)
        } else {
            (PathBuf::from(&new_id), 1)
        };
        let seen = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        fs.set_hook({
            let armed = armed.clone();
            let done_rx = done_rx.clone();
            let seen = seen.clone();
            move |op, name| {
                // Skip the main marker's create (same file name) when pausing on the alias create.
                if op == Op::Open
                    && name == pause_name
                    && seen.fetch_add(1, Ordering::SeqCst) >= skip
                    && armed.swap(false, Ordering::SeqCst)
                {
                    go_tx.send(()).unwrap();
                    done_rx.lock().unwrap().recv().unwrap();
                }
            }
        });
        let (releaser_ref, plain_ref, tc_dir_ref, old_ref) = (&releaser, &plain_runs, &tc_dir, &old_id);
        let releasing = std::thread::scope(|scope| {
            let handle = scope.spawn(move || {
                go_rx.recv().unwrap();
                let outcome = releaser_ref
                    .release(old_ref, &RunState::Complete, Some(tc), None)
                    .unwrap();
                let dir_gone = !plain_ref
                    .join(".active-runs/tool-calls")
                    .join(tc_dir_ref.as_str())
                    .exists();
                done_tx.send(()).unwrap();
                (outcome.aliases_removed, dir_gone)
            });
            creator.mark(&new_id, Some(tc)).unwrap();
            handle.join().unwrap()
        });
        assert_eq!(
            releasing,
            (1, true),
            "iteration {iteration}: the release removed the last alias and the directory"
        );
        assert!(
            alias_path(plain_runs.path(), tc, &new_id).is_file(),
            "iteration {iteration}: alias lost"
        );
        let alias_creates = fs.names(Op::Open).iter().filter(|n| *n == Path::new(&new_id)).count();
        assert!(
            alias_creates >= 2,
            "iteration {iteration}: the race forced a retry ({alias_creates} creates)"
        );
        releaser.release(&new_id, &RunState::Complete, Some(tc), None).unwrap();
    }
}

#[test]
fn f44_concurrent_marks_and_releases_share_one_alias_dir() {
    let (_tmp, runs, _) = setup();
    let threads = 8;
    let barrier = Arc::new(Barrier::new(threads));
    std::thread::scope(|scope| {
        for t in 0..threads {
            let barrier = barrier.clone();
            let runs = runs.try_clone().unwrap();
            scope.spawn(move || {
                let index = ActiveRunIndex::new(&runs, DurabilityPolicy::standard()).unwrap();
                for round in 0..30 {
                    let id = format!("run-{t}-{round}");
                    index.mark(&id, Some("shared")).unwrap();
                    barrier.wait();
                    assert!(index.list_tool_call("shared").unwrap().contains(&id));
                    barrier.wait();
                    index.release(&id, &RunState::Complete, Some("shared"), None).unwrap();
                }
            });
        }
    });
    let index = ActiveRunIndex::new(&runs, DurabilityPolicy::standard()).unwrap();
    assert_eq!(index.list().unwrap().unwrap(), vec![]);
    assert_eq!(index.list_tool_call("shared").unwrap(), Vec::<String>::new());
}
