use super::*;
use crate::files::atomic::Durability;
use crate::records::proof::UnknownReason;
use serde_json::json;

fn setup() -> (tempfile::TempDir, Dir) {
    let tmp = tempfile::tempdir().unwrap();
    let runs = Dir::create_private(&tmp.path().join("runs")).unwrap();
    (tmp, runs)
}

/// A run directory with a status in `state` and the given proof.
fn run(runs: &Dir, run_id: &str, state: &str, proof: &ProcessTerminal) -> Dir {
    let run = runs.ensure_child(run_id).unwrap();
    let status = json!({"runId": run_id, "state": state, "startedAt": 1, "lastUpdate": 1});
    run.write_doc(names::STATUS, &status, Durability::Atomic).unwrap();
    run.write_doc(names::PROCESS_TERMINAL, proof, Durability::Atomic)
        .unwrap();
    // D6: the end is in the stream, as every recorder of an end leaves it.
    crate::records::stream::record_end_if_ended(runs.path().parent().unwrap(), &run).unwrap();
    run
}

#[test]
fn i9_an_index_never_built_lists_nothing_even_with_entries() {
    let (_tmp, runs) = setup();
    let index = UnfinalizedRuns::new(&runs);
    assert_eq!(index.list().unwrap(), None, "no directory");
    index.record("shell-b", false).unwrap();
    assert_eq!(
        index.list().unwrap(),
        None,
        "entries, but nobody walked the older runs yet"
    );
    index.mark_built().unwrap();
    index.record("shell-a", true).unwrap();
    assert_eq!(
        index.list().unwrap(),
        Some(vec!["shell-a".to_owned(), "shell-b".to_owned()])
    );
}

#[test]
fn i9_readers_list_regular_files_named_like_runs_only() {
    let (_tmp, runs) = setup();
    let index = UnfinalizedRuns::new(&runs);
    index.mark_built().unwrap();
    index.record("shell-1", false).unwrap();
    let dir = runs.join(names::UNFINALIZED_DIR);
    std::fs::create_dir(dir.join("shell-dir")).unwrap();
    std::os::unix::fs::symlink("/etc/passwd", dir.join("shell-link")).unwrap();
    assert_eq!(index.list().unwrap(), Some(vec!["shell-1".to_owned()]));
}

#[test]
fn i9_an_index_that_is_not_a_directory_is_not_built() {
    let (_tmp, runs) = setup();
    std::fs::write(runs.join(names::UNFINALIZED_DIR), b"").unwrap();
    let index = UnfinalizedRuns::new(&runs);
    assert_eq!(index.list().unwrap(), None);
    assert!(
        index
            .settle_if_final("shell-1", None, DurabilityPolicy::standard())
            .unwrap()
    );
}

#[test]
fn i9_an_entry_stays_until_the_status_is_terminal_and_the_proof_final() {
    let (_tmp, runs) = setup();
    let index = UnfinalizedRuns::new(&runs);
    index.mark_built().unwrap();
    let pending = ProcessTerminal::pending("shell-1", "uuid-1");
    let dir = run(&runs, "shell-1", "running", &pending);
    index.record("shell-1", false).unwrap();
    assert!(!settled(&dir));
    assert!(
        !index
            .settle_if_final("shell-1", Some(&dir), DurabilityPolicy::standard())
            .unwrap()
    );

    // Ended, but the proof still waits for its observer (a detached run, S13).
    let dir = run(&runs, "shell-1", "complete", &pending);
    assert!(
        !index
            .settle_if_final("shell-1", Some(&dir), DurabilityPolicy::standard())
            .unwrap()
    );
    assert_eq!(index.list().unwrap(), Some(vec!["shell-1".to_owned()]));

    let unknown = ProcessTerminal::unknown("shell-1", "uuid-1", UnknownReason::ObserverUnavailable, None);
    let dir = run(&runs, "shell-1", "complete", &unknown);
    assert!(settled(&dir));
    assert!(
        index
            .settle_if_final("shell-1", Some(&dir), DurabilityPolicy::standard())
            .unwrap()
    );
    assert_eq!(index.list().unwrap(), Some(vec![]));
    // Idempotent (I6): a second settler finds nothing to do.
    assert!(
        index
            .settle_if_final("shell-1", Some(&dir), DurabilityPolicy::standard())
            .unwrap()
    );
}

#[test]
fn i9_an_unreadable_status_or_proof_keeps_the_entry() {
    let (_tmp, runs) = setup();
    let final_proof = ProcessTerminal::not_started("shell-1", "uuid-1");
    let dir = run(&runs, "shell-1", "failed", &final_proof);
    assert!(settled(&dir));
    std::fs::write(dir.join(names::PROCESS_TERMINAL), b"\0\0").unwrap();
    assert!(!settled(&dir), "a corrupt proof is not final");
    let dir = run(&runs, "shell-1", "failed", &final_proof);
    std::fs::write(dir.join(names::STATUS), b"garbage").unwrap();
    assert!(!settled(&dir), "a corrupt status is not terminal");
}

#[test]
fn d6_an_end_not_in_the_stream_keeps_the_entry_until_a_settler_records_it() {
    let (tmp, runs) = setup();
    let final_proof = ProcessTerminal::not_started("shell-1", "uuid-1");
    let dir = run(&runs, "shell-1", "complete", &final_proof);
    std::fs::remove_file(dir.join(crate::records::stream::END_MARKER)).unwrap();
    assert!(!settled(&dir), "its end is not recorded");
    let spec = json!({"version": 1, "runId": "shell-1", "command": "true", "timeoutMs": 1000, "cwd": "/"});
    dir.write_doc(crate::records::hook::SPEC_FILE, &spec, Durability::Atomic)
        .unwrap();
    let started = crate::records::events::run_started(1, "shell-1", "single", "/", 1);
    crate::records::events::append_once(&dir, &started).unwrap();
    let index = UnfinalizedRuns::new(&runs);
    index.mark_built().unwrap();
    index.record("shell-1", false).unwrap();
    assert!(
        index
            .settle_if_final("shell-1", Some(&dir), DurabilityPolicy::standard())
            .unwrap()
    );
    assert!(settled(&dir));
    let (pending, _) = crate::records::outbox::Outbox::under(tmp.path()).list().unwrap();
    assert_eq!(
        pending.iter().map(|d| d.delivery_id.as_str()).collect::<Vec<_>>(),
        // The marker went: the end is recorded again, under the same key.
        vec!["shell-1.1"],
        "the started run's hook waits in the outbox"
    );
}

/// I13 with I9: a run that leaves this index is in the history, even one that never had an
/// active marker whose release would have written its entry (a launch whose host died before
/// the commit, failed by a lister). Found by the chaos run.
#[test]
fn i13_a_settled_run_is_recorded_in_the_history_before_its_entry_goes() {
    let (_tmp, runs) = setup();
    crate::records::history::History::rebuild(&runs, Vec::new(), DurabilityPolicy::standard()).unwrap();
    let index = UnfinalizedRuns::new(&runs);
    index.mark_built().unwrap();
    index.record("shell-1", false).unwrap();
    let dir = run(
        &runs,
        "shell-1",
        "failed",
        &ProcessTerminal::not_started("shell-1", "uuid-1"),
    );
    assert!(
        index
            .settle_if_final("shell-1", Some(&dir), DurabilityPolicy::standard())
            .unwrap()
    );
    let history = crate::records::history::History::open(&runs).unwrap();
    let listed: Vec<String> = history
        .newest_first(None)
        .unwrap()
        .map(|(entry, _)| entry.run_id)
        .collect();
    assert_eq!(listed, vec!["shell-1".to_owned()]);
}
