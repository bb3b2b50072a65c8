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
//!    [--tools <a,b> | --no-tools] [--exclude-tools <c,d>] [--append-system-prompt <run>/system-prompt-<n>.md] [--] <task>
//! ```
//!
//! The task is the last argument (after `--` when it starts with `-`); a task longer than one
//! argument may be (128 KiB) goes to pi's standard input instead, which pi reads as the prompt.
//! `extensions` and `skills` replace what pi discovers (`--no-extensions -e …`, `--no-skills
//! --skill …`); required extensions are always given with `-e`.
//!
//! A run with a checkpoint uses pi's RPC mode instead (`pi --mode rpc`, the same events): the
//! task is the first command on its standard input (`{"type":"prompt","message":…}`, its
//! reads named in it, since RPC mode takes no `@file`), the checkpoint is steered in later
//! (`{"type":"steer",…}`), and the input closes once pi answered, which ends it.

use super::jsonl::{self, EventReader, JsonlParser};
use super::{ARG_LIMIT, AgentCommand, Extracted, ParsedLine, StepInput, push_option};
use serde_json::Value;
use std::path::PathBuf;
use sublaunch_protocol::records::config::ProjectConfig;
use sublaunch_protocol::records::usage::Usage;

/// `pi-sessions-<n>`: where pi keeps step `n`'s conversation, so a resume can continue it.
pub fn session_dir_name(index: usize) -> String {
    format!("pi-sessions-{index}")
}

/// The command of a step: its conversation saved under `<run>` (a placed step's is not kept:
/// the machine has no `<run>`), or continued from the session file a resume names.
pub fn command(
    input: &StepInput<'_>,
    id: sublaunch_protocol::records::config::AdapterId,
) -> Result<AgentCommand, String> {
    let streamed = input.live.streamed_input;
    let mut argv = if streamed {
        input.argv("pi", &["--mode", "rpc"])
    } else {
        input.argv("pi", &["--mode", "json", "-p"])
    };
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
    // The resolved permissions (rule G10): the only tools (none at all: `--no-tools`), and those it
    // never has (a read-only step's writing tools among them).
    let permissions = input.permissions(id);
    match permissions.tools.as_deref() {
        Some([]) => argv.push("--no-tools".into()),
        Some(tools) => push_option(&mut argv, "--tools", Some(tools.join(","))),
        None => {}
    }
    push_option(
        &mut argv,
        "--exclude-tools",
        (!permissions.exclude_tools.is_empty()).then(|| permissions.exclude_tools.join(",")),
    );
    if let Some(system) = input.system_prompt() {
        let path = input.write_file(&format!("system-prompt-{}.md", input.index), system.as_bytes())?;
        push_option(&mut argv, "--append-system-prompt", Some(path));
    }
    push_resources(&mut argv, input.step);
    // pi keeps its own trust in projects; sublaunch's decision for this run overrides it both
    // ways: what the user trusted and approved is loaded, an untrusted project's `.pi/` is not.
    match input.live.project_config {
        ProjectConfig::Load => argv.push("--approve".into()),
        ProjectConfig::Ignore => argv.push("--no-approve".into()),
        ProjectConfig::AgentsOwn => {}
    }
    if streamed {
        // RPC mode takes no files or messages on its command line: the task (its reads named
        // in it) is the first command, and a checkpoint is steered in later.
        let mut command = input.agent_command(argv, Some(rpc_line("prompt", input.task)));
        command.streamed_stdin = true;
        return Ok(command);
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

/// pi's extensions and skills: a list replaces what pi discovers (`--no-extensions`,
/// `--no-skills`), required extensions are loaded in every case.
fn push_resources(argv: &mut Vec<String>, step: &sublaunch_protocol::records::config::StepConfig) {
    if let Some(extensions) = &step.extensions {
        argv.push("--no-extensions".into());
        for extension in extensions {
            push_option(argv, "-e", Some(extension.as_str()));
        }
    }
    for extension in step
        .required_extensions
        .iter()
        .filter(|e| !step.extensions.as_ref().is_some_and(|listed| listed.contains(e)))
    {
        push_option(argv, "-e", Some(extension.as_str()));
    }
    if let Some(skills) = &step.skills {
        argv.push("--no-skills".into());
        for skill in skills {
            push_option(argv, "--skill", Some(skill.as_str()));
        }
    }
}

/// One command line of pi's RPC mode: `{"type": kind, "message": text}`.
pub fn rpc_line(kind: &str, message: &str) -> Vec<u8> {
    let mut line = serde_json::to_vec(&serde_json::json!({"type": kind, "message": message})).unwrap_or_default();
    line.push(b'\n');
    line
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
    /// Tool calls started (`tool_execution_start`).
    tool_calls: u64,
    /// A command of RPC mode that pi refused (its `response` with `success: false`).
    refused: Option<String>,
    /// An assistant message had text and did not stop on an error.
    answered_text: bool,
    /// The last rate limit or overload pi reported (an assistant message that stopped on one).
    rate_limited: Option<super::RateLimited>,
    /// The assistant's text so far, the message still streaming last (D2).
    partial: super::partial::PartialText,
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
        let dir = self.session_dir.as_ref()?;
        // RPC mode prints no `session` line: the directory, which is the step's own, then
        // holds the one conversation.
        let suffix = self
            .session
            .as_ref()
            .map_or_else(|| ".jsonl".to_owned(), |id| format!("_{id}.jsonl"));
        let mut found = std::fs::read_dir(dir)
            .ok()?
            .filter_map(Result::ok)
            .map(|entry| entry.path())
            .filter(|path| {
                path.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.ends_with(&suffix))
            });
        let first = found.next()?;
        (self.session.is_some() || found.next().is_none()).then(|| first.to_string_lossy().into_owned())
    }
}

impl EventReader for PiEvents {
    fn program(&self) -> &str {
        "pi"
    }

    fn event(&mut self, value: Value) -> ParsedLine {
        match jsonl::kind(&value) {
            "message_update" => {
                let message = value.get("message");
                if message.and_then(|m| m.get("role")).and_then(Value::as_str) == Some("assistant") {
                    self.partial
                        .saying(&jsonl::content_text(message.and_then(|m| m.get("content"))));
                }
                return ParsedLine::Ignore;
            }
            // An `agent_end` that will be retried (a dropped stream, a 5xx) is not the end.
            "agent_end" => self.ended = value.get("willRetry").and_then(Value::as_bool) != Some(true),
            "agent_settled" => self.ended = true,
            "auto_retry_start" => self.ended = false,
            "session" => self.session = jsonl::string(Some(&value), "id"),
            "tool_execution_start" => self.tool_calls += 1,
            // RPC mode answers each command; a refused prompt means no turn will come.
            "response" if value.get("success").and_then(Value::as_bool) == Some(false) => {
                let command = value.get("command").and_then(Value::as_str).unwrap_or("?");
                let error = value.get("error").and_then(Value::as_str).unwrap_or("no error message");
                if command == "prompt" {
                    self.ended = true;
                }
                self.refused
                    .get_or_insert_with(|| format!("pi refused the {command} command: {error}"));
            }
            "message_end" | "turn_end" => {
                let message = value.get("message");
                if message.and_then(|m| m.get("role")).and_then(Value::as_str) == Some("assistant") {
                    // Each assistant message is one model call; `turn_end` repeats the last.
                    if jsonl::kind(&value) == "message_end"
                        && let Some(usage) = message.and_then(|m| m.get("usage"))
                    {
                        self.usage.get_or_insert_with(Usage::default).add(&message_usage(usage));
                    }
                    let stop = message.and_then(|m| m.get("stopReason")).and_then(Value::as_str);
                    if stop == Some("error") {
                        let error = message.and_then(|m| m.get("errorMessage")).and_then(Value::as_str);
                        if let Some(limited) = error.and_then(super::rate_limit::in_message) {
                            self.rate_limited = Some(limited);
                        }
                    } else if jsonl::kind(&value) == "message_end" {
                        let text = jsonl::content_text(message.and_then(|m| m.get("content")));
                        self.answered_text |= !text.is_empty();
                        self.partial.said(&text);
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

    fn partial(&self) -> Option<String> {
        self.partial.text()
    }

    fn session(&self) -> Option<String> {
        self.session_file()
    }

    fn spent(&self) -> super::Spent {
        super::Spent {
            usage: self.usage.clone(),
            tool_calls: self.tool_calls,
            rate_limited: self.rate_limited.clone(),
            worked: self.answered_text || self.tool_calls > 0,
        }
    }

    fn extract(&mut self, stdout_tail: &[u8]) -> Extracted {
        let Some(message) = &self.last else {
            if let Some(refused) = &self.refused {
                return Extracted::failed(refused.clone());
            }
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

    #[test]
    fn spent_counts_each_assistant_message_and_tool_start_and_rpc_refusals_end_the_step() {
        let mut p = PiParser::default();
        feed(
            &mut p,
            &[
                r#"{"type":"message_start","message":{"role":"assistant","content":[],"usage":{"input":5,"output":1}}}"#,
                r#"{"type":"message_end","message":{"role":"assistant","content":[],"stopReason":"toolUse","usage":{"input":10,"output":4,"cacheRead":2,"cacheWrite":0,"cost":{"total":0.5}}}}"#,
                r#"{"type":"tool_execution_start","toolCallId":"a","toolName":"bash","args":{}}"#,
                r#"{"type":"tool_execution_start","toolCallId":"b","toolName":"read","args":{}}"#,
                r#"{"type":"message_end","message":{"role":"toolResult","content":[],"usage":{"input":99}}}"#,
            ],
        );
        let spent = p.spent();
        assert_eq!(spent.tool_calls, 2);
        let usage = spent.usage.unwrap();
        assert_eq!(
            (usage.input_tokens, usage.output_tokens, usage.cache_read_tokens),
            (10, 4, 2)
        );
        assert_eq!(usage.cost_usd, Some(0.5));
        // D2: finished messages' text, then the one still streaming, as its latest update has it.
        assert_eq!(p.partial(), None);
        feed(
            &mut p,
            &[
                r#"{"type":"message_end","message":{"role":"assistant","content":[{"type":"text","text":"Read it."}],"stopReason":"toolUse"}}"#,
                r#"{"type":"message_update","message":{"role":"assistant","content":[{"type":"text","text":"The bug"}]}}"#,
                r#"{"type":"message_update","message":{"role":"assistant","content":[{"type":"text","text":"The bug is in"}]}}"#,
            ],
        );
        assert_eq!(p.partial().as_deref(), Some("Read it.\n\nThe bug is in"));
        let mut rpc = PiParser::default();
        feed(
            &mut rpc,
            &[
                r#"{"id":"1","type":"response","command":"prompt","success":false,"error":"Agent is already processing."}"#,
            ],
        );
        assert!(rpc.settled());
        assert!(
            rpc.finish(b"", false)
                .failure
                .unwrap()
                .contains("refused the prompt command: Agent is already processing.")
        );
    }
}
