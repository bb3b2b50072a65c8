//! sublaunch running the real agent CLIs (Claude Code, Codex, pi from npm, installed by
//! scripts/setup-agents.sh) against the test binary's fake model server: what reached the
//! API (model, thinking level, system prompt, schema, earlier turns), what came back (the
//! answer on stdout, `result`, usage equal to what the server reported, the agents' session
//! ids), and how failures read (the API's own message as the step's error).
//!
//! Each CLI gets its own scope of the server, so parallel tasks never take each other's
//! scripted replies.

use serde_json::{Value, json};
use std::path::PathBuf;
use std::process::Output;
use sublaunch_tests::cli::{ok, text, write};
use sublaunch_tests::launch_harness::Scratch;
use sublaunch_tests::model_server::{ModelServer, Reply, Request, Scope};
use sublaunch_tests::real_agents::{self, Agent, PiApi};

/// A project with the three CLIs set up against scopes of the shared server.
pub(crate) struct World {
    pub(crate) scratch: Scratch,
    pub(crate) claude: Scope,
    pub(crate) codex: Scope,
    pub(crate) pi: Scope,
    /// The CLIs' environments, merged (their config directories live as long as these).
    agents: Vec<Agent>,
    /// A registry layer naming pi's fake provider's models.
    registry: PathBuf,
}

impl World {
    fn new(name: &str) -> World {
        World::with_pi_api(name, PiApi::OpenAiCompletions)
    }

    /// The world with pi talking `api` (the fake server scripts tool calls on the Anthropic
    /// Messages API).
    pub(crate) fn with_pi_api(name: &str, api: PiApi) -> World {
        real_agents::require_installed();
        let server = ModelServer::shared();
        let scratch = Scratch::trusting(name);
        scratch.init_repo();
        let (claude, codex, pi) = (
            server.scope(&format!("{name}-claude")),
            server.scope(&format!("{name}-codex")),
            server.scope(&format!("{name}-pi")),
        );
        let agents = vec![
            real_agents::claude(&claude),
            real_agents::codex(&codex),
            real_agents::pi(&pi, api),
        ];
        let registry = write(
            &scratch.path().join("models.json"),
            &json!([
                {"provider": "fake", "id": "fake-model", "reasoning": false},
                {"provider": "fake", "id": "fake-reasoner", "reasoning": true,
                 "thinkingLevels": ["off", "minimal", "low", "medium", "high"]},
            ])
            .to_string(),
        );
        World {
            scratch,
            claude,
            codex,
            pi,
            agents,
            registry,
        }
    }

    /// pi's `PI_CODING_AGENT_DIR`.
    pub(crate) fn pi_config_dir(&self) -> PathBuf {
        self.agents[2].config_dir.clone()
    }

    /// `.sublaunch/agents/<name>.md` in the project.
    fn agent(&self, name: &str, frontmatter: &str, body: &str) {
        write(
            &self.scratch.work().join(format!(".sublaunch/agents/{name}.md")),
            &format!("---\nname: {name}\n{frontmatter}---\n{body}"),
        );
    }

    /// `sublaunch ARGS` with the CLIs' environment.
    pub(crate) fn sublaunch(&self, args: &[&str]) -> Output {
        self.sublaunch_with(args, &[])
    }

    /// `sublaunch ARGS` with the CLIs' environment and `extra`.
    pub(crate) fn sublaunch_with(&self, args: &[&str], extra: &[(&str, PathBuf)]) -> Output {
        let mut command = self.command(args);
        command.envs(extra.iter().map(|(k, v)| (k, v)));
        command.output().unwrap()
    }

    /// The command `sublaunch ARGS` with the CLIs' environment.
    pub(crate) fn command(&self, args: &[&str]) -> std::process::Command {
        let mut command = self.scratch.cli(args);
        for agent in &self.agents {
            for (key, value) in &agent.env {
                if key != "HOME" {
                    command.env(key, value);
                }
            }
        }
        command
    }

    /// `run ARGS --wait`, which must complete: (run id, stdout).
    pub(crate) fn run_ok(&self, args: &[&str]) -> (String, String) {
        let output = self.run(args);
        let stdout = ok(&output);
        (run_id(&output), stdout)
    }

    /// `run ARGS --wait --models <registry>`.
    pub(crate) fn run(&self, args: &[&str]) -> Output {
        let registry = self.registry.to_string_lossy().into_owned();
        let mut all = vec!["run"];
        all.extend_from_slice(args);
        all.extend_from_slice(&["--wait", "--models", &registry]);
        self.sublaunch(&all)
    }

    /// `result ID --json`.
    pub(crate) fn result(&self, id: &str) -> Value {
        let output = self.sublaunch(&["result", id, "--json"]);
        serde_json::from_slice(&output.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&output.stderr)))
    }
}

/// The run id `run --wait` prints first on stderr.
fn run_id(output: &Output) -> String {
    text(&output.stderr).lines().next().unwrap_or_default().to_owned()
}

/// The one conversation request of a scope (the CLI made exactly one).
pub(crate) fn only_request(scope: &Scope) -> Request {
    let requests = scope.main_requests();
    assert_eq!(requests.len(), 1, "{}", scope.dump());
    requests.into_iter().next().unwrap()
}

fn usage(input: u64, output: u64, cache_read: u64, cache_write: u64) -> Value {
    json!({"inputTokens": input, "outputTokens": output, "cacheReadTokens": cache_read, "cacheWriteTokens": cache_write})
}

/// The token counts of a usage object (its cost left out).
fn tokens(usage: &Value) -> Value {
    let mut usage = usage.clone();
    usage.as_object_mut().map(|u| u.remove("costUsd"));
    usage
}

#[test]
fn claude_code_gets_the_model_and_thinking_as_it_names_them_and_its_answer_and_usage_come_back() {
    let world = World::new("real-claude");
    world.agent(
        "sonnet45",
        "model: anthropic/claude-sonnet-4-5:high\nrunner: {type: external-cli, adapter: claude-code}\n",
        "You review carefully.\n",
    );
    world.agent(
        "sonnet46",
        "model: claude-sonnet-4-6\nthinking: low\nrunner: {type: external-cli, adapter: claude-code}\n",
        "",
    );
    world.claude.reply(Reply::text("Looks right.").usage(100, 20, 30, 40));
    let (id, stdout) = world.run_ok(&["--agent", "sonnet45", "--task", "check the parser"]);
    assert_eq!(stdout, "Looks right.\n", "run --wait prints the answer");
    let request = only_request(&world.claude);
    assert_eq!(
        request.model(),
        Some("claude-sonnet-4-5"),
        "provider and level are not part of the name"
    );
    // claude-sonnet-4-5 takes a thinking budget (it ignores --effort): high is 16000 tokens.
    assert_eq!(
        request.body["thinking"]["budget_tokens"], 16000,
        "{}",
        request.body["thinking"]
    );
    assert!(request.body["system"].to_string().contains("You review carefully."));
    assert!(request.body["messages"].to_string().contains("check the parser"));

    let result = world.result(&id);
    assert_eq!(result["answer"], "Looks right.");
    let step = &result["steps"][0];
    assert_eq!(tokens(&step["usage"]), usage(100, 20, 30, 40), "{step}");
    assert!(
        step["usage"]["costUsd"].as_f64().is_some_and(|c| c > 0.0),
        "Claude Code reports a cost"
    );
    assert!(step["agentSession"].as_str().is_some_and(|s| s.len() > 8), "{step}");
    assert_eq!(tokens(&result["usage"]), usage(100, 20, 30, 40), "the run's sum");
    let status: Value = serde_json::from_str(&ok(&world.sublaunch(&["status", &id, "--json"]))).unwrap();
    assert_eq!(tokens(&status["steps"][0]["usage"]), usage(100, 20, 30, 40));
    assert_eq!(
        status["result"]["answer"], "Looks right.",
        "status --json carries the answer"
    );
    let list: Value = serde_json::from_str(&ok(&world.sublaunch(&["list", "--all", "--json"]))).unwrap();
    assert_eq!(tokens(&list[0]["usage"]), usage(100, 20, 30, 40), "{list}");

    // An adaptive model follows --effort instead.
    world.claude.reply(Reply::text("fine"));
    world.run_ok(&["--agent", "sonnet46", "--task", "again"]);
    let request = world.claude.main_requests().pop().unwrap();
    assert_eq!(request.model(), Some("claude-sonnet-4-6"));
    assert_eq!(request.body["output_config"]["effort"], "low", "{}", request.body);
}

#[test]
fn codex_gets_developer_instructions_and_the_reasoning_effort_and_reports_usage() {
    let world = World::new("real-codex");
    world.agent(
        "terse",
        "model: openai/gpt-5.5:high\nrunner: {type: external-cli, adapter: codex-exec}\n",
        "Answer in one word.\nQuote \"nothing\".\n",
    );
    world.codex.reply(Reply::text("Paris").usage(100, 20, 30, 0));
    let (id, stdout) = world.run_ok(&["--agent", "terse", "--task", "capital of France?"]);
    assert_eq!(stdout, "Paris\n");
    let request = only_request(&world.codex);
    assert_eq!(request.model(), Some("gpt-5.5"));
    assert_eq!(
        request.body["reasoning"]["effort"], "high",
        "{}",
        request.body["reasoning"]
    );
    // The system prompt is developer instructions (quotes and newlines intact), not user text.
    let developer = request.body["input"][1]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert_eq!(
        developer, "Answer in one word.\nQuote \"nothing\".\n",
        "{}",
        request.body["input"]
    );
    let user = request.body["input"].to_string();
    assert!(user.contains("capital of France?"));
    let result = world.result(&id);
    assert_eq!(
        result["steps"][0]["usage"],
        usage(100, 20, 30, 0),
        "Codex reports no cost"
    );
    assert!(result["steps"][0]["agentSession"].as_str().is_some());
}

/// `run --agent claude|codex --model … --thinking …`: the built-in agents, no agent file. The
/// request the API sees carries the model as the CLI names it and the level as its effort; a
/// level the CLI has no name for runs as its nearest, and the run says so on stderr.
#[test]
fn claude_code_and_codex_take_a_model_and_thinking_level_per_launch() {
    let world = World::new("real-per-launch");
    world.claude.reply(Reply::text("one"));
    let (_, stdout) = world.run_ok(&[
        "--agent",
        "claude",
        "--model",
        "anthropic/claude-sonnet-4-5",
        "--thinking",
        "high",
        "--task",
        "hi",
    ]);
    assert_eq!(stdout, "one\n");
    let request = only_request(&world.claude);
    assert_eq!(request.model(), Some("claude-sonnet-4-5"), "{}", request.body);
    // claude-sonnet-4-5 takes a thinking budget: high is 16000 tokens.
    assert_eq!(request.body["thinking"]["budget_tokens"], 16000, "{}", request.body);

    // An adaptive model follows --effort; minimal is not one of Claude Code's levels.
    world.claude.reply(Reply::text("two"));
    let output = world.run(&[
        "--agent",
        "claude",
        "--model",
        "anthropic/claude-sonnet-4-6:minimal",
        "--task",
        "hi",
    ]);
    ok(&output);
    let request = world.claude.main_requests().pop().unwrap();
    assert_eq!(request.model(), Some("claude-sonnet-4-6"));
    assert_eq!(request.body["output_config"]["effort"], "low", "{}", request.body);
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains("note: Claude Code has no thinking level 'minimal'") && stderr.contains("'low'"),
        "{stderr}"
    );

    world.codex.reply(Reply::text("three"));
    let output = world.run(&[
        "--agent",
        "codex",
        "--model",
        "openai/gpt-5-mini",
        "--thinking",
        "max",
        "--task",
        "hi",
    ]);
    assert_eq!(ok(&output), "three\n");
    let request = only_request(&world.codex);
    assert_eq!(request.model(), Some("gpt-5-mini"));
    assert_eq!(
        request.body["reasoning"]["effort"], "xhigh",
        "{}",
        request.body["reasoning"]
    );
    assert!(
        text(&output.stderr).contains("Codex has no thinking level 'max'"),
        "{}",
        text(&output.stderr)
    );
    world.codex.reply(Reply::text("four"));
    world.run_ok(&[
        "--agent",
        "codex",
        "--model",
        "openai/gpt-5.5",
        "--thinking",
        "off",
        "--task",
        "hi",
    ]);
    let request = world.codex.main_requests().pop().unwrap();
    assert_eq!(request.model(), Some("gpt-5.5"));
    assert_eq!(
        request.body["reasoning"]["effort"], "none",
        "{}",
        request.body["reasoning"]
    );
}

#[test]
fn pi_gets_the_planned_model_and_thinking_and_reports_usage_and_cost() {
    let world = World::new("real-pi");
    world.pi.reply(Reply::text("done by pi").usage(100, 20, 30, 0));
    let (id, stdout) = world.run_ok(&[
        "--agent",
        "pi",
        "--model",
        "fake/fake-reasoner",
        "--thinking",
        "low",
        "--task",
        "map the code",
    ]);
    assert_eq!(stdout, "done by pi\n");
    let request = only_request(&world.pi);
    assert_eq!(request.model(), Some("fake-reasoner"));
    assert_eq!(request.body["reasoning_effort"], "low", "{}", request.body);
    let step = &world.result(&id)["steps"][0];
    assert_eq!(tokens(&step["usage"]), usage(100, 20, 30, 0));
    // pi prices with models.json: 3, 15 and 0.3 dollars per million input, output, cache read.
    let cost = step["usage"]["costUsd"].as_f64().unwrap();
    assert!((cost - 0.000_609).abs() < 1e-9, "{cost}");
}

#[test]
fn a_chain_passes_previous_from_claude_to_codex_to_pi_and_a_group_answers_under_headings() {
    let world = World::new("real-chain");
    world.claude.reply(Reply::text("alpha from claude"));
    world.codex.reply(Reply::text("beta from codex"));
    world.pi.reply(Reply::text("gamma from pi"));
    let chain = write(
        &world.scratch.work().join("chain.yaml"),
        "steps:\n  - {agent: claude, task: 'first: {task}'}\n  - {agent: codex, task: 'second: {previous}'}\n  - {agent: pi, model: fake/fake-model, task: 'third: {previous}'}\n",
    );
    let (id, stdout) = world.run_ok(&["--chain", &chain.to_string_lossy(), "--task", "the parser"]);
    assert_eq!(stdout, "gamma from pi\n", "the last step's answer");
    // `logs` reads as what each agent said; `--raw` is their event streams as printed.
    let logs = ok(&world.sublaunch(&["logs", &id]));
    for said in [
        "[1 claude] alpha from claude",
        "[2 codex] beta from codex",
        "[3 pi] gamma from pi",
    ] {
        assert!(logs.lines().any(|line| line == said), "{said:?} in:\n{logs}");
    }
    assert!(!logs.contains("\"type\""), "no raw events:\n{logs}");
    let raw = ok(&world.sublaunch(&["logs", &id, "--raw"]));
    assert!(
        raw.contains("\"type\":\"result\"") && raw.contains("\"type\":\"turn.completed\""),
        "{raw}"
    );
    assert!(
        only_request(&world.claude)
            .body
            .to_string()
            .contains("first: the parser")
    );
    assert!(
        only_request(&world.codex)
            .body
            .to_string()
            .contains("second: alpha from claude")
    );
    assert!(
        only_request(&world.pi)
            .body
            .to_string()
            .contains("third: beta from codex")
    );

    world.claude.reply(Reply::text("one"));
    world.codex.reply(Reply::text("two"));
    world.pi.reply(Reply::text("three"));
    let group = write(
        &world.scratch.work().join("group.yaml"),
        "mode: parallel\nsteps:\n  - {agent: claude, task: 'a {task}'}\n  - {agent: codex, task: 'b {task}'}\n  - {agent: pi, model: fake/fake-model, task: 'c {task}'}\n",
    );
    let (_, stdout) = world.run_ok(&["--chain", &group.to_string_lossy(), "--task", "x"]);
    assert_eq!(
        stdout,
        "=== 1.1 claude ===\none\n\n=== 1.2 codex ===\ntwo\n\n=== 1.3 pi ===\nthree\n"
    );
}

#[test]
fn dropped_streams_that_recover_are_successes() {
    let world = World::new("real-drop");
    // pi retries after longer than a settled agent is given to exit (1 s): its `agent_end`
    // before a retry must not count as its end.
    let pi_settings = world.agents[2].config_dir.join("settings.json");
    write(
        &pi_settings,
        &json!({"defaultProvider": "fake", "defaultModel": "fake-model",
                "retry": {"enabled": true, "maxRetries": 1, "baseDelayMs": 1500}})
        .to_string(),
    );
    for scope in [&world.claude, &world.codex, &world.pi] {
        scope.replies([Reply::drop_stream(), Reply::text("recovered")]);
    }
    let group = write(
        &world.scratch.work().join("group.yaml"),
        "mode: parallel\nsteps:\n  - {agent: claude, task: 'a'}\n  - {agent: codex, task: 'b'}\n  - {agent: pi, model: fake/fake-model, task: 'c'}\n",
    );
    // Observers list and read every run while it goes; none may disturb it or fail.
    let done = sublaunch_tests::stop_flag::StopFlag::new();
    let (id, _) = std::thread::scope(|threads| {
        let stop_observer = done.raise_on_drop();
        let observer = threads.spawn(|| {
            let mut looks = 0;
            while !done.raised() {
                ok(&world.sublaunch(&["list", "--all", "--json"]));
                looks += 1;
            }
            looks
        });
        let ran = world.run_ok(&["--chain", &group.to_string_lossy()]);
        drop(stop_observer);
        assert!(observer.join().unwrap() > 0);
        ran
    });
    for scope in [&world.claude, &world.codex, &world.pi] {
        assert_eq!(scope.main_requests().len(), 2, "one retry: {}", scope.dump());
    }
    let result = world.result(&id);
    for step in result["steps"].as_array().unwrap() {
        assert_eq!(
            (&step["success"], &step["output"]),
            (&json!(true), &json!("recovered")),
            "{step}"
        );
    }
}

#[test]
fn an_api_error_is_the_steps_error_in_the_apis_words() {
    let world = World::new("real-error");
    // Claude Code re-sends a 400 several times (dropping beta headers): every answer is one.
    world.claude.set_default(Reply::error(400, "invalid model: nope"));
    world
        .codex
        .reply(Reply::error(400, "Invalid schema for response_format"));
    world.pi.reply(Reply::error(400, "bad thing happened"));
    let group = write(
        &world.scratch.work().join("group.yaml"),
        "mode: parallel\nsteps:\n  - {agent: claude, task: 'a'}\n  - {agent: codex, task: 'b'}\n  - {agent: pi, model: fake/fake-model, task: 'c'}\n",
    );
    let output = world.run(&["--chain", &group.to_string_lossy()]);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output.stderr));
    let result = world.result(&run_id(&output));
    let errors: Vec<String> = result["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["error"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert!(errors[0].contains("API Error: 400 invalid model: nope"), "{errors:?}");
    assert!(errors[1].contains("Invalid schema for response_format"), "{errors:?}");
    assert!(errors[2].contains("bad thing happened"), "{errors:?}");
}

#[test]
fn structured_output_is_enforced_by_claude_code_and_codex_themselves() {
    let world = World::new("real-schema");
    let schema = "outputSchema:\n  type: object\n  additionalProperties: false\n  required: [answer]\n  properties:\n    answer: {type: string}\n";
    world.agent(
        "judge",
        &format!("runner: {{type: external-cli, adapter: claude-code}}\n{schema}"),
        "",
    );
    world.agent(
        "judge-codex",
        &format!("runner: {{type: external-cli, adapter: codex-exec}}\n{schema}"),
        "",
    );
    world.claude.reply(Reply::json(json!({"answer": "forty-two"})));
    let (id, _) = world.run_ok(&["--agent", "judge", "--task", "the answer?"]);
    let request = only_request(&world.claude);
    assert!(
        request.body["tools"].to_string().contains("StructuredOutput"),
        "--json-schema reached Claude Code"
    );
    assert_eq!(
        world.result(&id)["steps"][0]["structured"],
        json!({"answer": "forty-two"})
    );

    // The model answers in prose and never calls the tool: Claude Code exits 0, the step fails.
    world.claude.set_default(Reply::text("I think it is 42."));
    let output = world.run(&["--agent", "judge", "--task", "the answer?"]);
    assert_eq!(output.status.code(), Some(1));
    let error = world.result(&run_id(&output))["steps"][0]["error"].clone();
    assert!(error.to_string().contains("without the structured output"), "{error}");
    world.claude.set_default(Reply::text("ok"));

    world.codex.reply(Reply::json(json!({"answer": "forty-two"})));
    let (id, _) = world.run_ok(&["--agent", "judge-codex", "--task", "the answer?"]);
    let format = &only_request(&world.codex).body["text"]["format"];
    assert_eq!(
        (&format["type"], &format["strict"]),
        (&json!("json_schema"), &json!(true)),
        "{format}"
    );
    assert_eq!(
        world.result(&id)["steps"][0]["structured"],
        json!({"answer": "forty-two"})
    );

    world.codex.reply(Reply::text("not json at all"));
    let output = world.run(&["--agent", "judge-codex", "--task", "the answer?"]);
    assert_eq!(output.status.code(), Some(17));
    let error = world.result(&run_id(&output))["steps"][0]["error"].to_string();
    assert!(error.contains("is not JSON"), "{error}");

    // A schema Codex would send as strict but is not strict: refused before anything runs.
    world.agent(
        "loose-codex",
        "runner: {type: external-cli, adapter: codex-exec}\noutputSchema: {type: object, properties: {answer: {type: string}}}\n",
        "",
    );
    let before = world.codex.requests().len();
    let output = world.run(&["--agent", "loose-codex", "--task", "the answer?"]);
    assert_eq!(output.status.code(), Some(2), "refused before launch");
    let stderr = text(&output.stderr);
    assert!(
        stderr.starts_with("sublaunch run: Codex sends the output schema of step 1 ('loose-codex') as a strict JSON schema, which it is not: ")
            && stderr.contains("additionalProperties"),
        "{stderr}"
    );
    assert_eq!(world.codex.requests().len(), before, "nothing was paid for");
}

#[test]
fn resume_continues_each_agents_own_conversation() {
    let world = World::new("real-resume");
    world
        .claude
        .replies([Reply::text("first answer"), Reply::text("second answer")]);
    world.codex.replies([
        Reply::text("first answer").usage(100, 10, 0, 0),
        Reply::text("second answer").usage(300, 5, 0, 0),
    ]);
    world
        .pi
        .replies([Reply::text("first answer"), Reply::text("second answer")]);
    for (agent, scope, extra) in [
        ("claude", &world.claude, vec![]),
        ("codex", &world.codex, vec![]),
        ("pi", &world.pi, vec!["--model", "fake/fake-model"]),
    ] {
        let mut args = vec!["--agent", agent, "--task", "first question"];
        args.extend(extra);
        let (first, _) = world.run_ok(&args);
        let output = world.sublaunch(&["resume", &first, "--task", "second question", "--wait"]);
        assert_eq!(ok(&output), "second answer\n", "{agent}");
        let requests = scope.main_requests();
        assert_eq!(requests.len(), 2, "{agent}: {}", scope.dump());
        let second = requests[1].body.to_string();
        for turn in ["first question", "first answer", "second question"] {
            assert!(
                second.contains(turn),
                "{agent}: the follow-up carries '{turn}': {second}"
            );
        }
        let resumed = world.result(&run_id(&output));
        assert_eq!(
            resumed["steps"][0]["agentSession"],
            world.result(&first)["steps"][0]["agentSession"],
            "{agent}: the same conversation"
        );
        if agent == "codex" {
            // Codex counts the thread's total; the resumed run's usage is its own share.
            assert_eq!(resumed["steps"][0]["usage"], usage(300, 5, 0, 0));
        }
    }

    // A shell run keeps no conversation: said, and nothing is launched.
    let (shell, _) = world.run_ok(&["--agent", "shell", "--task", "echo hi"]);
    let output = world.sublaunch(&["resume", &shell, "--task", "more"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        text(&output.stderr).contains("left no conversation to continue"),
        "{}",
        text(&output.stderr)
    );
}

#[test]
fn real_writers_work_in_their_worktrees_and_resume_there() {
    let world = World::new("real-worktrees");
    let work = world.scratch.work();
    write(&work.join("README"), "project\n");
    let git = |args: &[&str]| sublaunch_tests::cli::git(&work, args);
    git(&["add", "-A"]);
    git(&["commit", "-qm", "base"]);
    let worktree = world.scratch.root().join("worktrees/claude-wt/1");
    let notes = worktree.join("notes.txt");
    world.claude.replies([
        Reply::tool_call(
            "Write",
            json!({"file_path": notes.to_string_lossy(), "content": "written by claude\n"}),
        ),
        Reply::text("wrote the notes"),
        Reply::text("still here"),
    ]);
    world.codex.replies([Reply::text("looked around")]);
    let (_, stdout) = world.run_ok(&[
        "--agent",
        "claude-writer",
        "--worktree",
        "--run-id",
        "claude-wt",
        "--task",
        "write notes",
    ]);
    assert_eq!(stdout, "wrote the notes\n");
    // Claude Code ran in the worktree (its environment block names its directory) and wrote
    // there, not in the user's checkout.
    let requests = world.claude.main_requests();
    assert!(
        requests[0].body.to_string().contains(&*worktree.to_string_lossy()),
        "{}",
        world.claude.dump()
    );
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "written by claude\n");
    assert!(!work.join("notes.txt").exists());
    let step = &world.result("claude-wt")["steps"][0]["worktree"];
    assert_eq!(step["branch"], "sublaunch/claude-wt/1");
    assert_eq!(step["uncommitted"]["untrackedFiles"], 1, "{step}");
    // The follow-up continues the conversation where its work is.
    let output = world.sublaunch(&["resume", "claude-wt", "--task", "anything else?", "--wait"]);
    assert_eq!(ok(&output), "still here\n");
    let follow_up = world.claude.main_requests().last().unwrap().body.to_string();
    assert!(follow_up.contains(&*worktree.to_string_lossy()), "{follow_up}");
    // Codex too runs in a worktree of its own.
    let (id, _) = world.run_ok(&["--agent", "codex-writer", "--worktree", "--task", "look around"]);
    let codex_tree = world.scratch.root().join("worktrees").join(&id).join("1");
    assert!(
        only_request(&world.codex)
            .body
            .to_string()
            .contains(&*codex_tree.to_string_lossy()),
        "{}",
        world.codex.dump()
    );
    assert_eq!(git(&["status", "--porcelain"]), "", "the user's checkout is untouched");
}

#[test]
fn reads_named_answers_and_output_files_reach_the_real_agents() {
    let world = World::new("real-step-io");
    let work = world.scratch.work();
    write(&work.join("docs/brief.md"), "the brief says: ship on friday\n");
    let brief = work.join("docs/brief.md");
    // Claude Code is told which file to read and reads it with its own tool; its answer is
    // named and handed to Codex; pi reads the same file through its @file argument and its
    // answer also goes to a file.
    world.claude.replies([
        Reply::tool_call("Read", json!({"file_path": brief.to_string_lossy()})),
        Reply::text("plan: friday"),
    ]);
    world.codex.replies([Reply::text("codex agrees")]);
    world.pi.replies([Reply::text("pi summary")]);
    let chain = write(
        &world.scratch.path().join("io.json"),
        &json!({"steps": [
            {"agent": "claude", "task": "make a plan", "reads": ["docs/brief.md"], "as": "plan"},
            {"agent": "codex", "task": "check this plan: {outputs.plan}"},
            {"agent": "pi", "task": "summarise", "reads": ["docs/brief.md"], "model": "fake/fake-model", "output": "summary.md"}
        ]})
        .to_string(),
    );
    let (_, stdout) = world.run_ok(&["--chain", chain.to_str().unwrap()]);
    assert_eq!(stdout, "pi summary\n");
    let claude = world.claude.main_requests();
    assert!(
        claude[0].body.to_string().contains(&format!("- {}", brief.display())),
        "{}",
        world.claude.dump()
    );
    assert!(
        claude[1].body.to_string().contains("ship on friday"),
        "Claude Code read the file: {}",
        world.claude.dump()
    );
    assert!(
        only_request(&world.codex)
            .body
            .to_string()
            .contains("check this plan: plan: friday"),
        "{}",
        world.codex.dump()
    );
    assert!(
        only_request(&world.pi).body.to_string().contains("ship on friday"),
        "pi put the file's contents before its prompt: {}",
        world.pi.dump()
    );
    assert_eq!(std::fs::read_to_string(work.join("summary.md")).unwrap(), "pi summary");
}

#[test]
fn read_only_claude_code_starts_none_of_the_users_mcp_servers_and_a_writer_still_does() {
    let world = World::new("real-claude-mcp");
    // A user-scope MCP server of Claude Code's that leaves a mark when it is started (and
    // then serves sublaunch's own tools, a server a read-only agent must not reach).
    let started = world.scratch.path().join("mcp-server-started");
    let server = write(
        &world.scratch.path().join("mcp-server.sh"),
        &format!(
            "#!/bin/sh\ntouch '{}'\nexec '{}' mcp\n",
            started.display(),
            sublaunch_tests::bin("sublaunch").display()
        ),
    );
    std::fs::set_permissions(&server, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    write(
        &world.agents[0].config_dir.join(".claude.json"),
        &json!({"mcpServers": {"probe": {"type": "stdio", "command": server}}}).to_string(),
    );
    world.agent(
        "looker",
        "runner: {type: external-cli, adapter: claude-code}\ntools: [read, mcp__probe__run]\n",
        "",
    );

    world.claude.reply(Reply::text("read only"));
    let (_, stdout) = world.run_ok(&["--agent", "looker", "--task", "look"]);
    assert_eq!(stdout, "read only\n");
    assert!(!started.exists(), "a read-only run started the user's MCP server");
    let offered = only_request(&world.claude).body.to_string();
    assert!(!offered.contains("mcp__probe"), "{offered}");

    // The same configuration reaches a writer, which keeps the user's MCP servers.
    world.claude.reply(Reply::text("wrote"));
    world.run_ok(&["--agent", "claude-writer", "--task", "write"]);
    assert!(started.exists(), "the writer did not start the user's MCP server");
}

/// G76, G78: the real CLIs are asked for the acceptance report (it is in what reached the
/// API) and their reports are judged: Claude Code's valid one attests its work and leaves the
/// answer, Codex's claim that a failing command passed is caught by the runner's own run, and
/// pi's malformed one is refused naming the field.
#[test]
fn real_agents_are_asked_for_acceptance_reports_and_their_claims_are_judged() {
    let world = World::new("real-accept");
    let block = |json: &str| format!("Done.\n\n```acceptance-report\n{json}\n```\n");
    world.claude.reply(Reply::text(block(
        r#"{"criteriaSatisfied": [{"id": "c1", "status": "satisfied", "evidence": "read it"}], "residualRisks": ["none"]}"#,
    )));
    world.codex.reply(Reply::text(block(
        r#"{"changedFiles": [], "commandsRun": [{"command": "exit 1", "result": "passed", "summary": "green"}]}"#,
    )));
    world.pi.reply(Reply::text(block(
        r#"{"commandsRun": [{"command": "make", "result": "kind of"}]}"#,
    )));
    let group = write(
        &world.scratch.path().join("accept.yaml"),
        "mode: parallel\nsteps:\n  - {agent: claude, task: 'review {task}', acceptance: {level: attested, criteria: ['the parser is read']}}\n  - {agent: codex, task: 'fix {task}', acceptance: {verify: ['exit 1']}}\n  - {agent: pi, model: fake/fake-model, task: 'test {task}', acceptance: attested}\n",
    );
    let output = world.run(&["--chain", &group.to_string_lossy(), "--task", "the parser"]);
    assert_eq!(output.status.code(), Some(18), "{}", text(&output.stderr));
    for scope in [&world.claude, &world.codex, &world.pi] {
        let asked = only_request(scope).body.to_string();
        assert!(asked.contains("acceptance-report"), "{asked}");
    }
    assert!(
        only_request(&world.claude)
            .body
            .to_string()
            .contains("the parser is read")
    );
    let result = world.result(&run_id(&output));
    let steps = &result["steps"];
    assert_eq!(steps[0]["acceptance"]["status"], "attested", "{}", steps[0]);
    assert_eq!(steps[0]["output"], "Done.", "the block left the answer");
    let codex = &steps[1]["acceptance"];
    assert_eq!(codex["status"], "rejected", "{codex}");
    assert!(
        codex["problems"]
            .to_string()
            .contains("the report says 'exit 1' passed"),
        "{codex}"
    );
    let pi = &steps[2]["acceptance"];
    assert_eq!(pi["reportProblems"][0]["path"], "$.commandsRun[0].result", "{pi}");
}

/// G81: real CLIs as reviewers. Claude Code is handed the step's uncommitted diff and its
/// blocking finding rejects the step; Codex's review that accepts makes the work `reviewed`.
#[test]
fn real_agents_review_a_steps_diff_and_their_findings_decide() {
    let world = World::new("real-review");
    let work = world.scratch.work();
    write(&work.join("README"), "base\n");
    sublaunch_tests::cli::git(&work, &["add", "-A"]);
    sublaunch_tests::cli::git(&work, &["commit", "-qm", "base"]);
    let findings = |json: &str| format!("Read the diff.\n\n```review-findings\n{json}\n```\n");
    world.claude.reply(Reply::text(findings(
        r#"{"findings": [{"severity": "blocking", "file": "made.txt", "message": "the file is a placeholder"}], "verdict": "reject"}"#,
    )));
    world
        .codex
        .reply(Reply::text(findings(r#"{"findings": [], "verdict": "accept"}"#)));
    let chain = |reviewer: &str| {
        let task = "echo 'made by the step' > made.txt; printf '%s\\n' 'done.' '```acceptance-report' '{\"changedFiles\": [\"made.txt\"]}' '```'";
        write(
            &world.scratch.path().join(format!("review-{reviewer}.yaml")),
            &format!(
                "steps:\n  - agent: shell\n    task: {}\n    acceptance: {{level: checked, evidence: [changed-files], review: {{agent: {reviewer}}}}}\n",
                serde_json::to_string(task).unwrap()
            ),
        )
    };
    let output = world.run(&["--chain", &chain("claude").to_string_lossy()]);
    assert_eq!(output.status.code(), Some(18), "{}", text(&output.stderr));
    let asked = only_request(&world.claude).body.to_string();
    assert!(asked.contains("+made by the step"), "the reviewer saw no diff: {asked}");
    assert!(asked.contains("review-findings"), "{asked}");
    let step = &world.result(&run_id(&output))["steps"][0];
    assert_eq!(step["acceptance"]["status"], "rejected", "{step}");
    assert_eq!(
        step["acceptance"]["review"]["findings"][0]["message"],
        "the file is a placeholder"
    );

    std::fs::remove_file(work.join("made.txt")).unwrap();
    let output = world.run(&["--chain", &chain("codex").to_string_lossy()]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert!(
        only_request(&world.codex)
            .body
            .to_string()
            .contains("+made by the step")
    );
    let step = &world.result(&run_id(&output))["steps"][0];
    assert_eq!(step["acceptance"]["status"], "reviewed", "{step}");
}

/// J6, J7: the real CLIs run as Slurm jobs: a chain from Claude Code to Codex to pi, each step
/// on the cluster's node, reaches the fake model server from there, passes `{previous}` on and
/// brings the answer, the logs and each step's usage back as a local run does; a parallel
/// group of the three runs in one job.
#[test]
fn the_real_clis_run_as_slurm_jobs_and_their_answers_and_usage_come_back() {
    let cluster = sublaunch_tests::slurm::SlurmCluster::shared();
    let world = World::new("real-slurm");
    world.claude.reply(Reply::text("alpha on the node").usage(11, 3, 0, 0));
    world.codex.reply(Reply::text("beta on the node"));
    world.pi.reply(Reply::text("gamma on the node"));
    let chain = write(
        &world.scratch.work().join("chain.yaml"),
        "steps:\n  - {agent: claude, machine: 'slurm:debug', task: 'first: {task}'}\n  - {agent: codex, machine: 'slurm:debug', task: 'second: {previous}'}\n  - {agent: pi, machine: 'slurm:debug', model: fake/fake-model, task: 'third: {previous}'}\n",
    );
    let registry = world.registry.to_string_lossy().into_owned();
    let chain = chain.to_string_lossy().into_owned();
    let args = [
        "run",
        "--chain",
        &chain,
        "--task",
        "the solver",
        "--wait",
        "--json",
        "--models",
        &registry,
    ];
    let output = world.sublaunch_with(&args, &cluster.env());
    let printed: Value = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", text(&output.stdout), text(&output.stderr)));
    assert_eq!(printed["state"], "complete", "{printed}\n{}", text(&output.stderr));
    let id = printed["runId"].as_str().unwrap();
    let status = sublaunch_tests::launch_harness::status(&world.scratch.run_dir(id)).unwrap();
    assert_eq!(status["cluster"]["node"], cluster.node(), "{status}");
    let result = world.result(id);
    assert_eq!(result["answer"], "gamma on the node", "{result}");
    assert_eq!(tokens(&result["steps"][0]["usage"]), usage(11, 3, 0, 0), "{result}");
    assert!(
        only_request(&world.codex)
            .body
            .to_string()
            .contains("second: alpha on the node")
    );
    assert!(
        only_request(&world.pi)
            .body
            .to_string()
            .contains("third: beta on the node")
    );
    let logs = ok(&world.sublaunch_with(&["logs", id], &cluster.env()));
    assert!(logs.lines().any(|line| line == "[3 pi] gamma on the node"), "{logs}");

    world.claude.reply(Reply::text("one"));
    world.codex.reply(Reply::text("two"));
    world.pi.reply(Reply::text("three"));
    let group = write(
        &world.scratch.work().join("group.yaml"),
        "mode: parallel\nsteps:\n  - {agent: claude, machine: 'slurm:debug', task: 'a {task}'}\n  - {agent: codex, machine: 'slurm:debug', task: 'b {task}'}\n  - {agent: pi, machine: 'slurm:debug', model: fake/fake-model, task: 'c {task}'}\n",
    );
    let group = group.to_string_lossy().into_owned();
    let args = ["run", "--chain", &group, "--task", "x", "--wait", "--models", &registry];
    let output = world.sublaunch_with(&args, &cluster.env());
    assert_eq!(
        ok(&output),
        "=== 1.1 claude ===\none\n\n=== 1.2 codex ===\ntwo\n\n=== 1.3 pi ===\nthree\n"
    );
}
