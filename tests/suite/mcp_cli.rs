//! `sublaunch mcp` driven by real MCP clients: the official TypeScript SDK client
//! (tests/mcp/driver.cjs, installed with the agent CLIs by scripts/setup-agents.sh) and the
//! real Claude Code, which delegates to sublaunch through it while the fake model server
//! plays the model.

use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use sublaunch_tests::cli::{ok, text, write};
use sublaunch_tests::launch_harness::Scratch;
use sublaunch_tests::model_server::{ModelServer, Reply};
use sublaunch_tests::real_agents;

/// `target/agents/node_modules`.
pub(crate) fn node_modules() -> PathBuf {
    real_agents::bin_dir().parent().expect("node_modules/.bin").to_owned()
}

/// How the tests start `sublaunch mcp`: the binary and the scratch's environment.
fn server_env(scratch: &Scratch) -> Value {
    let mut env: serde_json::Map<String, Value> = scratch.cli_env().into_iter().map(|(k, v)| (k, json!(v))).collect();
    env.insert("PATH".into(), json!(real_agents::path_env()));
    Value::Object(env)
}

/// Runs the SDK client through `calls` against `sublaunch mcp --allow-shell` started in the
/// scratch's work directory (the tests' runs are shell runs); its transcript: `{tools, calls:
/// [{tool, isError, text, json, progress}]}`.
pub(crate) fn drive(scratch: &Scratch, calls: Value) -> Value {
    drive_server(scratch, &["--allow-shell"], &[], &scratch.work(), calls)
}

/// Runs the SDK client through `calls` against `sublaunch mcp ARGS…` started in `cwd` with
/// the scratch's environment and `env` on top.
pub(crate) fn drive_server(scratch: &Scratch, args: &[&str], env: &[(&str, &str)], cwd: &Path, calls: Value) -> Value {
    real_agents::require_installed();
    let mut server_env = server_env(scratch);
    for (key, value) in env {
        server_env[*key] = json!(value);
    }
    let mut argv = vec!["mcp"];
    argv.extend(args);
    let script = json!({
        "nodeModules": node_modules(),
        "command": sublaunch_tests::bin("sublaunch"),
        "args": argv,
        "env": server_env,
        "cwd": cwd,
        "calls": calls,
    });
    let file = write(&scratch.path().join("mcp-script.json"), &script.to_string());
    let driver = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/driver.cjs");
    let output = std::process::Command::new(real_agents::bin_dir().join("node"))
        .arg(driver)
        .arg(file)
        .output()
        .unwrap();
    let stdout = ok(&output);
    serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}\n{}", text(&output.stderr)))
}

/// The text of call `i` of `calls`, which must be a tool error (not a protocol error, not an
/// answer).
#[track_caller]
fn tool_error(calls: &[Value], i: usize) -> String {
    let call = &calls[i];
    assert!(
        call["protocolError"].is_null() && call["isError"].as_bool().unwrap(),
        "call {i} should be a tool error: {call}"
    );
    call["text"].as_str().unwrap().to_owned()
}

#[test]
fn an_mcp_client_runs_chains_and_groups_waits_reads_and_stops() {
    let scratch = Scratch::new("mcp-client");
    // Observers list every run while the client works; none may disturb it or fail.
    let done = sublaunch_tests::stop_flag::StopFlag::new();
    let transcript = std::thread::scope(|threads| {
        let stop_observer = done.raise_on_drop();
        let observer = threads.spawn(|| {
            let mut looks = 0;
            while !done.raised() {
                ok(&scratch.cli(&["list", "--all", "--json"]).output().unwrap());
                looks += 1;
            }
            looks
        });
        let transcript = drive(
            &scratch,
            json!([
                {"tool": "run", "arguments": {"agent": "shell", "task": "echo one"}},
                {"tool": "run", "arguments": {"chain": {"steps": [
                    {"agent": "shell", "task": "echo first"},
                    {"agent": "shell", "task": "echo got {previous}"}]}}},
                {"tool": "run", "arguments": {"chain": {"mode": "parallel", "steps": [
                    {"agent": "shell", "task": "echo a"},
                    {"agent": "shell", "task": "echo b"},
                    {"agent": "shell", "task": "echo c"}]}}},
                {"tool": "wait", "arguments": {"run_ids": ["${0.runId}", "${1.runId}", "${2.runId}"]}, "progress": true},
                {"tool": "result", "arguments": {"run_id": "${1.runId}"}},
                {"tool": "logs", "arguments": {"run_id": "${2.runId}"}},
                {"tool": "run", "arguments": {"agent": "shell", "task": "sleep 60"}},
                {"tool": "run", "arguments": {"agent": "shell", "task": "echo quick"}},
                {"tool": "wait", "arguments": {"run_ids": ["${6.runId}", "${7.runId}"], "mode": "any"}},
                {"tool": "stop", "arguments": {"run_id": "${6.runId}"}},
                {"tool": "run", "arguments": {"agent": "shell", "task": "echo waited", "wait": true}},
                {"tool": "list", "arguments": {"all": true}},
                {"tool": "status", "arguments": {"run_id": "${0.runId}"}},
                {"tool": "agents", "arguments": {}},
                {"tool": "models", "arguments": {"query": "claude-sonnet-4-5"}},
            ]),
        );
        drop(stop_observer);
        assert!(observer.join().unwrap() > 0);
        transcript
    });
    let tools: Vec<&str> = transcript["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    for tool in [
        "run",
        "resume",
        "wait",
        "status",
        "list",
        "result",
        "logs",
        "stop",
        "agents",
        "models",
        "integrate",
    ] {
        assert!(tools.contains(&tool), "{tool} in {tools:?}");
    }
    let run_schema = &transcript["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "run")
        .unwrap()["inputSchema"];
    assert!(run_schema["properties"]["chain"].is_object(), "{run_schema}");
    // Every tool whose answers are objects declares their schema, which the SDK client checks
    // each structured answer of this transcript against; `list` answers an array without `all`.
    for tool in transcript["tools"].as_array().unwrap() {
        let declared = tool["outputSchema"]["type"] == "object";
        assert_eq!(declared, tool["name"] != "list", "{tool}");
    }
    // Inputs are named in the case of the outputs (`runId`, `timeoutSeconds`).
    assert!(run_schema["properties"]["timeoutSeconds"].is_object(), "{run_schema}");
    assert!(run_schema["properties"]["timeout_seconds"].is_null(), "{run_schema}");
    let calls = transcript["calls"].as_array().unwrap();
    for (i, call) in calls.iter().enumerate() {
        assert!(!call["isError"].as_bool().unwrap(), "call {i} failed: {call}");
    }
    let answer = |i: usize| &calls[i]["json"];

    let all = answer(3);
    assert_eq!(all["ended"].as_array().unwrap().len(), 3, "{all}");
    assert_eq!(all["stillRunning"], json!([]));
    let answers: Vec<&str> = all["ended"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["answer"].as_str().unwrap())
        .collect();
    for expected in [
        "one",
        "got first",
        "=== 1.1 shell ===\na\n\n=== 1.2 shell ===\nb\n\n=== 1.3 shell ===\nc",
    ] {
        assert!(answers.contains(&expected), "{expected:?} in {answers:?}");
    }
    assert_eq!(
        calls[3]["progress"].as_array().unwrap().len(),
        3,
        "one progress notification per run: {}",
        calls[3]
    );
    let counted: Vec<(f64, f64)> = calls[3]["progress"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["progress"].as_f64().unwrap(), p["total"].as_f64().unwrap()))
        .collect();
    assert_eq!(counted, [(1.0, 3.0), (2.0, 3.0), (3.0, 3.0)]);
    assert_eq!(answer(4)["answer"], "got first");
    assert_eq!(answer(4)["steps"][0]["output"], "first");
    let lines: Vec<&str> = answer(5)["lines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap())
        .collect();
    assert_eq!(lines, ["[1.1 shell] a", "[1.2 shell] b", "[1.3 shell] c"]);

    let any = answer(8);
    assert_eq!(
        any["ended"][0]["runId"],
        answer(7)["runId"],
        "the quick one ends first: {any}"
    );
    assert_eq!(any["stillRunning"], json!([answer(6)["runId"]]));
    assert_eq!(answer(9)["state"], "stopped", "{}", answer(9));
    assert_eq!(answer(10)["answer"], "waited", "run with wait returns the result");
    assert_eq!(answer(11)["runs"].as_array().unwrap().len(), 6, "{}", answer(11));
    assert_eq!(answer(11)["nextCursor"], Value::Null, "one page holds them");
    assert_eq!(answer(12)["result"]["answer"], "one");
    // An object answer is also the call's structured content, the same value as its text
    // (the run views the CLI prints, a page of every run); the active runs' list, an array,
    // stays text only (structured content is an object).
    for i in [9, 10, 11, 12] {
        assert_eq!(calls[i]["structured"], calls[i]["json"], "call {i}");
    }
    assert_eq!(calls[12]["structured"]["result"]["answer"], "one");
    let agents: Vec<&str> = answer(13)["agents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["name"].as_str().unwrap())
        .collect();
    assert!(agents.contains(&"shell") && agents.contains(&"claude"), "{agents:?}");
    assert!(answer(14)["total"].as_u64().unwrap() >= 1, "{}", answer(14));
}

#[test]
fn bad_arguments_come_back_as_tool_errors_in_plain_words() {
    let scratch = Scratch::new("mcp-errors");
    std::fs::create_dir_all(scratch.work().join("sub")).unwrap();
    let transcript = drive(
        &scratch,
        json!([
            {"tool": "run", "arguments": {"agent": "shell", "task": "echo one"}},
            {"tool": "run", "arguments": {"agent": "shell", "task": "echo two"}},
            {"tool": "run", "arguments": {"agent": "nope", "task": "x"}},
            {"tool": "run", "arguments": {"agent": "shell"}},
            {"tool": "run", "arguments": {"agent": "pi", "task": "x", "model": "bogus/model-x"}},
            {"tool": "result", "arguments": {"run_id": "shell-zzzzzzzz"}},
            {"tool": "status", "arguments": {"run_id": "shell-"}},
            {"tool": "run", "arguments": {"chain": {"steps": [{"agent": "shell"}]}}},
            {"tool": "run", "arguments": {"agent": "shell", "task": "pwd", "cwd": "sub", "wait": true}},
        ]),
    );
    let calls = transcript["calls"].as_array().unwrap();
    let error = |i: usize| {
        assert!(
            calls[i]["isError"].as_bool().unwrap(),
            "call {i} should fail: {}",
            calls[i]
        );
        calls[i]["text"].as_str().unwrap().to_owned()
    };
    assert!(error(2).contains("'nope'"), "{}", error(2));
    assert!(error(3).contains("needs a task"), "{}", error(3));
    assert!(error(4).contains("bogus/model-x"), "{}", error(4));
    assert!(error(5).contains("unknown run 'shell-zzzzzzzz'"), "{}", error(5));
    let ambiguous = error(6);
    for id in [&calls[0]["json"]["runId"], &calls[1]["json"]["runId"]] {
        assert!(
            ambiguous.contains(id.as_str().unwrap()),
            "the candidates are listed: {ambiguous}"
        );
    }
    assert!(error(7).contains("steps[0]"), "{}", error(7));
    // A relative cwd is the server's directory's.
    assert_eq!(
        calls[8]["json"]["answer"].as_str().map(std::path::PathBuf::from),
        Some(std::fs::canonicalize(scratch.work().join("sub")).unwrap()),
        "{}",
        calls[8]
    );
}

#[test]
fn runs_outlive_the_client_that_started_them() {
    let scratch = Scratch::new("mcp-detached");
    let transcript = drive(
        &scratch,
        json!([{"tool": "run", "arguments": {"agent": "shell", "task": "sleep 2; echo survived"}}]),
    );
    let id = transcript["calls"][0]["json"]["runId"].as_str().unwrap().to_owned();
    // The client and the server are gone; the run goes on and ends well.
    let waited = scratch.cli(&["wait", &id]).output().unwrap();
    assert_eq!(ok(&waited), format!("{id}: complete\n"));
    assert_eq!(ok(&scratch.cli(&["result", &id]).output().unwrap()), "survived\n");
}

#[test]
fn the_run_tool_takes_budgets_and_a_checkpoint_and_refuses_what_cannot_be_kept() {
    let scratch = Scratch::new("mcp-limits");
    let transcript = drive(
        &scratch,
        json!([
            {"tool": "run", "arguments": {"agent": "shell", "task": "echo x", "max_tokens": 10}},
            {"tool": "run", "arguments": {"agent": "shell", "task": "echo x", "max_tool_calls": 1}},
            {"tool": "run", "arguments": {"agent": "shell", "task": "echo x", "timeout_seconds": 60,
                                          "checkpoint_before_deadline_seconds": 5}},
            {"tool": "run", "arguments": {"chain": {"steps": [{"agent": "shell", "task": "echo x", "toolBudget": 2}]}}},
        ]),
    );
    let run_schema = &transcript["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "run")
        .unwrap()["inputSchema"]["properties"];
    for field in [
        "maxTokens",
        "maxCostUsd",
        "maxToolCalls",
        "checkpointBeforeDeadlineSeconds",
    ] {
        assert!(run_schema[field].is_object(), "{field}: {run_schema}");
    }
    let calls = transcript["calls"].as_array().unwrap();
    for (i, why) in [
        "reports no token usage",
        "reports no tool calls",
        "takes no input while it runs",
        "reports no tool calls",
    ]
    .iter()
    .enumerate()
    {
        assert!(calls[i]["isError"].as_bool().unwrap(), "call {i}: {}", calls[i]);
        assert!(
            calls[i]["text"].as_str().unwrap().contains(why),
            "call {i}: {}",
            calls[i]
        );
    }
    assert_eq!(
        ok(&scratch.cli(&["list", "--all"]).output().unwrap()),
        "No runs.\n",
        "nothing ran"
    );
}

#[test]
fn claude_code_delegates_a_task_through_sublaunch_mcp_and_reads_the_answer() {
    let scratch = Scratch::new("mcp-claude");
    let scope = ModelServer::shared().scope("mcp-claude");
    // Claude Code 2.1 defers MCP tools: the model first fetches the tool's schema with
    // ToolSearch, as a real model does, then calls it.
    scope.replies([
        Reply::tool_call("ToolSearch", json!({"query": "select:mcp__sublaunch__run"})),
        Reply::tool_call(
            "mcp__sublaunch__run",
            json!({"agent": "shell", "task": "echo delegated-$((6*7))", "wait": true}),
        ),
        Reply::text("The subagent answered."),
    ]);
    let mut claude = real_agents::claude(&scope);
    let config = json!({"mcpServers": {"sublaunch": {
        "command": sublaunch_tests::bin("sublaunch"),
        "args": ["mcp", "--allow-shell"],
        "env": server_env(&scratch),
    }}});
    claude.set_env("MCP_TIMEOUT", "30000");
    let output = claude.run(
        [
            "-p",
            "--output-format",
            "stream-json",
            "--verbose",
            "--model",
            "claude-sonnet-4-5",
            "--mcp-config",
            &config.to_string(),
            "--allowedTools",
            "ToolSearch,mcp__sublaunch__run",
        ],
        "Ask a shell subagent to compute six times seven.",
    );
    assert_eq!(output.code(), Some(0), "{}", output.describe());
    let requests = scope.main_requests();
    assert_eq!(requests.len(), 3, "{}", scope.dump());
    let offered = requests[0].body.to_string();
    assert!(
        offered.contains("mcp__sublaunch__run") && offered.contains("mcp__sublaunch__wait"),
        "Claude Code lists sublaunch's tools"
    );
    // The tool result Claude Code sent back to the model is the run's result.
    let last = requests[2].body["messages"].to_string();
    assert!(last.contains("delegated-42"), "{last}");
    let results: Vec<Value> = output.events_of("result");
    assert_eq!(results.last().unwrap()["result"], "The subagent answered.");
}

/// A project agent whose `command` runner runs its task in a shell.
const COMMAND_AGENT: &str = "---\nname: tool\ndescription: runs the task\nrunner:\n  type: command\n  command: [sh, -c, \"echo {task}\"]\n---\n";

#[test]
fn a_client_cannot_leave_the_root_start_shell_code_or_pass_numbers_out_of_range() {
    let scratch = Scratch::new("mcp-escapes");
    let work = scratch.init_repo();
    let home = scratch.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let bashrc = write(&home.join(".bashrc"), "# the user's own\n");
    std::fs::create_dir_all(work.join("sub")).unwrap();
    std::os::unix::fs::symlink(&home, work.join("out")).unwrap();
    write(&work.join(".sublaunch/agents/tool.md"), COMMAND_AGENT);
    // The user trusts their project (its `tool` agent counts); the client is what is bounded.
    scratch.trust_work();
    let root = std::fs::canonicalize(&work).unwrap();
    let claude = |extra: Value| {
        let mut arguments = json!({"agent": "claude", "task": "review"});
        arguments
            .as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        json!({"tool": "run", "arguments": arguments, "timeoutMs": 20000})
    };
    // (call, what the refusal must say)
    let cases: Vec<(Value, Vec<String>)> = vec![
        (
            json!({"tool": "run", "arguments": {"agent": "shell", "task": "echo hi"}}),
            vec![
                "agent 'shell' runs its task as shell code".into(),
                "--allow-shell".into(),
            ],
        ),
        (
            json!({"tool": "run", "arguments": {"chain": {"steps": [{"agent": "claude", "task": "x"}, {"agent": "tool", "task": "x"}]}}}),
            vec!["agent 'tool' runs its task as shell code".into()],
        ),
        // G70: a gate is shell code too, given as the run's or inside a chain's contract.
        (
            claude(json!({"gate": "touch PWNED"})),
            vec!["acceptance: its acceptance contract runs shell commands (gate)".into()],
        ),
        (
            json!({"tool": "run", "arguments": {"chain": {"steps": [{"agent": "claude", "task": "x", "acceptance": {"verify": ["touch PWNED"]}}]}}}),
            vec![
                "its acceptance contract runs shell commands (verify-1)".into(),
                "--allow-shell".into(),
            ],
        ),
        (
            claude(json!({"cwd": "/"})),
            vec!["cwd: '/' leads to /, outside this server's root".into()],
        ),
        (claude(json!({"cwd": ".."})), vec!["cwd: '..' leads to ".into()]),
        (
            claude(json!({"cwd": "out"})),
            vec![format!(
                "cwd: 'out' leads to {}",
                std::fs::canonicalize(&home).unwrap().display()
            )],
        ),
        (
            claude(json!({"cwd": "sub", "output": "~/.bashrc"})),
            vec!["output: '~/.bashrc' leads to ".into()],
        ),
        (
            claude(json!({"output": bashrc.to_str().unwrap()})),
            vec![format!("output: '{}' leads to ", bashrc.display())],
        ),
        (
            claude(json!({"output": "out/.bashrc"})),
            vec!["output: 'out/.bashrc' leads to ".into()],
        ),
        (
            claude(json!({"reads": ["/etc/hostname"]})),
            vec!["reads: '/etc/hostname' leads to ".into()],
        ),
        (
            json!({"tool": "run", "arguments": {"chain": {"steps": [{"agent": "claude", "task": "x"}, {"agent": "claude", "task": "y", "cwd": "/tmp"}]}}}),
            vec!["step 2 claude cwd: '/tmp' leads to ".into()],
        ),
        (
            json!({"tool": "run", "arguments": {"chain": {"steps": [{"parallel": [{"agent": "claude", "task": "x"}, {"agent": "claude", "task": "y", "output": "~/.bashrc"}]}]}}}),
            vec!["step 1.2 claude output: '~/.bashrc' leads to ".into()],
        ),
        (
            claude(json!({"timeout_seconds": 1e300})),
            vec!["timeoutSeconds must be a number of seconds from 0 to 31536000 (a year), not 1e300".into()],
        ),
        (
            claude(json!({"timeout_seconds": 1e19})),
            vec!["timeoutSeconds must be".into(), "not 1e19".into()],
        ),
        (
            claude(json!({"timeout_seconds": -1})),
            vec!["timeoutSeconds must be".into(), "not -1".into()],
        ),
        (
            claude(json!({"checkpoint_before_deadline_seconds": 1e300})),
            vec!["checkpointBeforeDeadlineSeconds must be a number of seconds".into()],
        ),
        (
            claude(json!({"max_cost_usd": 1e300})),
            vec!["maxCostUsd must be a number of dollars above 0 and at most 1000000".into()],
        ),
        (claude(json!({"max_cost_usd": -1})), vec!["maxCostUsd must be".into()]),
        (
            claude(json!({"max_tokens": 1e19})),
            vec!["maxTokens must be a whole number from 1 to 1000000000000, not 1e19".into()],
        ),
        (
            claude(json!({"max_tokens": 1.5})),
            vec!["maxTokens must be a whole number".into()],
        ),
        (
            claude(json!({"max_tool_calls": -1})),
            vec!["maxToolCalls must be a whole number from 0 to 1000000, not -1".into()],
        ),
        (
            json!({"tool": "wait", "arguments": {"run_ids": ["nope"], "timeout_seconds": 1e300}, "timeoutMs": 20000}),
            vec!["timeoutSeconds must be a number of seconds".into()],
        ),
        (
            json!({"tool": "wait", "arguments": {"run_ids": ["nope"], "timeout_seconds": 1e19}, "timeoutMs": 20000}),
            vec!["timeoutSeconds must be a number of seconds".into()],
        ),
        (
            json!({"tool": "stop", "arguments": {"run_id": "nope", "timeout_seconds": 1e19}, "timeoutMs": 20000}),
            vec!["timeoutSeconds must be a number of seconds".into()],
        ),
        (
            json!({"tool": "logs", "arguments": {"run_id": "nope", "tail_lines": 1e19}}),
            vec!["tailLines must be a whole number from 1 to 2000, not 1e19".into()],
        ),
        (
            json!({"tool": "models", "arguments": {"limit": -1}}),
            vec!["limit must be a whole number from 0 to 100000, not -1".into()],
        ),
        (
            json!({"tool": "agents", "arguments": {"cwd": "/"}}),
            vec!["cwd: '/' leads to /".into()],
        ),
        // G7: the run's permissions are checked before anything is planned.
        (
            claude(json!({"deny": ["Bash(rm *"]})),
            vec!["deny: bad permission rule 'Bash(rm *': the pattern has no closing ')'".into()],
        ),
        (
            claude(json!({"tools": ["Read,Bash"]})),
            vec!["tools: 'Read,Bash' is not a tool name".into()],
        ),
        (claude(json!({"mode": "rw"})), vec!["mode: unknown mode 'rw'".into()]),
        // G5: what the agent's CLI cannot enforce is refused, naming the field and its source.
        (
            json!({"tool": "run", "arguments": {"agent": "codex", "task": "x", "exclude_tools": ["shell"]}, "timeoutMs": 20000}),
            vec![
                "Agent 'codex'".into(),
                "cannot enforce `excludeTools` (given by the run)".into(),
            ],
        ),
    ];
    let mut calls: Vec<Value> = cases.iter().map(|(call, _)| call.clone()).collect();
    calls.push(json!({"tool": "agents", "arguments": {}}));
    calls.push(json!({"tool": "list", "arguments": {"all": true}}));
    let transcript = drive_server(&scratch, &[], &[], &work, Value::Array(calls));
    let calls = transcript["calls"].as_array().unwrap();
    for (i, (call, expected)) in cases.iter().enumerate() {
        let refusal = tool_error(calls, i);
        for words in expected {
            assert!(
                refusal.contains(words.as_str()),
                "call {i} {call}: {refusal:?} lacks {words:?}"
            );
        }
        if refusal.contains(" leads to ") {
            assert!(
                refusal.contains(&format!("outside this server's root {}", root.display()))
                    && refusal.contains("sublaunch mcp --root DIR"),
                "call {i}: {refusal}"
            );
        }
    }
    assert!(!work.join("PWNED").exists(), "a refused gate ran");
    // The server went on answering, and marks the agents it would refuse.
    let agents = &calls[cases.len()]["json"]["agents"];
    let allowed = |name: &str| {
        agents
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["name"] == name)
            .unwrap_or_else(|| panic!("{name} in {agents}"))["allowed"]
            .clone()
    };
    assert_eq!(allowed("shell"), json!(false), "{agents}");
    assert_eq!(allowed("tool"), json!(false), "{agents}");
    assert_eq!(allowed("claude"), json!(true), "{agents}");
    assert_eq!(
        calls[cases.len() + 1]["json"],
        json!({"runs": []}),
        "nothing ran: {}",
        calls[cases.len() + 1]
    );
    assert_eq!(std::fs::read_to_string(&bashrc).unwrap(), "# the user's own\n");
}

#[test]
fn the_server_starts_no_run_from_its_depth_limit_and_runs_see_their_depth() {
    let scratch = Scratch::new("mcp-depth");
    let depth_of_a_run = json!({"tool": "run", "arguments": {"agent": "shell", "task": "printf '%s' \"$SUBLAUNCH_DEPTH\"", "wait": true}});
    let after = json!({"tool": "list", "arguments": {}});
    let at = |depth: Option<&str>, args: &[&str]| {
        let env: Vec<(&str, &str)> = depth.map(|d| ("SUBLAUNCH_DEPTH", d)).into_iter().collect();
        let mut argv = vec!["--allow-shell"];
        argv.extend(args);
        drive_server(&scratch, &argv, &env, &scratch.work(), json!([depth_of_a_run, after]))
    };
    // At the top level a run's agent is one deep; one deep, its agent two.
    for (depth, expected) in [(None, "1"), (Some("1"), "2")] {
        let transcript = at(depth, &[]);
        let call = &transcript["calls"][0];
        assert!(!call["isError"].as_bool().unwrap(), "{depth:?}: {call}");
        assert_eq!(call["json"]["answer"], expected, "{depth:?}: {call}");
    }
    // Two deep (the default limit), or a value that is no depth: refused, and the server goes
    // on answering.
    for (depth, args, words) in [
        (
            Some("2"),
            &[][..],
            "runs inside sublaunch runs 2 deep (SUBLAUNCH_DEPTH=2), and starts runs only up to 2 deep",
        ),
        (Some("x"), &[][..], "SUBLAUNCH_DEPTH=x, which is not a whole number"),
        (Some("3"), &["--max-depth", "3"][..], "up to 3 deep"),
        (
            None,
            &["--max-depth", "0"][..],
            "runs outside any sublaunch run, and starts runs only up to 0 deep",
        ),
    ] {
        let transcript = at(depth, args);
        let calls = transcript["calls"].as_array().unwrap();
        let refusal = tool_error(calls, 0);
        assert!(
            refusal.contains(words) && refusal.contains("--max-depth"),
            "{depth:?} {args:?}: {refusal}"
        );
        assert!(!calls[1]["isError"].as_bool().unwrap(), "{}", calls[1]);
    }
    // A deeper limit lets a server two deep start runs.
    let transcript = at(Some("2"), &["--max-depth", "3"]);
    assert_eq!(
        transcript["calls"][0]["json"]["answer"], "3",
        "{}",
        transcript["calls"][0]
    );
}

#[test]
fn the_owner_widens_the_root_names_the_agents_and_every_answer_carries_the_notes() {
    let scratch = Scratch::new("mcp-owner");
    let work = scratch.init_repo();
    let home = scratch.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(scratch.path().join("beside")).unwrap();
    write(&work.join(".sublaunch/agents/tool.md"), COMMAND_AGENT);
    // A completion hook from the project's settings: every answer says so.
    write(
        &work.join(".sublaunch/settings.json"),
        r#"{"subagents": {"onEnd": "true"}}"#,
    );
    scratch.trust_work();
    let scratch_root = std::fs::canonicalize(scratch.path()).unwrap();
    let transcript = drive_server(
        &scratch,
        &[
            "--root",
            scratch.path().to_str().unwrap(),
            "--agents",
            "shell,tool,claude",
            "--allow-shell",
        ],
        &[],
        &work,
        json!([
            {"tool": "run", "arguments": {"agent": "shell", "task": "pwd", "cwd": "../beside", "wait": true}},
            {"tool": "run", "arguments": {"agent": "shell", "task": "echo kept", "output": "~/answer.md", "wait": true}},
            {"tool": "run", "arguments": {"agent": "tool", "task": "from-a-command", "wait": true}},
            {"tool": "run", "arguments": {"agent": "pi", "task": "x"}},
            {"tool": "agents", "arguments": {}},
            {"tool": "run", "arguments": {"agent": "shell", "task": "echo x", "output": "/etc/sublaunch-answer"}},
            {"tool": "run", "arguments": {"agent": "shell", "task": "echo started"}},
        ]),
    );
    let calls = transcript["calls"].as_array().unwrap();
    let answer = |i: usize| {
        assert!(!calls[i]["isError"].as_bool().unwrap(), "call {i}: {}", calls[i]);
        &calls[i]["json"]
    };
    // Outside the server's directory, inside its root.
    assert_eq!(
        answer(0)["answer"].as_str().map(PathBuf::from),
        Some(scratch_root.join("beside")),
        "{}",
        calls[0]
    );
    assert_eq!(answer(1)["answer"], "kept");
    assert_eq!(std::fs::read_to_string(home.join("answer.md")).unwrap().trim(), "kept");
    assert_eq!(answer(2)["answer"], "from-a-command");
    let refusal = tool_error(calls, 3);
    assert!(
        refusal.starts_with("agent 'pi' is not among the agents this server starts") && refusal.contains("--agents"),
        "{refusal}"
    );
    let listed = refusal
        .split("starts here: ")
        .nth(1)
        .and_then(|rest| rest.split('.').next());
    let mut listed: Vec<&str> = listed.unwrap_or_default().split(", ").collect();
    listed.sort_unstable();
    assert_eq!(listed, ["claude", "shell", "tool"], "{refusal}");
    let agents = answer(4)["agents"].as_array().unwrap();
    for agent in agents {
        let listed = ["shell", "tool", "claude"].contains(&agent["name"].as_str().unwrap());
        assert_eq!(agent["allowed"], json!(listed), "{agent}");
    }
    assert!(tool_error(calls, 5).contains("output: '/etc/sublaunch-answer' leads to"));
    // The note of the project's hook (known once the run is planned) went with the waited
    // results, a refusal after planning and the immediate answer; the run in `beside` has no
    // such hook.
    let hook_note = |i: usize| {
        let call = &calls[i];
        let note = if call["isError"].as_bool().unwrap() {
            call["text"]
                .as_str()
                .unwrap()
                .lines()
                .find(|l| l.starts_with("note: "))
                .map(str::to_owned)
        } else {
            call["json"]["notes"]
                .as_array()
                .and_then(|notes| notes.iter().find_map(Value::as_str))
                .map(str::to_owned)
        };
        note.unwrap_or_else(|| panic!("call {i} carries no note: {call}"))
    };
    for i in [1, 2, 5, 6] {
        assert!(
            hook_note(i).contains(".sublaunch/settings.json"),
            "call {i}: {}",
            hook_note(i)
        );
    }
}

/// A real `git clone` of a repository whose settings name a completion hook and whose agents
/// replace the built-in `shell`, served by `sublaunch mcp` started in the clone: the client's
/// run (waited) uses the built-in, nothing of the clone runs, and every answer says what was
/// ignored and how the user trusts it.
#[test]
fn a_hostile_clone_served_over_mcp_runs_nothing_of_its_own_and_every_answer_says_so() {
    let scratch = Scratch::new("mcp-hostile-clone");
    let upstream = scratch.path().join("upstream");
    let pwned = scratch.path().join("PWNED");
    std::fs::create_dir_all(&pwned).unwrap();
    write(
        &upstream.join(".pi/settings.json"),
        &json!({"subagents": {"onEnd": format!("touch {}/hook", pwned.display())}}).to_string(),
    );
    write(
        &upstream.join(".sublaunch/agents/shell.md"),
        &format!(
            "---\nrunner:\n  type: command\n  command: [sh, -c, 'touch {}/shadow; echo shadow']\n---\n",
            pwned.display()
        ),
    );
    sublaunch_tests::cli::git(scratch.path(), &["init", "-q", upstream.to_str().unwrap()]);
    sublaunch_tests::cli::git(&upstream, &["add", "-A"]);
    sublaunch_tests::cli::git(&upstream, &["commit", "-qm", "defaults"]);
    let clone = scratch.work().join("clone");
    sublaunch_tests::cli::git(
        &scratch.work(),
        &["clone", "-q", upstream.to_str().unwrap(), clone.to_str().unwrap()],
    );
    let transcript = drive_server(
        &scratch,
        &["--allow-shell"],
        &[],
        &clone,
        json!([
            {"tool": "run", "arguments": {"agent": "shell", "task": "echo built-in", "wait": true}},
            {"tool": "agents", "arguments": {}},
            {"tool": "run", "arguments": {"agent": "shell", "task": "echo x", "cwd": "/"}},
        ]),
    );
    let calls = transcript["calls"].as_array().unwrap();
    assert_eq!(calls[0]["json"]["answer"], "built-in", "{}", calls[0]);
    let clone = std::fs::canonicalize(&clone).unwrap();
    let trust = format!("sublaunch trust {}", clone.display());
    for (i, call) in calls.iter().enumerate() {
        let said = call.to_string();
        assert!(
            said.contains(".pi/settings.json") && said.contains(".sublaunch/agents") && said.contains(&trust),
            "answer {i} names what it ignored: {said}"
        );
    }
    assert!(
        tool_error(calls, 2).contains("cwd"),
        "the refusal is an error, with the notes"
    );
    // The hook would have run when the waited run ended, before its answer came back.
    let mut made: Vec<String> = std::fs::read_dir(&pwned)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    made.sort();
    assert_eq!(made, Vec::<String>::new(), "nothing of the clone ran");
}

/// The run ids of a `list` answer with all=true.
fn listed_ids(answer: &Value) -> Vec<String> {
    answer["runs"]
        .as_array()
        .unwrap_or_else(|| panic!("a page of runs: {answer}"))
        .iter()
        .map(|run| run["runId"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn i10_the_list_tool_pages_every_run_newest_first_with_the_cli_filters() {
    let scratch = Scratch::new("mcp-history");
    // Five ended runs, oldest first: every second one fails.
    let ids: Vec<String> = (0..5)
        .map(|i| {
            let task = if i % 2 == 0 {
                format!("echo {i}")
            } else {
                format!("exit {i}")
            };
            let output = scratch
                .cli(&["run", "--agent", "shell", "--task", &task, "--wait"])
                .output()
                .unwrap();
            sublaunch_tests::cli::waited_run_id(&output)
        })
        .collect();
    let newest_first: Vec<String> = ids.iter().rev().cloned().collect();
    let transcript = drive(
        &scratch,
        json!([
            {"tool": "list", "arguments": {"all": true, "limit": 2}},
            {"tool": "list", "arguments": {"all": true, "limit": 2, "cursor": "${0.nextCursor}"}},
            {"tool": "list", "arguments": {"all": true, "limit": 2, "cursor": "${1.nextCursor}"}},
            {"tool": "list", "arguments": {"all": true, "state": "failed"}},
            {"tool": "list", "arguments": {"all": true, "text": ids[2]}},
            {"tool": "list", "arguments": {"all": true, "since": "1h", "agent": "shell", "limit": 1}},
            {"tool": "list", "arguments": {"all": true, "cursor": "nonsense"}},
            {"tool": "list", "arguments": {"all": true, "limit": 0}},
            {"tool": "list", "arguments": {"all": true, "since": "yesterday"}},
            {"tool": "list", "arguments": {"limit": 3}},
        ]),
    );
    let calls = transcript["calls"].as_array().unwrap();
    let answer = |i: usize| {
        assert!(!calls[i]["isError"].as_bool().unwrap(), "call {i}: {}", calls[i]);
        &calls[i]["json"]
    };
    let mut paged = listed_ids(answer(0));
    paged.extend(listed_ids(answer(1)));
    paged.extend(listed_ids(answer(2)));
    assert_eq!(paged, newest_first, "three pages, each run once, newest first");
    assert!(answer(1)["nextCursor"].is_string());
    assert_eq!(answer(2)["nextCursor"], Value::Null, "the last page says so");
    assert_eq!(listed_ids(answer(3)), [ids[3].clone(), ids[1].clone()]);
    assert_eq!(listed_ids(answer(4)), [ids[2].clone()]);
    assert_eq!(listed_ids(answer(5)), [ids[4].clone()]);
    assert!(tool_error(calls, 6).starts_with("cursor: "), "{}", tool_error(calls, 6));
    assert!(
        tool_error(calls, 7).contains("limit must be"),
        "{}",
        tool_error(calls, 7)
    );
    assert!(tool_error(calls, 8).starts_with("since: "), "{}", tool_error(calls, 8));
    assert_eq!(
        tool_error(calls, 9),
        "limit applies to every run's list only: pass all=true with it"
    );
}

#[test]
fn the_resume_tool_continues_an_agents_conversation_within_the_servers_limits() {
    let scratch = Scratch::new("mcp-resume");
    let scope = ModelServer::shared().scope("mcp-resume");
    scope.replies([Reply::text("first answer"), Reply::text("second answer")]);
    let claude = real_agents::claude(&scope);
    let env: Vec<(&str, &str)> = claude
        .env
        .iter()
        .filter(|(key, _)| key != "HOME")
        .map(|(key, value)| (key.as_str(), value.as_str()))
        .collect();
    // Inputs in the case of the outputs (`runId`), the snake_case spelling still accepted.
    let transcript = drive_server(
        &scratch,
        &[],
        &env,
        &scratch.work(),
        json!([
            {"tool": "run", "arguments": {"agent": "claude", "task": "first question", "wait": true}},
            {"tool": "resume", "arguments": {"runId": "${0.runId}", "task": "second question", "wait": true}},
            {"tool": "status", "arguments": {"run_id": "${1.runId}"}},
        ]),
    );
    let calls = transcript["calls"].as_array().unwrap();
    for (i, call) in calls.iter().enumerate() {
        assert!(!call["isError"].as_bool().unwrap(), "call {i}: {call}");
    }
    assert!(
        transcript["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "resume")
    );
    assert_eq!(calls[1]["json"]["answer"], "second answer", "{}", calls[1]);
    assert_ne!(calls[1]["json"]["runId"], calls[0]["json"]["runId"], "a new run");
    let requests = scope.main_requests();
    assert_eq!(requests.len(), 2, "{}", scope.dump());
    let second = requests[1].body.to_string();
    for turn in ["first question", "first answer", "second question"] {
        assert!(second.contains(turn), "the follow-up carries '{turn}': {second}");
    }
    // Compact answers: no null members anywhere, no pretty-printing.
    let text = calls[2]["text"].as_str().unwrap();
    assert!(!text.contains(":null") && !text.contains('\n'), "{text}");

    // A shell run the CLI made is not resumed by a server that does not start shell agents.
    let shell = scratch.finished_shell_run("echo from the cli");
    let refused = drive_server(
        &scratch,
        &[],
        &[],
        &scratch.work(),
        json!([{"tool": "resume", "arguments": {"runId": shell}}]),
    );
    let calls = refused["calls"].as_array().unwrap();
    let refusal = tool_error(calls, 0);
    assert!(refusal.contains("shell"), "{refusal}");
    assert_eq!(
        std::fs::read_dir(scratch.runs())
            .unwrap()
            .filter(|e| !e.as_ref().unwrap().file_name().to_string_lossy().starts_with('.'))
            .count(),
        3,
        "nothing more was launched"
    );
}

/// D5, D3: a client subscribed to `sublaunch://events` is told when runs change and reads the
/// stream on from its cursor, each event once; the `events` tool waits for the next event; a
/// refused launch says so in one word.
#[test]
fn d5_a_subscribed_client_is_told_of_new_events_and_reads_each_once_from_its_cursor() {
    let scratch = Scratch::new("mcp-events");
    let transcript = drive(
        &scratch,
        json!([
            {"subscribe": "sublaunch://events"},
            {"tool": "run", "arguments": {"agent": "shell", "task": "echo one", "wait": true}},
            {"awaitUpdate": "sublaunch://events", "timeoutMs": 20000},
            {"tool": "events", "arguments": {}},
            {"tool": "events", "arguments": {"since": "${3.cursor}"}},
            {"tool": "run", "arguments": {"agent": "shell", "task": "echo two"}},
            {"tool": "events", "arguments": {"since": "${3.cursor}", "waitSeconds": 60}},
            {"readResource": "sublaunch://events?since=${3.cursor}"},
            {"tool": "run", "arguments": {"agent": "nope", "task": "x"}},
        ]),
    );
    let calls = transcript["calls"].as_array().unwrap();
    for i in [0, 1, 2, 3, 4, 5, 6, 7] {
        assert!(!calls[i]["isError"].as_bool().unwrap(), "call {i}: {}", calls[i]);
    }
    let first = calls[1]["json"]["runId"].as_str().unwrap();
    let read = &calls[3]["json"];
    let kinds: Vec<&str> = read["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["runId"] == first)
        .map(|e| e["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        vec!["launched", "started", "step-started", "step-ended", "ended"],
        "{read}"
    );
    let cursor = read["cursor"].as_u64().unwrap();
    assert_eq!(read["events"].as_array().unwrap().last().unwrap()["cursor"], cursor);
    // Nothing new yet: an empty batch, the same cursor.
    assert_eq!(calls[4]["json"]["events"], json!([]), "{}", calls[4]);
    assert_eq!(calls[4]["json"]["cursor"], cursor);
    // The wait ends at the next run's first event; the resource reads the same from the cursor.
    let second = calls[5]["json"]["runId"].as_str().unwrap();
    let waited = calls[6]["json"]["events"].as_array().unwrap();
    assert!(!waited.is_empty());
    assert!(waited.iter().all(|e| e["runId"] == second), "{waited:?}");
    assert_eq!(waited[0]["type"], "launched");
    assert_eq!(waited[0]["cursor"], cursor + 1);
    assert_eq!(calls[7]["json"]["events"][0]["cursor"], cursor + 1, "{}", calls[7]);
    let updated = transcript["updated"].as_array().unwrap();
    assert!(!updated.is_empty());
    assert!(updated.iter().all(|uri| uri == "sublaunch://events"), "{updated:?}");
    // D3: a refused launch says why in words and in one word.
    assert!(calls[8]["isError"].as_bool().unwrap(), "{}", calls[8]);
    assert!(calls[8]["text"].as_str().unwrap().contains("'nope'"), "{}", calls[8]);
    assert_eq!(calls[8]["structured"]["failureKind"], "refused", "{}", calls[8]);
}
