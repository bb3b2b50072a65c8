use super::*;
use crate::records::status::RunState;

fn terminal(run_id: &str, ended_at: u64) -> Status {
    let mut status: Status = serde_json::from_value(serde_json::json!({"runId": run_id})).unwrap();
    status.mark_terminal(
        RunState::Failed,
        ended_at,
        Some("boom".into()),
        Some(FailureKind::Timeout),
    );
    status
}

fn run_dir(root: &Path, id: &str) -> Dir {
    let path = root.join("runs").join(id);
    std::fs::create_dir_all(&path).unwrap();
    Dir::open(&path).unwrap()
}

#[test]
fn d4_cursors_are_dense_and_a_read_resumes_after_its_cursor() {
    let tmp = tempfile::tempdir().unwrap();
    let stream = Stream::under(tmp.path());
    assert_eq!(stream.last_cursor().unwrap(), 0);
    for i in 0..5u64 {
        let cursor = stream
            .append(
                "r",
                i,
                What::Queued {
                    reason: format!("q{i}"),
                },
            )
            .unwrap();
        assert_eq!(cursor, i + 1);
    }
    let all = stream.read(None, usize::MAX).unwrap();
    assert_eq!(
        all.events.iter().map(|e| e.cursor).collect::<Vec<_>>(),
        vec![1, 2, 3, 4, 5]
    );
    let after = stream.read(Some(3), usize::MAX).unwrap();
    assert_eq!(after.events.iter().map(|e| e.cursor).collect::<Vec<_>>(), vec![4, 5]);
    assert_eq!(stream.read(Some(3), 1).unwrap().events.len(), 1);
    assert!(stream.read(Some(5), usize::MAX).unwrap().events.is_empty());
}

#[test]
fn d4_a_torn_line_is_skipped_and_the_next_append_starts_a_line_of_its_own() {
    let tmp = tempfile::tempdir().unwrap();
    let stream = Stream::under(tmp.path());
    stream.append("r", 1, What::Started { pid: 7 }).unwrap();
    let segment = stream.segments().unwrap()[0].1.clone();
    let mut file = OpenOptions::new().append(true).open(&segment).unwrap();
    file.write_all(b"0000abcd {\"cursor\":2,").unwrap();
    // A line still being written is not read, and does not count as damage yet.
    assert_eq!(stream.read(None, usize::MAX).unwrap().events.len(), 1);
    assert_eq!(stream.append("r", 2, What::Started { pid: 8 }).unwrap(), 2);
    let batch = stream.read(None, usize::MAX).unwrap();
    assert_eq!(batch.events.iter().map(|e| e.cursor).collect::<Vec<_>>(), vec![1, 2]);
    assert_eq!(batch.damaged, 1);
}

#[test]
fn d4_the_log_is_bounded_and_a_reader_behind_it_is_told_what_it_missed() {
    let tmp = tempfile::tempdir().unwrap();
    let stream = Stream::under(tmp.path());
    let reason = "x".repeat(64 * 1024);
    let per_segment = SEGMENT_BYTES / (64 * 1024) + 1;
    let total = per_segment * (KEEP_SEGMENTS as u64 + 2);
    for i in 0..total {
        stream.append("r", i, What::Queued { reason: reason.clone() }).unwrap();
    }
    let segments = stream.segments().unwrap();
    assert_eq!(segments.len(), KEEP_SEGMENTS);
    assert_eq!(stream.last_cursor().unwrap(), total);
    let batch = stream.read(Some(0), usize::MAX).unwrap();
    let oldest = segments[0].0;
    assert_eq!(batch.dropped, oldest - 1);
    assert_eq!(batch.events.first().unwrap().cursor, oldest);
    assert_eq!(batch.events.last().unwrap().cursor, total);
}

#[test]
fn d6_an_end_is_recorded_once_and_a_later_end_gets_the_next_seq() {
    let tmp = tempfile::tempdir().unwrap();
    let run = run_dir(tmp.path(), "r1");
    std::fs::write(run.join(crate::records::hook::SPEC_FILE), "{}").unwrap();
    let status = terminal("r1", 100);
    let first = record_end(tmp.path(), &run, &status, Consumers { hook: true })
        .unwrap()
        .unwrap();
    assert_eq!(first.delivery_id, "r1.1");
    let again = record_end(tmp.path(), &run, &status, Consumers { hook: true })
        .unwrap()
        .unwrap();
    assert_eq!(again, first);
    assert!(end_recorded(&run, &status));
    let outbox = outbox::Outbox::under(tmp.path());
    assert_eq!(outbox.list().unwrap().0.len(), 1);
    let later = record_end(tmp.path(), &run, &terminal("r1", 200), Consumers::default())
        .unwrap()
        .unwrap();
    assert_eq!((later.seq, later.delivery_id.as_str()), (2, "r1.2"));
    let ends: Vec<_> = Stream::under(tmp.path())
        .read(None, usize::MAX)
        .unwrap()
        .events
        .into_iter()
        .filter_map(|e| match e.what {
            What::Ended {
                delivery_id,
                failure_kind,
                ..
            } => Some((delivery_id, failure_kind)),
            _ => None,
        })
        .collect();
    assert_eq!(
        ends,
        vec![
            ("r1.1".into(), Some(FailureKind::Timeout)),
            ("r1.2".into(), Some(FailureKind::Timeout))
        ]
    );
    // A status that did not end records nothing.
    let running: Status = serde_json::from_value(serde_json::json!({"runId": "r1", "state": "running"})).unwrap();
    assert_eq!(
        record_end(tmp.path(), &run, &running, Consumers::default()).unwrap(),
        None
    );
}

#[test]
fn d6_an_end_whose_recorder_died_after_its_intent_is_finished_by_the_next_appender_once() {
    let tmp = tempfile::tempdir().unwrap();
    let run = run_dir(tmp.path(), "r2");
    std::fs::write(run.join(crate::records::hook::SPEC_FILE), "{}").unwrap();
    let stream = Stream::under(tmp.path());
    stream.append("other", 1, What::Started { pid: 1 }).unwrap();
    // The recorder wrote its intent and died before its append (cursor 2 is not in the log).
    let status = terminal("r2", 50);
    let marker = EndMarker {
        seq: 1,
        ended_at: 50,
        cursor: 2,
        delivery_id: "r2.1".into(),
    };
    let event = StreamEvent {
        cursor: 2,
        at: 50,
        run_id: "r2".into(),
        what: What::Ended {
            state: "failed".into(),
            failure_kind: None,
            delivery_id: "r2.1".into(),
            error: None,
        },
    };
    let mut line = encode(&event);
    line.pop();
    let intent = Intent {
        run_dir: run.path().to_owned(),
        line: String::from_utf8(line).unwrap(),
        cursor: 2,
        marker: marker.clone(),
        delivery: Some(Delivery::new("r2.1", "r2", run.path(), "failed", None, 2)),
    };
    std::fs::write(stream.dir().join(INTENT_FILE), serde_json::to_vec(&intent).unwrap()).unwrap();
    // The next appender finishes it first, then appends its own event after it.
    assert_eq!(stream.append("other", 3, What::Started { pid: 2 }).unwrap(), 3);
    assert_eq!(end_marker(&run), Some(marker.clone()));
    assert_eq!(outbox::Outbox::under(tmp.path()).list().unwrap().0.len(), 1);
    // The run's own recorder, or a lister, now finds it done: one `ended` event in all.
    assert_eq!(
        record_end(tmp.path(), &run, &status, Consumers { hook: true }).unwrap(),
        Some(marker)
    );
    let ended = stream
        .read(None, usize::MAX)
        .unwrap()
        .events
        .iter()
        .filter(|e| matches!(e.what, What::Ended { .. }))
        .count();
    assert_eq!(ended, 1);
    // Died after its append but before its marker: the redo does not append it again.
    let run3 = run_dir(tmp.path(), "r3");
    let mut intent3 = intent;
    intent3.run_dir = run3.path().to_owned();
    intent3.delivery = None;
    intent3.marker.delivery_id = "r3.1".into();
    std::fs::write(stream.dir().join(INTENT_FILE), serde_json::to_vec(&intent3).unwrap()).unwrap();
    assert_eq!(stream.append("other", 4, What::Started { pid: 3 }).unwrap(), 4);
    assert_eq!(end_marker(&run3).map(|m| m.delivery_id), Some("r3.1".into()));
}

#[test]
fn d4_every_event_type_round_trips_with_its_type_word() {
    let whats = vec![
        What::Launched {
            agent: "a".into(),
            mode: "single".into(),
            cwd: "/".into(),
            parent: None,
        },
        What::Queued { reason: "q".into() },
        What::Started { pid: 1 },
        What::StepStarted {
            step: 0,
            agent: "a".into(),
        },
        What::StepEnded {
            step: 0,
            agent: "a".into(),
            state: "failed".into(),
            failure_kind: Some(FailureKind::Budget),
        },
        What::Gate {
            step: 0,
            gate: "tests".into(),
            passed: false,
        },
        What::Delivered {
            delivery_id: "r.1".into(),
            consumer: "hook".into(),
            attempt: 3,
        },
        What::DeliveryFailed {
            delivery_id: "r.1".into(),
            consumer: "hook".into(),
            attempt: 1,
            error: "exit 1".into(),
            next_attempt_at: Some(9),
        },
    ];
    for what in whats {
        let event = StreamEvent {
            cursor: 1,
            at: 2,
            run_id: "r".into(),
            what: what.clone(),
        };
        let value = serde_json::to_value(&event).unwrap();
        assert_eq!(value["type"], what.type_word());
        assert_eq!(decode(&encode(&event)[..encode(&event).len() - 1]), Some(event));
    }
}
