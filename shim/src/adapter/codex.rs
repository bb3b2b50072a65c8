//! Codex (`codex-exec`, `codex-exec-writer`): `codex exec` with JSONL events, the prompt on
//! standard input (`-`), and the final message written by Codex to a file in `<run>`.
//!
//! ```text
//! codex exec --json --skip-git-repo-check --sandbox read-only|workspace-write
//!       -c approval_policy="never" --output-last-message <run>/last-message-<n>.txt [-m <model>] [-c key=value …]
//!       [--output-schema <run>/output-schema-<n>.json] [resume <thread>] -
//! ```
//!
//! The agent's system prompt goes in as developer instructions (`-c developer_instructions`),
//! the thinking level as `-c model_reasoning_effort`, a provider other than `openai` as
//! `-c model_provider`, a structured step's schema as `--output-schema` (Codex sends it as a
//! strict JSON schema). The output is the file's content (at most 16 MiB); when Codex wrote no
//! file, the text of the last `item.completed` event whose item is an `agent_message`. A
//! `turn.failed` event fails the step with its message; an `error` event alone does not
//! (Codex prints one per reconnect).
//!
//! Permissions: Codex has no tool list, so the planner refused tools, rules and `nested:
//! false` for it; the mode is its sandbox (`read-only`, or `workspace-write` for a writer),
//! and it never asks for approval.

use super::jsonl::{self, EventReader, JsonlParser};
use super::{AgentCommand, Extracted, FINAL_MESSAGE_LIMIT, ParsedLine, StepInput, push_option};
use serde_json::Value;
use std::io::Read;
use sublaunch_protocol::records::config::AdapterId;
use sublaunch_protocol::records::usage::Usage;

/// `last-message-<n>.txt`: where Codex writes step `n`'s final message.
pub fn last_message_name(index: usize) -> String {
    format!("last-message-{index}.txt")
}

/// The command of a step of adapter `id` (rule G9; a writer's sandbox allows writes in the
/// workspace). A resumed step runs `codex exec … resume <thread> -`, the options before
/// `resume` (which takes no sandbox option of its own).
/// Whether the step's Codex runs its commands in its own sandbox (bubblewrap): always, unless
/// sublaunch's OS sandbox replaced it (G34); such a Codex gets no PID namespace (G50).
pub fn uses_own_sandbox(id: AdapterId, step: &sublaunch_protocol::records::config::StepConfig) -> bool {
    matches!(id, AdapterId::CodexExec | AdapterId::CodexExecWriter) && step.sandbox.is_none()
}

pub fn command(input: &StepInput<'_>, id: AdapterId) -> Result<AgentCommand, String> {
    let permissions = input.permissions(id);
    let writer = permissions.mode == sublaunch_protocol::records::config::PermissionMode::Writer;
    let name = last_message_name(input.index);
    input
        .run
        .remove(&name)
        .map_err(|e| format!("cannot remove a stale {name}: {e}"))?;
    // G34: Codex's bubblewrap cannot start inside Landlock; sublaunch's OS sandbox replaces it.
    let sandbox = if input.step.sandbox.is_some() {
        "danger-full-access"
    } else if writer {
        "workspace-write"
    } else {
        "read-only"
    };
    let mut argv = input.argv(
        "codex",
        &["exec", "--json", "--skip-git-repo-check", "--sandbox", sandbox],
    );
    push_config(&mut argv, "approval_policy", Some("never"));
    push_option(&mut argv, "--output-last-message", Some(input.run_path(&name)));
    push_option(&mut argv, "-m", input.model());
    push_config(&mut argv, "model_provider", input.provider());
    push_config(
        &mut argv,
        "model_reasoning_effort",
        input.thinking().map(reasoning_effort),
    );
    push_config(&mut argv, "developer_instructions", input.system_prompt());
    if let Some(schema) = input.step.output_schema.as_ref().filter(|_| input.step.structured) {
        let path = input.write_file(
            &format!("output-schema-{}.json", input.index),
            schema.to_string().as_bytes(),
        )?;
        push_option(&mut argv, "--output-schema", Some(path));
    }
    if let Some(thread) = input.resume() {
        argv.extend(["resume".to_owned(), thread.to_owned()]);
    }
    argv.push("-".into());
    Ok(input.agent_command(argv, Some(input.task.as_bytes().to_vec())))
}

/// `-c key=value` with the value as a TOML string (Codex parses it as TOML, and its fallback
/// for text that is not TOML drops a trailing quote). A JSON string is a TOML basic string.
fn push_config(argv: &mut Vec<String>, key: &str, value: Option<&str>) {
    if let Some(value) = value {
        argv.extend(["-c".to_owned(), format!("{key}={}", Value::from(value))]);
    }
}

/// Codex's `model_reasoning_effort` for a thinking level, as the adapter table names it
/// (none, minimal, low, medium, high, xhigh; the nearest for a level it has no name for).
fn reasoning_effort(level: &str) -> &str {
    super::cli_thinking(AdapterId::CodexExec, level)
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
    thread: Option<String>,
    /// The thread's running total at its last `turn.completed`.
    usage: Option<Usage>,
    /// The total before this run (a resumed thread).
    usage_before: Option<Usage>,
    /// The tool items (commands, MCP calls, web searches, file changes) seen, and the ids of
    /// those started and not yet completed (an item is counted once, at whichever it shows
    /// first; only the ones in flight are remembered).
    tool_items: u64,
    tools_in_flight: std::collections::BTreeSet<String>,
    /// The last rate limit or overload Codex reported (each reconnect, a failed turn).
    rate_limited: Option<super::RateLimited>,
    /// Every agent message so far (D2).
    partial: super::partial::PartialText,
}

/// The item types that are tool calls.
const TOOL_ITEMS: [&str; 4] = ["command_execution", "mcp_tool_call", "web_search", "file_change"];

impl CodexEvents {
    /// The parser of a run whose final message Codex writes to `last_message_file`.
    pub fn parser(last_message_file: String, usage_before: Option<Usage>) -> JsonlParser<Self> {
        JsonlParser::of(Self {
            last_message_file,
            usage_before,
            ..Self::default()
        })
    }
}

impl CodexEvents {
    /// This run's part of the thread's running total.
    fn this_run_usage(&self) -> Option<Usage> {
        self.usage.as_ref().map(|total| match &self.usage_before {
            Some(before) => total.since(before),
            None => total.clone(),
        })
    }
}

impl EventReader for CodexEvents {
    fn program(&self) -> &str {
        "Codex"
    }

    fn event(&mut self, value: Value) -> ParsedLine {
        let kind = jsonl::kind(&value);
        if matches!(kind, "item.started" | "item.completed") {
            let item = value.get("item");
            let item_kind = item
                .and_then(|i| i.get("type").or_else(|| i.get("item_type")))
                .and_then(Value::as_str);
            if item_kind.is_some_and(|k| TOOL_ITEMS.contains(&k)) {
                let id = jsonl::string(item, "id");
                let seen = match (kind, id) {
                    ("item.started", Some(id)) => !self.tools_in_flight.insert(id),
                    (_, Some(id)) => self.tools_in_flight.remove(&id),
                    (_, None) => false,
                };
                if !seen {
                    self.tool_items = self.tool_items.saturating_add(1);
                }
            }
        }
        match kind {
            "item.completed" => {
                let item = value.get("item");
                let kind = item
                    .and_then(|i| i.get("type").or_else(|| i.get("item_type")))
                    .and_then(Value::as_str);
                if kind == Some("agent_message")
                    && let Some(text) = item.and_then(|i| i.get("text")).and_then(Value::as_str)
                {
                    self.partial.said(text);
                    self.last_agent_message = Some(text.to_owned());
                }
            }
            "item.updated" => return ParsedLine::Ignore,
            "thread.started" => self.thread = jsonl::string(Some(&value), "thread_id"),
            "turn.completed" => {
                self.turn_ended = true;
                // A running total of the thread. Responses count cached input inside
                // `input_tokens`; ours counts it apart.
                let usage = value.get("usage");
                let cached = jsonl::count(usage, "cached_input_tokens");
                self.usage = Some(Usage {
                    input_tokens: jsonl::count(usage, "input_tokens").saturating_sub(cached),
                    output_tokens: jsonl::count(usage, "output_tokens"),
                    cache_read_tokens: cached,
                    cache_write_tokens: jsonl::count(usage, "cache_write_input_tokens"),
                    cost_usd: None,
                });
            }
            "turn.failed" | "error" => {
                let message = value
                    .get("error")
                    .and_then(|e| e.get("message"))
                    .or_else(|| value.get("message"))
                    .and_then(Value::as_str)
                    .unwrap_or("no message");
                if let Some(limited) = super::rate_limit::in_message(message) {
                    self.rate_limited = Some(limited);
                }
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

    fn partial(&self) -> Option<String> {
        self.partial.text()
    }

    fn session(&self) -> Option<String> {
        self.thread.clone()
    }

    fn spent(&self) -> super::Spent {
        super::Spent {
            usage: self.this_run_usage(),
            tool_calls: self.tool_items,
            rate_limited: self.rate_limited.clone(),
            worked: self.last_agent_message.is_some() || self.tool_items > 0,
        }
    }

    fn extract(&mut self, stdout_tail: &[u8]) -> Extracted {
        let mut out = Extracted {
            usage: self.this_run_usage(),
            session_usage: self.usage.clone(),
            session: self.thread.clone(),
            ..Extracted::default()
        };
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
        let mut p = CodexEvents::parser(file.to_string_lossy().into_owned(), None);
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
        let mut p = CodexEvents::parser(file.to_string_lossy().into_owned(), None);
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

        let mut lost = CodexEvents::parser(tmp.path().join("none.txt").to_string_lossy().into_owned(), None);
        let error = r#"{"type":"error","message":"Reconnecting... 5/5 (stream disconnected before completion)"}"#;
        lost.stdout_line(error.as_bytes(), error.len());
        assert!(lost.finish(b"", false).failure.unwrap().contains("Reconnecting... 5/5"));
    }

    #[test]
    fn spent_counts_tool_items_once_and_this_runs_part_of_the_thread() {
        let before = Usage {
            input_tokens: 100,
            output_tokens: 10,
            ..Usage::default()
        };
        let mut p = CodexEvents::parser("/nonexistent".into(), Some(before));
        for line in [
            r#"{"type":"item.started","item":{"id":"c1","type":"command_execution","command":"ls"}}"#,
            r#"{"type":"item.completed","item":{"id":"c1","type":"command_execution","command":"ls"}}"#,
            r#"{"type":"item.completed","item":{"id":"f1","type":"file_change","changes":[]}}"#,
            r#"{"type":"item.completed","item":{"id":"m1","type":"agent_message","text":"x"}}"#,
        ] {
            p.stdout_line(line.as_bytes(), line.len());
        }
        assert_eq!((p.spent().tool_calls, p.spent().usage), (2, None));
        // D2: what Codex said so far, should the step end before its turn does.
        assert_eq!(p.partial().as_deref(), Some("x"));
        let done =
            r#"{"type":"turn.completed","usage":{"input_tokens":150,"cached_input_tokens":20,"output_tokens":30}}"#;
        p.stdout_line(done.as_bytes(), done.len());
        let usage = p.spent().usage.unwrap();
        assert_eq!(
            (usage.input_tokens, usage.output_tokens, usage.cache_read_tokens),
            (30, 20, 20)
        );
    }
}
