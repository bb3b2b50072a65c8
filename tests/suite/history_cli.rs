//! `sublaunch list --all` from the history index (I10–I13): newest first, filters, pages by
//! cursor, the index rebuilt from the run directories when it is missing, damaged or torn,
//! pruned runs gone, and a run whose entry a crash lost still listed (its marker stays until
//! the release that writes the entry).

use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use sublaunch_tests::cli::{ok, text};
use sublaunch_tests::launch_harness::Scratch;

/// Ended runs planted in their final form: `hist-0000` … (`failed` every third, agent `scout`
/// every second, else `shell`), run `i` started at `BASE + i s` and ended half a second later.
const RUNS: usize = 120;
const BASE: u64 = 1_780_000_000_000;

fn id(i: usize) -> String {
    format!("hist-{i:04}")
}

fn plant(scratch: &Scratch) {
    scratch.create_root();
    std::fs::create_dir_all(scratch.work()).unwrap();
    for i in 0..RUNS {
        let dir = scratch.run_dir(&id(i));
        std::fs::create_dir_all(&dir).unwrap();
        let started = BASE + i as u64 * 1000;
        let status = json!({
            "runId": id(i),
            "sessionId": "s",
            "state": if i % 3 == 0 { "failed" } else { "complete" },
            "startedAt": started,
            "endedAt": started + 500,
            "cwd": "/work",
            "error": if i == 42 { Value::from("The Needle broke") } else { Value::Null },
            "steps": [{"agent": if i % 2 == 0 { "scout" } else { "shell" }}],
            "processTerminal": {"state": "observed"},
        });
        std::fs::write(dir.join("status.json"), serde_json::to_vec(&status).unwrap()).unwrap();
    }
}

/// `list --all --json ARGS`: the run ids printed and the next page's cursor, if any.
fn list(scratch: &Scratch, args: &[&str]) -> (Vec<String>, Option<String>) {
    let mut all = vec!["list", "--all", "--json"];
    all.extend_from_slice(args);
    let output = scratch.cli(&all).output().unwrap();
    let listed: Value = serde_json::from_str(&ok(&output)).unwrap();
    let ids = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["runId"].as_str().unwrap().to_owned())
        .collect();
    let cursor = text(&output.stderr)
        .lines()
        .find_map(|l| l.strip_prefix("sublaunch list: more runs: --cursor "))
        .map(str::to_owned);
    (ids, cursor)
}

/// Every page of `limit` runs, followed by cursor.
fn pages(scratch: &Scratch, limit: usize) -> Vec<String> {
    let limit = limit.to_string();
    let (mut ids, mut cursor) = list(scratch, &["--limit", &limit]);
    while let Some(c) = cursor {
        let (more, next) = list(scratch, &["--limit", &limit, "--cursor", &c]);
        assert!(!more.is_empty(), "a cursor is printed only when more runs may follow");
        ids.extend(more);
        cursor = next;
    }
    ids
}

fn history(scratch: &Scratch) -> PathBuf {
    scratch.runs().join(".history")
}

/// The segment files of the index, oldest first.
fn segments(scratch: &Scratch) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(history(scratch))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    out.sort();
    out
}

fn newest_first() -> Vec<String> {
    (0..RUNS).rev().map(id).collect()
}

#[test]
fn i10_the_history_pages_newest_first_and_filters_hold() {
    let scratch = Scratch::new("history-pages");
    plant(&scratch);
    let (first, cursor) = list(&scratch, &["--limit", "10"]);
    assert_eq!(first, newest_first()[..10], "the newest ten");
    assert!(cursor.is_some(), "more runs follow");
    assert_eq!(
        pages(&scratch, 25),
        newest_first(),
        "every run once, in order, across pages"
    );
    let (all, cursor) = list(&scratch, &[]);
    assert_eq!(all, newest_first());
    assert_eq!(cursor, None);

    let (failed, _) = list(&scratch, &["--state", "failed"]);
    let expected: Vec<String> = (0..RUNS).rev().filter(|i| i % 3 == 0).map(id).collect();
    assert_eq!(failed, expected);
    let (scouts, _) = list(&scratch, &["--agent", "scout", "--state", "complete", "--limit", "3"]);
    assert_eq!(scouts, [id(118), id(116), id(112)]);
    let (needle, _) = list(&scratch, &["--text", "needle"]);
    assert_eq!(needle, [id(42)]);
    let since = sublaunch_protocol::os::clock::iso8601_utc(BASE + 115_000);
    let (recent, _) = list(&scratch, &["--since", &since]);
    assert_eq!(recent, newest_first()[..5]);
    let (none, _) = list(&scratch, &["--since", "1h"]);
    assert!(
        none.is_empty(),
        "the planted runs started long before the last hour: {none:?}"
    );

    let table = ok(&scratch.cli(&["list", "--all", "--limit", "2"]).output().unwrap());
    let rows: Vec<&str> = table.lines().collect();
    assert_eq!(rows.len(), 3, "{table}");
    assert!(
        rows[0].starts_with("RUN ID") && rows[1].starts_with(&id(119)),
        "{table}"
    );

    let bad = scratch
        .cli(&["list", "--all", "--cursor", "nonsense"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2), "{}", text(&bad.stderr));
    let without_all = scratch.cli(&["list", "--limit", "3"]).output().unwrap();
    assert_eq!(without_all.status.code(), Some(2), "the filters are for --all");
}

#[test]
fn i12_a_deleted_damaged_or_torn_index_gives_the_same_answer_and_pruned_runs_are_gone() {
    let scratch = Scratch::new("history-rebuild");
    plant(&scratch);
    let (before, _) = list(&scratch, &[]);
    assert_eq!(before, newest_first());
    assert!(
        history(&scratch).join("manifest.json").is_file(),
        "the first listing built the index"
    );

    std::fs::remove_dir_all(history(&scratch)).unwrap();
    assert_eq!(list(&scratch, &[]).0, before, "rebuilt from the run directories");

    let (_, stale) = list(&scratch, &["--limit", "5"]);
    std::fs::write(history(&scratch).join("manifest.json"), b"{").unwrap();
    assert_eq!(list(&scratch, &[]).0, before, "a damaged manifest is rebuilt");
    let refused = scratch
        .cli(&["list", "--all", "--cursor", &stale.unwrap()])
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(2), "a cursor of the old index is refused");
    assert!(text(&refused.stderr).contains("rebuilt"), "{}", text(&refused.stderr));

    let newest = segments(&scratch).pop().unwrap();
    let mut torn = std::fs::OpenOptions::new().append(true).open(&newest).unwrap();
    std::io::Write::write_all(&mut torn, b"{\"runId\":\"hist-9999\",\"sta").unwrap();
    assert_eq!(list(&scratch, &[]).0, before, "a torn last line is ignored");

    std::fs::remove_dir_all(scratch.run_dir(&id(119))).unwrap();
    std::fs::remove_dir_all(scratch.run_dir(&id(50))).unwrap();
    let (after, _) = list(&scratch, &[]);
    let expected: Vec<String> = before.into_iter().filter(|r| *r != id(119) && *r != id(50)).collect();
    assert_eq!(after, expected, "runs whose directory is gone are not listed");
}

/// `run --agent shell --task TASK --wait`: the run id.
fn run(scratch: &Scratch, task: &str) -> String {
    let output = scratch
        .cli(&["run", "--agent", "shell", "--task", task, "--wait"])
        .output()
        .unwrap();
    text(&output.stderr).lines().next().unwrap().to_owned()
}

fn lines_naming(segment: &Path, run_id: &str) -> usize {
    let needle = format!("\"runId\":\"{run_id}\"");
    std::fs::read_to_string(segment)
        .unwrap()
        .lines()
        .filter(|l| l.contains(&needle))
        .count()
}

#[test]
fn i13_runs_enter_the_history_as_they_end_and_a_lost_entry_is_listed_from_the_marker() {
    let scratch = Scratch::new("history-ends");
    let first = run(&scratch, "echo one");
    assert_eq!(
        list(&scratch, &[]).0,
        [first.as_str()],
        "built from the run directories"
    );
    let second = run(&scratch, "exit 3");
    let segment = segments(&scratch).pop().unwrap();
    assert_eq!(lines_naming(&segment, &second), 1, "the run's end appended its entry");
    let (listed, _) = list(&scratch, &["--state", "failed"]);
    assert_eq!(listed, [second.as_str()]);

    // A crash between the terminal status and the entry: the entry is missing, the marker
    // stays (the entry is written before the marker goes).
    let kept: String = std::fs::read_to_string(&segment)
        .unwrap()
        .lines()
        .filter(|l| !l.contains(&second))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(&segment, kept).unwrap();
    std::fs::write(scratch.runs().join(".active-runs").join(&second), b"").unwrap();
    assert_eq!(list(&scratch, &[]).0, [second.clone(), first.clone()], "found again");
    assert_eq!(
        lines_naming(&segment, &second),
        1,
        "the listing's release wrote the entry"
    );
    assert!(!scratch.runs().join(".active-runs").join(&second).exists());
    assert_eq!(list(&scratch, &[]).0, [second.clone(), first.clone()]);

    let pruned = ok(&scratch.cli(&["prune", "--state", "failed"]).output().unwrap());
    assert!(pruned.contains(&second), "{pruned}");
    let tombstone = std::fs::read_to_string(segments(&scratch).pop().unwrap()).unwrap();
    let last = tombstone.lines().last().unwrap();
    assert!(last.contains(&second) && last.contains("\"pruned\":true"), "{last}");
    assert_eq!(list(&scratch, &[]).0, [first], "a pruned run is gone from the history");
}
