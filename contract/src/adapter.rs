//! The one list of adapters: how an agent is started and its output read. The planner, the
//! host and the runner all name adapters through [`AdapterId`], so adding one is one variant
//! here and one adapter module in the shim.

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

    /// The adapter's id.
    pub const fn id(self) -> &'static str {
        match self {
            Self::Pi => "pi",
            Self::Command => "command",
            Self::Shell => "shell",
            Self::ClaudeCode => "claude-code",
            Self::ClaudeCodeWriter => "claude-code-writer",
            Self::CodexExec => "codex-exec",
            Self::CodexExecWriter => "codex-exec-writer",
            Self::CursorAgent => "cursor-agent",
            Self::CursorAgentWriter => "cursor-agent-writer",
            Self::GenericCli => "external-cli",
            Self::ExternalJob => "external-job",
        }
    }

    /// The adapter with this id.
    pub fn from_id(id: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|a| a.id() == id)
    }

    /// The `external-cli` adapter with this id.
    pub fn external(id: &str) -> Option<Self> {
        Self::EXTERNAL.into_iter().find(|a| a.id() == id)
    }

    /// Whether sublaunch owns the quoting of this external adapter's command line, so that it
    /// can be wrapped in an ssh command for a saved machine.
    pub const fn is_code_owned(self) -> bool {
        matches!(
            self,
            Self::Shell
                | Self::ClaudeCode
                | Self::ClaudeCodeWriter
                | Self::CodexExec
                | Self::CodexExecWriter
                | Self::CursorAgent
                | Self::CursorAgentWriter
        )
    }

    /// Whether it is an adapter that may edit the user's files (the `-writer` variants).
    pub const fn is_writer(self) -> bool {
        matches!(
            self,
            Self::ClaudeCodeWriter | Self::CodexExecWriter | Self::CursorAgentWriter
        )
    }

    /// Whether the runner can start it (external jobs are only planned).
    pub const fn is_runnable(self) -> bool {
        !matches!(self, Self::ExternalJob)
    }

    /// The program started when the agent names none.
    pub const fn default_program(self) -> Option<&'static str> {
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

impl std::fmt::Display for AdapterId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.id())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_round_trip_and_are_distinct() {
        for adapter in AdapterId::ALL {
            assert_eq!(AdapterId::from_id(adapter.id()), Some(adapter));
        }
        let mut ids: Vec<&str> = AdapterId::ALL.iter().map(|a| a.id()).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), AdapterId::ALL.len());
        assert!(AdapterId::EXTERNAL.iter().all(|a| a.is_code_owned()));
        assert_eq!(AdapterId::external("pi"), None);
    }
}
