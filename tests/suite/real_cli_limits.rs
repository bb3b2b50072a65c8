//! Budgets, the checkpoint before the deadline, and pi's extensions and skills, with the real
//! agent CLIs against the fake model server: the usage and tool calls a budget counts are the
//! ones the server scripted; the checkpoint is the text the server receives in the agent's
//! next request; the extensions' tools and the skills' descriptions are in what pi sends.

use crate::real_cli_runs::{World, only_request};
use serde_json::{Value, json};
use sublaunch_tests::cli::{text, waited_run_id, write};
use sublaunch_tests::model_server::Reply;
use sublaunch_tests::real_agents::PiApi;
use sublaunch_tests::stop_flag::StopFlag;

/// `list` and `status` of every listed run in a loop until `stop`, each call asserted to
/// work: observers beside the runs under test.
fn observe(world: &World, stop: &StopFlag) -> usize {
    let mut rounds = 0;
    while !stop.raised() {
        let out = world.sublaunch(&["list", "--all", "--json"]);
        assert!(out.status.success(), "list: {}", text(&out.stderr));
        let listed: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
        for run in &listed {
            let id = run["runId"].as_str().unwrap();
            let status = world.sublaunch(&["status", id, "--json"]);
            assert!(status.status.success(), "status: {}", text(&status.stderr));
        }
        rounds += 1;
    }
    rounds
}

/// A command that runs for 30 s and that Claude Code does not refuse (it blocks a standalone
/// long `sleep`, answering at once with an error).
const CLAUDE_LONG_COMMAND: &str = "timeout 30 tail -f /dev/null || true";

/// `run ARGS --wait`, which must fail: (run id, `result --json`).
fn run_failed(world: &World, args: &[&str]) -> (String, Value) {
    let output = world.run(args);
    assert_eq!(output.status.code(), Some(14), "{}", text(&output.stderr));
    let id = waited_run_id(&output);
    let result = world.result(&id);
    (id, result)
}

fn error_of(result: &Value) -> &str {
    result["error"].as_str().unwrap_or_default()
}

#[test]
fn usage_budgets_stop_the_real_agents_and_say_which_limit() {
    let world = World::with_pi_api("real-usage-budget", PiApi::AnthropicMessages);
    let stop = StopFlag::new();
    std::thread::scope(|threads| {
        let stop_observer = stop.raise_on_drop();
        let observer = threads.spawn(|| observe(&world, &stop));

        // pi's first model call alone is over the step's token budget: pi is stopped while its
        // tool runs, so the call after the tool never happens.
        world
            .pi
            .replies([Reply::tool_call("bash", json!({"command": "sleep 30"})).usage(800, 300, 5_000, 0)]);
        let chain = write(
            &world.scratch.path().join("pi-budget.json"),
            &json!({"steps": [{"agent": "pi", "task": "work", "model": "fake/fake-model",
                              "usageBudget": {"maxTokens": 1000}}]})
            .to_string(),
        );
        let (_, result) = run_failed(&world, &["--chain", chain.to_str().unwrap()]);
        assert_eq!(world.pi.main_requests().len(), 1, "{}", world.pi.dump());
        assert!(
            error_of(&result)
                .contains("used 1100 input and output tokens, more than the step's usageBudget.maxTokens 1000"),
            "cache reads are not counted: {result}"
        );
        let step = &result["steps"][0];
        assert_eq!(
            step["budgetExceeded"],
            json!({"scope": "step", "limit": "usageBudget.maxTokens", "allowed": 1000.0, "used": 1100.0})
        );
        assert_eq!(
            step["usage"]["inputTokens"], 800,
            "the usage so far is recorded: {step}"
        );

        // Claude Code keeps the dollar limit itself: it stops before running the tool.
        world.claude.replies([
            Reply::tool_call("Bash", json!({"command": CLAUDE_LONG_COMMAND})).usage(1_000_000, 1_000_000, 0, 0)
        ]);
        let (_, result) = run_failed(
            &world,
            &["--agent", "claude-writer", "--task", "work", "--max-cost", "0.01"],
        );
        assert_eq!(world.claude.main_requests().len(), 1, "{}", world.claude.dump());
        assert!(error_of(&result).contains("more than --max-cost $0.01"), "{result}");
        assert_eq!(result["steps"][0]["budgetExceeded"]["scope"], "run");

        // The run's budget counts every step: Codex's second step crosses it.
        world.codex.replies([
            Reply::text("first").usage(100, 20, 0, 0),
            Reply::text("second").usage(100, 20, 0, 0),
        ]);
        let chain = write(
            &world.scratch.path().join("codex-budget.json"),
            &json!({"usageBudget": {"maxTokens": 200},
                    "steps": [{"agent": "codex", "task": "one"}, {"agent": "codex", "task": "two: {previous}"}]})
            .to_string(),
        );
        let (_, result) = run_failed(&world, &["--chain", chain.to_str().unwrap()]);
        assert_eq!(result["steps"][0]["success"], true, "{result}");
        assert_eq!(result["steps"][1]["success"], false, "{result}");
        assert!(
            error_of(&result).contains("the run's agents used 240 input and output tokens, more than --max-tokens 200"),
            "{result}"
        );

        // Side by side, the run's budget counts both agents: the second report crosses it
        // and stops both, each in the middle of its tool.
        world
            .pi
            .replies([Reply::tool_call("bash", json!({"command": "sleep 30"})).usage(1000, 0, 0, 0)]);
        world
            .claude
            .replies([Reply::tool_call("Bash", json!({"command": CLAUDE_LONG_COMMAND})).usage(1000, 0, 0, 0)]);
        let chain = write(
            &world.scratch.path().join("parallel-budget.json"),
            &json!({"mode": "parallel", "usageBudget": {"maxTokens": 1500}, "steps": [
                {"agent": "pi", "task": "a", "model": "fake/fake-model"},
                {"agent": "claude-writer", "task": "b"}
            ]})
            .to_string(),
        );
        let (_, result) = run_failed(&world, &["--chain", chain.to_str().unwrap()]);
        for step in result["steps"].as_array().unwrap() {
            assert_eq!(step["budgetExceeded"]["scope"], "run", "{result}");
            assert!(step["budgetExceeded"]["used"].as_f64().unwrap() >= 2000.0, "{result}");
        }
        drop(stop_observer);
        assert!(observer.join().unwrap() > 0);
    });
}

#[test]
fn tool_budgets_count_the_tool_calls_the_real_agents_start() {
    let world = World::with_pi_api("real-tool-budget", PiApi::AnthropicMessages);
    // pi's second tool call is one too many; it is stopped before the call after it.
    world.pi.replies([
        Reply::tool_call("bash", json!({"command": "echo one"})),
        Reply::tool_call("bash", json!({"command": "sleep 30"})),
    ]);
    let (_, result) = run_failed(
        &world,
        &[
            "--agent",
            "pi",
            "--model",
            "fake/fake-model",
            "--task",
            "work",
            "--max-tool-calls",
            "1",
        ],
    );
    assert_eq!(world.pi.main_requests().len(), 2, "{}", world.pi.dump());
    assert!(
        error_of(&result).contains("started tool call 2, more than the step's toolBudget 1"),
        "{result}"
    );
    // Claude Code's tool calls are counted from its stream the same way.
    world
        .claude
        .replies([Reply::tool_call("Bash", json!({"command": CLAUDE_LONG_COMMAND}))]);
    let (_, result) = run_failed(
        &world,
        &["--agent", "claude-writer", "--task", "work", "--max-tool-calls", "0"],
    );
    assert_eq!(world.claude.main_requests().len(), 1, "{}", world.claude.dump());
    assert_eq!(result["steps"][0]["budgetExceeded"]["limit"], "toolBudget", "{result}");
    // Within the budget nothing is stopped.
    world.claude.replies([
        Reply::tool_call("Bash", json!({"command": "echo ok"})),
        Reply::text("done"),
    ]);
    let (_, stdout) = world.run_ok(&["--agent", "claude-writer", "--task", "work", "--max-tool-calls", "1"]);
    assert_eq!(stdout, "done\n");
}

/// The checkpoint a step's agent received, from its `subagent.step.checkpoint` event.
fn checkpoint_events(world: &World, id: &str) -> Vec<Value> {
    let run = world.scratch.run_dir(id).join("events.jsonl");
    std::fs::read_to_string(&run)
        .unwrap_or_default()
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|event| event["type"] == "subagent.step.checkpoint")
        .collect()
}

#[test]
fn the_checkpoint_reaches_pi_and_claude_while_they_work_and_their_answer_comes_back() {
    let world = World::with_pi_api("real-checkpoint", PiApi::AnthropicMessages);
    // Each agent's tool outlasts the moment of the checkpoint (6 s into a 30 s run, long after
    // the agents started); the request after the tool carries the checkpoint, and the answer
    // to it is the step's.
    world.pi.replies([
        Reply::tool_call("bash", json!({"command": "sleep 12"})),
        Reply::text("pi wrapped up"),
    ]);
    world.claude.replies([
        Reply::tool_call("Bash", json!({"command": "timeout 12 tail -f /dev/null || true"})),
        Reply::text("claude wrapped up"),
    ]);
    let chain = write(
        &world.scratch.path().join("checkpoint.json"),
        &json!({"mode": "parallel", "checkpointBeforeDeadlineMs": 24000, "steps": [
            {"agent": "pi", "task": "long work", "model": "fake/fake-model"},
            {"agent": "claude-writer", "task": "long work"}
        ]})
        .to_string(),
    );
    let (id, stdout) = world.run_ok(&["--chain", chain.to_str().unwrap(), "--timeout", "30"]);
    assert!(
        stdout.contains("pi wrapped up") && stdout.contains("claude wrapped up"),
        "{stdout}"
    );
    for scope in [&world.pi, &world.claude] {
        let requests = scope.main_requests();
        assert_eq!(requests.len(), 2, "{}", scope.dump());
        assert!(
            !requests[0].body.to_string().contains("This run ends in"),
            "no checkpoint before its time"
        );
        assert!(
            requests[1]
                .body
                .to_string()
                .contains("This run ends in 24 s. Wrap up now"),
            "{}",
            scope.dump()
        );
    }
    assert_eq!(checkpoint_events(&world, &id).len(), 2);
    // A checkpoint needs a deadline to count back from.
    let output = world.run(&["--agent", "pi", "--task", "x", "--checkpoint-before-deadline", "5"]);
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(
        text(&output.stderr),
        "sublaunch run: the agents are to be asked to wrap up 5s before the deadline, and the run has none: give it a timeout or a deadline\n"
    );
    // And Codex cannot be asked.
    let output = world.run(&[
        "--agent",
        "codex",
        "--task",
        "x",
        "--timeout",
        "60",
        "--checkpoint-before-deadline",
        "5",
    ]);
    assert_ne!(output.status.code(), Some(0));
    assert!(
        text(&output.stderr).contains("takes no input while it runs"),
        "{}",
        text(&output.stderr)
    );
}

/// A pi extension that registers one tool named `name`.
fn extension(name: &str) -> String {
    format!(
        r#"export default function (pi) {{
  pi.registerTool({{
    name: "{name}",
    label: "{name}",
    description: "the {name} tool",
    parameters: {{ type: "object", properties: {{}} }},
    async execute() {{ return {{ content: [{{ type: "text", text: "ok" }}] }}; }},
  }});
}}
"#
    )
}

/// The tool names of a request to the Anthropic API.
fn tools_of(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["name"].as_str().map(str::to_owned))
        .collect()
}

#[test]
fn pi_loads_the_named_extensions_and_skills_and_a_missing_one_refuses_the_launch() {
    let world = World::with_pi_api("real-pi-resources", PiApi::AnthropicMessages);
    let pi_dir = world.pi_config_dir();
    write(&pi_dir.join("extensions/greeter.js"), &extension("greet"));
    write(&world.scratch.work().join("tools/audit.js"), &extension("audit"));
    write(
        &world.scratch.work().join("skills/review/SKILL.md"),
        "---\nname: review\ndescription: Reviews a change for the team rules.\n---\nCheck everything.\n",
    );
    // Discovery stays on: the agent directory's extension, plus the required one by path and
    // the skill by path.
    world.pi.replies([Reply::text("one")]);
    world.run_ok(&[
        "--agent",
        "pi",
        "--model",
        "fake/fake-model",
        "--task",
        "t",
        "--require-extension",
        "./tools/audit.js",
        "--skill",
        "./skills/review",
    ]);
    let body = only_request(&world.pi).body;
    let tools = tools_of(&body);
    assert!(
        tools.contains(&"greet".to_owned()) && tools.contains(&"audit".to_owned()),
        "{tools:?}"
    );
    assert!(
        body.to_string().contains("Reviews a change for the team rules."),
        "{}",
        world.pi.dump()
    );
    // An empty list turns discovery off; a required extension by name is found in pi's
    // directory and still loads.
    world.pi.replies([Reply::text("two")]);
    let chain = write(
        &world.scratch.path().join("resources.json"),
        &json!({"steps": [{"agent": "pi", "task": "t", "model": "fake/fake-model",
                           "extensions": [], "requiredExtensions": ["greeter"], "skills": []}]})
        .to_string(),
    );
    world.run_ok(&["--chain", chain.to_str().unwrap()]);
    let body = world.pi.main_requests().pop().unwrap().body;
    let tools = tools_of(&body);
    assert!(
        tools.contains(&"greet".to_owned()) && !tools.contains(&"audit".to_owned()),
        "{tools:?}"
    );
    assert!(
        !body.to_string().contains("Reviews a change"),
        "no skills: {}",
        world.pi.dump()
    );
    // A missing extension refuses the launch, naming where it was looked for; nothing runs.
    let before = world.pi.main_requests().len();
    let output = world.run(&["--agent", "pi", "--task", "t", "--require-extension", "nothere"]);
    // Refused before launch: exit 2, said as `sublaunch run: …`.
    assert_eq!(output.status.code(), Some(2), "{}", text(&output.stderr));
    let stderr = text(&output.stderr);
    assert!(
        stderr.starts_with("sublaunch run: step 1 pi needs the pi extension 'nothere', which is in none of ")
            && stderr.contains(&pi_dir.join("extensions").display().to_string()),
        "{stderr}"
    );
    // A missing skill too (pi itself would skip it without a word).
    let output = world.run(&["--agent", "pi", "--task", "t", "--skill", "./skills/absent"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        text(&output.stderr).starts_with("sublaunch run: step 1 pi names the pi skill skills/absent, and"),
        "{}",
        text(&output.stderr)
    );
    assert_eq!(world.pi.main_requests().len(), before);
    // Claude Code cannot be given skills.
    let output = world.run(&["--agent", "claude", "--task", "t", "--skill", "review"]);
    assert_ne!(output.status.code(), Some(0));
    assert!(
        text(&output.stderr).contains("Claude Code loads every skill"),
        "{}",
        text(&output.stderr)
    );
}
