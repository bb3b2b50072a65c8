//! Completion hooks (`run --on-end`, `subagents.onEnd`) against the real binaries: the hook
//! runs once per run end — complete, failed, stopped, timed out, and a shim killed with
//! SIGKILL, fired then by the listers that find it dead (racing each other) — with the result
//! on stdin and the run's id and state in its environment; a failing or hanging hook never
//! changes the run's outcome and its own outcome is recorded; settings supply the hook, and an
//! untrusted project settings file does not.

use serde_json::{Value, json};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;
use sublaunch_tests::cli::{executable, ok, text, write};
use sublaunch_tests::launch_harness::{Scratch, events_of, pid_alive, read_json, status, wait_for, wait_terminal};

const LIMIT: Duration = Duration::from_secs(30);

/// A hook that appends one line per call to `fired.log`: run id, state, cwd and the payload
/// on its stdin (newlines removed), tab-separated.
fn recording_hook(scratch: &Scratch) -> String {
    let script = executable(
        &scratch.path().join("hook.sh"),
        "#!/bin/sh\npayload=$(cat)\nprintf '%s\\t%s\\t%s\\t%s\\n' \"$SUBLAUNCH_RUN_ID\" \"$SUBLAUNCH_STATE\" \"$(pwd)\" \"$(printf '%s' \"$payload\" | tr -d '\\n')\" >> \"$1\"\n",
    );
    format!("sh {} {}", script.display(), fired_log(scratch).display())
}

fn fired_log(scratch: &Scratch) -> PathBuf {
    scratch.path().join("fired.log")
}

/// Writes a settings file only you can write (directory 0755, file 0644), whatever the
/// test's umask: a hook is taken from trusted settings only.
fn settings(path: &Path, value: &Value) -> PathBuf {
    write(path, &value.to_string());
    let dir = path.parent().unwrap();
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o644)).unwrap();
    path.to_owned()
}

/// One call of the recording hook.
struct Fired {
    run_id: String,
    state: String,
    cwd: String,
    payload: Value,
}

fn fired(scratch: &Scratch) -> Vec<Fired> {
    std::fs::read_to_string(fired_log(scratch))
        .unwrap_or_default()
        .lines()
        .map(|line| {
            let fields: Vec<&str> = line.splitn(4, '\t').collect();
            assert_eq!(fields.len(), 4, "a hook line: {line}");
            Fired {
                run_id: fields[0].to_owned(),
                state: fields[1].to_owned(),
                cwd: fields[2].to_owned(),
                payload: serde_json::from_str(fields[3]).unwrap_or_else(|e| panic!("{e}: {}", fields[3])),
            }
        })
        .collect()
}

fn launch(scratch: &Scratch, args: &[&str]) -> String {
    let mut all = vec!["run", "--agent", "shell"];
    all.extend_from_slice(args);
    ok(&scratch.cli(&all).output().unwrap()).trim().to_owned()
}

/// Waits for the hook's recorded outcome (`hook-end.json`) and returns it.
fn hook_outcome(run: &Path) -> Value {
    wait_for("the completion hook's outcome", LIMIT, || {
        read_json(&run.join("hook-end.json"))
    })
}

/// Waits until no process of this test's root is left (the shim, or a hook runner).
fn runners_gone(scratch: &Scratch) {
    wait_for("the runners to exit", LIMIT, || {
        sublaunch_tests::launch_harness::shims_under(&scratch.root())
            .is_empty()
            .then_some(())
    });
}

/// Runs the hook of a run that ends in `expected` state, then checks it fired exactly once
/// with what it must see.
fn assert_fired_once(scratch: &Scratch, id: &str, expected: &str) -> Fired {
    let run = scratch.run_dir(id);
    let outcome = hook_outcome(&run);
    assert_eq!(outcome["runState"], expected, "{outcome:#}");
    runners_gone(scratch);
    // Listers after the end find nothing left to fire.
    ok(&scratch.cli(&["list", "--all"]).output().unwrap());
    ok(&scratch.cli(&["status", id]).output().unwrap());
    let mut calls = fired(scratch);
    assert_eq!(
        calls.len(),
        1,
        "the hook fired once: {:?}",
        calls.iter().map(|c| &c.run_id).collect::<Vec<_>>()
    );
    let call = calls.remove(0);
    assert_eq!(call.run_id, id);
    assert_eq!(call.state, expected);
    assert_eq!(call.payload["id"], id);
    assert_eq!(call.payload["state"], expected);
    assert_eq!(
        status(&run).unwrap()["state"],
        expected,
        "the hook leaves the run's state alone"
    );
    assert_eq!(events_of(&run, "subagent.run.hook_finished").len(), 1);
    call
}

#[test]
fn a_completed_run_fires_its_hook_once_with_the_result_in_the_runs_directory() {
    let scratch = Scratch::new("hook-complete");
    let hook = recording_hook(&scratch);
    let id = launch(&scratch, &["--task", "echo hello from the agent", "--on-end", &hook]);
    let call = assert_fired_once(&scratch, &id, "complete");
    assert_eq!(call.payload["success"], true);
    assert_eq!(call.payload["results"][0]["output"], "hello from the agent");
    assert_eq!(Path::new(&call.cwd), scratch.work().canonicalize().unwrap());
    let outcome = read_json(&scratch.run_dir(&id).join("hook-end.json")).unwrap();
    assert_eq!(outcome["exitCode"], 0);
    assert_eq!(outcome["firedBy"], "runner");
    assert_eq!(outcome["timedOut"], false);
    // The result the hook read is the published one, with the delivery's key (D7).
    let result = read_json(&scratch.results().join(format!("{id}.json"))).unwrap();
    let mut payload = call.payload.clone();
    let fields = payload.as_object_mut().unwrap();
    assert_eq!(fields.remove("deliveryId"), Some(json!(format!("{id}.1"))));
    assert_eq!(fields.remove("deliveryAttempt"), Some(json!(1)));
    assert_eq!(payload, result);
}

#[test]
fn a_failed_run_fires_its_hook_once() {
    let scratch = Scratch::new("hook-failed");
    let hook = recording_hook(&scratch);
    let id = launch(&scratch, &["--task", "exit 3", "--on-end", &hook]);
    let call = assert_fired_once(&scratch, &id, "failed");
    assert_eq!(call.payload["success"], false);
    assert_eq!(call.payload["results"][0]["exitCode"], 3);
}

#[test]
fn a_stopped_run_fires_its_hook_once() {
    let scratch = Scratch::new("hook-stopped");
    let hook = recording_hook(&scratch);
    let id = launch(&scratch, &["--task", "sleep 30", "--on-end", &hook]);
    let run = scratch.run_dir(&id);
    wait_for("the agent to run", LIMIT, || {
        status(&run)?["steps"][0]["externalProcess"]["pid"].as_u64()
    });
    ok(&scratch.cli(&["stop", &id]).output().unwrap());
    let call = assert_fired_once(&scratch, &id, "stopped");
    assert_eq!(call.payload["stopped"], true);
}

#[test]
fn a_timed_out_run_fires_its_hook_once() {
    let scratch = Scratch::new("hook-timeout");
    let hook = recording_hook(&scratch);
    let id = launch(&scratch, &["--task", "sleep 30", "--timeout", "0.5", "--on-end", &hook]);
    let call = assert_fired_once(&scratch, &id, "failed");
    assert_eq!(call.payload["timedOut"], true);
}

#[test]
fn a_shim_killed_with_sigkill_has_its_hook_fired_once_by_racing_listers() {
    let scratch = Scratch::new("hook-sigkill");
    let hook = recording_hook(&scratch);
    let id = launch(&scratch, &["--task", "sleep 30", "--on-end", &hook]);
    let run = scratch.run_dir(&id);
    let shim = wait_for("the agent to run", LIMIT, || {
        let status = status(&run)?;
        status["steps"][0]["externalProcess"]["pid"].as_u64()?;
        status["pid"].as_u64()
    });
    Command::new("kill")
        .args(["-KILL", &shim.to_string()])
        .status()
        .unwrap();
    wait_for("the shim to die", LIMIT, || {
        (!pid_alive(u32::try_from(shim).unwrap())).then_some(())
    });
    assert!(!run.join("hook-fired").exists(), "nothing fired the hook yet");
    // Two kinds of observers at once, twice over: each finds the run's shim dead.
    let observers: Vec<std::process::Child> = [
        ["list", ""],
        ["status", id.as_str()],
        ["list", ""],
        ["status", id.as_str()],
    ]
    .iter()
    .map(|[command, arg]| {
        let args: Vec<&str> = [*command, *arg].into_iter().filter(|a| !a.is_empty()).collect();
        let mut command = scratch.cli(&args);
        // Each holds between finding the hook due and claiming it: they all claim.
        command
            .env("SUBLAUNCH_TEST_HOOK_CLAIM_DELAY_MS", "300")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        command.spawn().unwrap()
    })
    .collect();
    for observer in observers {
        let output = observer.wait_with_output().unwrap();
        assert!(output.status.success(), "{}", text(&output.stderr));
    }
    let call = assert_fired_once(&scratch, &id, "failed");
    assert_eq!(call.payload["synthesizedFromStatus"], true);
    let error = call.payload["error"].as_str().unwrap_or_default();
    assert!(error.contains(&format!("Async runner process {shim} ")), "{error}");
    let outcome = read_json(&run.join("hook-end.json")).unwrap();
    assert_eq!(outcome["firedBy"], "reconciler");
    assert_eq!(outcome["exitCode"], 0);
}

#[test]
fn a_failing_hook_changes_nothing_of_the_run_and_its_exit_is_recorded() {
    let scratch = Scratch::new("hook-exit3");
    let output = scratch
        .cli(&[
            "run",
            "--agent",
            "shell",
            "--task",
            "echo fine",
            "--wait",
            "--on-end",
            "echo oops >&2; exit 3",
        ])
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "the run's outcome stands: {}",
        text(&output.stderr)
    );
    assert_eq!(text(&output.stdout), "fine\n");
    let id = only_run(&scratch);
    let run = scratch.run_dir(&id);
    let outcome = hook_outcome(&run);
    assert_eq!(outcome["exitCode"], 3, "{outcome:#}");
    assert_eq!(outcome["signal"], Value::Null);
    assert_eq!(outcome["timedOut"], false);
    assert_eq!(outcome["command"], "echo oops >&2; exit 3");
    assert_eq!(std::fs::read_to_string(run.join("hook-end.log")).unwrap(), "oops\n");
    let event = &events_of(&run, "subagent.run.hook_finished")[0];
    assert_eq!(event["exitCode"], 3);
    assert_eq!(status(&run).unwrap()["state"], "complete");
    let result = read_json(&scratch.results().join(format!("{id}.json"))).unwrap();
    assert_eq!(result["success"], true);
    assert_eq!(result["state"], "complete");
}

#[test]
fn a_hanging_hook_is_killed_with_its_group_at_its_time_limit() {
    let scratch = Scratch::new("hook-hang");
    // The time limit comes from the user's settings.
    settings(
        &scratch.path().join("home/.config/sublaunch/settings.json"),
        &serde_json::json!({"subagents": {"onEndTimeoutSeconds": 0.5}}),
    );
    let pids = scratch.path().join("hook-pids");
    let hook = format!("echo $$ > {0}; sleep 30 & echo $! >> {0}; wait", pids.display());
    let output = scratch
        .cli(&[
            "run",
            "--agent",
            "shell",
            "--task",
            "echo fine",
            "--wait",
            "--on-end",
            &hook,
        ])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", text(&output.stderr));
    let id = only_run(&scratch);
    let run = scratch.run_dir(&id);
    let outcome = hook_outcome(&run);
    assert_eq!(outcome["timedOut"], true, "{outcome:#}");
    assert_eq!(outcome["timeoutMs"], 500);
    assert_eq!(outcome["signal"], "SIGKILL");
    assert_eq!(outcome["exitCode"], Value::Null);
    assert!(outcome["durationMs"].as_u64().unwrap() < 10_000, "{outcome:#}");
    for pid in std::fs::read_to_string(&pids).unwrap().lines() {
        let pid: u32 = pid.trim().parse().unwrap();
        wait_for("the hook's processes to end", LIMIT, || (!pid_alive(pid)).then_some(()));
    }
    assert_eq!(status(&run).unwrap()["state"], "complete");
    assert_eq!(
        read_json(&scratch.results().join(format!("{id}.json"))).unwrap()["success"],
        true
    );
}

#[test]
fn the_settings_hook_applies_and_an_empty_flag_turns_it_off() {
    let scratch = Scratch::new("hook-settings");
    let hook = recording_hook(&scratch);
    settings(
        &scratch.path().join("home/.config/sublaunch/settings.json"),
        &serde_json::json!({"subagents": {"onEnd": hook}}),
    );
    let id = launch(&scratch, &["--task", "echo from settings"]);
    assert_fired_once(&scratch, &id, "complete");
    // `--on-end ''` is no hook, whatever the settings say.
    let output = scratch
        .cli(&["run", "--agent", "shell", "--task", "true", "--wait", "--on-end", ""])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", text(&output.stderr));
    let second = scratch.run_dir(text(&output.stderr).lines().next().unwrap().trim());
    assert!(second.join("status.json").exists());
    assert!(!second.join("hook.json").exists() && !second.join("hook-fired").exists());
    assert_eq!(fired(&scratch).len(), 1);
}

#[test]
fn a_trusted_project_settings_hook_runs_and_says_where_it_comes_from() {
    let scratch = Scratch::trusting("hook-project");
    let work = scratch.init_repo();
    let hook = recording_hook(&scratch);
    let settings = settings(
        &work.join(".sublaunch/settings.json"),
        &serde_json::json!({"subagents": {"onEnd": hook}}),
    );
    let output = scratch
        .cli(&["run", "--agent", "shell", "--task", "true", "--wait"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", text(&output.stderr));
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains(&format!(
            "the completion hook comes from this project's settings ({})",
            settings.display()
        )),
        "{stderr}"
    );
    let id = only_run(&scratch);
    assert_fired_once(&scratch, &id, "complete");
}

#[test]
fn an_untrusted_project_settings_file_names_no_hook() {
    let scratch = Scratch::trusting("hook-untrusted");
    let work = scratch.init_repo();
    let hook = recording_hook(&scratch);
    let settings = settings(
        &work.join(".sublaunch/settings.json"),
        &serde_json::json!({"subagents": {"onEnd": hook}}),
    );
    // Anyone may write it: it cannot name a command that runs as you.
    std::fs::set_permissions(&settings, std::fs::Permissions::from_mode(0o666)).unwrap();
    let output: Output = scratch
        .cli(&["run", "--agent", "shell", "--task", "true", "--wait"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", text(&output.stderr));
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains(&format!(
            "ignored the completion hook (subagents.onEnd) in {}",
            settings.display()
        )) && stderr.contains("anyone can write it"),
        "{stderr}"
    );
    // `run --wait` returns after the shim exited: a hook would have run by now.
    let run = scratch.run_dir(&only_run(&scratch));
    wait_terminal(&run, LIMIT);
    runners_gone(&scratch);
    ok(&scratch.cli(&["list", "--all"]).output().unwrap());
    assert!(!run.join("hook.json").exists() && !run.join("hook-fired").exists());
    assert!(!fired_log(&scratch).exists(), "the untrusted hook did not run");
}

#[test]
fn resume_carries_the_source_runs_hook() {
    let scratch = Scratch::new("hook-resume");
    let hook = recording_hook(&scratch);
    let output = scratch
        .cli(&[
            "run",
            "--agent",
            "shell",
            "--task",
            "echo again",
            "--wait",
            "--on-end",
            &hook,
        ])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", text(&output.stderr));
    let source = text(&output.stderr).lines().next().unwrap().trim().to_owned();
    hook_outcome(&scratch.run_dir(&source));
    let output = scratch.cli(&["resume", &source, "--wait"]).output().unwrap();
    assert!(output.status.success(), "{}", text(&output.stderr));
    let resumed = text(&output.stderr).lines().next().unwrap().trim().to_owned();
    assert_ne!(resumed, source);
    hook_outcome(&scratch.run_dir(&resumed));
    let ids: Vec<String> = fired(&scratch).into_iter().map(|c| c.run_id).collect();
    assert_eq!(ids, [source, resumed]);
}

/// The id of the one run under the scratch root.
fn only_run(scratch: &Scratch) -> String {
    let ids: Vec<String> = sublaunch_tests::launch_harness::names_in(&scratch.runs())
        .into_iter()
        .filter(|n| !n.starts_with('.'))
        .collect();
    assert_eq!(ids.len(), 1, "{ids:?}");
    ids[0].clone()
}
