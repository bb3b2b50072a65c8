//! Codex (`codex-exec`, `codex-exec-writer`): `codex exec` with JSONL events, the prompt on
//! standard input (`-`), and the final message written by Codex to a file in `<run>`.
//!
//! ```text
//! codex exec --json --skip-git-repo-check --sandbox read-only|workspace-write
//!       --output-last-message <run>/last-message-<n>.txt [-m <model>] -
//! ```
//!
//! Codex has no system-prompt option: the agent's system prompt is put before the task,
//! separated by a blank line. The output is the file's content (at most 16 MiB); when Codex
//! wrote no file, the text of the last `item.completed` event whose item is an
//! `agent_message`. A `turn.failed` or `error` event fails the step with its message.

use super::jsonl::{self, EventReader, JsonlParser};
use super::{AgentCommand, Extracted, FINAL_MESSAGE_LIMIT, ParsedLine, StepInput, push_option};
use serde_json::Value;
use std::io::Read;

/// `last-message-<n>.txt`: where Codex writes step `n`'s final message.
pub fn last_message_name(index: usize) -> String {
    format!("last-message-{index}.txt")
}

/// The command of a step (`writer`: `codex-exec-writer`, the sandbox allows writes in the
/// workspace).
pub fn command(input: &StepInput<'_>, writer: bool) -> Result<AgentCommand, String> {
    let name = last_message_name(input.index);
    input
        .run
        .remove(&name)
        .map_err(|e| format!("cannot remove a stale {name}: {e}"))?;
    let sandbox = if writer { "workspace-write" } else { "read-only" };
    let mut argv = input.argv(
        "codex",
        &["exec", "--json", "--skip-git-repo-check", "--sandbox", sandbox],
    );
    push_option(&mut argv, "--output-last-message", Some(input.run_path(&name)));
    push_option(&mut argv, "-m", input.model());
    argv.push("-".into());
    Ok(input.agent_command(argv, Some(input.prompt_with_system().into_bytes())))
}

/// Reads `codex exec --json` events.
#[derive(Debug, Default)]
pub struct CodexEvents {
    last_message_file: String,
    last_agent_message: Option<String>,
    failure: Option<String>,
    /// The last `error` event: Codex prints one for each reconnect and carries on, so it
    /// only explains a run that produced no answer.
    last_error: Option<String>,
    turn_ended: bool,
}

impl CodexEvents {
    /// The parser of a run whose final message Codex writes to `last_message_file`.
    pub fn parser(last_message_file: String) -> JsonlParser<Self> {
        JsonlParser::of(Self {
            last_message_file,
            ..Self::default()
        })
    }
}

impl EventReader for CodexEvents {
    fn program(&self) -> &str {
        "Codex"
    }

    fn event(&mut self, value: Value) -> ParsedLine {
        match jsonl::kind(&value) {
            "item.completed" => {
                let item = value.get("item");
                let kind = item
                    .and_then(|i| i.get("type").or_else(|| i.get("item_type")))
                    .and_then(Value::as_str);
                if kind == Some("agent_message")
                    && let Some(text) = item.and_then(|i| i.get("text")).and_then(Value::as_str)
                {
                    self.last_agent_message = Some(text.to_owned());
                }
            }
            "item.updated" => return ParsedLine::Ignore,
            "turn.completed" => self.turn_ended = true,
            "turn.failed" | "error" => {
                let message = value
                    .get("error")
                    .and_then(|e| e.get("message"))
                    .or_else(|| value.get("message"))
                    .and_then(Value::as_str)
                    .unwrap_or("no message");
                let report = Some(format!("Codex reported a failure: {message}"));
                // A failed turn is final; an `error` event alone is not (reconnects print one).
                if jsonl::kind(&value) == "turn.failed" {
                    self.turn_ended = true;
                    self.failure = report;
                } else {
                    self.last_error = report;
                }
            }
            _ => {}
        }
        ParsedLine::Event(value)
    }

    fn settled(&self) -> bool {
        self.turn_ended
    }

    fn extract(&mut self, stdout_tail: &[u8]) -> Extracted {
        let mut out = Extracted::default();
        match read_bounded(&self.last_message_file) {
            Ok(Some(text)) if !text.trim().is_empty() => out.output = text,
            Ok(_) => out.output = self.last_agent_message.clone().unwrap_or_default(),
            Err(error) => {
                out.failure = Some(error);
                return out;
            }
        }
        out.failure = self.failure.clone();
        if out.failure.is_none() && out.output.trim().is_empty() {
            out.failure = self.last_error.clone();
        }
        if out.failure.is_none() && out.output.trim().is_empty() {
            out.failure = Some(format!(
                "Codex wrote no final message (no --output-last-message file and no agent_message item). Output ended with: {}",
                jsonl::excerpt(stdout_tail)
            ));
        }
        out
    }
}

/// The file's text when it exists, refusing more than [`FINAL_MESSAGE_LIMIT`] bytes.
fn read_bounded(path: &str) -> Result<Option<String>, String> {
    let file = match std::fs::File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("cannot read Codex's final message {path}: {e}")),
    };
    let mut bytes = Vec::new();
    let limit = u64::try_from(FINAL_MESSAGE_LIMIT).unwrap_or(u64::MAX);
    file.take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read Codex's final message {path}: {e}"))?;
    if bytes.len() > FINAL_MESSAGE_LIMIT {
        let len = std::fs::metadata(path).map_or(bytes.len() as u64, |m| m.len());
        return Err(jsonl::too_long(
            "final message",
            usize::try_from(len).unwrap_or(usize::MAX),
        ));
    }
    Ok(Some(String::from_utf8_lossy(&bytes).trim_end().to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::adapter::OutputParser;

    #[test]
    fn the_last_message_file_wins_then_the_last_agent_message() {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("last.txt");
        let mut p = CodexEvents::parser(file.to_string_lossy().into_owned());
        for line in [
            r#"{"type":"thread.started","thread_id":"t"}"#,
            r#"{"type":"item.completed","item":{"id":"i0","type":"agent_message","text":"from events"}}"#,
            r#"{"type":"turn.completed","usage":{"input_tokens":1,"cached_input_tokens":0,"output_tokens":1}}"#,
        ] {
            p.stdout_line(line.as_bytes(), line.len());
        }
        assert_eq!(p.finish(b"", false).output, "from events");
        std::fs::write(&file, "from file\n").unwrap();
        assert_eq!(p.finish(b"", false).output, "from file");
        let failed = r#"{"type":"turn.failed","error":{"message":"quota"}}"#;
        p.stdout_line(failed.as_bytes(), failed.len());
        assert!(p.finish(b"", false).failure.unwrap().contains("quota"));
    }

    /// Codex 0.169 prints an `error` event for each reconnect of a dropped stream and then
    /// finishes normally: the run is no failure. Without an answer, the last one explains it.
    #[test]
    fn reconnect_errors_are_not_failures_but_explain_a_run_without_an_answer() {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("last.txt");
        let mut p = CodexEvents::parser(file.to_string_lossy().into_owned());
        for line in [
            r#"{"type":"thread.started","thread_id":"t"}"#,
            r#"{"type":"error","message":"Reconnecting... 1/5 (stream disconnected before completion)"}"#,
            r#"{"type":"item.completed","item":{"id":"i0","type":"agent_message","text":"recovered"}}"#,
            r#"{"type":"turn.completed","usage":{"input_tokens":1,"cached_input_tokens":0,"output_tokens":1}}"#,
        ] {
            p.stdout_line(line.as_bytes(), line.len());
        }
        let done = p.finish(b"", false);
        assert_eq!((done.output.as_str(), done.failure), ("recovered", None));

        let mut lost = CodexEvents::parser(tmp.path().join("none.txt").to_string_lossy().into_owned());
        let error = r#"{"type":"error","message":"Reconnecting... 5/5 (stream disconnected before completion)"}"#;
        lost.stdout_line(error.as_bytes(), error.len());
        assert!(lost.finish(b"", false).failure.unwrap().contains("Reconnecting... 5/5"));
    }
}
