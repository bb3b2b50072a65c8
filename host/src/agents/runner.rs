//! How an agent is started: its adapter and command.

use sublaunch_contract::Runner;

/// Placeholders a `command` runner's argv template may use.
pub const TEMPLATE_PLACEHOLDERS: [&str; 4] = ["{task}", "{model}", "{thinking}", "{cwd}"];

/// The adapter that starts an agent and reads its output.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AdapterKind {
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
    /// An external command with no adapter: the task on stdin, stdout is the output
    /// (pi-subagents' generic external CLI).
    GenericCli,
    /// pi-subagents' external jobs: planned, but sublaunch cannot start them.
    ExternalJob,
}

impl AdapterKind {
    /// The `external-cli` adapters, by id.
    pub const EXTERNAL: [(&'static str, Self); 7] = [
        ("shell", Self::Shell),
        ("claude-code", Self::ClaudeCode),
        ("claude-code-writer", Self::ClaudeCodeWriter),
        ("codex-exec", Self::CodexExec),
        ("codex-exec-writer", Self::CodexExecWriter),
        ("cursor-agent", Self::CursorAgent),
        ("cursor-agent-writer", Self::CursorAgentWriter),
    ];

    /// The adapter's id as written in agent files and run records.
    pub fn id(self) -> &'static str {
        match self {
            Self::Pi => "pi",
            Self::Command => "command",
            Self::GenericCli => "external-cli",
            Self::ExternalJob => "external-job",
            other => Self::EXTERNAL
                .iter()
                .find(|(_, kind)| *kind == other)
                .map_or("?", |(id, _)| id),
        }
    }

    /// The program started when the agent names none.
    pub fn default_program(self) -> Option<&'static str> {
        match self {
            Self::Pi => Some("pi"),
            Self::Shell => Some("sh"),
            Self::ClaudeCode | Self::ClaudeCodeWriter => Some("claude"),
            Self::CodexExec | Self::CodexExecWriter => Some("codex"),
            Self::CursorAgent | Self::CursorAgentWriter => Some("cursor-agent"),
            Self::Command | Self::GenericCli | Self::ExternalJob => None,
        }
    }
}

/// How one agent is started.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunnerSpec {
    /// The adapter.
    pub adapter: AdapterKind,
    /// For `command`: the argv template; for `external-cli` without an adapter: the program
    /// and its arguments; otherwise an optional replacement for the adapter's program
    /// (`[path]`).
    pub command: Option<Vec<String>>,
}

impl RunnerSpec {
    /// A runner with the adapter's default program.
    pub fn adapter(adapter: AdapterKind) -> Self {
        Self { adapter, command: None }
    }

    /// What the planner sees: `None` for native pi, else the runner type and adapter that
    /// decide model planning (M19) and placement (P2).
    pub fn planner_runner(&self) -> Option<Runner> {
        let (kind, adapter) = match self.adapter {
            AdapterKind::Pi => return None,
            AdapterKind::Command => ("command", None),
            AdapterKind::GenericCli => ("external-cli", None),
            AdapterKind::ExternalJob => ("external-job", None),
            other => ("external-cli", Some(other.id())),
        };
        Some(Runner {
            kind: Some(kind.to_owned()),
            adapter: adapter.map(str::to_owned),
        })
    }

    /// The runner type as written in agent files: `native`, `command`, `external-cli` or
    /// `external-job`.
    pub fn kind(&self) -> &'static str {
        match self.adapter {
            AdapterKind::Pi => "native",
            AdapterKind::Command => "command",
            AdapterKind::ExternalJob => "external-job",
            _ => "external-cli",
        }
    }

    /// The `external-cli` adapter id, when the runner has one.
    pub fn adapter_id(&self) -> Option<&'static str> {
        match self.adapter {
            AdapterKind::Pi | AdapterKind::Command | AdapterKind::GenericCli | AdapterKind::ExternalJob => None,
            other => Some(other.id()),
        }
    }

    /// A short description for listings: `native`, `external-cli/claude-code`,
    /// `command: my-agent --prompt {task}`, with a replaced program in brackets.
    pub fn describe(&self) -> String {
        let base = match self.adapter_id() {
            Some(adapter) => format!("{}/{adapter}", self.kind()),
            None => self.kind().to_owned(),
        };
        match (&self.command, self.adapter) {
            (Some(argv), AdapterKind::Command | AdapterKind::GenericCli) => format!("{base}: {}", argv.join(" ")),
            (Some(argv), _) => format!("{base} ({})", argv.join(" ")),
            (None, _) => base,
        }
    }

    /// The program that must exist to start the agent.
    pub fn program(&self) -> Option<&str> {
        match (&self.command, self.adapter) {
            (Some(argv), _) => argv.first().map(String::as_str),
            (None, adapter) => adapter.default_program(),
        }
    }
}
