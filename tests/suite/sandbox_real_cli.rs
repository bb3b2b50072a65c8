//! The OS sandbox around the real agent CLIs behind the fake model server (rules G22, G28,
//! G34): Claude Code, Codex and pi each run to completion under `--sandbox workspace` (their
//! own state is writable, nothing else of the home is), and a Bash tool call Claude Code
//! itself allows that writes outside the working directory is denied by the OS sandbox
//! alone — the same call without the sandbox writes the file. Codex's own sandbox gives way
//! to sublaunch's (`danger-full-access`, which Codex tells its model), and the record says so.

use crate::real_cli_runs::{World, only_request};
use serde_json::json;
use sublaunch_tests::cli::{ok, write};
use sublaunch_tests::model_server::Reply;
use sublaunch_tests::real_agents::PiApi;

/// A Claude Code writer whose Bash Claude Code runs without asking.
fn bash_writer(world: &World) {
    write(
        &world.scratch.work().join(".sublaunch/agents/bash-writer.md"),
        "---\nname: bash-writer\nrunner: {type: external-cli, adapter: claude-code-writer}\ntools: Bash, Read, Write\n---\n",
    );
}

fn bash_calls(world: &World, inside: &std::path::Path, outside: &std::path::Path) {
    world.claude.replies([
        Reply::tool_call("Bash", json!({"command": format!("echo in > {}", inside.display())})),
        Reply::tool_call("Bash", json!({"command": format!("echo out > {}", outside.display())})),
        Reply::text("tried both"),
    ]);
}

#[test]
fn claude_codes_own_control_allows_the_write_outside_and_the_os_sandbox_alone_denies_it() {
    let world = World::with_pi_api("sandbox-claude", PiApi::AnthropicMessages);
    bash_writer(&world);
    let inside = world.scratch.work().join("inside.txt");
    let outside = world.scratch.path().join("outside.txt");

    // The control: without the sandbox Claude Code's own permissions let both writes through.
    bash_calls(&world, &inside, &outside);
    let (_, stdout) = world.run_ok(&["--agent", "bash-writer", "--task", "write both"]);
    assert_eq!(stdout, "tried both\n");
    assert!(inside.exists() && outside.exists(), "{}", world.claude.dump());
    std::fs::remove_file(&inside).unwrap();
    std::fs::remove_file(&outside).unwrap();

    bash_calls(&world, &inside, &outside);
    let (id, stdout) = world.run_ok(&[
        "--agent",
        "bash-writer",
        "--sandbox",
        "workspace",
        "--task",
        "write both",
    ]);
    assert_eq!(stdout, "tried both\n");
    assert!(inside.exists(), "the workspace is writable: {}", world.claude.dump());
    assert!(!outside.exists(), "the OS sandbox denies the write outside");
    let last = world.claude.main_requests().last().unwrap().body.to_string();
    assert!(last.contains("Permission denied"), "Claude Code saw the denial: {last}");
    let sandbox = &world.result(&id)["steps"][0]["sandbox"];
    assert_eq!(sandbox["profile"], "workspace", "{sandbox}");
}

#[test]
fn codex_pi_and_a_read_only_claude_run_to_completion_inside_the_sandbox_and_codex_gives_its_own_sandbox_up() {
    let world = World::with_pi_api("sandbox-codex-pi", PiApi::AnthropicMessages);
    world.codex.replies([Reply::text("codex inside")]);
    let (id, stdout) = world.run_ok(&["--agent", "codex-writer", "--sandbox", "workspace", "--task", "look"]);
    assert_eq!(stdout, "codex inside\n");
    let request = only_request(&world.codex).body.to_string();
    assert!(request.contains("danger-full-access"), "{request}");
    let sandbox = &world.result(&id)["steps"][0]["sandbox"];
    assert!(
        sandbox["notes"].to_string().contains("Codex's own sandbox"),
        "{sandbox}"
    );

    world.claude.replies([Reply::text("claude reads")]);
    let output = world.run(&["--agent", "claude", "--sandbox", "read-only", "--task", "look"]);
    assert_eq!(
        ok(&output),
        "claude reads\n",
        "Claude Code starts with only its own state writable"
    );

    world.pi.replies([Reply::text("pi inside")]);
    let output = world.run(&[
        "--agent",
        "pi",
        "--model",
        "fake/fake-model",
        "--sandbox",
        "workspace",
        "--task",
        "look",
    ]);
    assert_eq!(ok(&output), "pi inside\n");
}
