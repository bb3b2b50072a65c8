//! `list` as a person reads it: a STEPS column, queued runs after the running ones with no
//! start time (they have not started), and an empty listing that says how many runs ended.

use std::path::Path;
use sublaunch_tests::cli::ok;
use sublaunch_tests::launch_harness::Scratch;

fn list(scratch: &Scratch, cap: &str) -> String {
    ok(&scratch
        .cli(&["list"])
        .env("SUBLAUNCH_MAX_ACTIVE", cap)
        .output()
        .unwrap())
}

fn launch(scratch: &Scratch, task: &str) -> String {
    let output = scratch
        .cli(&["run", "--agent", "shell", "--task", task])
        .env("SUBLAUNCH_MAX_ACTIVE", "1")
        .output()
        .unwrap();
    ok(&output).trim().to_owned()
}

fn mkfifo(path: &Path) {
    assert!(
        std::process::Command::new("mkfifo")
            .arg(path)
            .status()
            .unwrap()
            .success()
    );
}

#[test]
fn queued_runs_come_after_running_ones_without_a_start_and_an_empty_list_counts_the_ended() {
    let scratch = Scratch::new("list-display");
    let gate = scratch.work().join("gate");
    mkfifo(&gate);
    // The first run holds the only slot until the test writes to the FIFO.
    let first = launch(&scratch, &format!("read line < '{}'; echo first", gate.display()));
    let second = launch(&scratch, "echo second");
    let shown = list(&scratch, "1");
    let rows: Vec<&str> = shown.lines().collect();
    assert_eq!(rows.len(), 3, "{shown}");
    let header: Vec<&str> = rows[0].split_whitespace().collect();
    assert_eq!(
        header,
        ["RUN", "ID", "STATE", "AGENTS", "STEPS", "STARTED", "DURATION"],
        "{shown}"
    );
    // The first row may show the run as it starts (`pending` steps) or runs: its state is
    // the run's, and its step has not ended.
    let running: Vec<&str> = rows[1].split_whitespace().collect();
    assert_eq!(running[0], first, "{shown}");
    assert_eq!(running[3], "0/1", "{shown}");
    let queued: Vec<&str> = rows[2].split_whitespace().collect();
    assert_eq!(
        queued,
        [second.as_str(), "queued", "(1st)", "shell", "0/1", "-", "-"],
        "the queued run last, not started: {shown}"
    );

    std::fs::write(&gate, "go\n").unwrap();
    let waited = scratch
        .cli(&["wait", &first, &second])
        .env("SUBLAUNCH_MAX_ACTIVE", "1")
        .output()
        .unwrap();
    ok(&waited);
    assert_eq!(list(&scratch, "1"), "No active runs (2 ended: sublaunch list --all).\n");
}

#[test]
fn a_store_without_runs_says_no_active_runs() {
    let scratch = Scratch::new("list-empty");
    assert_eq!(list(&scratch, "4"), "No active runs.\n");
}

/// The hint counts the newest 1000 ended runs of the history and no more, so that `list` with
/// no active run costs the same with 100 000 ended runs as with one (issue 34).
#[test]
fn the_empty_lists_hint_counts_at_most_a_thousand_ended_runs() {
    let scratch = Scratch::new("list-many-ended");
    scratch.finished_shell_run("echo one");
    // The first listing builds the history of this new root.
    assert_eq!(list(&scratch, "4"), "No active runs (1 ended: sublaunch list --all).\n");
    let newest = std::fs::read_dir(scratch.runs().join(".history"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .max()
        .unwrap();
    let lines: String = (0..1000)
        .map(|i| format!("{{\"runId\":\"gone-{i:04}\",\"state\":\"complete\",\"endedAt\":1}}\n"))
        .collect();
    let mut segment = std::fs::OpenOptions::new().append(true).open(&newest).unwrap();
    std::io::Write::write_all(&mut segment, lines.as_bytes()).unwrap();
    assert_eq!(
        list(&scratch, "4"),
        "No active runs (more than 1000 ended: sublaunch list --all).\n"
    );
}
