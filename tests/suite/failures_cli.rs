//! Nothing lost at the end (D1, D2): a step that ends without its final answer keeps what its
//! agent said, marked partial, and a resume continues it; every failure is named by one word
//! of the vocabulary, the same in the status, the result, `--json`, MCP, the completion hook
//! and the exit code. The agents are the real CLIs behind the fake model server.

use crate::real_cli_runs::World;
use serde_json::{Value, json};
use std::time::Duration;
use sublaunch_tests::cli::{ok, text};
use sublaunch_tests::launch_harness::{processes_with, status, wait_for};
use sublaunch_tests::model_server::Reply;
use sublaunch_tests::real_agents::PiApi;

const LIMIT: Duration = Duration::from_secs(60);

fn json_of(output: &std::process::Output) -> Value {
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&output.stderr)))
}

fn run_id(output: &std::process::Output) -> String {
    text(&output.stderr).lines().next().unwrap_or_default().to_owned()
}

/// What the model says before the tool call that outlasts the step.
const SAID: &str = "I found the bug in lexer.rs: the escape table skips the tab character.";

/// pi explains what it found, then runs a tool that outlasts the step; asked to go on, it
/// finishes.
fn script_a_fix_cut_short(world: &World) {
    world.pi.replies([
        Reply::tool_call("bash", json!({"command": "sleep 60"})).saying(SAID),
        Reply::text("Fixed the escape table."),
    ]);
}

/// SIGKILL to `pid`, as the OOM killer or a machine going down ends a process.
fn kill(pid: i32) {
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(pid).unwrap(),
        rustix::process::Signal::KILL,
    )
    .unwrap();
}

#[test]
fn a_timeout_mid_tool_keeps_what_pi_said_everywhere_and_resume_continues_it() {
    let world = World::with_pi_api("fail-timeout", PiApi::AnthropicMessages);
    script_a_fix_cut_short(&world);
    let output = world.run(&[
        "--agent",
        "pi",
        "--model",
        "fake/fake-model",
        "--task",
        "fix",
        "--timeout",
        "4",
    ]);
    assert_eq!(
        output.status.code(),
        Some(12),
        "a timeout's exit code: {}",
        text(&output.stderr)
    );
    let id = run_id(&output);

    let result = world.result(&id);
    assert_eq!(result["failureKind"], "timeout", "{result}");
    let step = &result["steps"][0];
    assert_eq!(step["failureKind"], "timeout", "{result}");
    assert_eq!(step["outputPartial"], true, "{result}");
    assert_eq!(step["output"], SAID, "{result}");
    // The state people read keeps its message; the word sits beside it.
    let seen = json_of(&world.sublaunch(&["status", &id, "--json"]));
    assert_eq!(seen["failureKind"], "timeout", "{seen}");
    assert!(
        seen["error"].as_str().unwrap().starts_with("Subagent timed out after "),
        "{seen}"
    );
    let shown = ok(&world.sublaunch(&["status", &id]));
    assert!(shown.contains("failure  timeout"), "{shown}");
    let listed = json_of(&world.sublaunch(&["list", "--all", "--json"]));
    let mine = listed
        .as_array()
        .into_iter()
        .flatten()
        .find(|r| r["runId"] == id.as_str())
        .cloned()
        .unwrap_or(Value::Null);
    assert_eq!(mine["failureKind"], "timeout", "{listed}");
    // `result` exits as `run --wait` did.
    let again = world.sublaunch(&["result", &id]);
    assert_eq!(again.status.code(), Some(12));
    // MCP answers carry it too.
    let mut session = sublaunch_tests::mcp_session::Session::spawn(world.command(&["mcp"]));
    let answer = session.request("tools/call", json!({"name": "status", "arguments": {"runId": id}}));
    assert_eq!(
        answer["result"]["structuredContent"]["failureKind"], "timeout",
        "{answer}"
    );
    drop(session);

    // The follow-up continues pi's conversation: what it said is in the model's context.
    let resumed = world.sublaunch(&["resume", &id, "--task", "finish the fix", "--wait"]);
    assert_eq!(ok(&resumed).trim(), "Fixed the escape table.");
    let requests = world.pi.main_requests();
    let last = requests.last().unwrap().body.to_string();
    assert!(
        last.contains(SAID) && last.contains("finish the fix"),
        "{}",
        world.pi.dump()
    );
}

#[test]
fn claude_code_killed_mid_tool_is_killed_and_keeps_what_it_said() {
    let world = World::with_pi_api("fail-killed", PiApi::AnthropicMessages);
    // A wait of its own length marks the tool's process (Claude Code refuses a bare sleep and
    // commands with comments).
    let mark = format!("97.{}", 100 + std::process::id() % 900);
    world.claude.replies([Reply::tool_call(
        "Bash",
        json!({"command": format!("timeout {mark} tail -f /dev/null || true")}),
    )
    .saying(SAID)]);
    let launched = world.sublaunch(&["run", "--agent", "claude-writer", "--task", "fix"]);
    let id = ok(&launched).lines().next().unwrap().trim().to_owned();
    let run = world.scratch.run_dir(&id);
    // Once its tool runs, the agent's process dies outright (the OOM killer, say).
    wait_for("the tool to run", LIMIT, || {
        (!processes_with(&mark).is_empty()).then_some(())
    });
    let agent = status(&run).unwrap()["steps"][0]["externalProcess"]["pid"]
        .as_u64()
        .expect("the agent's pid") as i32;
    kill(agent);
    let waited = world.sublaunch(&["wait", &id]);
    assert_eq!(waited.status.code(), Some(16), "{}", text(&waited.stderr));
    let result = world.result(&id);
    assert_eq!(result["failureKind"], "killed", "{result}");
    let log = std::fs::read_to_string(run.join("output-0.log")).unwrap_or_default();
    assert_eq!(result["steps"][0]["outputPartial"], true, "{result}\n{log}");
    assert_eq!(result["steps"][0]["output"], SAID, "{result}");
    for pid in processes_with(&mark) {
        let _ = rustix::process::kill_process(
            rustix::process::Pid::from_raw(pid as i32).unwrap(),
            rustix::process::Signal::KILL,
        );
    }
}

#[test]
fn each_failure_is_one_word_in_the_result_the_status_the_hook_and_the_exit_code() {
    let world = World::with_pi_api("fail-kinds", PiApi::AnthropicMessages);
    let hook_out = world.scratch.path().join("hook-kind");
    let hook = format!(
        "printf '%s %s\\n' \"$SUBLAUNCH_FAILURE_KIND\" \"$(grep -o '\"failureKind\":\"[a-z-]*\"' | head -1)\" >> {}",
        hook_out.display()
    );
    let pi = ["--agent", "pi", "--model", "fake/fake-model"];
    // (what, arguments, the kind, the exit code)
    world.pi.replies([
        Reply::error(400, "prompt is too long: 300000 tokens > 200000 maximum"),
        Reply::text("a long answer").usage(5000, 0, 0, 0),
    ]);
    let cases: Vec<(&str, Vec<&str>, &str, i32)> = vec![
        (
            "the API refused",
            [&pi[..], &["--task", "x"]].concat(),
            "agent-error",
            1,
        ),
        (
            "over budget",
            [&pi[..], &["--task", "y", "--max-tokens", "100"]].concat(),
            "budget",
            14,
        ),
        (
            "past the deadline",
            vec!["--agent", "shell", "--task", "sleep 60", "--deadline", "DEADLINE"],
            "deadline",
            13,
        ),
    ];
    for (what, args, kind, code) in cases {
        let deadline = (std::time::SystemTime::now() + Duration::from_secs(2))
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis()
            .to_string();
        let args: Vec<&str> = args
            .iter()
            .map(|a| if *a == "DEADLINE" { deadline.as_str() } else { a })
            .collect();
        let output = world.run(&[&args[..], &["--on-end", &hook]].concat());
        assert_eq!(output.status.code(), Some(code), "{what}: {}", text(&output.stderr));
        let id = run_id(&output);
        let result = world.result(&id);
        assert_eq!(result["failureKind"], kind, "{what}: {result}");
        assert_eq!(result["steps"][0]["failureKind"], kind, "{what}: {result}");
        let seen = json_of(&world.sublaunch(&["status", &id, "--json"]));
        assert_eq!(seen["failureKind"], kind, "{what}: {seen}");
        if kind == "agent-error" {
            // The API's message is in the error people read.
            assert!(seen["error"].as_str().unwrap().contains("prompt is too long"), "{seen}");
        }
        let hooked = wait_for("the hook", LIMIT, || {
            let lines = std::fs::read_to_string(&hook_out).ok()?;
            lines.lines().last().filter(|l| l.starts_with(kind)).map(str::to_owned)
        });
        assert_eq!(hooked, format!("{kind} \"failureKind\":\"{kind}\""), "{what}");
    }
    // A step after a failed one never starts; the run fails as its failed step did.
    let chain = sublaunch_tests::cli::write(
        &world.scratch.path().join("two.json"),
        &json!({"steps": [
            {"agent": "shell", "task": "echo broken >&2; exit 3"},
            {"agent": "shell", "task": "echo never"}
        ]})
        .to_string(),
    );
    let output = world.run(&["--chain", chain.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output.stderr));
    let result = world.result(&run_id(&output));
    assert_eq!(result["failureKind"], "agent-error", "{result}");
    assert_eq!(result["steps"][1]["failureKind"], "not-started", "{result}");

    // Stopped on request: `wait` exits with the stop's code.
    let launched = world.sublaunch(&["run", "--agent", "shell", "--task", "sleep 60"]);
    let id = ok(&launched).lines().next().unwrap().trim().to_owned();
    wait_for("the run to start", LIMIT, || {
        (status(&world.scratch.run_dir(&id))?["state"] == "running").then_some(())
    });
    ok(&world.sublaunch(&["stop", &id]));
    let waited = world.sublaunch(&["wait", &id, "--json"]);
    assert_eq!(waited.status.code(), Some(15), "{}", text(&waited.stderr));
    assert_eq!(json_of(&waited)["failureKind"], "stopped");

    // A runner that dies is named as lost.
    let launched = world.sublaunch(&["run", "--agent", "shell", "--task", "sleep 60"]);
    let id = ok(&launched).lines().next().unwrap().trim().to_owned();
    let run = world.scratch.run_dir(&id);
    let shim = wait_for("the run to start", LIMIT, || {
        let seen = status(&run)?;
        (seen["state"] == "running").then(|| seen["pid"].as_u64()).flatten()
    });
    kill(shim as i32);
    let waited = world.sublaunch(&["wait", &id]);
    assert_eq!(waited.status.code(), Some(19), "{}", text(&waited.stderr));
    assert_eq!(
        json_of(&world.sublaunch(&["status", &id, "--json"]))["failureKind"],
        "runner-lost"
    );
}

#[test]
fn a_run_the_machine_went_down_under_is_host_lost_keeps_what_pi_said_and_resumes() {
    let world = World::with_pi_api("fail-reboot", PiApi::AnthropicMessages);
    script_a_fix_cut_short(&world);
    // The kernel's boot id, as the test build reads it: a new one is a new boot.
    let boot = world.scratch.path().join("boot-id");
    sublaunch_tests::cli::write(&boot, "first-boot");
    let env = [("SUBLAUNCH_TEST_BOOT_ID_FILE", boot.clone())];
    let launched = world.sublaunch_with(
        &["run", "--agent", "pi", "--model", "fake/fake-model", "--task", "fix"],
        &env,
    );
    let id = ok(&launched).lines().next().unwrap().trim().to_owned();
    let run = world.scratch.run_dir(&id);
    // The runner saves what pi said while the tool runs.
    wait_for("pi's text to be saved", LIMIT, || {
        let saved = std::fs::read_to_string(run.join("partial-0.json")).ok()?;
        saved.contains("escape table").then_some(())
    });
    let shim = status(&run).unwrap()["pid"].as_u64().unwrap();
    assert_eq!(status(&run).unwrap()["bootId"], "first-boot");
    // The machine goes down: every process of the run dies at once, the state root stays.
    kill(shim as i32);
    wait_for("the runner to be gone", LIMIT, || {
        (!sublaunch_tests::launch_harness::pid_alive(shim as u32)).then_some(())
    });
    sublaunch_tests::cli::write(&boot, "second-boot");
    let seen = json_of(&world.sublaunch_with(&["status", &id, "--json"], &env));
    assert_eq!(seen["state"], "failed", "{seen}");
    assert_eq!(seen["failureKind"], "host-lost", "{seen}");
    assert!(
        seen["error"]
            .as_str()
            .unwrap()
            .starts_with("The machine restarted while the run ran. "),
        "{seen}"
    );
    let waited = world.sublaunch_with(&["wait", &id], &env);
    assert_eq!(waited.status.code(), Some(20), "{}", text(&waited.stderr));
    // The result is made from the status and what pi had said.
    let result = world.sublaunch_with(&["result", &id, "--json"], &env);
    assert_eq!(result.status.code(), Some(20), "{}", text(&result.stderr));
    let result = json_of(&result);
    assert_eq!(result["failureKind"], "host-lost", "{result}");
    assert_eq!(result["steps"][0]["failureKind"], "host-lost", "{result}");
    assert_eq!(result["steps"][0]["outputPartial"], true, "{result}");
    assert_eq!(result["steps"][0]["output"], SAID, "{result}");
    // And the follow-up continues pi's conversation.
    let resumed = world.sublaunch_with(&["resume", &id, "--task", "finish the fix", "--wait"], &env);
    assert_eq!(ok(&resumed).trim(), "Fixed the escape table.");
    let last = world.pi.main_requests().last().unwrap().body.to_string();
    assert!(
        last.contains(SAID) && last.contains("finish the fix"),
        "{}",
        world.pi.dump()
    );
}
