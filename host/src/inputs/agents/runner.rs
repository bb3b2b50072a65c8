//! How an agent is started: its adapter and command.

use sublaunch_contract::Runner;

/// Placeholders a `command` runner's argv template may use.
pub const TEMPLATE_PLACEHOLDERS: [&str; 4] = ["{task}", "{model}", "{thinking}", "{cwd}"];

/// The adapter that starts an agent and reads its output (the one list, shared with the
/// planner and the runner).
pub use sublaunch_contract::AdapterId;

/// How one agent is started.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunnerSpec {
    /// The adapter.
    pub adapter: AdapterId,
    /// For `command`: the argv template; for `external-cli` without an adapter: the program
    /// and its arguments; otherwise an optional replacement for the adapter's program
    /// (`[path]`).
    pub command: Option<Vec<String>>,
}

impl RunnerSpec {
    /// A runner with the adapter's default program.
    pub fn adapter(adapter: AdapterId) -> Self {
        Self { adapter, command: None }
    }

    /// What the planner sees: `None` for native pi, else the runner type and adapter that
    /// decide model planning (M19) and placement (P2).
    pub fn planner_runner(&self) -> Option<Runner> {
        let (kind, adapter) = match self.adapter {
            AdapterId::Pi => return None,
            AdapterId::Command => ("command", None),
            AdapterId::GenericCli => ("external-cli", None),
            AdapterId::ExternalJob => ("external-job", None),
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
            AdapterId::Pi => "native",
            AdapterId::Command => "command",
            AdapterId::ExternalJob => "external-job",
            _ => "external-cli",
        }
    }

    /// The `external-cli` adapter id, when the runner has one.
    pub fn adapter_id(&self) -> Option<&'static str> {
        match self.adapter {
            AdapterId::Pi | AdapterId::Command | AdapterId::GenericCli | AdapterId::ExternalJob => None,
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
            (Some(argv), AdapterId::Command | AdapterId::GenericCli) => format!("{base}: {}", argv.join(" ")),
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
