use super::*;
use crate::records::index::ActiveRunIndex;

fn setup() -> (tempfile::TempDir, Dir) {
    let tmp = tempfile::tempdir().unwrap();
    let runs = Dir::create_private(&tmp.path().join("runs")).unwrap();
    (tmp, runs)
}

fn entry(id: &str, ended_at: u64) -> HistoryEntry {
    HistoryEntry {
        run_id: id.into(),
        state: Some("complete".into()),
        agents: vec!["shell".into()],
        started_at: Some(ended_at.saturating_sub(10)),
        ended_at: Some(ended_at),
        duration_ms: Some(10),
        ..HistoryEntry::default()
    }
}

fn ids(history: &History, cursor: Option<&Cursor>) -> Vec<String> {
    history.newest_first(cursor).unwrap().map(|(e, _)| e.run_id).collect()
}

fn policy() -> DurabilityPolicy {
    DurabilityPolicy::standard()
}

#[test]
fn i12_a_missing_index_is_reported_and_appends_wait_for_its_rebuild() {
    let (_tmp, runs) = setup();
    assert!(matches!(History::open(&runs), Err(OpenError::Missing)));
    History::append(&runs, &entry("r1", 1), policy()).unwrap();
    assert!(!runs.join(names::HISTORY_DIR).exists(), "no index, no half index");
}

#[test]
fn i10_a_rebuilt_index_lists_newest_first_and_appends_come_first() {
    let (_tmp, runs) = setup();
    let history = History::rebuild(&runs, vec![entry("b", 20), entry("a", 10), entry("c", 30)], policy()).unwrap();
    assert_eq!(ids(&history, None), ["c", "b", "a"]);
    History::append(&runs, &entry("d", 5), policy()).unwrap();
    assert_eq!(
        ids(&History::open(&runs).unwrap(), None),
        ["d", "c", "b", "a"],
        "append order wins"
    );
}

#[test]
fn i11_a_torn_last_line_and_a_garbage_line_are_ignored() {
    let (_tmp, runs) = setup();
    let history = History::rebuild(&runs, vec![entry("a", 1)], policy()).unwrap();
    History::append(&runs, &entry("b", 2), policy()).unwrap();
    let segment = runs
        .join(names::HISTORY_DIR)
        .join(segment_name(history.generation(), 0));
    let mut file = std::fs::OpenOptions::new().append(true).open(&segment).unwrap();
    file.write_all(b"not json\n{\"runId\":\"torn\",\"sta").unwrap();
    assert_eq!(ids(&history, None), ["b", "a"]);
    // The next append after a torn line starts a line of its own: only the torn one is lost.
    History::append(&runs, &entry("c", 3), policy()).unwrap();
    assert_eq!(ids(&history, None), ["c", "b", "a"]);
}

#[test]
fn i11_segments_roll_over_and_cursors_page_through_all_of_them() {
    let (_tmp, runs) = setup();
    History::rebuild(&runs, Vec::new(), policy()).unwrap();
    let padding = "x".repeat(TEXT_CHARS);
    let total = 2 * SEGMENT_BYTES as usize / 250 + 10;
    for i in 0..total {
        let mut e = entry(&format!("r{i:05}"), i as u64);
        e.error = Some(padding.clone());
        History::append(&runs, &e, policy()).unwrap();
    }
    let history = History::open(&runs).unwrap();
    assert!(history.segments().unwrap().len() >= 2, "{:?}", history.segments());
    let mut seen = Vec::new();
    let mut cursor: Option<Cursor> = None;
    loop {
        let page: Vec<_> = history.newest_first(cursor.as_ref()).unwrap().take(7).collect();
        if page.is_empty() {
            break;
        }
        cursor = Some(page.last().unwrap().1.clone().to_string().parse().unwrap());
        seen.extend(page.into_iter().map(|(e, _)| e.run_id));
    }
    let expected: Vec<String> = (0..total).rev().map(|i| format!("r{i:05}")).collect();
    assert_eq!(seen, expected);
}

#[test]
fn i12_a_large_rebuild_is_split_into_segments_in_order() {
    let (_tmp, runs) = setup();
    let total = 3 * SEGMENT_BYTES as usize / 150;
    let entries: Vec<HistoryEntry> = (0..total).map(|i| entry(&format!("r{i:06}"), i as u64)).collect();
    let history = History::rebuild(&runs, entries, policy()).unwrap();
    assert!(history.segments().unwrap().len() >= 2, "{:?}", history.segments());
    let expected: Vec<String> = (0..total).rev().map(|i| format!("r{i:06}")).collect();
    assert_eq!(ids(&history, None), expected);
}

#[test]
fn i12_a_cursor_of_an_older_generation_is_refused() {
    let (_tmp, runs) = setup();
    let old = History::rebuild(&runs, vec![entry("a", 1), entry("b", 2)], policy()).unwrap();
    let (_, cursor) = old.newest_first(None).unwrap().next().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(2));
    let new = History::rebuild(&runs, vec![entry("a", 1), entry("b", 2)], policy()).unwrap();
    assert_ne!(old.generation(), new.generation());
    assert!(matches!(new.newest_first(Some(&cursor)), Err(CursorError::Stale(_))));
    assert!(matches!("x.1".parse::<Cursor>(), Err(CursorError::Malformed(_))));
    let leftovers: Vec<_> = std::fs::read_dir(runs.join(names::HISTORY_DIR))
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.starts_with(old.generation()))
        .collect();
    assert!(
        leftovers.is_empty(),
        "the replaced generation is removed: {leftovers:?}"
    );
}

#[test]
fn i10_another_version_or_a_damaged_manifest_asks_for_a_rebuild() {
    let (_tmp, runs) = setup();
    History::rebuild(&runs, vec![entry("a", 1)], policy()).unwrap();
    let manifest = runs.join(names::HISTORY_DIR).join(MANIFEST);
    std::fs::write(&manifest, br#"{"version": 99, "generation": "ab"}"#).unwrap();
    assert!(matches!(History::open(&runs), Err(OpenError::OtherVersion(99))));
    std::fs::write(&manifest, b"{").unwrap();
    assert!(matches!(History::open(&runs), Err(OpenError::Damaged(_))));
}

#[test]
fn i13_release_writes_the_entry_of_a_terminal_run_before_the_marker_goes() {
    let (_tmp, runs) = setup();
    History::rebuild(&runs, Vec::new(), policy()).unwrap();
    let index = ActiveRunIndex::new(&runs, policy()).unwrap();
    let run = runs.ensure_child("r1").unwrap();
    index.mark("r1", None).unwrap();
    let status = Status {
        run_id: Some("r1".into()),
        state: Some(RunState::Failed),
        started_at: Some(5),
        ended_at: Some(9),
        error: Some("boom".into()),
        ..Status::default()
    };
    run.write_doc(names::STATUS, &status, Durability::Atomic).unwrap();
    index.release("r1", &RunState::Failed, None, Some(&run)).unwrap();
    let entries: Vec<_> = History::open(&runs)
        .unwrap()
        .newest_first(None)
        .unwrap()
        .map(|(e, _)| e)
        .collect();
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0].state.as_deref(), Some("failed"));
    assert_eq!(entries[0].duration_ms, Some(4));
    assert_eq!(entries[0].error.as_deref(), Some("boom"));
    assert!(entries[0].is_terminal());
}

#[test]
fn i11_the_same_entry_appended_again_is_one_line_and_a_new_state_is_another() {
    let (_tmp, runs) = setup();
    History::rebuild(&runs, Vec::new(), policy()).unwrap();
    History::append(&runs, &entry("a", 1), policy()).unwrap();
    History::append(&runs, &entry("b", 2), policy()).unwrap();
    History::append(&runs, &entry("a", 1), policy()).unwrap();
    let history = History::open(&runs).unwrap();
    assert_eq!(
        ids(&history, None),
        ["b", "a"],
        "the shim's and the host's release: one line"
    );
    let mut again = entry("a", 9);
    again.state = Some("failed".into());
    History::append(&runs, &again, policy()).unwrap();
    let newest = history.newest_first(None).unwrap().next().unwrap().0;
    assert_eq!(newest, again, "a run that ended again: the newest line");
}

#[test]
fn i12_a_pruned_run_gets_a_tombstone_newer_than_its_entry() {
    let (_tmp, runs) = setup();
    History::rebuild(&runs, vec![entry("a", 1)], policy()).unwrap();
    History::record_pruned(&runs, "a", policy()).unwrap();
    let newest = History::open(&runs)
        .unwrap()
        .newest_first(None)
        .unwrap()
        .next()
        .unwrap()
        .0;
    assert!(newest.pruned && newest.run_id == "a", "{newest:?}");
    assert!(!entry("a", 1).pruned, "an entry is no tombstone");
}
