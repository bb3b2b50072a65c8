//! Agent adapters: how a step's command line is built and how the agent's output is read.
//!
//! Only the built-in `shell` adapter exists today (the step's `command.argv`, e.g.
//! `["sh","-c",task]`, in the step's cwd; stdout is plain text). Later adapters (pi,
//! claude-code, codex, cursor, generic command templates) implement [`Adapter`] and, for
//! agents that speak a JSON line protocol, an [`OutputParser`] that turns lines into events.

mod shell;

pub use shell::{ShellAdapter, TEXT_LINE_RETAIN, TextParser};

use std::collections::BTreeMap;
use sublaunch_runfiles::config::RunnerConfig;

/// The process to spawn for one step.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AgentCommand {
    /// Program and arguments.
    pub argv: Vec<String>,
    /// Environment overrides on top of the sanitised shim environment (H10).
    pub env: BTreeMap<String, String>,
    /// Working directory.
    pub cwd: String,
}

/// What a stdout line is, for the supervisor.
#[derive(Clone, Debug, PartialEq)]
pub enum ParsedLine {
    /// Plain text: a `subagent.child.stdout` event.
    Text,
    /// An agent event to persist as it is.
    Event(serde_json::Value),
    /// Nothing to persist (e.g. streaming deltas).
    Ignore,
}

/// Reads one step's stdout.
pub trait OutputParser {
    /// Bytes of a line kept for [`OutputParser::stdout_line`]; longer lines arrive truncated
    /// (with their full length). Memory stays bounded by this (R11).
    fn line_retain_limit(&self) -> usize;
    /// Whether the parser needs every line even when no event can be written any more.
    fn needs_lines(&self) -> bool;
    /// One complete line without its newline (`full_len` ≥ `line.len()`).
    fn stdout_line(&mut self, line: &[u8], full_len: usize) -> ParsedLine;
    /// The step's output text, given the last bytes of stdout.
    fn finish(&mut self, stdout_tail: &[u8]) -> String;
}

/// An agent kind.
pub trait Adapter {
    /// The adapter's id.
    fn id(&self) -> &'static str;
    /// The command of step `index` of `cfg`.
    fn command(&self, cfg: &RunnerConfig, index: usize) -> Result<AgentCommand, String>;
    /// A parser for one run of the step.
    fn parser(&self) -> Box<dyn OutputParser>;
}

/// The adapter of step `index`. Every step with a command runs through the shell adapter
/// today (`runner.adapter` = `shell`, or any external command).
pub fn for_step(_cfg: &RunnerConfig, _index: usize) -> Box<dyn Adapter> {
    Box::new(ShellAdapter)
}
