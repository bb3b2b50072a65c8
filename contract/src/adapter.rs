//! The one list of adapters: how an agent is started and its output read. The planner, the
//! host and the runner all name adapters through [`AdapterId`], so adding one is one variant
//! and one row of [`AdapterId::row`] here, and one adapter module in the shim.
//!
//! What an adapter can do (what it reports, whether it takes input while it runs, whether its
//! program enforces an output schema, its event stream …) is a column of that one table, read
//! through the methods of [`AdapterId`]: the planner, the host and the runner ask these
//! instead of matching on adapters of their own.

use crate::ThinkingLevel;
use crate::permissions::{PermissionMode, PermissionSupport};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// An adapter, by the id written in agent files (`runner.adapter`), runner configurations and
/// run records.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AdapterId {
    /// pi in JSON mode (`pi --mode json -p …`): the native runner.
    Pi,
    /// Any program, from an argv template with `{task}`, `{model}`, `{thinking}`, `{cwd}`.
    Command,
    /// The task text run by `sh -c` in the step's directory.
    Shell,
    /// Claude Code (`claude -p`), read-only tools.
    ClaudeCode,
    /// Claude Code allowed to edit files.
    ClaudeCodeWriter,
    /// Codex (`codex exec`), read-only sandbox.
    CodexExec,
    /// Codex allowed to write in the workspace.
    CodexExecWriter,
    /// Cursor's agent (`cursor-agent -p`), read-only.
    CursorAgent,
    /// Cursor's agent allowed to edit files.
    CursorAgentWriter,
    /// An external command with no adapter: the task on stdin, stdout is the output.
    GenericCli,
    /// pi-subagents' external jobs: planned, but sublaunch cannot start them.
    ExternalJob,
}

/// The runner type an agent file names (`runner.type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RunnerType {
    /// `native` (or no runner): pi.
    Native,
    /// `command`: an argv template.
    Command,
    /// `external-cli`: an adapter's program, or a generic command.
    ExternalCli,
    /// `external-job`: planned only.
    ExternalJob,
}

impl RunnerType {
    /// Every runner type, in the order messages list them.
    pub const ALL: [Self; 4] = [Self::Native, Self::Command, Self::ExternalCli, Self::ExternalJob];

    /// The name agent files use.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Native => "native",
            Self::Command => "command",
            Self::ExternalCli => "external-cli",
            Self::ExternalJob => "external-job",
        }
    }

    /// The runner type with this name.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.name() == name)
    }
}

/// What an agent's output tells the runner as it goes: what a budget on it can count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reports {
    /// Tokens per model call or per turn.
    pub tokens: bool,
    /// Cost in dollars.
    pub cost: bool,
    /// Each tool call as it starts.
    pub tool_calls: bool,
}

impl Reports {
    /// An agent whose output is plain text: nothing to count.
    pub const NOTHING: Self = Self {
        tokens: false,
        cost: false,
        tool_calls: false,
    };
    const ALL: Self = Self {
        tokens: true,
        cost: true,
        tool_calls: true,
    };
}

/// How an agent takes messages while it runs (a checkpoint before the deadline is one).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InputFormat {
    /// pi's RPC mode: `{"type":"steer","message":…}` lines.
    PiRpc,
    /// Claude Code's streamed input: `{"type":"user","message":…}` lines.
    StreamJson,
}

/// What an agent writes on standard output.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutputFormat {
    /// Plain text: the output is the step's answer.
    Text,
    /// pi's JSON mode events.
    PiEvents,
    /// `--output-format stream-json` events ending in a `result` event (Claude Code, Cursor).
    StreamJson,
    /// `codex exec --json` events.
    CodexEvents,
}

impl OutputFormat {
    /// Whether it is a JSON event stream (one event a line) rather than the answer itself.
    pub const fn is_event_stream(self) -> bool {
        !matches!(self, Self::Text)
    }
}

/// Where a step's model comes from (rule M19).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ModelSource {
    /// The planner picks it (and its thinking level) for the step.
    Planned,
    /// The agent file's own model and thinking, as the agent's CLI names them.
    AgentFile,
    /// The program takes no model.
    None,
}

/// How an agent's program enforces a structured step's output schema itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NativeSchema {
    /// Any JSON schema (Claude Code's `--json-schema`).
    JsonSchema,
    /// A strict JSON schema only (Codex's `--output-schema`, OpenAI's strict mode).
    Strict,
}

/// The conversation an agent keeps, which a later run can continue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Conversation {
    /// A session file on the machine that ran it (pi).
    LocalFile,
    /// A session the agent's CLI keeps by id (Claude Code, Codex, Cursor).
    AgentSession,
}

/// What a coding-agent CLI takes per launch (its `--model` and its thinking option), read
/// through [`AdapterId::launch_model`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchModel {
    /// The program's name in messages (`Claude Code`).
    pub program: &'static str,
    /// Which providers' models it runs, and how it is told the provider.
    pub providers: ModelProviders,
    /// Its name for each thinking level, lowest first (`None` for a level it has no name
    /// for); `None` when it takes no thinking level at all.
    thinking: Option<[Option<&'static str>; 7]>,
}

/// Which providers' models a coding-agent CLI runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ModelProviders {
    /// This provider's only (Claude Code: `anthropic`); its models are named without it.
    Only(&'static str),
    /// Any: this one is built in, another is named to the CLI apart from the model (Codex's
    /// `model_provider`).
    Any {
        /// The provider it needs no option for (`openai`).
        built_in: &'static str,
    },
    /// Its own model names, with no provider (Cursor's agent).
    Unnamed,
}

/// A model as a coding-agent CLI names it: `anthropic/claude-sonnet-4-5` is
/// `claude-sonnet-4-5` to Claude Code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CliModelName<'m> {
    /// The model, without its provider.
    pub model: &'m str,
    /// The provider to name apart (Codex's `model_provider`), when it is not the built-in one.
    pub provider: Option<&'m str>,
}

/// A model whose provider a coding-agent CLI cannot run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WrongProvider<'m> {
    /// The provider named.
    pub provider: &'m str,
    /// What the CLI takes instead.
    pub takes: ModelProviders,
}

/// How a coding-agent CLI takes one thinking level.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CliThinking {
    /// It has the level, under this name.
    Exact(&'static str),
    /// It has no such level: the nearest it has stands in (on a tie, the higher one), under
    /// this name.
    Nearest(ThinkingLevel, &'static str),
    /// It takes no thinking level at all.
    Unsupported,
}

impl LaunchModel {
    /// How it takes `level`.
    pub fn thinking(&self, level: ThinkingLevel) -> CliThinking {
        let Some(names) = self.thinking else {
            return CliThinking::Unsupported;
        };
        let rank = level as usize;
        if let Some(name) = names[rank] {
            return CliThinking::Exact(name);
        }
        // The nearest level it names, looking above first so a tie goes up (`minimal` asks for
        // some thinking: `low`, not `off`).
        for distance in 1..ThinkingLevel::ALL.len() {
            for near in [rank + distance, rank.wrapping_sub(distance)] {
                if let Some(Some(name)) = names.get(near) {
                    return CliThinking::Nearest(ThinkingLevel::ALL[near], name);
                }
            }
        }
        CliThinking::Unsupported
    }

    /// The levels it has a name for, lowest first (for messages).
    pub fn thinking_levels(&self) -> Vec<ThinkingLevel> {
        let Some(names) = self.thinking else {
            return Vec::new();
        };
        ThinkingLevel::ALL
            .into_iter()
            .zip(names)
            .filter_map(|(level, name)| name.map(|_| level))
            .collect()
    }

    /// `model` (`provider/id`, or an id as the CLI names it) as the CLI takes it.
    pub fn model_name<'m>(&self, model: &'m str) -> Result<CliModelName<'m>, WrongProvider<'m>> {
        let (provider, id) = match model.split_once('/') {
            Some((provider, id)) if !provider.is_empty() && !id.is_empty() => (Some(provider), id),
            _ => (None, model),
        };
        let wrong = |provider| WrongProvider {
            provider,
            takes: self.providers,
        };
        match (self.providers, provider) {
            (_, None) => Ok(CliModelName {
                model: id,
                provider: None,
            }),
            (ModelProviders::Only(only), Some(named)) if named == only => Ok(CliModelName {
                model: id,
                provider: None,
            }),
            (ModelProviders::Any { built_in }, Some(named)) => Ok(CliModelName {
                model: id,
                provider: (named != built_in).then_some(named),
            }),
            (ModelProviders::Only(_) | ModelProviders::Unnamed, Some(named)) => Err(wrong(named)),
        }
    }
}

/// One row of the adapter table.
struct Row {
    id: &'static str,
    runner: RunnerType,
    default_program: Option<&'static str>,
    reports: Reports,
    input: Option<InputFormat>,
    output: OutputFormat,
    model: ModelSource,
    native_schema: Option<NativeSchema>,
    conversation: Option<Conversation>,
    /// What it takes per launch: a model, and its names for thinking levels.
    launch_model: Option<LaunchModel>,
    /// sublaunch owns the quoting of its command line (so it can be wrapped for ssh).
    code_owned: bool,
    /// It may edit the user's files.
    writer: bool,
    /// Which fields of the permission contract its CLI enforces itself (rule G5).
    permissions: PermissionSupport,
    /// Its CLI's tools that change files or run commands: what a read-only step never has.
    write_tools: &'static [&'static str],
}

/// What a runner that only runs a program enforces: nothing but the unrestricted default.
const UNRESTRICTED: PermissionSupport = PermissionSupport {
    tools: false,
    exclude_tools: false,
    rules: false,
    modes: [false, false, true],
    nested_off: false,
    default_mode: PermissionMode::Writer,
};

/// Claude Code: `--tools`, `--allowedTools`/`--disallowedTools` (patterns included),
/// `--permission-mode`, and deny rules that hide sublaunch's MCP tools.
const CLAUDE_PERMISSIONS: PermissionSupport = PermissionSupport {
    tools: true,
    exclude_tools: true,
    rules: true,
    modes: [true, true, true],
    nested_off: true,
    default_mode: PermissionMode::ReadOnly,
};

/// Writers' default mode is `writer`; the rest of their support is their reader's.
const fn writer_of(support: PermissionSupport) -> PermissionSupport {
    PermissionSupport {
        default_mode: PermissionMode::Writer,
        ..support
    }
}

const TEXT: Row = Row {
    id: "",
    runner: RunnerType::ExternalCli,
    default_program: None,
    reports: Reports::NOTHING,
    input: None,
    output: OutputFormat::Text,
    model: ModelSource::None,
    native_schema: None,
    conversation: None,
    launch_model: None,
    code_owned: false,
    writer: false,
    permissions: UNRESTRICTED,
    write_tools: &[],
};

const CLAUDE: Row = Row {
    id: "claude-code",
    runner: RunnerType::ExternalCli,
    default_program: Some("claude"),
    reports: Reports::ALL,
    input: Some(InputFormat::StreamJson),
    output: OutputFormat::StreamJson,
    model: ModelSource::AgentFile,
    native_schema: Some(NativeSchema::JsonSchema),
    conversation: Some(Conversation::AgentSession),
    // `--model`; `--effort` (low … max), and no thinking through MAX_THINKING_TOKENS=0.
    launch_model: Some(LaunchModel {
        program: "Claude Code",
        providers: ModelProviders::Only("anthropic"),
        thinking: Some([
            Some("off"),
            None,
            Some("low"),
            Some("medium"),
            Some("high"),
            Some("xhigh"),
            Some("max"),
        ]),
    }),
    code_owned: true,
    writer: false,
    permissions: CLAUDE_PERMISSIONS,
    write_tools: &["Bash", "Edit", "MultiEdit", "Write", "NotebookEdit"],
};

const CODEX: Row = Row {
    id: "codex-exec",
    default_program: Some("codex"),
    // Codex reports tokens and tool calls, not what they cost; it takes no input once started.
    reports: Reports {
        cost: false,
        ..Reports::ALL
    },
    input: None,
    output: OutputFormat::CodexEvents,
    native_schema: Some(NativeSchema::Strict),
    // `-m`; `-c model_reasoning_effort=` none … xhigh; `-c model_provider=` for another provider.
    launch_model: Some(LaunchModel {
        program: "Codex",
        providers: ModelProviders::Any { built_in: "openai" },
        thinking: Some([
            Some("none"),
            Some("minimal"),
            Some("low"),
            Some("medium"),
            Some("high"),
            Some("xhigh"),
            None,
        ]),
    }),
    // `--sandbox read-only|workspace-write`; no tool list, no plan mode, and no way to leave
    // out the MCP servers of the user's configuration (`-c mcp_servers={}` is merged into the
    // configured table), so it cannot hide sublaunch from its agent.
    permissions: PermissionSupport {
        tools: false,
        exclude_tools: false,
        rules: false,
        modes: [false, true, true],
        nested_off: false,
        default_mode: PermissionMode::ReadOnly,
    },
    write_tools: &[],
    ..CLAUDE
};

const CURSOR: Row = Row {
    id: "cursor-agent",
    default_program: Some("cursor-agent"),
    reports: Reports::NOTHING,
    input: None,
    native_schema: None,
    // `--model` with Cursor's own model names; a thinking variant is a model of its own.
    launch_model: Some(LaunchModel {
        program: "Cursor's agent",
        providers: ModelProviders::Unnamed,
        thinking: None,
    }),
    // `--mode plan|ask`, `--force` for a writer; rules live only in its own config file.
    permissions: PermissionSupport {
        tools: false,
        exclude_tools: false,
        rules: false,
        modes: [true, true, true],
        nested_off: false,
        default_mode: PermissionMode::ReadOnly,
    },
    write_tools: &[],
    ..CLAUDE
};

impl AdapterId {
    /// Every adapter.
    pub const ALL: [Self; 11] = [
        Self::Pi,
        Self::Command,
        Self::Shell,
        Self::ClaudeCode,
        Self::ClaudeCodeWriter,
        Self::CodexExec,
        Self::CodexExecWriter,
        Self::CursorAgent,
        Self::CursorAgentWriter,
        Self::GenericCli,
        Self::ExternalJob,
    ];

    /// The adapters an `external-cli` agent names with `runner.adapter`.
    pub const EXTERNAL: [Self; 7] = [
        Self::Shell,
        Self::ClaudeCode,
        Self::ClaudeCodeWriter,
        Self::CodexExec,
        Self::CodexExecWriter,
        Self::CursorAgent,
        Self::CursorAgentWriter,
    ];

    /// The table: everything sublaunch knows about an adapter, one row each.
    const fn row(self) -> Row {
        match self {
            Self::Pi => Row {
                id: "pi",
                runner: RunnerType::Native,
                default_program: Some("pi"),
                reports: Reports::ALL,
                input: Some(InputFormat::PiRpc),
                output: OutputFormat::PiEvents,
                model: ModelSource::Planned,
                conversation: Some(Conversation::LocalFile),
                // `--tools`, `--exclude-tools`, `--no-tools`; no rules, modes or plan.
                permissions: PermissionSupport {
                    tools: true,
                    exclude_tools: true,
                    modes: [false, true, true],
                    ..UNRESTRICTED
                },
                write_tools: &["bash", "edit", "write", "powershell"],
                ..TEXT
            },
            Self::Command => Row {
                id: "command",
                runner: RunnerType::Command,
                model: ModelSource::Planned,
                ..TEXT
            },
            Self::Shell => Row {
                id: "shell",
                default_program: Some("sh"),
                code_owned: true,
                ..TEXT
            },
            Self::ClaudeCode => CLAUDE,
            Self::ClaudeCodeWriter => Row {
                id: "claude-code-writer",
                writer: true,
                permissions: writer_of(CLAUDE.permissions),
                ..CLAUDE
            },
            Self::CodexExec => CODEX,
            Self::CodexExecWriter => Row {
                id: "codex-exec-writer",
                writer: true,
                permissions: writer_of(CODEX.permissions),
                ..CODEX
            },
            Self::CursorAgent => CURSOR,
            Self::CursorAgentWriter => Row {
                id: "cursor-agent-writer",
                writer: true,
                permissions: writer_of(CURSOR.permissions),
                ..CURSOR
            },
            Self::GenericCli => Row {
                id: "external-cli",
                ..TEXT
            },
            Self::ExternalJob => Row {
                id: "external-job",
                runner: RunnerType::ExternalJob,
                ..TEXT
            },
        }
    }

    /// The adapter's id.
    pub const fn id(self) -> &'static str {
        self.row().id
    }

    /// The adapter with this id.
    pub fn from_id(id: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|a| a.id() == id)
    }

    /// The `external-cli` adapter with this id.
    pub fn external(id: &str) -> Option<Self> {
        Self::EXTERNAL.into_iter().find(|a| a.id() == id)
    }

    /// The adapter of an agent file's runner: its `runner.type` (absent: native) and, for
    /// `external-cli`, its `runner.adapter` (absent: the generic command). `None` for a
    /// runner type or an `external-cli` adapter that does not exist.
    pub fn from_runner(runner_type: Option<&str>, adapter: Option<&str>) -> Option<Self> {
        match RunnerType::from_name(runner_type.unwrap_or("native"))? {
            RunnerType::Native => Some(Self::Pi),
            RunnerType::Command => Some(Self::Command),
            RunnerType::ExternalJob => Some(Self::ExternalJob),
            RunnerType::ExternalCli => match adapter {
                None => Some(Self::GenericCli),
                Some(id) => Self::external(id),
            },
        }
    }

    /// The runner type an agent file names for it.
    pub const fn runner_type(self) -> RunnerType {
        self.row().runner
    }

    /// The `runner.adapter` an agent file names for it (the `external-cli` adapters but the
    /// generic command).
    pub fn runner_adapter(self) -> Option<&'static str> {
        Self::EXTERNAL.contains(&self).then(|| self.id())
    }

    /// Whether sublaunch owns the quoting of this external adapter's command line, so that it
    /// can be wrapped in an ssh command for a saved machine.
    pub const fn is_code_owned(self) -> bool {
        self.row().code_owned
    }

    /// Whether a step it runs can be placed on a saved machine: pi, or an adapter whose
    /// command line sublaunch can wrap for ssh.
    pub const fn can_run_on_machine(self) -> bool {
        matches!(self.runner_type(), RunnerType::Native) || self.is_code_owned()
    }

    /// Whether it is an adapter that may edit the user's files (the `-writer` variants).
    pub const fn is_writer(self) -> bool {
        self.row().writer
    }

    /// Which fields of the permission contract its CLI enforces itself (rule G5).
    pub const fn permission_support(self) -> PermissionSupport {
        self.row().permissions
    }

    /// Its CLI's tools that change files or run commands, which a read-only step never has
    /// (empty when its CLI takes no tool list).
    pub const fn write_tools(self) -> &'static [&'static str] {
        self.row().write_tools
    }

    /// Whether the runner can start it (external jobs are only planned).
    pub const fn is_runnable(self) -> bool {
        !matches!(self.runner_type(), RunnerType::ExternalJob)
    }

    /// The program started when the agent names none.
    pub const fn default_program(self) -> Option<&'static str> {
        self.row().default_program
    }

    /// Whether the agent file's `runner.command` is the whole command line (the `command`
    /// runner's argv template, the generic command's program and arguments) rather than a
    /// replacement for the adapter's own program.
    pub const fn runs_given_command(self) -> bool {
        matches!(self, Self::Command | Self::GenericCli)
    }

    /// Whether what it runs is code the task or the agent file spells out (the shell step's
    /// task, the command runner's template), as opposed to an agent.
    pub const fn runs_shell_code(self) -> bool {
        matches!(self, Self::Shell | Self::Command)
    }

    /// What its output tells the runner as it goes.
    pub const fn reports(self) -> Reports {
        self.row().reports
    }

    /// How it takes messages while it runs, when it does.
    pub const fn input_format(self) -> Option<InputFormat> {
        self.row().input
    }

    /// Whether it takes messages while it runs (so it can be asked to wrap up).
    pub const fn takes_input(self) -> bool {
        self.input_format().is_some()
    }

    /// Whether it reads the step's files given as arguments, outside its input mode (pi's
    /// `@file`); other agents are told which files to read.
    pub const fn takes_file_arguments(self) -> bool {
        matches!(self.runner_type(), RunnerType::Native)
    }

    /// What it writes on standard output.
    pub const fn output_format(self) -> OutputFormat {
        self.row().output
    }

    /// Where a step's model comes from.
    pub const fn model_source(self) -> ModelSource {
        self.row().model
    }

    /// Whether the planner picks its model (rule M19: external runners take none).
    pub const fn plans_model(self) -> bool {
        matches!(self.model_source(), ModelSource::Planned)
    }

    /// Whether it reports the model it ran in a form the planned one is checked against
    /// (pi's events name provider and id).
    pub const fn verifies_model(self) -> bool {
        self.plans_model() && matches!(self.output_format(), OutputFormat::PiEvents)
    }

    /// How its program enforces an output schema itself, when it does.
    pub const fn native_schema(self) -> Option<NativeSchema> {
        self.row().native_schema
    }

    /// Whether its program enforces a structured step's output schema itself, so that the
    /// planner keeps the schema for it although it is an external runner (P-S4).
    pub const fn enforces_schema_natively(self) -> bool {
        self.native_schema().is_some()
    }

    /// The conversation it keeps, which a later run can continue.
    pub const fn conversation(self) -> Option<Conversation> {
        self.row().conversation
    }

    /// What its CLI takes per launch (a model, thinking levels), when it takes a model per
    /// launch at all (Claude Code, Codex, Cursor's agent).
    pub const fn launch_model(self) -> Option<LaunchModel> {
        self.row().launch_model
    }

    /// Whether its CLI takes a model per launch, as it names its models (rule M19: it takes
    /// no part in planning, but a step's own model is mapped for it).
    pub const fn takes_launch_model(self) -> bool {
        self.launch_model().is_some()
    }
}

impl fmt::Display for AdapterId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.id())
    }
}

/// An adapter id that names no adapter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownAdapter(pub String);

impl fmt::Display for UnknownAdapter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let known: Vec<&str> = AdapterId::ALL.iter().map(|a| a.id()).collect();
        write!(f, "unknown adapter '{}'; known: {}", self.0, known.join(", "))
    }
}

impl std::error::Error for UnknownAdapter {}

impl std::str::FromStr for AdapterId {
    type Err = UnknownAdapter;

    fn from_str(id: &str) -> Result<Self, Self::Err> {
        Self::from_id(id).ok_or_else(|| UnknownAdapter(id.to_owned()))
    }
}

/// Written as its id, as run records and runner configurations always had it.
impl Serialize for AdapterId {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.id())
    }
}

impl<'de> Deserialize<'de> for AdapterId {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let id = std::borrow::Cow::<'de, str>::deserialize(deserializer)?;
        id.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_round_trip_and_are_distinct() {
        for adapter in AdapterId::ALL {
            assert_eq!(AdapterId::from_id(adapter.id()), Some(adapter));
            let json = serde_json::to_string(&adapter).unwrap();
            assert_eq!(json, format!("\"{}\"", adapter.id()));
            assert_eq!(serde_json::from_str::<AdapterId>(&json).unwrap(), adapter);
        }
        let mut ids: Vec<&str> = AdapterId::ALL.iter().map(|a| a.id()).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), AdapterId::ALL.len());
        assert!(AdapterId::EXTERNAL.iter().all(|a| a.is_code_owned()));
        assert_eq!(AdapterId::external("pi"), None);
        let unknown = serde_json::from_str::<AdapterId>("\"gemini\"").unwrap_err();
        assert!(unknown.to_string().contains("unknown adapter 'gemini'"), "{unknown}");
    }

    #[test]
    fn agent_file_runners_name_every_adapter_once() {
        for adapter in AdapterId::ALL {
            let runner = adapter.runner_type().name();
            assert_eq!(
                AdapterId::from_runner(Some(runner), adapter.runner_adapter()),
                Some(adapter)
            );
        }
        assert_eq!(AdapterId::from_runner(None, None), Some(AdapterId::Pi));
        assert_eq!(AdapterId::from_runner(Some("external-cli"), Some("gemini")), None);
        assert_eq!(AdapterId::from_runner(Some("docker"), None), None);
    }

    #[test]
    fn the_table_keeps_what_each_adapter_was_known_for() {
        use AdapterId as A;
        let with = |pick: fn(A) -> bool| -> Vec<A> { A::ALL.into_iter().filter(|a| pick(*a)).collect() };
        assert_eq!(with(A::takes_input), [A::Pi, A::ClaudeCode, A::ClaudeCodeWriter]);
        assert_eq!(
            with(A::enforces_schema_natively),
            [A::ClaudeCode, A::ClaudeCodeWriter, A::CodexExec, A::CodexExecWriter]
        );
        assert_eq!(with(A::plans_model), [A::Pi, A::Command]);
        assert_eq!(with(A::verifies_model), [A::Pi]);
        assert_eq!(with(|a| a.output_format().is_event_stream()).len(), 7);
        assert_eq!(with(|a| a.conversation().is_some()).len(), 7);
        assert_eq!(with(|a| a.reports().tool_calls).len(), 5);
        assert_eq!(with(|a| a.reports().cost), [A::Pi, A::ClaudeCode, A::ClaudeCodeWriter]);
        assert_eq!(with(A::can_run_on_machine).len(), 8);
        assert_eq!(with(|a| !a.is_runnable()), [A::ExternalJob]);
    }

    #[test]
    fn each_cli_names_the_thinking_levels_it_has_and_the_nearest_stands_in_for_the_others() {
        use ThinkingLevel as T;
        let names = |adapter: AdapterId| -> Vec<CliThinking> {
            let model = adapter.launch_model().expect("a coding-agent CLI");
            T::ALL.into_iter().map(|level| model.thinking(level)).collect()
        };
        let exact = CliThinking::Exact;
        assert_eq!(
            names(AdapterId::ClaudeCode),
            [
                exact("off"),
                CliThinking::Nearest(T::Low, "low"),
                exact("low"),
                exact("medium"),
                exact("high"),
                exact("xhigh"),
                exact("max")
            ]
        );
        assert_eq!(
            names(AdapterId::CodexExecWriter),
            [
                exact("none"),
                exact("minimal"),
                exact("low"),
                exact("medium"),
                exact("high"),
                exact("xhigh"),
                CliThinking::Nearest(T::Xhigh, "xhigh")
            ]
        );
        assert!(
            names(AdapterId::CursorAgent)
                .iter()
                .all(|t| *t == CliThinking::Unsupported)
        );
        let takes: Vec<AdapterId> = AdapterId::ALL.into_iter().filter(|a| a.takes_launch_model()).collect();
        assert_eq!(
            takes.len(),
            6,
            "Claude Code, Codex and Cursor's agent, each with its writer"
        );
    }

    #[test]
    fn models_are_named_as_each_cli_names_them() {
        let claude = AdapterId::ClaudeCode.launch_model().unwrap();
        assert_eq!(
            claude.model_name("anthropic/claude-sonnet-4-5").map(|n| n.model),
            Ok("claude-sonnet-4-5")
        );
        assert_eq!(claude.model_name("sonnet").map(|n| n.model), Ok("sonnet"));
        assert_eq!(claude.model_name("openai/gpt-5").unwrap_err().provider, "openai");
        let codex = AdapterId::CodexExec.launch_model().unwrap();
        let openai = codex.model_name("openai/gpt-5-mini").unwrap();
        assert_eq!((openai.model, openai.provider), ("gpt-5-mini", None));
        let lab = codex.model_name("lab/gpt-5").unwrap();
        assert_eq!((lab.model, lab.provider), ("gpt-5", Some("lab")));
        let cursor = AdapterId::CursorAgent.launch_model().unwrap();
        assert!(cursor.model_name("openai/gpt-5").is_err());
        assert_eq!(cursor.model_name("gpt-5").map(|n| n.model), Ok("gpt-5"));
    }

    #[test]
    fn every_adapter_answers_for_every_permission_field() {
        use AdapterId as A;
        use PermissionMode as M;
        // (adapter, tools, excluded tools, rules, [plan, read-only, writer], nested off, default mode)
        let table = [
            (A::Pi, true, true, false, [false, true, true], false, M::Writer),
            (A::Command, false, false, false, [false, false, true], false, M::Writer),
            (A::Shell, false, false, false, [false, false, true], false, M::Writer),
            (A::ClaudeCode, true, true, true, [true, true, true], true, M::ReadOnly),
            (
                A::ClaudeCodeWriter,
                true,
                true,
                true,
                [true, true, true],
                true,
                M::Writer,
            ),
            (
                A::CodexExec,
                false,
                false,
                false,
                [false, true, true],
                false,
                M::ReadOnly,
            ),
            (
                A::CodexExecWriter,
                false,
                false,
                false,
                [false, true, true],
                false,
                M::Writer,
            ),
            (
                A::CursorAgent,
                false,
                false,
                false,
                [true, true, true],
                false,
                M::ReadOnly,
            ),
            (
                A::CursorAgentWriter,
                false,
                false,
                false,
                [true, true, true],
                false,
                M::Writer,
            ),
            (
                A::GenericCli,
                false,
                false,
                false,
                [false, false, true],
                false,
                M::Writer,
            ),
            (
                A::ExternalJob,
                false,
                false,
                false,
                [false, false, true],
                false,
                M::Writer,
            ),
        ];
        assert_eq!(table.len(), A::ALL.len());
        for (adapter, tools, exclude_tools, rules, modes, nested_off, default_mode) in table {
            let expected = PermissionSupport {
                tools,
                exclude_tools,
                rules,
                modes,
                nested_off,
                default_mode,
            };
            assert_eq!(adapter.permission_support(), expected, "{adapter}");
            assert_eq!(
                adapter.write_tools().is_empty(),
                !tools,
                "{adapter}: a CLI with a tool list names its writing tools"
            );
        }
        for adapter in A::ALL {
            assert_eq!(
                adapter.is_writer(),
                adapter.runner_adapter().is_some()
                    && adapter != A::Shell
                    && adapter.permission_support().default_mode == M::Writer,
                "{adapter}"
            );
        }
    }
}
