//! Agent adapters: how a step's command line is built and how the agent's output is read.
//!
//! Each adapter (one module each, dispatched by [`command`] and [`parser`]) turns a step — its [`AdapterSpec`] from the runner
//! configuration and its task after `{task}`/`{previous}`/`{chain_dir}` substitution — into an
//! [`AgentCommand`] (argv, environment, cwd, standard input), and gives an [`OutputParser`]
//! that reads the agent's stdout line by line and extracts the step's final output:
//!
//! | adapter | program | prompt | output |
//! |---|---|---|---|
//! | `shell` | `sh -c <task>` | argv | stdout text |
//! | `command` | argv template | `{task}` in the template | stdout text |
//! | `external-cli` | argv as given | stdin | stdout text |
//! | `pi` | `pi --mode json -p …` | argv (stdin when long) | last assistant message |
//! | `claude-code[-writer]` | `claude -p --output-format stream-json …` | stdin | `result` event |
//! | `codex-exec[-writer]` | `codex exec --json …` | stdin | `--output-last-message` file |
//! | `cursor-agent[-writer]` | `cursor-agent -p --output-format stream-json …` | argv | `result` event |
//!
//! A step without an adapter (configurations written before adapters existed) runs its
//! `command.argv` verbatim through the `shell` adapter.

mod claude;
pub(crate) mod codex;
mod command;
mod cursor;
mod jsonl;
pub(crate) mod partial;
pub(crate) mod pi;
pub mod rate_limit;
pub mod reads;
mod script_refs;
mod shell;
mod text;
mod tools;

pub use claude::user_line as claude_user_line;
pub use command::fill_template;
pub use pi::rpc_line as pi_rpc_line;
pub use rate_limit::RateLimited;
pub use script_refs::ScriptValues;
pub use text::{TEXT_LINE_RETAIN, TextParser};

use std::collections::BTreeMap;
use sublaunch_protocol::files::dir::Dir;
use sublaunch_protocol::records::config::{
    AdapterId, AdapterSpec, CliThinking, RunnerConfig, StepConfig, ThinkingLevel,
};
use sublaunch_protocol::records::usage::Usage;

/// The longest final message an adapter keeps (16 MiB); a longer one fails the step.
pub const FINAL_MESSAGE_LIMIT: usize = 16 * 1024 * 1024;

/// The longest single argument the kernel passes to a program (`MAX_ARG_STRLEN` less the NUL).
pub const ARG_LIMIT: usize = 128 * 1024 - 1;

/// The process to spawn for one step.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AgentCommand {
    /// Program and arguments.
    pub argv: Vec<String>,
    /// Environment overrides on top of the sanitised shim environment (H10).
    pub env: BTreeMap<String, String>,
    /// Working directory.
    pub cwd: String,
    /// Bytes fed to the agent's standard input (`None`: `/dev/null`).
    pub stdin: Option<Vec<u8>>,
    /// Start from an empty environment instead of the shim's (`ssh` for placed steps gets
    /// only `env`, P-H6).
    pub clear_env: bool,
    /// `stdin` holds the first messages of an agent that takes more while it runs: its
    /// standard input is a pipe the supervisor keeps open (a checkpoint is written there)
    /// until the agent has answered.
    pub streamed_stdin: bool,
}

/// What the run asks of one step beyond its configuration.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LiveOptions {
    /// The dollars the agent may still spend (its budget's, or what is left of the run's),
    /// for agents that keep such a limit themselves (Claude Code's `--max-budget-usd`).
    pub cost_cap_usd: Option<f64>,
    /// The agent takes messages while it runs (pi's RPC mode, Claude Code's streamed input),
    /// so that it can be asked to wrap up before the deadline.
    pub streamed_input: bool,
    /// Whether the agent may load its own configuration from the project it runs in.
    pub project_config: sublaunch_protocol::records::config::ProjectConfig,
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

/// What an adapter extracted from the agent's output once it ended.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Extracted {
    /// The step's final output (the last assistant message, the result text, or stdout).
    pub output: String,
    /// Whether `output` is only the end of a longer text (text adapters keep the last
    /// [`text::TEXT_OUTPUT_BYTES`]).
    pub truncated: bool,
    /// A failure the agent reported in its own protocol (an error result, a failed turn, no
    /// final message, a message over [`FINAL_MESSAGE_LIMIT`]).
    pub failure: Option<String>,
    /// The model the agent said it used (pi's assistant messages).
    pub reported_model: Option<String>,
    /// Tokens and cost the agent reported, summed over its model calls.
    pub usage: Option<Usage>,
    /// The agent's own conversation handle (Claude Code's session id, Codex's thread id, pi's
    /// session file), which a resume continues.
    pub session: Option<String>,
    /// The conversation's usage so far as the agent counts it, when that differs from
    /// `usage` (Codex's running total of a thread).
    pub session_usage: Option<Usage>,
    /// The structured value the agent produced natively (Claude Code's `--json-schema`),
    /// preferred over finding JSON in `output`.
    pub structured: Option<serde_json::Value>,
}

impl Extracted {
    /// Nothing extracted: the agent failed with `message`.
    pub fn failed(message: String) -> Self {
        Self {
            failure: Some(message),
            ..Self::default()
        }
    }
}

/// What an agent reported so far, for the budgets: its usage and the tool calls it started.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Spent {
    /// Tokens and cost so far (`None`: nothing reported yet).
    pub usage: Option<Usage>,
    /// Tool calls started so far.
    pub tool_calls: u64,
    /// The last rate limit or overload the agent's CLI reported (U5).
    pub rate_limited: Option<RateLimited>,
    /// Whether the agent did any work: an answer's text, a tool call (a rate-limited step that
    /// did none may be run again, U6).
    pub worked: bool,
}

/// Reads one step's stdout.
pub trait OutputParser {
    /// Bytes of a line kept for [`OutputParser::stdout_line`]; longer lines arrive truncated
    /// (with their full length). Memory stays bounded by this (R11).
    fn line_retain_limit(&self) -> usize;
    /// Whether the parser needs every line even when no event can be written any more.
    fn needs_lines(&self) -> bool;
    /// Bytes of the end of stdout the supervisor keeps for [`OutputParser::finish`].
    fn tail_bytes(&self) -> usize;
    /// One complete line without its newline (`full_len` ≥ `line.len()`).
    fn stdout_line(&mut self, line: &[u8], full_len: usize) -> ParsedLine;
    /// Whether the agent printed its terminal event: it has nothing more to say, and one
    /// that lingers is drained (X5).
    fn settled(&self) -> bool {
        false
    }
    /// Whether the agent gave an answer (its input, when it takes messages, can close):
    /// usually the same as [`OutputParser::settled`].
    fn answered(&self) -> bool {
        self.settled()
    }
    /// One more message was written to the agent's input (a checkpoint).
    fn input_sent(&mut self) {}
    /// The answer text the agent produced so far, for a step that ends without its final
    /// answer (D2; `None`: none, or an agent whose stream has no messages).
    fn partial(&self) -> Option<String> {
        None
    }
    /// The agent's conversation handle as soon as it is known, so that a run whose runner dies
    /// can still be resumed (D2).
    fn session(&self) -> Option<String> {
        None
    }
    /// What the agent reported so far (nothing, for agents that report neither usage nor
    /// tool calls).
    fn spent(&self) -> Spent {
        Spent::default()
    }
    /// The step's output, given the last bytes of stdout (`tail_cut`: older bytes were
    /// dropped from the tail).
    fn finish(&mut self, stdout_tail: &[u8], tail_cut: bool) -> Extracted;
}

/// Everything an adapter needs to build one step's command.
#[derive(Debug)]
pub struct StepInput<'a> {
    /// Flat index of the step (names its files: `output-<n>.log`, …).
    pub index: usize,
    /// The step's configuration.
    pub step: &'a StepConfig,
    /// Its adapter (absent for configurations without adapters).
    pub spec: Option<&'a AdapterSpec>,
    /// The task after placeholder substitution.
    pub task: &'a str,
    /// The values of a chain's placeholders, for adapters that run the task as a shell
    /// script: the script gets references to them, never their text (`None`: a single run,
    /// whose task is used verbatim).
    pub script_values: Option<&'a ScriptValues>,
    /// The step's working directory.
    pub cwd: &'a str,
    /// `<run>`, where adapters keep their files (system prompts, final messages).
    pub run: &'a Dir,
    /// What the run asks of the step beyond its configuration.
    pub live: LiveOptions,
}

impl StepInput<'_> {
    /// The step's process: `argv` in the step's directory with the adapter's environment
    /// overrides, `stdin` fed to it (`None`: `/dev/null`).
    pub fn agent_command(&self, argv: Vec<String>, stdin: Option<Vec<u8>>) -> AgentCommand {
        AgentCommand {
            argv,
            env: self.env(),
            cwd: self.cwd.to_owned(),
            stdin,
            clear_env: false,
            streamed_stdin: false,
        }
    }

    /// The adapter's environment overrides.
    pub fn env(&self) -> BTreeMap<String, String> {
        self.spec
            .map(|s| {
                s.env
                    .iter()
                    .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The program (the spec's replacement, else `default`) followed by `args`.
    pub fn argv(&self, default: &str, args: &[&str]) -> Vec<String> {
        let program = self.spec.and_then(|s| s.program.as_deref()).filter(|p| !p.is_empty());
        std::iter::once(program.unwrap_or(default))
            .chain(args.iter().copied())
            .map(str::to_owned)
            .collect()
    }

    /// The agent's system prompt, when it has a non-blank one.
    pub fn system_prompt(&self) -> Option<&str> {
        self.spec
            .and_then(|s| s.system_prompt.as_deref())
            .filter(|p| !p.trim().is_empty())
    }

    /// The model handed to the program.
    pub fn model(&self) -> Option<&str> {
        self.spec.and_then(|s| s.model.as_deref()).filter(|m| !m.is_empty())
    }

    /// The model provider handed to the program.
    pub fn provider(&self) -> Option<&str> {
        self.spec.and_then(|s| s.provider.as_deref()).filter(|p| !p.is_empty())
    }

    /// The agent conversation this step continues.
    pub fn resume(&self) -> Option<&str> {
        self.spec.and_then(|s| s.resume.as_deref()).filter(|r| !r.is_empty())
    }

    /// The thinking level handed to the program.
    pub fn thinking(&self) -> Option<&str> {
        self.spec.and_then(|s| s.thinking.as_deref()).filter(|t| !t.is_empty())
    }

    /// The permissions the step runs with, as the planner resolved them (the defaults of
    /// adapter `id` for a configuration that has none).
    pub fn permissions(&self, id: AdapterId) -> sublaunch_protocol::records::config::ResolvedPermissions {
        self.spec.map_or_else(
            || sublaunch_protocol::records::config::ResolvedPermissions::adapter_default(id),
            AdapterSpec::resolved_permissions,
        )
    }

    /// The task with the system prompt before it, for programs that take no system prompt.
    pub fn prompt_with_system(&self) -> String {
        match self.system_prompt() {
            Some(system) => format!("{}\n\n{}", system.trim_end(), self.task),
            None => self.task.to_owned(),
        }
    }

    /// Writes a private file for the agent in `<run>` and returns its path.
    pub fn write_file(&self, name: &str, bytes: &[u8]) -> Result<String, String> {
        self.run
            .write(name, bytes, sublaunch_protocol::files::atomic::Durability::Atomic)
            .map_err(|e| format!("cannot write {name}: {e}"))?;
        Ok(self.run.join(name).to_string_lossy().into_owned())
    }

    /// `<run>/<name>` as a string.
    pub fn run_path(&self, name: &str) -> String {
        self.run.join(name).to_string_lossy().into_owned()
    }
}

/// The adapter of step `index`: the configured one (the configuration was refused if it named
/// one this runner cannot start), else the `shell` adapter running the step's `command.argv`.
pub fn for_step(cfg: &RunnerConfig, index: usize) -> AdapterId {
    cfg.steps
        .get(index)
        .and_then(|step| step.adapter.as_ref())
        .map_or(AdapterId::Shell, |spec| spec.id)
}

/// The command of one step run by adapter `id`.
pub fn command(id: AdapterId, input: &StepInput<'_>) -> Result<AgentCommand, String> {
    match id {
        AdapterId::Shell | AdapterId::ExternalJob => shell::command(input),
        AdapterId::Command => command::command(input),
        AdapterId::GenericCli => external_cli(input),
        AdapterId::Pi => pi::command(input, id),
        AdapterId::ClaudeCode | AdapterId::ClaudeCodeWriter => claude::command(input, id),
        AdapterId::CodexExec | AdapterId::CodexExecWriter => codex::command(input, id),
        AdapterId::CursorAgent | AdapterId::CursorAgentWriter => cursor::command(input, id),
    }
}

/// A parser for one run of a step by adapter `id`.
pub fn parser(id: AdapterId, input: &StepInput<'_>) -> Box<dyn OutputParser> {
    match id {
        AdapterId::Pi => Box::new(pi::PiEvents::parser(
            (input.step.placement.is_none() && input.resume().is_none())
                .then(|| input.run.join(pi::session_dir_name(input.index))),
            input.resume().map(str::to_owned),
        )),
        AdapterId::ClaudeCode | AdapterId::ClaudeCodeWriter => Box::new(
            claude::ResultEvents::parser("Claude Code", claude::native_schema(input).is_some())
                .streamed(input.live.streamed_input),
        ),
        AdapterId::CursorAgent | AdapterId::CursorAgentWriter => {
            Box::new(claude::ResultEvents::parser("cursor-agent", false))
        }
        AdapterId::CodexExec | AdapterId::CodexExecWriter => Box::new(codex::CodexEvents::parser(
            input.run_path(&codex::last_message_name(input.index)),
            input.spec.and_then(|s| s.session_usage.clone()),
        )),
        AdapterId::Shell | AdapterId::Command | AdapterId::GenericCli | AdapterId::ExternalJob => Box::new(TextParser),
    }
}

/// The generic external CLI (`runner: {type: external-cli}` without an adapter, upstream's
/// one-shot stdin runner): the agent file's argv as given, the task on standard input.
fn external_cli(input: &StepInput<'_>) -> Result<AgentCommand, String> {
    let argv = input
        .spec
        .and_then(|s| s.argv.clone())
        .filter(|a| !a.is_empty())
        .ok_or_else(|| format!("Step {} uses an external CLI without a command.", input.index))?;
    Ok(input.agent_command(argv, Some(input.task.as_bytes().to_vec())))
}

/// Appends `flag value` to `argv` when there is a value.
/// `level` (a sublaunch thinking level) as `adapter`'s CLI names it, from the adapter table:
/// the nearest level it has when it has no such one. A name that is no level, or a CLI that
/// takes none, passes through as given (the planner refused those before the run).
fn cli_thinking(adapter: AdapterId, level: &str) -> &str {
    let thinking = adapter
        .launch_model()
        .zip(ThinkingLevel::from_name(level))
        .map(|(cli, level)| cli.thinking(level));
    match thinking {
        Some(CliThinking::Exact(name) | CliThinking::Nearest(_, name)) => name,
        Some(CliThinking::Unsupported) | None => level,
    }
}

fn push_option(argv: &mut Vec<String>, flag: &str, value: Option<impl Into<String>>) {
    if let Some(value) = value {
        argv.extend([flag.to_owned(), value.into()]);
    }
}

/// Refuses an argv the kernel would reject (`E2BIG` for one argument over 128 KiB) with a
/// message that says which argument and what to do.
pub fn check_argv(argv: &[String]) -> Result<(), String> {
    match argv.iter().enumerate().find(|(_, a)| a.len() > ARG_LIMIT) {
        Some((i, arg)) => Err(format!(
            "argument {i} of the agent's command line is {} bytes; a single argument may have at most {ARG_LIMIT} bytes (deliver long tasks on standard input instead)",
            arg.len()
        )),
        None => Ok(()),
    }
}
