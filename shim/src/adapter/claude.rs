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

/// The command of a step (`writer`: `claude-code-writer`, edits are accepted without asking).
pub fn command(input: &StepInput<'_>, writer: bool) -> Result<AgentCommand, String> {
    let mut argv = input.argv("claude", &["-p", "--output-format", "stream-json", "--verbose"]);
    push_option(&mut argv, "--model", input.model());
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
    Ok(input.agent_command(argv, Some(input.task.as_bytes().to_vec())))
}

/// Reads a stream of `system` / `assistant` / `user` / `result` events (Claude Code's and
/// Cursor's stream-json format).
#[derive(Debug)]
pub struct ResultEvents {
    program: &'static str,
    result: Option<Value>,
    last_assistant: Option<String>,
    model: Option<String>,
}

impl ResultEvents {
    /// The parser of `program`'s stream (named in errors).
    pub fn parser(program: &'static str) -> JsonlParser<Self> {
        JsonlParser::of(Self {
            program,
            result: None,
            last_assistant: None,
            model: None,
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
        let text = result.get("result").and_then(Value::as_str).unwrap_or_default();
        out.output = if text.is_empty() {
            self.last_assistant.clone().unwrap_or_default()
        } else {
            text.to_owned()
        };
        if result.get("is_error").and_then(Value::as_bool) == Some(true) {
            let subtype = result.get("subtype").and_then(Value::as_str).unwrap_or("error");
            out.failure = Some(format!("{program} reported an error ({subtype}): {}", out.output));
        } else if out.output.len() > FINAL_MESSAGE_LIMIT {
            out.failure = Some(jsonl::too_long("result", out.output.len()));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::adapter::OutputParser;

    fn run(lines: &[&str]) -> Extracted {
        let mut p = ResultEvents::parser("Claude Code");
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
