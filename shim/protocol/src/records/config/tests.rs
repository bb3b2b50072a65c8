use super::*;
use serde_json::json;

const PEER_CONFIG: &str = include_str!("../../../fixtures/peer/runner-config.json");
const PEER_REVIVAL: &str = include_str!("../../../fixtures/peer/runner-config-revival.json");

fn valid() -> Value {
    json!({
        "id": "run-1", "asyncDir": "/r/runs/run-1", "cwd": "/w", "resultPath": "/r/results/run-1.json",
        "runnerProcessInstanceId": "rp", "launchBarrierToken": "rp", "configVersion": CONFIG_VERSION,
        "steps": [{"agent": "shell", "task": "echo hi", "command": {"argv": ["sh", "-c", "echo hi"]}}]
    })
}

fn error_of(v: &Value) -> String {
    parse_runner_config(&serde_json::to_vec(v).unwrap())
        .unwrap_err()
        .to_string()
}

#[test]
fn h5_round_trip() {
    let config = parse_runner_config(&serde_json::to_vec(&valid()).unwrap()).unwrap();
    let again: Value = serde_json::from_slice(&config.to_bytes()).unwrap();
    let mut expected = valid();
    expected["steps"][0]["command"]["env"] = json!({});
    expected["workflow"] = json!({});
    assert_eq!(again, expected);
    assert_eq!(config.step_command(0).unwrap().argv, ["sh", "-c", "echo hi"]);
    assert_eq!(config.step_cwd(0), "/w");
    assert!(!config.is_revival());
}

#[test]
fn a_configuration_of_another_build_is_refused_by_its_version() {
    // Host and shim ship together; a shim must not misread what another build wrote
    // (upstream pi-subagents configurations included: they carry no version).
    let mut other = valid();
    other["configVersion"] = json!(CONFIG_VERSION + 1);
    for v in [
        other,
        serde_json::from_str(PEER_CONFIG).unwrap(),
        serde_json::from_str(PEER_REVIVAL).unwrap(),
    ] {
        assert_eq!(
            error_of(&v),
            format!(
                "Invalid runner configuration: 'configVersion' must be {CONFIG_VERSION}: the configuration was written by another sublaunch build (install the runner that came with it)."
            )
        );
    }
    // With this build's version and a command, the upstream shape parses; fields this build
    // does not know are ignored.
    let mut revival: Value = serde_json::from_str(PEER_REVIVAL).unwrap();
    revival["configVersion"] = json!(CONFIG_VERSION);
    revival["command"] = json!({"argv": ["true"]});
    let config = parse_runner_config(&serde_json::to_vec(&revival).unwrap()).unwrap();
    assert!(config.is_revival());
    assert_eq!(
        config.revival_lease.unwrap().source_run_id,
        "bench-revival-00-5mkcfn-source"
    );
}

#[test]
fn r2_messages_in_spec_order() {
    assert_eq!(
        error_of(&json!([])),
        "Invalid runner configuration: root must be an object."
    );
    for field in ["id", "resultPath", "cwd", "asyncDir"] {
        let mut v = valid();
        v.as_object_mut().unwrap().remove(field);
        assert_eq!(
            error_of(&v),
            format!("Invalid runner configuration: '{field}' must be a non-empty string.")
        );
        v[field] = json!("");
        assert_eq!(
            error_of(&v),
            format!("Invalid runner configuration: '{field}' must be a non-empty string.")
        );
    }
    let mut v = valid();
    v["steps"] = json!([]);
    assert_eq!(
        error_of(&v),
        "Invalid runner configuration: 'steps' must be a non-empty array."
    );
    for argv in [json!([]), json!(["sh", 1]), json!("sh")] {
        let mut v = valid();
        v["steps"][0]["command"]["argv"] = argv;
        assert_eq!(
            error_of(&v),
            "Invalid runner configuration: 'command.argv' must be a non-empty array of strings."
        );
    }
    let mut v = valid();
    v["timeoutMs"] = json!(-1);
    assert_eq!(
        error_of(&v),
        "Invalid runner configuration: 'timeoutMs' must be a non-negative integer."
    );
    let mut v = valid();
    v["id"] = json!("../escape");
    assert_eq!(
        error_of(&v),
        "Invalid runner configuration: 'id' must be a safe run id."
    );
}

#[test]
fn f59_r2_messages_do_not_echo_values() {
    let mut v = valid();
    v["sessionId"] = json!(12345678);
    let message = error_of(&v);
    assert_eq!(message, "Invalid runner configuration: 'sessionId' must be a string.");
    let parse = parse_runner_config(b"not json SECRET").unwrap_err().to_string();
    assert!(
        parse.starts_with("Invalid runner configuration: not valid JSON"),
        "{parse}"
    );
    assert!(!parse.contains("SECRET"));
}

#[test]
fn k11_fresh_launches_need_a_barrier_token() {
    let mut v = valid();
    v.as_object_mut().unwrap().remove("launchBarrierToken");
    assert_eq!(
        error_of(&v),
        "Invalid runner configuration: 'launchBarrierToken' must be a non-empty string."
    );
    v["revivalLease"] = json!({"sessionFile": "/s", "runId": "run-1", "sourceRunId": "run-0"});
    parse_runner_config(&serde_json::to_vec(&v).unwrap()).unwrap();
    v["revivalLease"]["sourceRunId"] = json!("");
    assert_eq!(
        error_of(&v),
        "Invalid runner configuration: 'revivalLease.sourceRunId' must be a non-empty string."
    );
}

#[test]
fn shell_step_and_run_level_command() {
    let step = StepConfig::shell("echo hi; exit 3", "/w", BTreeMap::from([("A".into(), "1".into())]));
    // The shell adapter runs the task; the step carries no command of its own.
    assert!(step.command.is_none());
    let adapter = step.adapter.clone().unwrap();
    assert_eq!((adapter.id, &adapter.env["A"]), (AdapterId::Shell, &json!("1")));
    assert_eq!(step.runner, Some(json!({"type": "external-cli", "adapter": "shell"})));
    let mut v = valid();
    v["steps"] = json!([{"agent": "a"}]);
    v["command"] = json!({"argv": ["true"], "cwd": "/elsewhere"});
    let config = parse_runner_config(&serde_json::to_vec(&v).unwrap()).unwrap();
    assert_eq!(config.step_command(0).unwrap().argv, ["true"]);
    assert_eq!(config.step_cwd(0), "/elsewhere");
}

#[test]
fn r12_effective_timeout_takes_the_earlier_limit() {
    let mut config = parse_runner_config(&serde_json::to_vec(&valid()).unwrap()).unwrap();
    assert_eq!(config.effective_timeout(1_000), None);
    config.timeout_ms = Some(5_000);
    assert_eq!(config.effective_timeout(1_000), Some(Duration::from_secs(5)));
    config.deadline_at = Some(3_000);
    assert_eq!(config.effective_timeout(1_000), Some(Duration::from_secs(2)));
    assert_eq!(
        config.effective_timeout(9_000),
        Some(Duration::ZERO),
        "a passed deadline expires at once"
    );
}

#[test]
fn an_unknown_adapter_is_refused_naming_it_and_the_file_never_run_as_shell() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("async-cfg-run-1.json");
    let mut v = valid();
    v["steps"][0]["adapter"] = json!({"id": "gemini-cli"});
    std::fs::write(&path, serde_json::to_vec(&v).unwrap()).unwrap();
    let message = read_runner_config_file(&path).unwrap_err().to_string();
    assert!(
        message.starts_with(
            "Invalid runner configuration: 'steps[].adapter.id' names an adapter this runner cannot start ('gemini-cli', in '"
        )
            && message.contains("async-cfg-run-1.json")
            && message.contains("must be one of pi, command, shell"),
        "{message}"
    );
    // Planned-only adapters are refused as well; a value that is not id-shaped is not echoed.
    for (id, shown) in [("external-job", true), ("SECRET token", false)] {
        v["steps"][0]["adapter"] = json!({"id": id});
        let message = error_of(&v);
        assert_eq!(message.contains(id), shown, "{message}");
    }
    // Read as a value (the JSON on disk is unchanged: the id's string).
    let spec: AdapterSpec = serde_json::from_value(json!({"id": "codex-exec"})).unwrap();
    assert_eq!(spec, AdapterSpec::new(AdapterId::CodexExec));
    assert_eq!(serde_json::to_value(&spec).unwrap(), json!({"id": "codex-exec"}));
    assert!(serde_json::from_value::<AdapterSpec>(json!({"id": "nope"})).is_err());
}

#[test]
fn r1_read_unlinks_the_file_even_when_invalid_and_refuses_symlinks() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("async-cfg-run-1.json");
    std::fs::write(&path, serde_json::to_vec(&valid()).unwrap()).unwrap();
    read_runner_config_file(&path).unwrap();
    assert!(!path.exists());
    std::fs::write(&path, b"{}").unwrap();
    assert!(read_runner_config_file(&path).is_err());
    assert!(!path.exists());
    let target = tmp.path().join("target.json");
    std::fs::write(&target, serde_json::to_vec(&valid()).unwrap()).unwrap();
    std::os::unix::fs::symlink(&target, &path).unwrap();
    assert!(
        read_runner_config_file(&path)
            .unwrap_err()
            .to_string()
            .contains("ELOOP")
    );
    assert!(target.exists(), "only the link is unlinked");
}

#[test]
fn p13_a_placement_is_checked_before_anything_runs() {
    let placement = json!({"machine": "box", "target": "box", "cwd": "~/w", "controlDir": "/r/ssh"});
    let mut v = valid();
    v["steps"][0]["placement"] = placement.clone();
    let config = parse_runner_config(&serde_json::to_vec(&v).unwrap()).unwrap();
    assert_eq!(config.steps[0].placement.clone().unwrap().target, "box");
    for (field, bad, message) in [
        ("target", json!("-oProxyCommand=x"), "'steps[].placement.target'"),
        ("target", json!("a b"), "'steps[].placement.target'"),
        ("cwd", json!(""), "'steps[].placement.cwd'"),
        ("controlDir", json!("relative"), "'steps[].placement.controlDir'"),
        ("machine", json!(7), "'steps[].placement' must be"),
    ] {
        let mut v = valid();
        v["steps"][0]["placement"] = placement.clone();
        v["steps"][0]["placement"][field] = bad;
        assert!(error_of(&v).contains(message), "{field}: {}", error_of(&v));
    }
}

#[test]
fn on_end_is_a_command_with_a_positive_time_limit() {
    let mut with_hook = valid();
    with_hook["onEnd"] = json!({"command": "notify-send done", "timeoutMs": 5000});
    let config = parse_runner_config(&serde_json::to_vec(&with_hook).unwrap()).unwrap();
    assert_eq!(
        config.on_end,
        Some(crate::records::hook::OnEnd {
            command: "notify-send done".into(),
            timeout_ms: 5000
        })
    );
    for bad in [
        json!("echo"),
        json!({"command": "", "timeoutMs": 5}),
        json!({"command": "echo", "timeoutMs": 0}),
        json!({"command": "echo"}),
        json!({"timeoutMs": 5}),
    ] {
        with_hook["onEnd"] = bad;
        assert_eq!(
            error_of(&with_hook),
            "Invalid runner configuration: 'onEnd' must be an object with a non-empty 'command' and a positive integer 'timeoutMs'."
        );
    }
}
