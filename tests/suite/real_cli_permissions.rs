//! The permission contract against the real agent CLIs (rule G12): the fake model server's
//! scripted reply asks for a tool the step may not use, the CLI's own control refuses it, and
//! the run still ends truthfully (the state and answer the CLI reported). Each denial is
//! checked beside the same script with the permission left out, which does run the tool, so
//! the denial is the contract's doing and not the script's.

use crate::real_cli_runs::World;
use serde_json::{Value, json};
use std::path::Path;
use sublaunch_tests::model_server::{Reply, Request, Scope};
use sublaunch_tests::real_agents::PiApi;

/// The `tool_result` blocks of an Anthropic Messages request's last message.
fn tool_results(request: &Request) -> Vec<Value> {
    let messages = request.body["messages"].as_array().cloned().unwrap_or_default();
    let last = messages.last().cloned().unwrap_or(Value::Null);
    last["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|block| block["type"] == "tool_result")
        .cloned()
        .collect()
}

/// The names of the tools an Anthropic Messages request offers.
fn offered_tools(request: &Request) -> Vec<String> {
    request.body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["name"].as_str().map(str::to_owned))
        .collect()
}

/// Scripts a call of `tool` running `touch marker`, then the answer `done`; runs `args`;
/// returns (whether `marker` was created, the request that followed the tool call, stdout).
fn attempt(world: &World, scope: &Scope, tool: &str, marker: &Path, args: &[&str]) -> (bool, Request, String) {
    attempt_command(world, scope, tool, marker, &format!("touch {}", marker.display()), args)
}

/// [`attempt`] with another command that creates `marker`.
fn attempt_command(
    world: &World,
    scope: &Scope,
    tool: &str,
    marker: &Path,
    command: &str,
    args: &[&str],
) -> (bool, Request, String) {
    let _ = std::fs::remove_file(marker);
    // Codex's shell tool takes `cmd`; Claude Code's and pi's take `command`.
    let input = if tool == "exec_command" {
        json!({"cmd": command})
    } else {
        json!({"command": command})
    };
    scope.replies([Reply::tool_call(tool, input), Reply::text("done")]);
    let before = scope.main_requests().len();
    let (_, stdout) = world.run_ok(args);
    let requests = scope.main_requests();
    assert_eq!(requests.len(), before + 2, "{}", scope.dump());
    (marker.exists(), requests[before + 1].clone(), stdout)
}

#[test]
fn claude_code_refuses_a_denied_rule_and_an_excluded_tool_and_the_run_still_answers() {
    let world = World::with_pi_api("real-permissions-claude", PiApi::AnthropicMessages);
    let marker = world.scratch.work().join("claude-touched");
    // Control: a writer's Bash is pre-approved, so the scripted command runs.
    let (touched, _, stdout) = attempt(
        &world,
        &world.claude,
        "Bash",
        &marker,
        &["--agent", "claude-writer", "--task", "t"],
    );
    assert!(touched, "without a deny rule the command runs: {}", world.claude.dump());
    assert_eq!(stdout, "done\n");

    // A deny rule with an argument pattern: Claude Code refuses that command.
    let (touched, next, stdout) = attempt(
        &world,
        &world.claude,
        "Bash",
        &marker,
        &["--agent", "claude-writer", "--task", "t", "--deny", "Bash(touch *)"],
    );
    assert!(!touched, "the denied command did not run");
    let results = tool_results(&next);
    assert_eq!(results.len(), 1, "{next:?}");
    assert_eq!(
        results[0]["is_error"], true,
        "Claude Code told the model it was refused: {results:?}"
    );
    assert_eq!(stdout, "done\n", "the run ends with the answer the CLI reported");

    // An excluded tool is not offered at all, and a call of it anyway is refused.
    let (touched, next, stdout) = attempt(
        &world,
        &world.claude,
        "Bash",
        &marker,
        &["--agent", "claude-writer", "--task", "t", "--exclude-tools", "Bash"],
    );
    assert!(!touched);
    let first = &world.claude.main_requests()[world.claude.main_requests().len() - 2];
    assert!(
        !offered_tools(first).contains(&"Bash".to_owned()),
        "{:?}",
        offered_tools(first)
    );
    assert_eq!(tool_results(&next)[0]["is_error"], true, "{next:?}");
    assert_eq!(stdout, "done\n");

    // An allow rule narrows its tool: only the commands it matches run without asking, and
    // nobody answers a prompt, so any other command is refused; one it matches runs. (Through
    // `sh -c`: a writer's acceptEdits mode accepts plain file commands such as `touch` in its
    // directory without asking, rules or not.)
    let command = format!("sh -c 'touch {}'", marker.display());
    let narrowed = [
        "--agent",
        "claude-writer",
        "--task",
        "t",
        "--tools",
        "Read,Bash",
        "--allow",
    ];
    let git_only: Vec<&str> = narrowed.iter().copied().chain(["Bash(git *)"]).collect();
    let (touched, next, stdout) = attempt_command(&world, &world.claude, "Bash", &marker, &command, &git_only);
    assert!(!touched, "a command no allow rule matches is refused, not asked");
    assert_eq!(tool_results(&next)[0]["is_error"], true, "{next:?}");
    assert_eq!(stdout, "done\n");
    let touch_too: Vec<&str> = narrowed.iter().copied().chain(["Bash(sh *)"]).collect();
    let (touched, _, _) = attempt_command(&world, &world.claude, "Bash", &marker, &command, &touch_too);
    assert!(
        touched,
        "the command its allow rule matches runs: {}",
        world.claude.dump()
    );

    // The read-only agent listing Bash in its tools (the issue's `tools: ["Read,Bash"]`):
    // the step does not get it.
    let (touched, _, stdout) = attempt(
        &world,
        &world.claude,
        "Bash",
        &marker,
        &["--agent", "claude", "--task", "t", "--tools", "Read,Bash"],
    );
    assert!(!touched, "a read-only step never has Bash");
    assert_eq!(stdout, "done\n");
}

#[test]
fn pi_refuses_an_excluded_tool_and_the_run_still_answers() {
    let world = World::with_pi_api("real-permissions-pi", PiApi::AnthropicMessages);
    let marker = world.scratch.work().join("pi-touched");
    let pi = ["--agent", "pi", "--model", "fake/fake-model", "--task", "t"];
    let (touched, _, stdout) = attempt(&world, &world.pi, "bash", &marker, &pi);
    assert!(touched, "pi's bash runs by default: {}", world.pi.dump());
    assert_eq!(stdout, "done\n");

    for extra in [
        &["--exclude-tools", "bash"][..],
        &["--mode", "read-only"],
        &["--tools", "read"],
    ] {
        let args: Vec<&str> = pi.iter().chain(extra).copied().collect();
        let (touched, next, stdout) = attempt(&world, &world.pi, "bash", &marker, &args);
        assert!(!touched, "{extra:?}: the excluded tool did not run");
        let first = &world.pi.main_requests()[world.pi.main_requests().len() - 2];
        assert!(
            !offered_tools(first).contains(&"bash".to_owned()),
            "{extra:?}: {:?}",
            offered_tools(first)
        );
        assert_eq!(tool_results(&next)[0]["is_error"], true, "{extra:?}: {next:?}");
        assert_eq!(stdout, "done\n");
    }
}

/// What Codex told the model its tool call produced (the `function_call_output` items of a
/// Responses request).
fn call_outputs(request: &Request) -> Vec<String> {
    request.body["input"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|item| item["type"] == "function_call_output")
        .map(|item| item["output"].to_string())
        .collect()
}

#[test]
fn codex_in_its_read_only_sandbox_cannot_write_and_the_run_still_answers() {
    let world = World::with_pi_api("real-permissions-codex", PiApi::AnthropicMessages);
    let marker = world.scratch.work().join("codex-touched");
    // Control: a writer's workspace-write sandbox lets the command write in its directory.
    let (touched, next, stdout) = attempt(
        &world,
        &world.codex,
        "exec_command",
        &marker,
        &["--agent", "codex-writer", "--task", "t"],
    );
    assert!(touched, "a writer's command runs: {:?}", call_outputs(&next));
    assert_eq!(stdout, "done\n");
    // G50: Codex in its own sandbox runs without a PID namespace (its bubblewrap never finishes
    // a command inside one), and the record says so.
    let listed = world.sublaunch(&["list", "--all", "--json", "--limit", "1"]);
    let listed: Value = serde_json::from_slice(&listed.stdout).unwrap();
    let id = listed[0]["runId"].as_str().unwrap().to_owned();
    let status = world.sublaunch(&["status", &id, "--json"]);
    let status: Value = serde_json::from_slice(&status.stdout).unwrap();
    let process = &status["steps"][0]["externalProcess"];
    assert_eq!(process["containment"], "process-group", "{status}");
    assert!(
        process["containmentNote"]
            .as_str()
            .unwrap_or_default()
            .contains("Codex's own sandbox"),
        "{status}"
    );
    // The run's mode makes the writer read-only: Codex's own sandbox refuses the write.
    let (touched, next, stdout) = attempt(
        &world,
        &world.codex,
        "exec_command",
        &marker,
        &["--agent", "codex-writer", "--task", "t", "--mode", "read-only"],
    );
    assert!(
        !touched,
        "the read-only sandbox refused the write: {:?}",
        call_outputs(&next)
    );
    let outputs = call_outputs(&next);
    assert!(
        outputs.len() == 1 && outputs[0].contains("Read-only file system"),
        "Codex's sandbox, not the script, refused it: {outputs:?}"
    );
    assert_eq!(stdout, "done\n", "the run ends with the answer Codex reported");
}
