//! The real agent CLIs (Claude Code, Codex, pi; pinned by tests/agents/package.json and
//! installed by scripts/setup-agents.sh) run directly against the fake model server
//! (tests/support/model_server.rs): each test scripts the server's replies in a scope of its
//! own and checks what the CLI printed and what it sent. They prove that the server speaks
//! each wire API well enough for the real clients, streaming, errors and retries included.

use serde_json::{Value, json};
use sublaunch_tests::model_server::{Api, ModelServer, Reply, Scope};
use sublaunch_tests::real_agents::{self, CODEX_MODEL, PI_MODEL, PI_REASONING_MODEL, PiApi};

fn scope(name: &str) -> Scope {
    real_agents::require_installed();
    ModelServer::shared().scope(name)
}

/// The last event of type `kind`, failing with the whole output when there is none.
fn last_of(out: &real_agents::RunOutput, kind: &str) -> Value {
    out.events_of(kind)
        .pop()
        .unwrap_or_else(|| panic!("no {kind} event\n{}", out.describe()))
}

// --- Claude Code --------------------------------------------------------------------------

#[test]
fn claude_print_stream_json_answers_from_the_fake_server() {
    let scope = scope("claude-one-shot");
    scope.reply(Reply::text("Hello from the fake server").usage(100, 20, 30, 40));
    let claude = real_agents::claude(&scope);
    let args = [
        "-p",
        "--output-format",
        "stream-json",
        "--verbose",
        "--model",
        "claude-sonnet-4-5",
    ];
    let out = claude.run(args, "say hi");
    assert_eq!(out.code(), Some(0), "{}", out.describe());

    let init = out
        .events()
        .into_iter()
        .find(|e| e["type"] == "system" && e["subtype"] == "init");
    let init = init.unwrap_or_else(|| panic!("no init event\n{}", out.describe()));
    assert_eq!(init["model"], "claude-sonnet-4-5");
    let result = last_of(&out, "result");
    assert_eq!(result["is_error"], false, "{}", out.describe());
    assert_eq!(result["result"], "Hello from the fake server");
    assert_eq!(result["session_id"], init["session_id"]);
    let usage = &result["usage"];
    assert_eq!(
        [
            &usage["input_tokens"],
            &usage["output_tokens"],
            &usage["cache_read_input_tokens"],
            &usage["cache_creation_input_tokens"]
        ],
        [&json!(100), &json!(20), &json!(30), &json!(40)],
        "{}",
        out.describe()
    );
    assert!(result["total_cost_usd"].as_f64().is_some_and(|c| c > 0.0));

    let main = scope.main_requests();
    assert_eq!(main.len(), 1, "{}", scope.dump());
    let request = &main[0];
    assert_eq!(request.api, Api::AnthropicMessages);
    assert_eq!(request.path, "/v1/messages");
    assert_eq!(request.model(), Some("claude-sonnet-4-5"));
    assert!(request.stream());
    assert_eq!(request.header("x-api-key"), Some(real_agents::FAKE_API_KEY));
    let last_user = request.body["messages"].as_array().and_then(|m| m.last()).cloned();
    let prompt = last_user.map(|m| m["content"].to_string()).unwrap_or_default();
    assert!(prompt.contains("say hi"), "{prompt}");
    assert_eq!(scope.pending(), 0);
}

#[test]
fn claude_json_schema_takes_the_structured_output_tool_call() {
    let scope = scope("claude-json-schema");
    scope.reply(Reply::json(json!({"answer": "forty-two"})));
    let claude = real_agents::claude(&scope);
    let schema = r#"{"type":"object","properties":{"answer":{"type":"string"}},"required":["answer"]}"#;
    let args = [
        "-p",
        "--output-format",
        "stream-json",
        "--verbose",
        "--model",
        "claude-sonnet-4-5",
        "--json-schema",
        schema,
    ];
    let out = claude.run(args, "answer");
    assert_eq!(out.code(), Some(0), "{}", out.describe());
    let result = last_of(&out, "result");
    assert_eq!(
        result["structured_output"],
        json!({"answer": "forty-two"}),
        "{}",
        out.describe()
    );
    let tools = scope.main_requests()[0].body["tools"].clone();
    let offered = tools
        .as_array()
        .into_iter()
        .flatten()
        .any(|t| t["name"] == "StructuredOutput");
    assert!(offered, "{tools}");
}

#[test]
fn claude_reports_a_server_error_as_an_error_result() {
    let scope = scope("claude-error");
    // Claude Code re-sends a 400 up to five times with fewer betas: every answer is the error.
    scope.set_default(Reply::error(400, "invalid model: nope"));
    let claude = real_agents::claude(&scope);
    let out = claude.run(
        [
            "-p",
            "--output-format",
            "stream-json",
            "--verbose",
            "--model",
            "claude-sonnet-4-5",
        ],
        "hi",
    );
    assert_eq!(out.code(), Some(1), "{}", out.describe());
    let result = last_of(&out, "result");
    assert_eq!(result["is_error"], true);
    assert_eq!(result["api_error_status"], 400);
    assert_eq!(result["result"], "API Error: 400 invalid model: nope");
}

// --- Codex ---------------------------------------------------------------------------------

#[test]
fn codex_exec_json_answers_from_the_fake_server() {
    let scope = scope("codex-one-shot");
    scope.reply(Reply::text("Hello from the fake server").usage(100, 20, 30, 0));
    let codex = real_agents::codex(&scope);
    let last = codex.scratch().join("last-message.txt");
    let last_arg = last.display().to_string();
    let args = [
        "exec",
        "--json",
        "--skip-git-repo-check",
        "-c",
        "model_reasoning_effort=high",
        "--output-last-message",
        &last_arg,
        "-",
    ];
    let out = codex.run(args, "say hi");
    assert_eq!(out.code(), Some(0), "{}", out.describe());

    let thread = last_of(&out, "thread.started");
    assert!(thread["thread_id"].as_str().is_some_and(|id| !id.is_empty()));
    let messages: Vec<Value> = out
        .events_of("item.completed")
        .into_iter()
        .filter(|e| e["item"]["type"] == "agent_message")
        .collect();
    assert_eq!(
        messages.last().map(|e| e["item"]["text"].clone()),
        Some(json!("Hello from the fake server"))
    );
    let usage = last_of(&out, "turn.completed")["usage"].clone();
    assert_eq!(usage["input_tokens"], 130, "{usage}");
    assert_eq!(usage["cached_input_tokens"], 30, "{usage}");
    assert_eq!(usage["output_tokens"], 20, "{usage}");
    assert_eq!(
        std::fs::read_to_string(&last).expect("the last message"),
        "Hello from the fake server"
    );

    let main = scope.main_requests();
    assert_eq!(main.len(), 1, "{}", scope.dump());
    let request = &main[0];
    assert_eq!(request.api, Api::OpenAiResponses);
    assert_eq!(request.path, "/v1/responses");
    assert_eq!(request.model(), Some(CODEX_MODEL));
    assert!(request.stream());
    assert_eq!(request.body["reasoning"]["effort"], "high");
    let bearer = format!("Bearer {}", real_agents::FAKE_API_KEY);
    assert_eq!(request.header("authorization"), Some(bearer.as_str()));
}

#[test]
fn codex_fails_the_turn_on_a_server_error() {
    let scope = scope("codex-error");
    scope.reply(Reply::error(400, "bad request from the fake server"));
    let codex = real_agents::codex(&scope);
    let out = codex.run(["exec", "--json", "--skip-git-repo-check", "-"], "hi");
    assert_eq!(out.code(), Some(1), "{}", out.describe());
    let failed = last_of(&out, "turn.failed");
    let message = failed["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("bad request from the fake server"),
        "{}",
        out.describe()
    );
}

#[test]
fn codex_reconnects_after_a_dropped_stream() {
    let scope = scope("codex-drop");
    scope.replies([Reply::drop_stream(), Reply::text("after the reconnect")]);
    let codex = real_agents::codex(&scope);
    let out = codex.run(["exec", "--json", "--skip-git-repo-check", "-"], "hi");
    assert_eq!(out.code(), Some(0), "{}", out.describe());
    let errors = out.events_of("error");
    assert!(
        errors.iter().any(|e| e["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("Reconnecting... 1/1"))),
        "{}",
        out.describe()
    );
    let message = out
        .events_of("item.completed")
        .into_iter()
        .rfind(|e| e["item"]["type"] == "agent_message")
        .map(|e| e["item"]["text"].clone());
    assert_eq!(message, Some(json!("after the reconnect")));
    assert_eq!(scope.main_requests().len(), 2);
}

// --- pi ------------------------------------------------------------------------------------

/// The last assistant `message_end` message.
fn pi_final_message(out: &real_agents::RunOutput) -> Value {
    out.events_of("message_end")
        .into_iter()
        .rfind(|e| e["message"]["role"] == "assistant")
        .map(|e| e["message"].clone())
        .unwrap_or_else(|| panic!("no assistant message_end\n{}", out.describe()))
}

#[test]
fn pi_json_mode_answers_from_the_fake_server() {
    let scope = scope("pi-one-shot");
    scope.reply(Reply::text("Hello from the fake server").usage(100, 20, 30, 0));
    let pi = real_agents::pi(&scope, PiApi::OpenAiCompletions);
    let model = format!("fake/{PI_REASONING_MODEL}");
    let args = [
        "--mode",
        "json",
        "-p",
        "--no-session",
        "--model",
        &model,
        "--thinking",
        "low",
    ];
    let out = pi.run(args, "say hi");
    assert_eq!(out.code(), Some(0), "{}", out.describe());

    let session = out.events().into_iter().next().unwrap_or_default();
    assert_eq!(session["type"], "session", "{}", out.describe());
    let message = pi_final_message(&out);
    assert_eq!(message["stopReason"], "stop", "{}", out.describe());
    assert_eq!(message["content"][0]["text"], "Hello from the fake server");
    assert_eq!(message["model"], PI_REASONING_MODEL);
    assert_eq!(message["usage"]["input"], 100);
    assert_eq!(message["usage"]["output"], 20);
    assert_eq!(message["usage"]["cacheRead"], 30);

    let main = scope.main_requests();
    assert_eq!(main.len(), 1, "{}", scope.dump());
    let request = &main[0];
    assert_eq!(request.api, Api::OpenAiChat);
    assert_eq!(request.path, "/v1/chat/completions");
    assert_eq!(request.model(), Some(PI_REASONING_MODEL));
    assert_eq!(request.body["reasoning_effort"], "low");
    assert_eq!(request.body["stream_options"]["include_usage"], true);
}

#[test]
fn pi_over_anthropic_messages_reports_all_four_usage_figures() {
    let scope = scope("pi-anthropic");
    scope.reply(Reply::text("via messages").usage(100, 20, 30, 40));
    let pi = real_agents::pi(&scope, PiApi::AnthropicMessages);
    let out = pi.run(["--mode", "json", "-p", "--no-session"], "hi");
    assert_eq!(out.code(), Some(0), "{}", out.describe());
    let message = pi_final_message(&out);
    assert_eq!(message["content"][0]["text"], "via messages");
    let usage = &message["usage"];
    assert_eq!(
        [
            &usage["input"],
            &usage["output"],
            &usage["cacheRead"],
            &usage["cacheWrite"]
        ],
        [&json!(100), &json!(20), &json!(30), &json!(40)],
        "{}",
        out.describe()
    );
    assert_eq!(scope.main_requests()[0].model(), Some(PI_MODEL));
}

#[test]
fn pi_reports_a_server_error_in_the_assistant_message() {
    let scope = scope("pi-error");
    scope.reply(Reply::error(400, "bad request from the fake server"));
    let pi = real_agents::pi(&scope, PiApi::OpenAiCompletions);
    let out = pi.run(["--mode", "json", "-p", "--no-session"], "hi");
    // pi's JSON mode exits 0 even when the turn failed: the message says so.
    assert_eq!(out.code(), Some(0), "{}", out.describe());
    let message = pi_final_message(&out);
    assert_eq!(message["stopReason"], "error");
    let error = message["errorMessage"].as_str().unwrap_or_default();
    assert!(
        error.starts_with("400: ") && error.contains("bad request from the fake server"),
        "{error}"
    );
}

#[test]
fn pi_retries_after_a_dropped_stream() {
    let scope = scope("pi-drop");
    scope.replies([Reply::drop_stream(), Reply::text("after the retry")]);
    let pi = real_agents::pi(&scope, PiApi::OpenAiCompletions);
    let out = pi.run(["--mode", "json", "-p", "--no-session"], "hi");
    assert_eq!(out.code(), Some(0), "{}", out.describe());
    assert_eq!(last_of(&out, "auto_retry_end")["success"], true);
    assert_eq!(pi_final_message(&out)["content"][0]["text"], "after the retry");
    assert_eq!(scope.main_requests().len(), 2);
}
