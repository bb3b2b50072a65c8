//! Claude Code (`claude-code`, `claude-code-writer`): print mode with the stream-json event
//! format, the prompt on standard input.
//!
//! ```text
//! claude -p --output-format stream-json --verbose [--model <model>]
//!        [--append-system-prompt <system prompt>] [--tools <Read,Grep,…>]
//!        --allowedTools <Read,Grep,Bash(git *),…> [--disallowedTools <Bash,Bash(rm *),…>]
//!        [--permission-mode acceptEdits|plan] [--strict-mcp-config] --permission-prompts none
//! ```
//!
//! The permission flags come from the step's resolved permissions ([`super::tools`]): a
//! writer gets `acceptEdits`, a plan step `plan`, and anything not pre-approved that would
//! ask is refused (`--permission-prompts none`: nobody is there to answer).
//!
//! The output is the `result` field of the final `{"type":"result"}` event; a result with
//! `is_error: true` (or a run that printed none) fails the step. The text of the last
//! `{"type":"assistant"}` message stands in when the result event carries no text.
//!
//! A dollar limit becomes `--max-budget-usd` (Claude Code stops before the call that would
//! cross it). A run with a checkpoint reads streamed input (`--input-format stream-json
//! --replay-user-messages`): the task is the first user message, the checkpoint a later one,
//! and the input closes at the first result (Claude Code still answers a message it queued).
//! Claude Code echoes each message as it takes it up, so the run is over only when a result
//! followed the last one.

use super::jsonl::{self, EventReader, JsonlParser};
use super::push_option;
use super::rate_limit::{self, RateLimited};
use super::tools::claude_permissions;
use super::{AgentCommand, Extracted, FINAL_MESSAGE_LIMIT, ParsedLine, StepInput};
use serde_json::Value;
use sublaunch_protocol::records::config::AdapterId;
use sublaunch_protocol::records::usage::Usage;

/// The command of a step of adapter `id`, with the permissions the planner resolved for it
/// (rule G8).
pub fn command(input: &StepInput<'_>, id: AdapterId) -> Result<AgentCommand, String> {
    let mut argv = input.argv("claude", &["-p", "--output-format", "stream-json", "--verbose"]);
    push_option(&mut argv, "--model", input.model());
    let mut env = input.env();
    match input.thinking() {
        Some("off") => {
            env.insert(THINKING_BUDGET_ENV.into(), "0".into());
        }
        Some(level) => {
            push_option(&mut argv, "--effort", Some(effort(level)));
            // Models with a thinking budget ignore `--effort` and read the budget from here;
            // adaptive models ignore the budget and follow `--effort`.
            if let Some(budget) = thinking_budget(level) {
                env.entry(THINKING_BUDGET_ENV.into())
                    .or_insert_with(|| budget.to_string());
            }
        }
        None => {}
    }
    push_option(&mut argv, "--append-system-prompt", input.system_prompt());
    let permissions = claude_permissions(&input.permissions(id));
    push_option(&mut argv, "--tools", permissions.tools.map(|t| t.join(",")));
    push_option(
        &mut argv,
        "--allowedTools",
        (!permissions.allowed.is_empty()).then(|| permissions.allowed.join(",")),
    );
    push_option(
        &mut argv,
        "--disallowedTools",
        (!permissions.disallowed.is_empty()).then(|| permissions.disallowed.join(",")),
    );
    push_option(&mut argv, "--permission-mode", permissions.mode);
    if permissions.strict_mcp {
        // No MCP server of the user's or the project's: its tools run outside the read-only
        // tool list (one of them could be a sublaunch server that starts a shell).
        argv.push("--strict-mcp-config".to_owned());
    }
    // Nobody answers a prompt in print mode: what is not pre-approved and would ask is
    // refused, never waited for.
    push_option(&mut argv, "--permission-prompts", Some("none"));
    push_option(&mut argv, "--json-schema", native_schema(input).map(|s| s.to_string()));
    push_option(&mut argv, "--resume", input.resume());
    // Claude Code skips its folder-trust question in print mode, so a cloned repository's
    // `.claude/` settings (hooks among them) would run: in a project the user does not trust,
    // only the user's own settings are read.
    if input.live.project_config == sublaunch_protocol::records::config::ProjectConfig::Ignore {
        push_option(&mut argv, "--setting-sources", Some("user"));
    }
    // Claude Code keeps a dollar limit itself, stopping before the call that would cross it.
    push_option(
        &mut argv,
        "--max-budget-usd",
        input.live.cost_cap_usd.map(|cap| format!("{cap:.6}")),
    );
    let streamed = input.live.streamed_input;
    let stdin = if streamed {
        argv.extend(
            ["--input-format", "stream-json", "--replay-user-messages"]
                .into_iter()
                .map(str::to_owned),
        );
        user_line(input.task)
    } else {
        input.task.as_bytes().to_vec()
    };
    let mut command = input.agent_command(argv, Some(stdin));
    command.env = env;
    command.streamed_stdin = streamed;
    Ok(command)
}

/// One user message of Claude Code's streamed input.
pub fn user_line(text: &str) -> Vec<u8> {
    let message = serde_json::json!({
        "type": "user",
        "message": {"role": "user", "content": [{"type": "text", "text": text}]},
    });
    let mut line = serde_json::to_vec(&message).unwrap_or_default();
    line.push(b'\n');
    line
}

/// The environment variable Claude Code reads a thinking budget from.
const THINKING_BUDGET_ENV: &str = "MAX_THINKING_TOKENS";

/// Claude Code's `--effort` for a thinking level, as the adapter table names it (low, medium,
/// high, xhigh, max; the nearest for a level it has no name for).
fn effort(level: &str) -> &str {
    super::cli_thinking(AdapterId::ClaudeCode, level)
}

/// The thinking budget in tokens for a level, for models that take a budget (below their
/// 32000 output tokens).
fn thinking_budget(level: &str) -> Option<u32> {
    Some(match level {
        "minimal" => 1024,
        "low" => 4096,
        "medium" => 10_000,
        "high" => 16_000,
        "xhigh" => 24_000,
        "max" => 31_999,
        _ => return None,
    })
}

/// The schema of a structured step when Claude Code can enforce it (`--json-schema` becomes a
/// tool the model must call, whose input is an object).
pub fn native_schema<'a>(input: &'a StepInput<'_>) -> Option<&'a Value> {
    let schema = input.step.output_schema.as_ref().filter(|_| input.step.structured)?;
    (schema.get("type").and_then(Value::as_str) == Some("object")).then_some(schema)
}

/// Reads a stream of `system` / `assistant` / `user` / `result` events (Claude Code's and
/// Cursor's stream-json format).
#[derive(Debug)]
pub struct ResultEvents {
    program: &'static str,
    result: Option<Value>,
    last_assistant: Option<String>,
    model: Option<String>,
    session: Option<String>,
    /// The run was given `--json-schema`: a result without `structured_output` fails.
    expects_structured: bool,
    /// The usage of the model calls before the current one, and the current call's id and
    /// usage (Claude Code repeats a call's usage on the event of each of its content blocks,
    /// one after the other).
    calls_before: Usage,
    current_call: Option<(String, Usage)>,
    /// The tool calls the model made (each content block has one event of its own).
    tool_uses: u64,
    /// The input is streamed: the messages written, the ones Claude Code took up (it echoes
    /// each, `isReplay`, as it takes it), and whether a result followed the last one taken.
    streamed: Option<Streamed>,
    /// The model answered with text of its own (an API error's message is not an answer).
    answered_text: bool,
    /// The last rate limit or overload reported (a retry notice, an error result).
    rate_limited: Option<RateLimited>,
    /// The model's text so far (D2).
    partial: super::partial::PartialText,
}

/// Where the messages of a streamed input stand.
#[derive(Debug, Default)]
struct Streamed {
    sent: u32,
    taken: u32,
    result_after_last: bool,
}

impl ResultEvents {
    /// The parser of `program`'s stream (named in errors).
    pub fn parser(program: &'static str, expects_structured: bool) -> JsonlParser<Self> {
        JsonlParser::of(Self {
            program,
            result: None,
            last_assistant: None,
            model: None,
            session: None,
            expects_structured,
            calls_before: Usage::default(),
            current_call: None,
            tool_uses: 0,
            streamed: None,
            answered_text: false,
            rate_limited: None,
            partial: super::partial::PartialText::default(),
        })
    }
}

impl JsonlParser<ResultEvents> {
    /// The parser of a run whose input is streamed (`streamed`): the task is its first message.
    pub fn streamed(mut self, streamed: bool) -> Self {
        self.reader_mut().streamed = streamed.then(|| Streamed {
            sent: 1,
            ..Streamed::default()
        });
        self
    }
}

impl EventReader for ResultEvents {
    fn program(&self) -> &str {
        self.program
    }

    fn event(&mut self, value: Value) -> ParsedLine {
        match jsonl::kind(&value) {
            "system" if value.get("subtype").and_then(Value::as_str) == Some("api_retry") => {
                // U5: Claude Code retries by itself, after a delay that honours Retry-After.
                let status = value.get("error_status").and_then(Value::as_u64);
                let error = value.get("error").and_then(Value::as_str).unwrap_or_default();
                if status.is_some_and(rate_limit::is_limit_status) || matches!(error, "rate_limit" | "overloaded") {
                    self.rate_limited = Some(RateLimited {
                        status: status.and_then(|s| u16::try_from(s).ok()),
                        retry_after_ms: None,
                        cli_delay_ms: value.get("retry_delay_ms").and_then(Value::as_u64),
                        message: format!("{error} (HTTP {})", status.unwrap_or_default()),
                    });
                }
            }
            "system" => {
                if let Some(model) = value.get("model").and_then(Value::as_str) {
                    self.model = Some(model.to_owned());
                }
                if let Some(session) = jsonl::string(Some(&value), "session_id") {
                    self.session = Some(session);
                }
            }
            "assistant" => {
                let message = value.get("message");
                let content = message.and_then(|m| m.get("content"));
                let text = jsonl::content_text(content);
                // An API error is reported as an assistant message carrying `error`.
                let api_error = value.get("error").and_then(Value::as_str);
                if !text.is_empty() {
                    self.answered_text |= api_error.is_none();
                    if api_error.is_none() {
                        self.partial.said(&text);
                    }
                    self.last_assistant = Some(text);
                }
                if let (Some(id), Some(usage)) = (jsonl::string(message, "id"), message.and_then(|m| m.get("usage"))) {
                    // The usage as the call started: its input is final, its output is not
                    // (the result event has the exact figures).
                    let usage = call_usage(Some(usage));
                    match &mut self.current_call {
                        Some((current, latest)) if *current == id => *latest = usage,
                        _ => {
                            if let Some((_, finished)) = self.current_call.replace((id, usage)) {
                                self.calls_before.add(&finished);
                            }
                        }
                    }
                }
                let blocks = content.and_then(Value::as_array).into_iter().flatten();
                let tools = blocks
                    .filter(|b| b.get("type").and_then(Value::as_str) == Some("tool_use"))
                    .count();
                self.tool_uses = self.tool_uses.saturating_add(tools as u64);
            }
            "user" if value.get("isReplay").and_then(Value::as_bool) == Some(true) => {
                if let Some(streamed) = &mut self.streamed {
                    streamed.taken += 1;
                    streamed.result_after_last = false;
                }
            }
            "result" => {
                let status = value.get("api_error_status").and_then(Value::as_u64);
                if status.is_some_and(rate_limit::is_limit_status) {
                    self.rate_limited = Some(RateLimited {
                        status: status.and_then(|s| u16::try_from(s).ok()),
                        retry_after_ms: None,
                        cli_delay_ms: None,
                        message: jsonl::string(Some(&value), "result").unwrap_or_default(),
                    });
                }
                self.result = Some(value.clone());
                if let Some(streamed) = &mut self.streamed {
                    streamed.result_after_last = true;
                }
            }
            "stream_event" => return ParsedLine::Ignore,
            _ => {}
        }
        ParsedLine::Event(value)
    }

    fn settled(&self) -> bool {
        // With streamed input a result answers only the messages taken before it: one still
        // queued (a checkpoint) makes a turn of its own.
        self.result.is_some()
            && self
                .streamed
                .as_ref()
                .is_none_or(|s| s.result_after_last && s.taken >= s.sent)
    }

    fn answered(&self) -> bool {
        // Claude Code still runs a queued message after its input closed.
        self.result.is_some()
    }

    fn input_sent(&mut self) {
        if let Some(streamed) = &mut self.streamed {
            streamed.sent += 1;
        }
    }

    fn partial(&self) -> Option<String> {
        self.partial.text()
    }

    fn session(&self) -> Option<String> {
        self.session.clone()
    }

    fn spent(&self) -> super::Spent {
        super::Spent {
            usage: match (&self.result, &self.current_call) {
                (Some(result), _) => result_usage(result),
                (None, Some((_, current))) => {
                    let mut sum = self.calls_before.clone();
                    sum.add(current);
                    Some(sum)
                }
                (None, None) => None,
            },
            tool_calls: self.tool_uses,
            rate_limited: self.rate_limited.clone(),
            worked: self.answered_text || self.tool_uses > 0,
        }
    }

    fn extract(&mut self, stdout_tail: &[u8]) -> Extracted {
        let program = self.program;
        let mut out = Extracted {
            reported_model: self.model.clone(),
            session: self.session.clone(),
            ..Extracted::default()
        };
        let Some(result) = &self.result else {
            out.output = self.last_assistant.clone().unwrap_or_default();
            out.failure = Some(format!(
                "{program} ended without a result event. Output ended with: {}",
                jsonl::excerpt(stdout_tail)
            ));
            return out;
        };
        out.usage = result_usage(result);
        if let Some(session) = jsonl::string(Some(result), "session_id") {
            out.session = Some(session);
        }
        out.structured = result.get("structured_output").filter(|v| !v.is_null()).cloned();
        let text = result.get("result").and_then(Value::as_str).unwrap_or_default();
        out.output = if text.is_empty() {
            self.last_assistant.clone().unwrap_or_default()
        } else {
            text.to_owned()
        };
        if result.get("is_error").and_then(Value::as_bool) == Some(true) {
            // Claude Code keeps `subtype: "success"` on API errors; `terminal_reason` tells.
            let reason = ["terminal_reason", "subtype"]
                .iter()
                .filter_map(|key| result.get(*key).and_then(Value::as_str))
                .find(|r| *r != "success" && *r != "completed")
                .unwrap_or("error");
            out.failure = Some(format!("{program} reported an error ({reason}): {}", out.output));
        } else if self.expects_structured && out.structured.is_none() {
            out.failure = Some(format!(
                "{program} ended without the structured output its schema asks for (the model answered in text instead of calling the StructuredOutput tool)."
            ));
        } else if out.output.len() > FINAL_MESSAGE_LIMIT {
            out.failure = Some(jsonl::too_long("result", out.output.len()));
        }
        out
    }
}

/// The `usage` of a result event (this run's calls) and its cost: a resumed session's
/// `total_cost_usd` counts the whole session, `model_usage_since_last_result` this run.
fn result_usage(result: &Value) -> Option<Usage> {
    let usage = result.get("usage").filter(|u| u.is_object());
    let this_run = result
        .get("model_usage_since_last_result")
        .and_then(Value::as_object)
        .map(|models| {
            models
                .values()
                .filter_map(|m| m.get("costUSD").and_then(Value::as_f64))
                .sum::<f64>()
        });
    let cost = this_run.or_else(|| result.get("total_cost_usd").and_then(Value::as_f64));
    if usage.is_none() && cost.is_none() {
        return None;
    }
    let mut counted = call_usage(usage);
    if counted.total_tokens() == 0 {
        // A run Claude Code ended itself (`error_max_budget_usd`) reports zero `usage`; the
        // per-model figures have the tokens.
        let models = ["model_usage_since_last_result", "modelUsage"]
            .iter()
            .find_map(|key| result.get(*key).and_then(Value::as_object).filter(|m| !m.is_empty()));
        for model in models.into_iter().flat_map(|m| m.values()) {
            counted.add(&Usage {
                input_tokens: jsonl::count(Some(model), "inputTokens"),
                output_tokens: jsonl::count(Some(model), "outputTokens"),
                cache_read_tokens: jsonl::count(Some(model), "cacheReadInputTokens"),
                cache_write_tokens: jsonl::count(Some(model), "cacheCreationInputTokens"),
                cost_usd: None,
            });
        }
    }
    counted.cost_usd = cost;
    Some(counted)
}

/// The tokens of an Anthropic `usage` object.
fn call_usage(usage: Option<&Value>) -> Usage {
    Usage {
        input_tokens: jsonl::count(usage, "input_tokens"),
        output_tokens: jsonl::count(usage, "output_tokens"),
        cache_read_tokens: jsonl::count(usage, "cache_read_input_tokens"),
        cache_write_tokens: jsonl::count(usage, "cache_creation_input_tokens"),
        cost_usd: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::adapter::OutputParser;

    fn run(lines: &[&str]) -> Extracted {
        let mut p = ResultEvents::parser("Claude Code", false);
        for line in lines {
            p.stdout_line(line.as_bytes(), line.len());
        }
        p.finish(b"", false)
    }

    #[test]
    fn the_result_event_is_the_output() {
        let out = run(&[
            r#"{"type":"system","subtype":"init","session_id":"s","model":"claude-sonnet-4-5","tools":["Read"]}"#,
            r#"{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"Looking."}]}}"#,
            r#"{"type":"result","subtype":"success","is_error":false,"result":"All good.","session_id":"s"}"#,
        ]);
        assert_eq!((out.output.as_str(), out.failure), ("All good.", None));
        assert_eq!(out.reported_model.as_deref(), Some("claude-sonnet-4-5"));
        let failed = run(&[r#"{"type":"result","subtype":"error_max_turns","is_error":true,"result":""}"#]);
        assert!(failed.failure.unwrap().contains("error_max_turns"));
        assert!(run(&[]).failure.unwrap().contains("without a result event"));
    }

    #[test]
    fn spent_counts_each_call_once_then_takes_the_results_figures() {
        let mut p = ResultEvents::parser("Claude Code", false);
        let feed = |p: &mut JsonlParser<ResultEvents>, line: &str| {
            p.stdout_line(line.as_bytes(), line.len());
        };
        // Two content blocks of one call repeat its usage; a second call adds its own.
        let call = |id: &str, block: &str| {
            format!(
                r#"{{"type":"assistant","message":{{"id":"{id}","content":[{block}],"usage":{{"input_tokens":100,"cache_creation_input_tokens":20,"cache_read_input_tokens":30,"output_tokens":1}}}}}}"#
            )
        };
        feed(&mut p, &call("m1", r#"{"type":"text","text":"a"}"#));
        feed(
            &mut p,
            &call("m1", r#"{"type":"tool_use","id":"t1","name":"Bash","input":{}}"#),
        );
        feed(
            &mut p,
            &call("m2", r#"{"type":"tool_use","id":"t2","name":"Read","input":{}}"#),
        );
        let spent = p.spent();
        assert_eq!(spent.tool_calls, 2);
        let usage = spent.usage.unwrap();
        assert_eq!(
            (usage.input_tokens, usage.cache_write_tokens, usage.output_tokens),
            (200, 40, 2)
        );
        // Claude Code ending a run itself over its dollar limit reports zero `usage`.
        feed(
            &mut p,
            r#"{"type":"result","subtype":"error_max_budget_usd","is_error":true,"total_cost_usd":18,"usage":{"input_tokens":0,"output_tokens":0},"modelUsage":{"m":{"inputTokens":1000000,"outputTokens":1000000,"costUSD":18}}}"#,
        );
        let usage = p.spent().usage.unwrap();
        assert_eq!(
            (usage.input_tokens, usage.output_tokens, usage.cost_usd),
            (1_000_000, 1_000_000, Some(18.0))
        );
    }

    #[test]
    fn a_streamed_run_settles_only_once_every_message_was_answered() {
        let mut p = ResultEvents::parser("Claude Code", false).streamed(true);
        let feed = |p: &mut JsonlParser<ResultEvents>, line: &str| {
            p.stdout_line(line.as_bytes(), line.len());
        };
        let replay = r#"{"type":"user","message":{"role":"user","content":[]},"isReplay":true}"#;
        let result = r#"{"type":"result","subtype":"success","is_error":false,"result":"one"}"#;
        feed(&mut p, replay);
        p.input_sent();
        feed(&mut p, result);
        assert!(p.answered() && !p.settled(), "the checkpoint is still queued");
        feed(&mut p, replay);
        assert!(!p.settled());
        feed(&mut p, &result.replace("one", "two"));
        assert!(p.settled());
        assert_eq!(p.finish(b"", false).output, "two");
    }
}
