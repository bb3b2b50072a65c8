//! A normal run end to end, process placement (H8, H9, H10, F63), the run-end order (S12),
//! chains, agent failures (R10, S4) and configuration errors (R1, R2, F59).

mod support;

use serde_json::json;
use std::os::unix::process::ExitStatusExt;
use sublaunch_protocol::files::layout::names;
use support::*;

/// A normal run: status complete, result file and indexes, events in order, final candidate,
/// output log, K12 cleanup, marker released and the host's proof `observed`.
#[test]
fn normal_run_end_to_end() {
    let root = Root::new();
    let mut run = root.launch(Spec::shell("echo hello; echo oops >&2"));
    run.proceed();
    let status = run.wait_exit(LONG);
    assert_eq!(status.code(), Some(0), "stderr: {}", run.stderr());

    let st = run.status();
    assert_eq!(st["state"], "complete");
    assert_eq!(st["pid"], run.pid);
    assert_eq!(st["steps"][0]["status"], "complete");
    assert_eq!(st["steps"][0]["exitCode"], 0);
    assert!(st["endedAt"].as_u64().unwrap() >= st["startedAt"].as_u64().unwrap());
    assert_eq!(st["cwd"], run.cfg.cwd);
    assert_eq!(st["outputFile"], run.path("output-0.log").to_string_lossy().as_ref());

    let result = run.result().expect("result file");
    assert_eq!(result["success"], true);
    assert_eq!(result["state"], "complete");
    assert_eq!(result["exitCode"], 0);
    assert_eq!(result["sessionId"], "test-session");
    assert_eq!(result["results"][0]["output"], "hello");
    assert_eq!(result["results"][0]["outputState"], "present");
    assert_eq!(result["summary"], "shell:\nhello");
    assert!(
        root.results()
            .join("result-index/sessions/test-session")
            .join(format!("{}.json", run.cfg.id))
            .is_file()
    );
    assert!(
        root.results()
            .join("result-index/runs")
            .join(format!("{}.json", run.cfg.id))
            .is_file()
    );

    let types = run.event_types();
    assert_eq!(types.first().map(String::as_str), Some("subagent.run.started"));
    let lifecycle: Vec<&str> = types
        .iter()
        .map(String::as_str)
        .filter(|t| !t.starts_with("subagent.child."))
        .collect();
    assert_eq!(
        lifecycle,
        [
            "subagent.run.started",
            "subagent.step.started",
            "subagent.step.completed",
            "subagent.run.completed"
        ]
    );
    let events = run.events();
    assert!(
        events
            .iter()
            .any(|e| e["type"] == "subagent.child.stdout" && e["line"] == "hello")
    );
    assert!(
        events
            .iter()
            .any(|e| e["type"] == "subagent.child.stderr" && e["line"] == "oops")
    );

    let output = run.output(0);
    assert!(output.contains("hello\n") && output.contains("oops\n"), "{output:?}");

    let candidate = run.candidate();
    assert_eq!(candidate["expectedWriters"], json!({"0": 1}));
    let writer = &candidate["writers"]["0"][0];
    assert_eq!(
        writer["kind"],
        serde_json::Value::Null,
        "kind is added by the host's proof, not the candidate"
    );
    assert_eq!(writer["attempt"], 0);
    assert_eq!(writer["exitCode"], 0);
    assert_eq!(writer["processTree"]["state"], "observed");
    assert_eq!(writer["processTree"]["mechanism"], "posix-process-group");
    assert_eq!(writer["processTree"]["adoptedDescendantsKilled"], 0);

    for name in [
        names::RUNNER_STARTUP_PROCEED,
        names::RUNNER_STARTUP_ACK,
        names::RUNNER_STARTUP_CONFIRM,
    ] {
        assert!(!run.path(name).exists(), "K12: {name} deleted after commit");
    }
    assert!(
        !root.root.join(names::runner_config(&run.cfg.id)).exists(),
        "R1: cfg unlinked"
    );
    assert!(!run.marker_exists(), "I4: marker released");
    assert!(
        root.runs()
            .join(".terminal-runs/test-session")
            .read_dir()
            .unwrap()
            .count()
            == 1
    );

    let proof = run.finalize(None);
    let proof = proof_json(&proof);
    assert_eq!(proof["state"], "observed", "{proof}");
    assert_eq!(proof["instances"][1]["kind"], "pi-writer");
    assert!(
        run.stderr().is_empty(),
        "no diagnostics on a clean run: {}",
        run.stderr()
    );
}

/// S12: terminal status → result → step/run events → final candidate → exit. Each stage is
/// held with a `hang` hook and released with SIGTERM (which a hang consumes).
#[test]
fn s12_run_end_order() {
    let root = Root::new();
    let mut run =
        root.launch(Spec::shell("echo ok").fault("before-result:hang;before-candidate:hang;before-exit:hang"));
    run.proceed();
    wait_for("the terminal status", LONG, || {
        (run.status()["state"] == "complete").then_some(())
    });
    wait_for("the marker release", LONG, || (!run.marker_exists()).then_some(()));
    assert!(
        run.result().is_none(),
        "no result before the terminal status is settled"
    );
    assert!(!run.event_types().iter().any(|t| t == "subagent.run.completed"));
    run.signal(libc::SIGTERM);

    run.wait_event("subagent.run.completed");
    assert!(run.result().is_some(), "result before the run events");
    assert!(
        run.candidate()["expectedWriters"].is_null(),
        "candidate still the host's initial one"
    );
    run.signal(libc::SIGTERM);

    wait_for("the final candidate", LONG, || {
        run.candidate()["expectedWriters"].is_object().then_some(())
    });
    assert!(!run.exited(), "the shim exits only after the candidate");
    run.signal(libc::SIGTERM);
    assert_eq!(run.wait_exit(LONG).code(), Some(0));
    assert_eq!(
        run.status()["state"],
        "complete",
        "the consumed SIGTERMs did not stop the run"
    );
}

/// H8/H9: before commit the shim is session and group leader and holds exactly fds 0 1 2 3
/// (0 = /dev/null, 3 = the doorbell socket); F63: the agent gets fds 0 1 2 only and fd 3 is
/// closed for it.
#[test]
fn h8_h9_f63_process_placement_and_descriptors() {
    let root = Root::new();
    // The agent's own pid as /proc names it: `$$` is its pid inside its PID namespace (G40, G47),
    // while /proc is the host's, where `cut`'s parent is the agent's shell.
    let mut run = root.launch(Spec::shell(
        "ls /proc/$(cut -d' ' -f4 /proc/self/stat)/fd; echo x >&3; exit 0",
    ));
    let pid = run.pid;
    let (pgid, sid) = wait_for("the shim's session", LONG, || {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        let fields: Vec<&str> = stat[stat.rfind(')')? + 2..].split_whitespace().collect();
        let (pgid, sid): (u32, u32) = (fields[2].parse().ok()?, fields[3].parse().ok()?);
        (sid == pid).then_some((pgid, sid))
    });
    assert_eq!((pgid, sid), (pid, pid), "H8: pgid = sid = shim pid");
    let fds = wait_for("exactly 0 1 2 3", LONG, || {
        let mut fds: Vec<u32> = std::fs::read_dir(format!("/proc/{pid}/fd"))
            .ok()?
            .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
            .collect();
        fds.sort_unstable();
        (fds == [0, 1, 2, 3]).then_some(fds)
    });
    assert_eq!(fds, [0, 1, 2, 3]);
    let link = |fd: u32| std::fs::read_link(format!("/proc/{pid}/fd/{fd}")).unwrap();
    assert_eq!(link(0), std::path::Path::new("/dev/null"));
    assert!(link(3).to_string_lossy().starts_with("socket:"), "{:?}", link(3));
    // No tty: field 7 (tty_nr) is 0.
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    assert_eq!(
        stat[stat.rfind(')').unwrap() + 2..].split_whitespace().nth(4),
        Some("0")
    );

    run.proceed();
    assert_eq!(run.wait_exit(LONG).code(), Some(0));
    let output = run.output(0);
    let listed: Vec<&str> = output
        .lines()
        .take_while(|l| l.chars().all(|c| c.is_ascii_digit()))
        .collect();
    // `ls` itself opens the directory it lists (fd 3 of ls, not of the agent's shell).
    assert_eq!(&listed[..3], ["0", "1", "2"], "{output}");
    assert!(listed.len() <= 4, "{output}");
    assert!(
        output.contains("Bad file descriptor"),
        "F63: fd 3 is closed in the agent: {output}"
    );
    assert!(
        run.doorbell_messages()
            .contains(&sublaunch_protocol::records::handshake::Doorbell::State(
                "committed".into()
            ))
    );
    assert_eq!(run.status()["state"], "complete");
}

/// H10: the agent's environment is the shim's minus SUBLAUNCH_RUNNER_*, SUBLAUNCH_STARTUP_FD
/// and the test-hook variables, plus `command.env`.
#[test]
fn h10_agent_environment() {
    let root = Root::new();
    let mut spec = Spec::shell("env")
        .fault("before-exit:sleep:1")
        .env("SUBLAUNCH_KEEP_ME", "yes");
    spec.agent_env.insert("AGENT_OVERRIDE".into(), "over".into());
    let mut run = root.launch(spec);
    let pid = run.pid;
    let environ = wait_for("the shim's environment", LONG, || {
        let environ = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
        (!environ.is_empty()).then(|| String::from_utf8_lossy(&environ).into_owned())
    });
    assert!(
        environ.contains("SUBLAUNCH_STARTUP_FD=0") && environ.contains("SUBLAUNCH_RUNNER_CONFIG="),
        "{environ}"
    );
    run.proceed();
    assert_eq!(run.wait_exit(LONG).code(), Some(0));
    let env = run.output(0);
    for gone in [
        "SUBLAUNCH_RUNNER_CONFIG=",
        "SUBLAUNCH_STARTUP_FD=",
        "SUBLAUNCH_SHIM_FAULT=",
        "SUBLAUNCH_TEST_PARENT_PID=",
        "SUBLAUNCH_SHIM_CONTROL_TIMEOUT_MS=",
    ] {
        assert!(!env.lines().any(|l| l.starts_with(gone)), "{gone} leaked:\n{env}");
    }
    for kept in ["SUBLAUNCH_KEEP_ME=yes", "AGENT_OVERRIDE=over", "SUBLAUNCH_ROOT="] {
        assert!(env.lines().any(|l| l.starts_with(kept)), "{kept} missing:\n{env}");
    }
}

/// Sequential steps: one `output-<n>.log` per step, one writer per step.
#[test]
fn chain_runs_steps_in_order() {
    let root = Root::new();
    let mut spec = Spec::shell("echo first");
    spec.steps.push("echo second".into());
    let mut run = root.launch(spec);
    run.proceed();
    assert_eq!(run.wait_exit(LONG).code(), Some(0));
    assert_eq!(run.status()["state"], "complete");
    assert_eq!(run.status()["mode"], "chain");
    assert_eq!(run.output(0), "first\n");
    assert_eq!(run.output(1), "second\n");
    let steps: Vec<_> = run
        .events()
        .into_iter()
        .filter(|e| e["type"] == "subagent.step.completed")
        .collect();
    assert_eq!(steps.len(), 2);
    assert_eq!(run.candidate()["expectedWriters"], json!({"0": 1, "1": 1}));
    assert_eq!(run.result().unwrap()["summary"], "shell:\nfirst\n\nshell:\nsecond");
}

/// S4/R13: a non-zero exit fails the run and stops the chain; the error names the failing
/// step, the code and the stderr tail; the next step is recorded as not run.
#[test]
fn nonzero_exit_fails_the_run() {
    let root = Root::new();
    let mut spec = Spec::shell("echo broken >&2; exit 3");
    spec.steps.push("echo never".into());
    let mut run = root.launch(spec);
    run.proceed();
    assert_eq!(run.wait_exit(LONG).code(), Some(0));
    let st = run.status();
    assert_eq!(st["state"], "failed");
    assert_eq!(
        st["error"],
        "Step 1 shell failed: Subagent exited with code 3.\n\nbroken"
    );
    assert_eq!(st["steps"][0]["error"], "Subagent exited with code 3.\n\nbroken");
    assert_eq!(st["steps"][1]["status"], "skipped");
    assert_eq!(st["steps"][1]["error"], "Not run: step 1 shell failed.");
    let result = run.result().unwrap();
    assert_eq!(result["success"], false);
    assert_eq!(result["exitCode"], 1);
    assert_eq!(result["results"][0]["exitCode"], 3);
    assert_eq!(run.candidate()["expectedWriters"], json!({"0": 1, "1": 0}));
    assert!(run.event_types().contains(&"subagent.step.failed".to_string()));
    assert_eq!(proof_json(&run.finalize(None))["state"], "observed");
}

/// R10: a spawn error is a step failure: status failed with the OS error, step exitCode 1,
/// zero writer attempts, result written, exit 0.
#[test]
fn r10_spawn_error_is_a_step_failure() {
    let root = Root::new();
    let mut spec = Spec::shell("unused");
    spec.argv = Some(vec!["/nonexistent/agent-binary".into()]);
    let mut run = root.launch(spec);
    run.proceed();
    assert_eq!(run.wait_exit(LONG).code(), Some(0));
    let st = run.status();
    assert_eq!(st["state"], "failed");
    assert!(
        st["error"].as_str().unwrap().contains("No such file or directory"),
        "{st}"
    );
    assert_eq!(st["steps"][0]["exitCode"], 1);
    assert_eq!(run.candidate()["expectedWriters"], json!({"0": 0}));
    assert_eq!(run.result().unwrap()["results"][0]["exitCode"], 1);
    assert_eq!(proof_json(&run.finalize(None))["state"], "observed");
}

/// F59 (R1, R2): an invalid config file exits 2 with the R2 message on stderr and is unlinked;
/// so is one that is not JSON.
#[test]
fn f59_invalid_configuration() {
    let tmp = tempfile::tempdir().unwrap();
    for (bytes, expected) in [
        (
            br#"{"configVersion":1,"id":"r1","steps":[{"command":{"argv":["true"]}}],"resultPath":"/x","cwd":"/","runnerProcessInstanceId":"i","launchBarrierToken":"i"}"#.as_slice(),
            "Subagent runner error: Invalid runner configuration: 'asyncDir' must be a non-empty string.",
        ),
        (b"not json".as_slice(), "Subagent runner error: Invalid runner configuration: not valid JSON"),
    ] {
        let cfg = tmp.path().join("async-cfg-r1.json");
        std::fs::write(&cfg, bytes).unwrap();
        let out = std::process::Command::new(SHIM)
            .arg(&cfg)
            .env("SUBLAUNCH_TEST_PARENT_PID", std::process::id().to_string())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(expected), "{stderr}");
        assert!(!cfg.exists(), "the cfg file is unlinked");
    }
    // R1: from the environment, then from stdin.
    let out = std::process::Command::new(SHIM)
        .env("SUBLAUNCH_RUNNER_CONFIG", tmp.path().join("missing.json"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot read"));
    let mut child = std::process::Command::new(SHIM)
        .env_remove("SUBLAUNCH_RUNNER_CONFIG")
        .stdin(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child.stdin.take().unwrap().write_all(b"[]").unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("root must be an object"));
}

/// The `start:exit:<n>` hook exits before anything else (F16's shim side).
#[test]
fn start_exit_hook() {
    let root = Root::new();
    let mut run = root.launch(Spec::shell("true").fault("start:exit:9"));
    let status = run.wait_exit(LONG);
    assert_eq!(status.code(), Some(9));
    assert!(status.signal().is_none());
    assert!(!run.path(names::EVENTS).exists());
}

/// R16: the first status cannot be written after commit (a directory planted at
/// `status.json` makes the rename fail): committed startup failure, exit 1. The status is
/// unusable, so the message lands in `runner-startup-failure.json` (S5 ⊕).
#[test]
fn r16_committed_startup_failure() {
    let root = Root::new();
    let mut spec = Spec::shell("echo never");
    spec.plant.push(Box::new(|run: &std::path::Path| {
        std::fs::remove_file(run.join(names::STATUS)).unwrap();
        std::fs::create_dir_all(run.join(names::STATUS).join("occupied")).unwrap();
    }));
    let mut run = root.launch(spec);
    run.proceed();
    assert_eq!(run.wait_exit(LONG).code(), Some(1));
    let record = read_json(&run.path(names::RUNNER_STARTUP_FAILURE)).expect("runner-startup-failure.json");
    let error = record["error"].as_str().unwrap();
    assert!(
        error.starts_with("Subagent runner startup failed: cannot write status.json: "),
        "{error}"
    );
    assert!(
        run.stderr()
            .contains("Subagent runner error: Subagent runner startup failed: ")
    );
    assert!(
        run.events().iter().all(|e| e["type"] != "subagent.step.started"),
        "no agent"
    );
    assert!(run.result().is_none());
}

/// A stop that arrives before the agent is spawned (here while a `hang` holds the shim at
/// `before-agent-spawn`): no agent, status stopped, zero writer attempts.
#[test]
fn stop_before_the_agent_spawns() {
    let root = Root::new();
    let mut run = root.launch(Spec::shell("echo never").fault("before-agent-spawn:hang"));
    run.proceed();
    run.wait_event("subagent.run.started");
    run.signal(libc::SIGTERM);
    assert_eq!(run.wait_exit(LONG).code(), Some(0));
    let st = run.status();
    assert_eq!(st["state"], "stopped");
    assert_eq!(st["error"], "Subagent stopped: runner received SIGTERM.");
    assert_eq!(run.candidate()["expectedWriters"], json!({"0": 0}));
    assert!(!run.event_types().contains(&"subagent.step.started".to_string()));
    assert_eq!(proof_json(&run.finalize(None))["state"], "observed");
}
