//! The native `pi` adapter: `pi --mode json -p` (pi's JSON event stream, one JSON object per
//! line), with the planned model and thinking level, the agent's tools and its system prompt
//! appended from a private file. The final output is the text of the last assistant message
//! (`message_end` with `role: "assistant"`); its `model` is what the child reports for model
//! verification. An assistant message that stopped with `stopReason: "error"` or `"aborted"`
//! fails the step with its `errorMessage`.
//!
//! ```text
//! pi --mode json -p --session-dir <run>/pi-sessions-<n> | --session <file> | --no-session
//!    [--model <provider/id>] [--thinking <level>]
//!    [--tools <a,b>] [--append-system-prompt <run>/system-prompt-<n>.md] [--] <task>
//! ```
//!
//! The task is the last argument (after `--` when it starts with `-`); a task longer than one
//! argument may be (128 KiB) goes to pi's standard input instead, which pi reads as the prompt.

use super::jsonl::{self, EventReader, JsonlParser};
use super::{ARG_LIMIT, AgentCommand, Extracted, ParsedLine, StepInput, push_option};
use serde_json::Value;
use std::path::PathBuf;
use sublaunch_protocol::usage::Usage;

/// `pi-sessions-<n>`: where pi keeps step `n`'s conversation, so a resume can continue it.
pub fn session_dir_name(index: usize) -> String {
    format!("pi-sessions-{index}")
}

/// The command of a step: its conversation saved under `<run>` (a placed step's is not kept:
/// the machine has no `<run>`), or continued from the session file a resume names.
pub fn command(input: &StepInput<'_>) -> Result<AgentCommand, String> {
    let mut argv = input.argv("pi", &["--mode", "json", "-p"]);
    match input.resume() {
        Some(file) => push_option(&mut argv, "--session", Some(file)),
        None if input.step.placement.is_none() => {
            push_option(
                &mut argv,
                "--session-dir",
                Some(input.run_path(&session_dir_name(input.index))),
            );
        }
        None => argv.push("--no-session".into()),
    }
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
    if !input.step.reads.is_empty() {
        argv.push("--".into());
        argv.extend(super::reads::pi_arguments(&input.step.reads));
    }
    if input.task.len() > ARG_LIMIT {
        stdin = Some(input.task.as_bytes().to_vec());
    } else {
        if input.task.starts_with('-') && input.step.reads.is_empty() {
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
    session: Option<String>,
    usage: Option<Usage>,
    /// Where pi saves the conversation (`None`: not saved, or resumed from `resumed`).
    session_dir: Option<PathBuf>,
    /// The session file a resumed run continues.
    resumed: Option<String>,
}

/// pi's output parser.
pub type PiParser = JsonlParser<PiEvents>;

impl PiEvents {
    /// The parser of a step whose conversation pi saves in `session_dir`, or continues from
    /// the file `resumed`.
    pub fn parser(session_dir: Option<PathBuf>, resumed: Option<String>) -> PiParser {
        JsonlParser::of(Self {
            session_dir,
            resumed,
            ..Self::default()
        })
    }

    /// The session file: the one resumed, else the file of session `id` in the session
    /// directory (pi names it `<timestamp>_<id>.jsonl` and does not print its path).
    fn session_file(&self) -> Option<String> {
        if self.resumed.is_some() {
            return self.resumed.clone();
        }
        let (dir, id) = (self.session_dir.as_ref()?, self.session.as_ref()?);
        let suffix = format!("_{id}.jsonl");
        std::fs::read_dir(dir)
            .ok()?
            .filter_map(Result::ok)
            .map(|entry| entry.path())
            .find(|path| {
                path.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.ends_with(&suffix))
            })
            .map(|path| path.to_string_lossy().into_owned())
    }
}

impl EventReader for PiEvents {
    fn program(&self) -> &str {
        "pi"
    }

    fn event(&mut self, value: Value) -> ParsedLine {
        match jsonl::kind(&value) {
            "message_update" => return ParsedLine::Ignore,
            // An `agent_end` that will be retried (a dropped stream, a 5xx) is not the end.
            "agent_end" => self.ended = value.get("willRetry").and_then(Value::as_bool) != Some(true),
            "agent_settled" => self.ended = true,
            "auto_retry_start" => self.ended = false,
            "session" => self.session = jsonl::string(Some(&value), "id"),
            "message_end" | "turn_end" => {
                let message = value.get("message");
                if message.and_then(|m| m.get("role")).and_then(Value::as_str) == Some("assistant") {
                    // Each assistant message is one model call; `turn_end` repeats the last.
                    if jsonl::kind(&value) == "message_end"
                        && let Some(usage) = message.and_then(|m| m.get("usage"))
                    {
                        self.usage.get_or_insert_with(Usage::default).add(&message_usage(usage));
                    }
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
            usage: self.usage.clone(),
            session: self.session_file(),
            ..Extracted::default()
        }
    }
}

/// The usage of one of pi's assistant messages: `{input, output, cacheRead, cacheWrite,
/// cost: {total}}`.
fn message_usage(usage: &Value) -> Usage {
    let usage = Some(usage);
    Usage {
        input_tokens: jsonl::count(usage, "input"),
        output_tokens: jsonl::count(usage, "output"),
        cache_read_tokens: jsonl::count(usage, "cacheRead"),
        cache_write_tokens: jsonl::count(usage, "cacheWrite"),
        cost_usd: usage
            .and_then(|u| u.get("cost"))
            .and_then(|c| c.get("total"))
            .and_then(Value::as_f64),
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
