use super::*;
use crate::testing::{Op, ScriptedFs};
use std::sync::Mutex;

const PEER_EVENTS: &str = include_str!("../../../fixtures/peer/events.jsonl");

fn lines(dir: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(dir.join("events.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn s10_builders_match_the_peer_lines() {
    let peer: Vec<Value> = PEER_EVENTS.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let started = run_started(1_795_999_088_542, "bench-normal-00-w9e9jd", "single", "<CWD>", 16932);
    assert_eq!(started.to_value(), peer[0]);
    assert_eq!(
        serde_json::to_string(&started).unwrap(),
        PEER_EVENTS.lines().next().unwrap(),
        "same bytes, type first"
    );
    assert_eq!(
        step_started(1_795_999_088_559, "bench-normal-00-w9e9jd", 0, "noop").to_value(),
        peer[1]
    );
    let mut completed = peer[2].clone();
    completed.as_object_mut().unwrap().remove("tokens");
    assert_eq!(
        step_finished(
            StepOutcome::Completed,
            1_795_999_088_711,
            "bench-normal-00-w9e9jd",
            0,
            "noop",
            Some(0),
            152
        )
        .to_value(),
        completed
    );
    assert_eq!(
        run_completed(1_795_999_088_717, "bench-normal-00-w9e9jd", "complete", 175).to_value(),
        peer[3]
    );
    assert_eq!(
        process_terminal(1_795_999_088_809, "bench-normal-00-w9e9jd", &peer[4]["processTerminal"]).to_value(),
        peer[4]
    );
    let agent_line = Event::from_value(json!({"type": "agent_end", "x": 1}));
    assert_eq!(agent_line.event_type(), Some("agent_end"));
}

#[test]
fn a10_lines_are_appended_whole_with_mode_0600() {
    let tmp = tempfile::tempdir().unwrap();
    let run = Dir::open(tmp.path()).unwrap();
    let mut log = EventLog::new(&run, DEFAULT_EVENTS_MAX_BYTES).unwrap();
    assert_eq!(
        log.append(&run_started(1, "r", "single", "/", 2)),
        AppendOutcome::Written
    );
    append_once(&run, &process_terminal(3, "r", &json!({"state": "observed"}))).unwrap();
    assert_eq!(log.append(&step_started(4, "r", 0, "a")), AppendOutcome::Written);
    let got = lines(tmp.path());
    assert_eq!(got.len(), 3);
    assert_eq!(got[1]["type"], "subagent.run.process_terminal");
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(tmp.path().join("events.jsonl"))
            .unwrap()
            .permissions()
            .mode()
            & 0o777,
        0o600
    );
}

#[test]
fn f39_symlinked_events_file_fails_logged_once_and_target_untouched() {
    let tmp = tempfile::tempdir().unwrap();
    let victim = tmp.path().join("victim");
    std::fs::write(&victim, b"keep").unwrap();
    let run_path = tmp.path().join("run");
    std::fs::create_dir(&run_path).unwrap();
    std::os::unix::fs::symlink(&victim, run_path.join("events.jsonl")).unwrap();
    let run = Dir::open(&run_path).unwrap();
    let logged = Arc::new(Mutex::new(Vec::<String>::new()));
    let sink = logged.clone();
    let mut log = EventLog::new(&run, DEFAULT_EVENTS_MAX_BYTES)
        .unwrap()
        .with_logger(move |l| sink.lock().unwrap().push(l.to_owned()));
    assert_eq!(
        log.append(&run_started(1, "r", "single", "/", 2)),
        AppendOutcome::Failed
    );
    assert_eq!(log.append(&step_started(1, "r", 0, "a")), AppendOutcome::Failed);
    assert_eq!(std::fs::read(&victim).unwrap(), b"keep");
    let logged = logged.lock().unwrap();
    assert_eq!(logged.len(), 1, "{logged:?}");
    assert!(logged[0].contains("ELOOP"), "{}", logged[0]);
    assert!(
        append_once(&run, &Event::new("x", 1))
            .unwrap_err()
            .to_string()
            .contains("ELOOP")
    );
}

#[test]
fn f52_s10_budget_truncates_once_and_never_drops_lifecycle_events() {
    let tmp = tempfile::tempdir().unwrap();
    let run = Dir::open(tmp.path()).unwrap();
    let max = 4096;
    let mut log = EventLog::new(&run, max).unwrap();
    log.append(&run_started(1, "r", "single", "/", 2));
    let mut dropped = 0;
    for i in 0..500 {
        if log.append_diagnostic(&child_line(Stream::Stdout, 5, &format!("line {i}"), "r", 0, "a"))
            == AppendOutcome::Dropped
        {
            dropped += 1;
        }
    }
    assert!(dropped > 0);
    assert!(log.is_truncated());
    assert_eq!(
        log.append(&run_completed(9, "r", "complete", 8)),
        AppendOutcome::Written,
        "lifecycle events are never dropped"
    );
    let got = lines(tmp.path());
    let truncations: Vec<&Value> = got
        .iter()
        .filter(|v| v["type"] == "subagent.events.truncated")
        .collect();
    assert_eq!(truncations.len(), 1);
    assert_eq!(truncations[0]["maxBytes"], max);
    assert_eq!(truncations[0]["droppedEventType"], "subagent.child.stdout");
    let diagnostic_bytes: usize = std::fs::read_to_string(tmp.path().join("events.jsonl"))
        .unwrap()
        .lines()
        .filter(|l| l.contains("subagent.child.") || l.contains("subagent.events.truncated"))
        .map(|l| l.len() + 1)
        .sum();
    assert!(diagnostic_bytes as u64 <= max, "{diagnostic_bytes} > {max}");
    assert_eq!(diagnostic_bytes as u64, log.diagnostic_bytes());
    assert_eq!(got.last().unwrap()["type"], "subagent.run.completed");
    assert_eq!(got.first().unwrap()["type"], "subagent.run.started");
}

#[test]
fn a10_short_write_is_completed() {
    let tmp = tempfile::tempdir().unwrap();
    let fs = ScriptedFs::new();
    fs.set_write_chunk(7);
    let run = Dir::open_with(tmp.path(), crate::os::Os::system().with_files(fs.clone()).shared()).unwrap();
    let mut log = EventLog::new(&run, DEFAULT_EVENTS_MAX_BYTES).unwrap();
    log.append(&run_started(1, "r", "single", "/", 2));
    log.append(&step_started(1, "r", 0, "a"));
    assert_eq!(lines(tmp.path()).len(), 2);
    assert!(fs.calls(Op::Write) > 2);
}

#[test]
fn a10_failed_remainder_is_followed_by_a_newline() {
    let tmp = tempfile::tempdir().unwrap();
    let fs = ScriptedFs::new();
    fs.set_write_chunk(10);
    let run = Dir::open_with(tmp.path(), crate::os::Os::system().with_files(fs.clone()).shared()).unwrap();
    let mut log = EventLog::new(&run, DEFAULT_EVENTS_MAX_BYTES)
        .unwrap()
        .with_logger(|_| {});
    let calls_before = fs.calls(Op::Write);
    assert_eq!(calls_before, 0);
    // First chunk succeeds, the second fails: the partial line must be closed with '\n'.
    fs.set_hook({
        let fs = Arc::downgrade(&fs);
        move |op, _| {
            if op == Op::Write
                && let Some(fs) = fs.upgrade()
                && fs.calls(Op::Write) == 2
            {
                fs.fail_next(Op::Write, [Errno::NOSPC]);
            }
        }
    });
    assert_eq!(
        log.append(&run_started(1, "r", "single", "/", 2)),
        AppendOutcome::Failed
    );
    let text = std::fs::read_to_string(tmp.path().join("events.jsonl")).unwrap();
    assert!(text.ends_with('\n'), "{text:?}");
    assert_eq!(text.len(), 11, "ten bytes of the broken line plus the newline");
}

#[test]
fn h20_run_started_detection() {
    let tmp = tempfile::tempdir().unwrap();
    let run = Dir::open(tmp.path()).unwrap();
    assert!(!has_run_started(&run, "r").unwrap());
    std::fs::write(
        tmp.path().join("events.jsonl"),
        "garbage\n{\"type\":\"subagent.run.started\",\"runId\":\"other\"}\n",
    )
    .unwrap();
    assert!(!has_run_started(&run, "r").unwrap());
    append_once(&run, &run_started(1, "r", "single", "/", 2)).unwrap();
    assert!(has_run_started(&run, "r").unwrap());
}
