//! `sublaunch mcp` driven by real MCP clients: the official TypeScript SDK client
//! (tests/mcp/driver.cjs, installed with the agent CLIs by scripts/setup-agents.sh) and the
//! real Claude Code, which delegates to sublaunch through it while the fake model server
//! plays the model.

use serde_json::{Value, json};
use std::path::PathBuf;
use sublaunch_tests::cli::{ok, text, write};
use sublaunch_tests::launch_harness::Scratch;
use sublaunch_tests::model_server::{ModelServer, Reply};
use sublaunch_tests::real_agents;

/// `target/agents/node_modules`.
fn node_modules() -> PathBuf {
    real_agents::bin_dir().parent().expect("node_modules/.bin").to_owned()
}

/// How the tests start `sublaunch mcp`: the binary and the scratch's environment.
fn server_env(scratch: &Scratch) -> Value {
    let mut env: serde_json::Map<String, Value> = scratch.cli_env().into_iter().map(|(k, v)| (k, json!(v))).collect();
    env.insert("PATH".into(), json!(real_agents::path_env()));
    Value::Object(env)
}

/// Runs the SDK client through `calls`; its transcript: `{tools, calls: [{tool, isError,
/// text, json, progress}]}`.
fn drive(scratch: &Scratch, calls: Value) -> Value {
    real_agents::require_installed();
    let script = json!({
        "nodeModules": node_modules(),
        "command": sublaunch_tests::bin("sublaunch"),
        "args": ["mcp"],
        "env": server_env(scratch),
        "cwd": scratch.work(),
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
        "run", "wait", "status", "list", "result", "logs", "stop", "agents", "models",
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
    assert_eq!(lines, ["[1 shell] a", "[2 shell] b", "[3 shell] c"]);

    let any = answer(8);
    assert_eq!(
        any["ended"][0]["runId"],
        answer(7)["runId"],
        "the quick one ends first: {any}"
    );
    assert_eq!(any["stillRunning"], json!([answer(6)["runId"]]));
    assert_eq!(answer(9)["state"], "stopped", "{}", answer(9));
    assert_eq!(answer(10)["answer"], "waited", "run with wait returns the result");
    assert_eq!(answer(11).as_array().unwrap().len(), 6, "{}", answer(11));
    assert_eq!(answer(12)["result"]["answer"], "one");
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
        "max_tokens",
        "max_cost_usd",
        "max_tool_calls",
        "checkpoint_before_deadline_seconds",
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
        "args": ["mcp"],
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
