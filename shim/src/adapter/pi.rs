//! The native `pi` adapter: `pi --mode json -p` (pi's JSON event stream, one JSON object per
//! line), with the planned model and thinking level, the agent's tools and its system prompt
//! appended from a private file. The final output is the text of the last assistant message
//! (`message_end` with `role: "assistant"`); its `model` is what the child reports for model
//! verification. An assistant message that stopped with `stopReason: "error"` or `"aborted"`
//! fails the step with its `errorMessage`.
//!
//! ```text
//! pi --mode json -p --no-session [--model <provider/id>] [--thinking <level>]
//!    [--tools <a,b>] [--append-system-prompt <run>/system-prompt-<n>.md] [--] <task>
//! ```
//!
//! The task is the last argument (after `--` when it starts with `-`); a task longer than one
//! argument may be (128 KiB) goes to pi's standard input instead, which pi reads as the prompt.

use super::jsonl::{self, EventReader, JsonlParser};
use super::{ARG_LIMIT, AgentCommand, Extracted, ParsedLine, StepInput, push_option};
use serde_json::Value;

/// The command of a step.
pub fn command(input: &StepInput<'_>) -> Result<AgentCommand, String> {
    let mut argv = input.argv("pi", &["--mode", "json", "-p", "--no-session"]);
    push_option(&mut argv, "--model", input.model());
    push_option(&mut argv, "--thinking", input.thinking());
    push_option(
        &mut argv,
        "--tools",
        (!input.tools().is_empty()).then(|| input.tools().join(",")),
    );
    if let Some(system) = input.system_prompt() {
        let path = input.write_file(&format!("system-prompt-{}.md", input.index), system.as_bytes())?;
        push_option(&mut argv, "--append-system-prompt", Some(path));
    }
    let mut stdin = None;
    if input.task.len() > ARG_LIMIT {
        stdin = Some(input.task.as_bytes().to_vec());
    } else {
        if input.task.starts_with('-') {
            argv.push("--".into());
        }
        argv.push(input.task.to_owned());
    }
    Ok(input.agent_command(argv, stdin))
}

/// Reads pi's JSON event stream.
#[derive(Debug, Default)]
pub struct PiEvents {
    last: Option<Value>,
    ended: bool,
}

/// pi's output parser.
pub type PiParser = JsonlParser<PiEvents>;

impl EventReader for PiEvents {
    fn program(&self) -> &str {
        "pi"
    }

    fn event(&mut self, value: Value) -> ParsedLine {
        match jsonl::kind(&value) {
            "message_update" => return ParsedLine::Ignore,
            "agent_end" | "agent_settled" => self.ended = true,
            "message_end" | "turn_end" => {
                let message = value.get("message");
                if message.and_then(|m| m.get("role")).and_then(Value::as_str) == Some("assistant") {
                    self.last = message.cloned();
                }
            }
            _ => {}
        }
        ParsedLine::Event(value)
    }

    fn settled(&self) -> bool {
        self.ended
    }

    fn extract(&mut self, stdout_tail: &[u8]) -> Extracted {
        let Some(message) = &self.last else {
            return Extracted::failed(format!(
                "pi ended without an assistant message (expected `--mode json` events on stdout). Output ended with: {}",
                jsonl::excerpt(stdout_tail)
            ));
        };
        let output = jsonl::content_text(message.get("content"));
        let reported_model = message.get("model").and_then(Value::as_str).map(str::to_owned);
        let stop = message.get("stopReason").and_then(Value::as_str).unwrap_or("");
        let failure = if matches!(stop, "error" | "aborted") {
            let detail = message
                .get("errorMessage")
                .and_then(Value::as_str)
                .unwrap_or("no error message");
            Some(format!("pi's last assistant message stopped with '{stop}': {detail}"))
        } else if output.len() > super::FINAL_MESSAGE_LIMIT {
            Some(jsonl::too_long("last assistant message", output.len()))
        } else {
            None
        };
        Extracted {
            output,
            truncated: false,
            failure,
            reported_model,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::adapter::OutputParser;

    fn feed(parser: &mut PiParser, lines: &[&str]) {
        for line in lines {
            parser.stdout_line(line.as_bytes(), line.len());
        }
    }

    #[test]
    fn the_last_assistant_message_is_the_output() {
        let mut p = PiParser::default();
        feed(
            &mut p,
            &[
                r#"{"type":"session","version":3,"id":"s","cwd":"/w"}"#,
                r#"{"type":"message_end","message":{"role":"user","content":"hi"}}"#,
                r#"{"type":"message_end","message":{"role":"assistant","content":[{"type":"text","text":"first"}],"model":"m","stopReason":"toolUse"}}"#,
                r#"{"type":"message_end","message":{"role":"assistant","content":[{"type":"thinking","thinking":"x"},{"type":"text","text":"Done."}],"provider":"anthropic","model":"claude-x","stopReason":"stop"}}"#,
                r#"{"type":"agent_end","messages":[]}"#,
            ],
        );
        let out = p.finish(b"", false);
        assert_eq!(out.output, "Done.");
        assert_eq!(out.reported_model.as_deref(), Some("claude-x"));
        assert_eq!(out.failure, None);
    }

    #[test]
    fn errors_and_missing_messages_fail() {
        let mut p = PiParser::default();
        feed(
            &mut p,
            &[
                r#"{"type":"message_end","message":{"role":"assistant","content":[],"model":"m","stopReason":"error","errorMessage":"rate limited"}}"#,
            ],
        );
        assert!(p.finish(b"", false).failure.unwrap().contains("rate limited"));
        let mut p = PiParser::default();
        assert_eq!(p.stdout_line(b"Loading...", 10), ParsedLine::Text);
        assert!(
            p.finish(b"Loading...", false)
                .failure
                .unwrap()
                .contains("without an assistant message")
        );
    }
}
