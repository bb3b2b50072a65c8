use super::*;
use crate::files::doc::Corrupt;
use serde_json::json;

const PEER_READY: &str = include_str!("../../../fixtures/peer/startup-ready.json");
const PATH: &str = "/r/runs/x/runner-startup.json";

fn present(v: Value) -> io::Result<ReadDoc<Value>> {
    Ok(ReadDoc::Present(v))
}

fn host(read: io::Result<ReadDoc<Value>>, state: StartupState, token: Option<&str>) -> HostObservation {
    evaluate_host(&read, state, token, Path::new(PATH))
}

#[test]
fn k2_peer_ready_round_trips_and_builders_match() {
    let value: Value = serde_json::from_str(PEER_READY).unwrap();
    let report: StartupReport = serde_json::from_str(PEER_READY).unwrap();
    assert_eq!(serde_json::to_value(&report).unwrap(), value);
    let built = StartupReport::ready("4ce7f25a-a961-4660-b7be-a4c27d650ad0", 17345, value["owner"].clone());
    assert_eq!(serde_json::to_value(&built).unwrap(), value);
    assert_eq!(
        serde_json::to_value(StartupReport::error(5, "boom")).unwrap(),
        json!({"state": "error", "pid": 5, "error": "boom"})
    );
    assert_eq!(
        serde_json::to_value(ControlMessage::new(ControlAction::Proceed, "T")).unwrap(),
        json!({"action": "proceed", "token": "T"})
    );
}

#[test]
fn k4_host_rules() {
    assert_eq!(
        host(Ok(ReadDoc::Absent), StartupState::Ready, None),
        HostObservation::KeepWaiting
    );
    let corrupt = Ok(ReadDoc::Corrupt(Corrupt {
        bytes: b"x".to_vec(),
        error: "expected value".into(),
    }));
    assert_eq!(
        host(corrupt, StartupState::Ready, None),
        HostObservation::Failed(format!(
            "Failed to read async runner startup handshake '{PATH}': expected value"
        ))
    );
    let unreadable = Err(io::Error::other("EACCES: denied"));
    assert!(
        matches!(host(unreadable, StartupState::Ready, None), HostObservation::Failed(m) if m.starts_with("Failed to read async runner startup handshake '"))
    );
    assert_eq!(
        host(
            present(json!({"state": "error", "pid": 1, "error": "Direct revival of session 'x' is already owned …"})),
            StartupState::Ready,
            None
        ),
        HostObservation::Failed("Direct revival of session 'x' is already owned …".into())
    );
    assert_eq!(
        host(
            present(json!({"state": "acknowledged", "token": "T"})),
            StartupState::Ready,
            None
        ),
        HostObservation::KeepWaiting,
        "other states are ignored"
    );
    assert_eq!(
        host(
            present(json!({"state": "ready", "token": "T"})),
            StartupState::Confirmed,
            Some("T")
        ),
        HostObservation::KeepWaiting
    );
    let invalid_ready =
        HostObservation::Failed(format!("Async runner wrote an invalid ready startup handshake: {PATH}"));
    assert_eq!(
        host(
            present(json!({"state": "ready", "token": null, "pid": 1})),
            StartupState::Ready,
            None
        ),
        invalid_ready,
        "F21"
    );
    assert_eq!(
        host(
            present(json!({"state": "ready", "token": "", "pid": 1})),
            StartupState::Ready,
            None
        ),
        invalid_ready,
        "⊕ empty token"
    );
    assert_eq!(
        host(
            present(json!({"state": "acknowledged", "token": "wrong", "pid": 1})),
            StartupState::Acknowledged,
            Some("T")
        ),
        HostObservation::Failed(format!(
            "Async runner wrote an invalid acknowledged startup handshake: {PATH}"
        )),
        "F22"
    );
    match host(
        present(json!({"state": "ready", "token": "T", "pid": 1, "owner": {}})),
        StartupState::Ready,
        None,
    ) {
        HostObservation::Reached { token, report } => {
            assert_eq!(token, "T");
            assert_eq!(report.pid, Some(1));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn k5_exit_race_prefers_the_error_state() {
    let p = Path::new(PATH);
    assert_eq!(
        evaluate_host_after_exit(
            &present(json!({"state": "acknowledged", "token": "T"})),
            StartupState::Acknowledged,
            p,
            Some(42),
            None
        ),
        "Async runner exited before startup state 'acknowledged' (exit code 42, signal none)."
    );
    assert_eq!(
        evaluate_host_after_exit(
            &present(json!({"state": "error", "error": "lease conflict"})),
            StartupState::Ready,
            p,
            Some(3),
            None
        ),
        "lease conflict"
    );
    assert_eq!(
        evaluate_host_after_exit(&Ok(ReadDoc::Absent), StartupState::Ready, p, None, Some("SIGKILL")),
        "Async runner exited before startup state 'ready' (exit code unknown, signal SIGKILL)."
    );
    assert_eq!(
        exited_before_proceed_message(Some(7), None),
        "Async runner exited after startup state 'confirmed' before proceed (exit code 7, signal none)."
    );
    assert_eq!(
        exited_before_commit_message(Some(9), None),
        "Async runner exited before startup commit (exit code 9, signal none)."
    );
    assert_eq!(
        host_timeout_message(Duration::from_millis(300), StartupState::Ready),
        "Timed out after 300ms waiting for the async runner startup state 'ready'."
    );
}

#[test]
fn k9_shim_rules() {
    let p = Path::new("/r/runs/x/runner-startup-proceed.json");
    let shim = |read: io::Result<ReadDoc<Value>>, action| evaluate_shim(&read, action, "T", p);
    assert_eq!(
        shim(Ok(ReadDoc::Absent), ControlAction::Proceed),
        ShimObservation::KeepWaiting
    );
    assert_eq!(
        shim(
            Ok(ReadDoc::Corrupt(Corrupt {
                bytes: vec![],
                error: "eof".into()
            })),
            ControlAction::Proceed
        ),
        ShimObservation::Failed(
            "Failed to read runner startup control '/r/runs/x/runner-startup-proceed.json': eof".into()
        )
    );
    assert_eq!(
        shim(
            present(json!({"action": "proceed", "token": "F"})),
            ControlAction::Proceed
        ),
        ShimObservation::Failed("Runner startup control token does not match.".into())
    );
    assert_eq!(
        shim(
            present(json!({"action": "proceed", "token": "T"})),
            ControlAction::Proceed
        ),
        ShimObservation::Reached
    );
    assert_eq!(
        shim(present(json!({"action": "ack", "token": "T"})), ControlAction::Confirm),
        ShimObservation::KeepWaiting
    );
    assert_eq!(
        shim(present(json!({"action": "explode", "token": "T"})), ControlAction::Ack),
        ShimObservation::Failed("Runner startup control action is invalid.".into())
    );
    assert_eq!(
        shim_timeout_message(Duration::from_millis(600), ControlAction::Ack),
        "Timed out after 600ms waiting for runner startup control 'ack'."
    );
}

#[test]
fn k15_confirm_is_accepted_from_the_ack_file() {
    assert_eq!(
        ControlAction::Confirm.files_to_watch(),
        &["runner-startup-confirm.json", "runner-startup-ack.json"]
    );
    let p = Path::new("/x");
    let confirm_file = evaluate_shim(&Ok(ReadDoc::Absent), ControlAction::Confirm, "T", p);
    let ack_file = evaluate_shim(
        &present(json!({"action": "confirm", "token": "T"})),
        ControlAction::Confirm,
        "T",
        p,
    );
    assert_eq!(combine_shim([confirm_file, ack_file]), ShimObservation::Reached);
    let still_ack = evaluate_shim(
        &present(json!({"action": "ack", "token": "T"})),
        ControlAction::Confirm,
        "T",
        p,
    );
    assert_eq!(
        combine_shim([ShimObservation::KeepWaiting, still_ack]),
        ShimObservation::KeepWaiting
    );
}

#[test]
fn k14_doorbell_lines_encode_decode_and_tolerate_garbage() {
    let ready = Doorbell::State("ready".into());
    assert_eq!(ready.encode(), b"{\"v\":1,\"state\":\"ready\"}\n");
    assert_eq!(Doorbell::decode(&ready.encode()), Some(ready.clone()));
    assert_eq!(
        Doorbell::decode(b"{\"v\":1,\"action\":\"proceed\"}"),
        Some(Doorbell::Action("proceed".into()))
    );
    for bad in [
        &b"garbage"[..],
        b"{\"v\":2,\"state\":\"ready\"}",
        b"{\"v\":1}",
        b"{\"v\":1,\"state\":\"a\",\"action\":\"b\"}",
        b"{\"v\":1,\"state\":3}",
    ] {
        assert_eq!(Doorbell::decode(bad), None, "{}", String::from_utf8_lossy(bad));
    }
    let mut reader = DoorbellReader::default();
    let mut stream = b"junk\n{\"v\":1,\"sta".to_vec();
    assert_eq!(reader.push(&stream), vec![]);
    stream = b"te\":\"acknowledged\"}\n".to_vec();
    stream.extend(vec![b'x'; 5000]);
    stream.extend(b"\n{\"v\":1,\"state\":\"committed\"}\n");
    assert_eq!(
        reader.push(&stream),
        vec![
            Doorbell::State("acknowledged".into()),
            Doorbell::State("committed".into())
        ]
    );
}

#[test]
fn k13_timings_and_backoff() {
    assert_eq!(
        PollBackoff::default()
            .take(5)
            .map(|d| d.as_millis())
            .collect::<Vec<_>>(),
        vec![50, 100, 200, 250, 250]
    );
    assert_eq!(HOST_STATE_TIMEOUT.as_millis(), 10_000);
    assert_eq!(SHIM_CONTROL_TIMEOUT.as_millis(), 30_000);
    #[cfg(not(feature = "test-hooks"))]
    {
        // Production builds ignore the override variables entirely.
        assert_eq!(host_state_timeout(), HOST_STATE_TIMEOUT);
        assert_eq!(shim_control_timeout(), SHIM_CONTROL_TIMEOUT);
    }
}

#[cfg(feature = "test-hooks")]
#[test]
fn t_timeout_overrides_parse() {
    assert_eq!(override_ms("SUBLAUNCH_TEST_UNSET_VARIABLE_FOR_RUNFILES"), None);
}
