//! How an agent is started: its adapter and command.

use sublaunch_contract::{Runner, RunnerType};

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
        (self.adapter.runner_type() != RunnerType::Native).then(|| Runner {
            kind: Some(self.kind().to_owned()),
            adapter: self.adapter_id().map(str::to_owned),
        })
    }

    /// The runner type as written in agent files: `native`, `command`, `external-cli` or
    /// `external-job`.
    pub fn kind(&self) -> &'static str {
        self.adapter.runner_type().name()
    }

    /// The `external-cli` adapter id, when the runner has one.
    pub fn adapter_id(&self) -> Option<&'static str> {
        self.adapter.runner_adapter()
    }

    /// A short description for listings: `native`, `external-cli/claude-code`,
    /// `command: my-agent --prompt {task}`, with a replaced program in brackets.
    pub fn describe(&self) -> String {
        let base = match self.adapter_id() {
            Some(adapter) => format!("{}/{adapter}", self.kind()),
            None => self.kind().to_owned(),
        };
        match &self.command {
            Some(argv) if self.adapter.runs_given_command() => format!("{base}: {}", argv.join(" ")),
            Some(argv) => format!("{base} ({})", argv.join(" ")),
            None => base,
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
