//! Claude Code (`claude-code`, `claude-code-writer`): print mode with the stream-json event
//! format, the prompt on standard input.
//!
//! ```text
//! claude -p --output-format stream-json --verbose [--model <model>]
//!        [--append-system-prompt <system prompt>] --allowedTools <Read,Grep,…>
//!        (read-only) --disallowedTools Bash,Edit,MultiEdit,Write,NotebookEdit
//!        (writer)    --permission-mode acceptEdits
//! ```
//!
//! The output is the `result` field of the final `{"type":"result"}` event; a result with
//! `is_error: true` (or a run that printed none) fails the step. The text of the last
//! `{"type":"assistant"}` message stands in when the result event carries no text.

use super::jsonl::{self, EventReader, JsonlParser};
use super::push_option;
use super::tools::{CLAUDE_WRITE_TOOLS, claude_allowed};
use super::{AgentCommand, Extracted, FINAL_MESSAGE_LIMIT, ParsedLine, StepInput};
use serde_json::Value;
use sublaunch_protocol::usage::Usage;

/// The command of a step (`writer`: `claude-code-writer`, edits are accepted without asking).
pub fn command(input: &StepInput<'_>, writer: bool) -> Result<AgentCommand, String> {
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
    let allowed = claude_allowed(input.tools(), writer);
    push_option(
        &mut argv,
        "--allowedTools",
        (!allowed.is_empty()).then(|| allowed.join(",")),
    );
    if writer {
        push_option(&mut argv, "--permission-mode", Some("acceptEdits"));
    } else {
        push_option(&mut argv, "--disallowedTools", Some(CLAUDE_WRITE_TOOLS.join(",")));
    }
    push_option(&mut argv, "--json-schema", native_schema(input).map(|s| s.to_string()));
    push_option(&mut argv, "--resume", input.resume());
    let mut command = input.agent_command(argv, Some(input.task.as_bytes().to_vec()));
    command.env = env;
    Ok(command)
}

/// The environment variable Claude Code reads a thinking budget from.
const THINKING_BUDGET_ENV: &str = "MAX_THINKING_TOKENS";

/// Claude Code's `--effort` for a thinking level (it takes low, medium, high, xhigh, max).
fn effort(level: &str) -> &str {
    match level {
        "minimal" => "low",
        other => other,
    }
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
        })
    }
}

impl EventReader for ResultEvents {
    fn program(&self) -> &str {
        self.program
    }

    fn event(&mut self, value: Value) -> ParsedLine {
        match jsonl::kind(&value) {
            "system" => {
                if let Some(model) = value.get("model").and_then(Value::as_str) {
                    self.model = Some(model.to_owned());
                }
                if let Some(session) = jsonl::string(Some(&value), "session_id") {
                    self.session = Some(session);
                }
            }
            "assistant" => {
                let text = jsonl::content_text(value.get("message").and_then(|m| m.get("content")));
                if !text.is_empty() {
                    self.last_assistant = Some(text);
                }
            }
            "result" => self.result = Some(value.clone()),
            "stream_event" => return ParsedLine::Ignore,
            _ => {}
        }
        ParsedLine::Event(value)
    }

    fn settled(&self) -> bool {
        self.result.is_some()
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
    Some(Usage {
        input_tokens: jsonl::count(usage, "input_tokens"),
        output_tokens: jsonl::count(usage, "output_tokens"),
        cache_read_tokens: jsonl::count(usage, "cache_read_input_tokens"),
        cache_write_tokens: jsonl::count(usage, "cache_creation_input_tokens"),
        cost_usd: cost,
    })
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
}
