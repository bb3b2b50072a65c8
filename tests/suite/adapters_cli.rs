//! The adapters end to end (command lines, model verification, structured output) through the real `sublaunch` and shim:
//! fake `pi`, `claude`, `codex` and `cursor-agent` programs record the argv and standard input
//! they were given and answer in their tools' output formats; a `command` agent is held to an
//! output schema; pi's reported model is verified against the plan.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Output;
use sublaunch_tests::cli::{executable, text, write};
use sublaunch_tests::launch_harness::{Scratch, read_json};

/// Shell lines every fake starts with: its argv, one per line, and its stdin go to
/// `<cwd>/<name>.argv` and `<cwd>/<name>.stdin`.
fn recorder(name: &str, reads_stdin: bool) -> String {
    let stdin = if reads_stdin { "cat" } else { ": </dev/null" };
    format!("#!/bin/sh\nprintf '%s\\n' \"$@\" > {name}.argv\n{stdin} > {name}.stdin\n")
}

/// Installs the fakes in `<scratch>/fake-bin`.
fn fake_clis(scratch: &Scratch) -> PathBuf {
    let bin = scratch.path().join("fake-bin");
    // pi reports the model of `reported-model` in its cwd when present, else its --model.
    let pi = recorder("pi", false)
        + "model=$(cat reported-model 2>/dev/null)\n\
           prev=; for a; do [ \"$prev\" = --model ] && [ -z \"$model\" ] && model=$a; prev=$a; done\n\
           echo '{\"type\":\"agent_start\"}'\n\
           printf '{\"type\":\"message_end\",\"message\":{\"role\":\"assistant\",\"model\":\"%s\",\"content\":[{\"type\":\"text\",\"text\":\"done by pi\"}],\"stopReason\":\"stop\"}}\\n' \"$model\"\n";
    let claude = recorder("claude", true)
        + "echo '{\"type\":\"system\",\"subtype\":\"init\"}'\n\
           echo '{\"type\":\"assistant\",\"message\":{\"content\":[{\"type\":\"text\",\"text\":\"thinking\"}]}}'\n\
           echo '{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":false,\"result\":\"done by claude\"}'\n";
    let codex = recorder("codex", true)
        + "out=; prev=; for a; do [ \"$prev\" = --output-last-message ] && out=$a; prev=$a; done\n\
           echo '{\"type\":\"thread.started\"}'\n\
           printf 'done by codex' > \"$out\"\n\
           echo '{\"type\":\"item.completed\",\"item\":{\"type\":\"agent_message\",\"text\":\"an earlier message\"}}'\n";
    // Cursor's documented stream-json: an init event with the chat's session id, then the
    // result; like Claude Code it exits 1 when the result is an error.
    let cursor = recorder("cursor-agent", false)
        + "echo '{\"type\":\"system\",\"subtype\":\"init\",\"session_id\":\"c0ffee\",\"model\":\"gpt-5\"}'\n\
           echo '{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":true,\"result\":\"quota exhausted\",\"session_id\":\"c0ffee\"}'\n\
           exit 1\n";
    for (name, script) in [
        ("pi", pi),
        ("claude", claude),
        ("codex", codex),
        ("cursor-agent", cursor),
    ] {
        executable(&bin.join(name), &script);
    }
    bin
}

fn run(scratch: &Scratch, bin: &Path, args: &[&str]) -> Output {
    scratch
        .cli(args)
        .env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
        .output()
        .unwrap()
}

/// `run … --wait --json`: the end object.
fn run_json(scratch: &Scratch, bin: &Path, args: &[&str]) -> Value {
    let mut all = vec!["run"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--wait", "--json"]);
    let output = run(scratch, bin, &all);
    serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", text(&output.stdout), text(&output.stderr)))
}

fn recorded(scratch: &Scratch, name: &str, what: &str) -> String {
    std::fs::read_to_string(scratch.work().join(format!("{name}.{what}")))
        .unwrap_or_else(|e| panic!("{name}.{what}: {e}"))
}

/// The step results of a finished run (`<root>/results/<id>.json`).
fn step_results(scratch: &Scratch, end: &Value) -> Vec<Value> {
    let id = end["runId"].as_str().unwrap();
    let result = read_json(&scratch.results().join(format!("{id}.json")))
        .unwrap_or_else(|| panic!("no result file for {id} in {}", scratch.results().display()));
    result["results"].as_array().cloned().unwrap_or_default()
}

#[test]
fn pi_gets_its_json_mode_argv_and_its_final_message_is_the_output() {
    let scratch = Scratch::new("adapter-pi");
    let bin = fake_clis(&scratch);
    let end = run_json(
        &scratch,
        &bin,
        &[
            "--agent",
            "pi",
            "--model",
            "anthropic/claude-sonnet-4-5",
            "--thinking",
            "low",
            "--task=-n is a flag",
        ],
    );
    assert_eq!(end["state"], "complete", "{end}");
    let argv = recorded(&scratch, "pi", "argv");
    // The conversation is saved in the run's directory, so a follow-up can continue it.
    let sessions = scratch.run_dir(end["runId"].as_str().unwrap()).join("pi-sessions-0");
    assert_eq!(
        argv,
        format!(
            "--mode\njson\n-p\n--session-dir\n{}\n--model\nanthropic/claude-sonnet-4-5\n--thinking\nlow\n--no-approve\n--\n-n is a flag\n",
            sessions.display()
        ),
        "a task starting with '-' comes after '--'"
    );
    let results = step_results(&scratch, &end);
    assert!(results[0].to_string().contains("done by pi"), "{results:?}");
}

#[test]
fn claude_and_codex_read_the_task_on_stdin_with_their_documented_flags() {
    let scratch = Scratch::new("adapter-claude-codex");
    let bin = fake_clis(&scratch);
    let end = run_json(&scratch, &bin, &["--agent", "claude", "--task", "review the lexer"]);
    assert_eq!(end["state"], "complete", "{end}");
    assert_eq!(
        recorded(&scratch, "claude", "argv"),
        "-p\n--output-format\nstream-json\n--verbose\n--allowedTools\nRead,Grep,Glob,LS\n\
         --disallowedTools\nBash,Edit,MultiEdit,Write,NotebookEdit\n--strict-mcp-config\n\
         --permission-prompts\nnone\n--setting-sources\nuser\n",
        "in a project the user has not trusted, pi and Claude Code leave its own configuration alone"
    );
    assert_eq!(recorded(&scratch, "claude", "stdin"), "review the lexer");
    assert!(step_results(&scratch, &end)[0].to_string().contains("done by claude"));

    let end = run_json(&scratch, &bin, &["--agent", "claude-writer", "--task", "fix it"]);
    assert_eq!(end["state"], "complete", "{end}");
    let argv = recorded(&scratch, "claude", "argv");
    assert!(argv.contains("--permission-mode\nacceptEdits\n"), "{argv}");
    assert!(!argv.contains("--disallowedTools"), "{argv}");
    assert!(
        !argv.contains("--strict-mcp-config"),
        "a writer keeps the user's MCP servers: {argv}"
    );

    let end = run_json(
        &scratch,
        &bin,
        &["--agent", "codex-writer", "--task", "write the tests"],
    );
    assert_eq!(end["state"], "complete", "{end}");
    let argv = recorded(&scratch, "codex", "argv");
    let lines: Vec<&str> = argv.lines().collect();
    assert_eq!(
        lines[..8],
        [
            "exec",
            "--json",
            "--skip-git-repo-check",
            "--sandbox",
            "workspace-write",
            "-c",
            "approval_policy=\"never\"",
            "--output-last-message"
        ],
        "it never asks for approval (G9)"
    );
    assert!(lines[8].ends_with("/last-message-0.txt"), "{argv}");
    assert_eq!(lines[9..], ["-"]);
    assert_eq!(recorded(&scratch, "codex", "stdin"), "write the tests");
    let results = step_results(&scratch, &end).remove(0).to_string();
    assert!(
        results.contains("done by codex"),
        "the last-message file wins over events: {results}"
    );
}

/// G8, G9, G10, G11: the run's permission flags reach each CLI as its own controls, after the planner
/// combined them with the agent's; what a CLI cannot enforce never starts it.
#[test]
fn permission_flags_become_each_clis_own_controls() {
    let scratch = Scratch::new("adapter-permissions");
    let bin = fake_clis(&scratch);
    let lines = |name: &str| -> Vec<String> { recorded(&scratch, name, "argv").lines().map(str::to_owned).collect() };
    let after = |argv: &[String], flag: &str| -> Option<String> {
        argv.iter()
            .position(|a| a == flag)
            .and_then(|i| argv.get(i + 1).cloned())
    };
    // Claude Code (writer): the listed tools exist, they and the allow rule are pre-approved,
    // the exclusion, the deny rule and sublaunch itself are refused, nothing asks.
    let end = run_json(
        &scratch,
        &bin,
        &[
            "--agent",
            "claude-writer",
            "--task",
            "t",
            "--tools",
            "read,Bash,Edit",
            "--exclude-tools",
            "Edit",
            "--allow",
            "Bash(git *)",
            "--deny",
            "Bash(rm *)",
            "--no-nested",
        ],
    );
    assert_eq!(end["state"], "complete", "{end}");
    let argv = lines("claude");
    assert_eq!(after(&argv, "--tools").as_deref(), Some("Read,Bash"), "{argv:?}");
    assert_eq!(
        after(&argv, "--allowedTools").as_deref(),
        Some("Read,Bash(git *)"),
        "{argv:?}"
    );
    assert_eq!(
        after(&argv, "--disallowedTools").as_deref(),
        Some("Edit,Bash(rm *),mcp__sublaunch,Bash(sublaunch *)"),
        "{argv:?}"
    );
    assert_eq!(after(&argv, "--permission-mode").as_deref(), Some("acceptEdits"));
    assert_eq!(after(&argv, "--permission-prompts").as_deref(), Some("none"));
    // G6: what the step ran with, from the run's own records.
    let ran_with = serde_json::json!({"tools": ["read", "Bash"], "excludeTools": ["Edit"],
        "allow": ["Bash(git *)"], "deny": ["Bash(rm *)"], "mode": "writer", "nested": false});
    let id = end["runId"].as_str().unwrap();
    let result = run(&scratch, &bin, &["result", id, "--json"]);
    let result: Value = serde_json::from_slice(&result.stdout).unwrap();
    assert_eq!(result["steps"][0]["permissions"], ran_with, "{result}");
    let status = run(&scratch, &bin, &["status", id, "--json"]);
    let status: Value = serde_json::from_slice(&status.stdout).unwrap();
    assert_eq!(status["steps"][0]["permissions"], ran_with, "{status}");
    let status = text(&run(&scratch, &bin, &["status", id]).stdout);
    assert!(
        status.contains("perms    step 1 claude-writer: mode writer; tools read, Bash; excluded Edit; allow Bash(git *); deny Bash(rm *); no nested runs"),
        "{status}"
    );
    // The plan a dry run prints says it too, the adapter's defaults where no layer said anything.
    let dry = run(&scratch, &bin, &["run", "--agent", "codex", "--task", "t", "--dry-run"]);
    let plan: Value = serde_json::from_slice(&dry.stdout).unwrap();
    assert_eq!(
        plan["steps"][0]["permissions"],
        serde_json::json!({"mode": "read-only", "nested": true}),
        "{plan}"
    );
    let agents = run(&scratch, &bin, &["agents", "--json"]);
    let agents: Value = serde_json::from_slice(&agents.stdout).unwrap();
    let claude = agents
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["name"] == "claude")
        .unwrap();
    assert_eq!(
        claude["permissions"],
        serde_json::json!({"excludeTools": ["Bash", "Edit", "MultiEdit", "Write", "NotebookEdit"],
                           "mode": "read-only", "nested": true})
    );
    // … and in plan mode, Claude Code's own plan mode without its MCP servers.
    run_json(
        &scratch,
        &bin,
        &["--agent", "claude-writer", "--task", "t", "--mode", "plan"],
    );
    let argv = lines("claude");
    assert_eq!(after(&argv, "--permission-mode").as_deref(), Some("plan"), "{argv:?}");
    assert!(argv.contains(&"--strict-mcp-config".to_owned()), "{argv:?}");

    // Codex: a writer run read-only gets the read-only sandbox, and never asks.
    run_json(
        &scratch,
        &bin,
        &["--agent", "codex-writer", "--task", "t", "--mode", "read-only"],
    );
    let argv = lines("codex");
    assert_eq!(after(&argv, "--sandbox").as_deref(), Some("read-only"), "{argv:?}");
    assert!(
        argv.windows(2).any(|w| w == ["-c", "approval_policy=\"never\""]),
        "{argv:?}"
    );

    // pi: the only tools, and those it never has (read-only: its writing tools).
    run_json(
        &scratch,
        &bin,
        &[
            "--agent",
            "pi",
            "--task",
            "t",
            "--tools",
            "read,grep,bash",
            "--mode",
            "read-only",
        ],
    );
    let argv = lines("pi");
    assert_eq!(after(&argv, "--tools").as_deref(), Some("read,grep"), "{argv:?}");
    assert_eq!(
        after(&argv, "--exclude-tools").as_deref(),
        Some("bash,edit,write,powershell")
    );

    // Cursor's agent: read-only is ask mode, not --force.
    run_json(
        &scratch,
        &bin,
        &["--agent", "cursor-writer", "--task", "t", "--mode", "read-only"],
    );
    let argv = lines("cursor-agent");
    assert_eq!(after(&argv, "--mode").as_deref(), Some("ask"), "{argv:?}");
    assert!(!argv.contains(&"--force".to_owned()), "{argv:?}");

    // G5: Codex takes no tool list; the run is refused before anything starts.
    std::fs::remove_file(scratch.work().join("codex.argv")).unwrap();
    let output = run(
        &scratch,
        &bin,
        &["run", "--agent", "codex", "--task", "t", "--tools", "read"],
    );
    assert_eq!(output.status.code(), Some(2), "{}", text(&output.stderr));
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains("Agent 'codex'")
            && stderr.contains("cannot enforce `tools` (given by the run)")
            && stderr.contains("claude-code, pi"),
        "{stderr}"
    );
    assert!(!scratch.work().join("codex.argv").exists(), "Codex never started");
}

/// G4 and the issue's case: a read-only agent whose file says `tools: ["Read,Bash"]` runs
/// with `Read` only, `Bash` excluded, and the user is told.
#[test]
fn a_read_only_agents_bash_in_one_tools_item_is_taken_out_and_said() {
    let scratch = Scratch::trusting("adapter-read-only-tools");
    let bin = fake_clis(&scratch);
    write(
        &scratch.work().join(".sublaunch/agents/ro.md"),
        "---\nname: ro\nrunner: {type: external-cli, adapter: claude-code}\ntools: [\"Read,Bash\"]\n---\nLook.\n",
    );
    let dry = run(&scratch, &bin, &["run", "--agent", "ro", "--task", "t", "--dry-run"]);
    let plan: Value = serde_json::from_slice(&dry.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&dry.stderr)));
    let permissions = &plan["steps"][0]["permissions"];
    assert_eq!(permissions["tools"], serde_json::json!(["Read"]), "{plan}");
    assert_eq!(permissions["mode"], "read-only");
    assert!(
        permissions["excludeTools"].as_array().unwrap().contains(&"Bash".into()),
        "{plan}"
    );
    let end = run_json(&scratch, &bin, &["--agent", "ro", "--task", "t"]);
    assert_eq!(end["state"], "complete", "{end}");
    let argv: Vec<String> = recorded(&scratch, "claude", "argv")
        .lines()
        .map(str::to_owned)
        .collect();
    let tools = argv.iter().position(|a| a == "--tools").map(|i| argv[i + 1].clone());
    assert_eq!(tools.as_deref(), Some("Read"), "{argv:?}");
    let launched = run(&scratch, &bin, &["run", "--agent", "ro", "--task", "t", "--wait"]);
    assert!(
        text(&launched.stderr).contains("runs read-only, so it does not get Bash, which its tools list"),
        "{}",
        text(&launched.stderr)
    );
}

#[test]
fn an_error_result_of_cursor_fails_the_step_with_its_text() {
    let scratch = Scratch::new("adapter-cursor");
    let bin = fake_clis(&scratch);
    let end = run_json(&scratch, &bin, &["--agent", "cursor-writer", "--task", "tidy up"]);
    assert_eq!(
        recorded(&scratch, "cursor-agent", "argv"),
        "-p\n--output-format\nstream-json\n--force\ntidy up\n"
    );
    assert_eq!(end["state"], "failed", "{end}");
    assert!(
        end["steps"][0]["error"].as_str().unwrap().contains("quota exhausted"),
        "{end}"
    );
    // The chat continues with --resume and the follow-up alone (the chat has the rest).
    let id = end["runId"].as_str().unwrap();
    let resumed = run(&scratch, &bin, &["resume", id, "--task", "and the tests", "--wait"]);
    assert_eq!(resumed.status.code(), Some(1), "{}", text(&resumed.stderr));
    assert_eq!(
        recorded(&scratch, "cursor-agent", "argv"),
        "-p\n--output-format\nstream-json\n--force\n--resume\nc0ffee\nand the tests\n"
    );
}

#[test]
fn pi_must_report_the_planned_model_or_a_declared_alias() {
    let scratch = Scratch::trusting("adapter-model-check");
    let bin = fake_clis(&scratch);
    let args = [
        "--agent",
        "pi",
        "--model",
        "anthropic/claude-sonnet-4-5",
        "--task",
        "hi",
    ];
    // The registry id alone is accepted.
    write(&scratch.work().join("reported-model"), "claude-sonnet-4-5");
    assert_eq!(run_json(&scratch, &bin, &args)["state"], "complete");

    write(&scratch.work().join("reported-model"), "claude-3-7-sonnet-latest");
    let end = run_json(&scratch, &bin, &args);
    assert_eq!(end["state"], "failed", "{end}");
    let error = end["steps"][0]["error"].as_str().unwrap();
    assert!(error.contains("planned 'anthropic/claude-sonnet-4-5'"), "{error}");
    assert!(error.contains("reported 'claude-3-7-sonnet-latest'"), "{error}");
    assert!(
        error.contains("modelResponseAliases"),
        "says how to declare an alias: {error}"
    );

    write(
        &scratch.work().join(".sublaunch/settings.json"),
        r#"{"subagents": {"modelResponseAliases": {"anthropic/claude-sonnet-4-5": ["claude-3-7-sonnet-latest"]}}}"#,
    );
    assert_eq!(
        run_json(&scratch, &bin, &args)["state"],
        "complete",
        "the declared alias is accepted"
    );
}

#[test]
fn structured_output_is_validated_and_the_result_holds_the_parsed_json() {
    let scratch = Scratch::trusting("adapter-structured");
    let bin = fake_clis(&scratch);
    write(
        &scratch.work().join(".sublaunch/agents/judge.md"),
        "---\nname: judge\nrunner:\n  type: command\n  command: [cat, verdict.txt]\n\
         outputSchema:\n  type: object\n  required: [verdict]\n  properties:\n    verdict: {enum: [approve, reject]}\n    notes: {type: array, items: {type: string}}\n---\nJudge.\n",
    );
    write(
        &scratch.work().join("verdict.txt"),
        "Looks fine.\n```json\n{\"verdict\": \"approve\", \"notes\": [\"ok\"]}\n```\n",
    );
    let end = run_json(&scratch, &bin, &["--agent", "judge", "--task", "judge it"]);
    assert_eq!(end["state"], "complete", "{end}");
    let results = step_results(&scratch, &end);
    assert_eq!(
        results[0]["structured"],
        serde_json::json!({"verdict": "approve", "notes": ["ok"]}),
        "{results:?}"
    );

    write(
        &scratch.work().join("verdict.txt"),
        "{\"verdict\": \"maybe\", \"notes\": [1]}",
    );
    let end = run_json(&scratch, &bin, &["--agent", "judge", "--task", "judge it"]);
    assert_eq!(end["state"], "failed", "{end}");
    let error = end["steps"][0]["error"].as_str().unwrap();
    assert!(error.contains("does not match its output schema (2 errors)"), "{error}");
    assert!(
        error.contains("- $.verdict: ") && error.contains("- $.notes[0]: "),
        "{error}"
    );
    let results = step_results(&scratch, &end);
    assert_eq!(
        results[0]["structuredErrors"].as_array().map(Vec::len),
        Some(2),
        "{results:?}"
    );

    // Without its validator a structured step cannot pass.
    let output = scratch
        .cli(&["run", "--agent", "judge", "--task", "judge it", "--wait", "--json"])
        .env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
        .env("SUBLAUNCH_VALIDATOR", "/nonexistent/sublaunch-validate")
        .output()
        .unwrap();
    let end: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(end["state"], "failed", "{end}");
    assert!(
        end["steps"][0]["error"]
            .as_str()
            .unwrap()
            .contains("could not be checked"),
        "{end}"
    );

    write(&scratch.work().join("verdict.txt"), "I could not decide.");
    let end = run_json(&scratch, &bin, &["--agent", "judge", "--task", "judge it"]);
    assert_eq!(end["state"], "failed");
    assert!(
        end["steps"][0]["error"].as_str().unwrap().contains("is not JSON"),
        "{end}"
    );
}

/// X5: agents that print their terminal event and then linger (pi, Claude Code and Codex all
/// may) are drained: SIGTERM 1 s after the event, SIGKILL 3 s later for one that ignores it.
/// A clean final answer makes the step complete; the lingering processes are gone.
#[test]
fn x5_an_agent_lingering_after_its_terminal_event_is_drained_and_its_answer_kept() {
    let scratch = Scratch::new("adapter-drain");
    let bin = scratch.path().join("lingering-bin");
    // Each fake leaves a background sleep in its group and writes the pids it started.
    let linger = |name: &str, events: &str, ignore_term: bool| {
        let trap = if ignore_term { "trap '' TERM\n" } else { "" };
        format!(
            // The pids as this test sees them: inside the agent's PID namespace `$$` and `$!`
            // are the namespace's numbers, so each process reads its own from /proc (G45).
            "#!/bin/sh\n{trap}cat >/dev/null\n\
             sh -c 'cut -d\" \" -f4 /proc/self/stat > {name}.child; exec sleep 300' &\n\
             while [ ! -s {name}.child ]; do sleep 0.01; done\n\
             echo $(cut -d' ' -f4 /proc/self/stat) $(cat {name}.child) > {name}.pids\n\
             {events}\nwhile :; do sleep 1; done\n"
        )
    };
    executable(
        &bin.join("claude"),
        &linger(
            "claude",
            r#"echo '{"type":"result","subtype":"success","is_error":false,"result":"done by claude"}'"#,
            false,
        ),
    );
    executable(
        &bin.join("codex"),
        &linger(
            "codex",
            r#"out=; prev=; for a; do [ "$prev" = --output-last-message ] && out=$a; prev=$a; done
printf 'done by codex' > "$out"
echo '{"type":"turn.completed","usage":{}}'"#,
            true,
        ),
    );
    executable(
        &bin.join("pi"),
        &linger(
            "pi",
            r#"echo '{"type":"message_end","message":{"role":"assistant","model":"m","content":[{"type":"text","text":"done by pi"}],"stopReason":"stop"}}'
echo '{"type":"agent_end","messages":[]}'"#,
            false,
        ),
    );
    for (agent, answer) in [
        ("claude", "done by claude"),
        ("codex", "done by codex"),
        ("pi", "done by pi"),
    ] {
        // The run's own timeout turns a missing drain into a failure instead of a hang.
        let end = run_json(
            &scratch,
            &bin,
            &["--agent", agent, "--task", "answer", "--timeout", "30"],
        );
        assert_eq!(end["state"], "complete", "{agent}: {end}");
        let results = step_results(&scratch, &end);
        assert_eq!(results[0]["output"], answer, "{agent}: {results:?}");
        let pids = recorded(&scratch, agent, "pids");
        for pid in pids.split_whitespace().map(|p| p.parse::<u32>().unwrap()) {
            assert!(
                !sublaunch_tests::launch_harness::pid_alive(pid),
                "{agent}: {pid} was drained"
            );
        }
    }
}

/// Claude Code and Codex exit 1 on API errors with the reason in their own output: the step's
/// error keeps it instead of only `Subagent exited with code 1.`.
#[test]
fn the_reason_an_agent_reports_explains_its_non_zero_exit() {
    let scratch = Scratch::new("adapter-exit-reason");
    let bin = scratch.path().join("failing-bin");
    executable(
        &bin.join("claude"),
        "#!/bin/sh\ncat >/dev/null\necho '{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":true,\"result\":\"API Error: 400 model not found\"}'\nexit 1\n",
    );
    executable(
        &bin.join("codex"),
        "#!/bin/sh\ncat >/dev/null\necho '{\"type\":\"turn.failed\",\"error\":{\"message\":\"quota exceeded\"}}'\nexit 1\n",
    );
    for (agent, reason) in [
        ("claude", "API Error: 400 model not found"),
        ("codex", "quota exceeded"),
    ] {
        let end = run_json(&scratch, &bin, &["--agent", agent, "--task", "answer"]);
        assert_eq!(end["state"], "failed", "{agent}: {end}");
        let results = step_results(&scratch, &end);
        let error = results[0]["error"].as_str().unwrap_or_default();
        assert!(error.starts_with("Subagent exited with code 1."), "{agent}: {error}");
        assert!(error.contains(reason), "{agent}: the reported reason is kept: {error}");
    }
}

/// A read-only Claude agent whose `tools` list names `Bash` inside one item (`"Read,Bash"`)
/// still gets no `Bash`: the item is two tools, and the read-only filter drops the shell.
#[test]
fn a_read_only_agent_cannot_slip_bash_in_through_one_list_item() {
    let scratch = Scratch::new("adapter-tools-item");
    let bin = fake_clis(&scratch);
    sublaunch_tests::cli::write(
        &scratch.path().join("home/.config/sublaunch/agents/peek.md"),
        "---\nname: peek\ndescription: reads\nrunner:\n  type: external-cli\n  adapter: claude-code\ntools: [\"Read,Bash\", Grep]\n---\nLook only.\n",
    );
    let end = run_json(&scratch, &bin, &["--agent", "peek", "--task", "look"]);
    assert_eq!(end["state"], "complete", "{end}");
    let argv = recorded(&scratch, "claude", "argv");
    assert!(argv.contains("--allowedTools\nRead,Grep\n"), "{argv}");
    assert!(argv.contains("--disallowedTools\nBash,"), "{argv}");
}
