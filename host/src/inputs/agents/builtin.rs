//! The agents compiled into sublaunch. A discovered agent of the same name wins.

use super::{AdapterId, AgentDef, AgentSource, RunnerSpec};
use sublaunch_contract::Agent;

/// The built-in agents: `shell` (the task run by `sh -c`, useful on any machine), and one
/// agent per supported coding CLI with its adapter's defaults.
pub fn builtins() -> Vec<AgentDef> {
    [
        (
            "shell",
            AdapterId::Shell,
            "Runs the task text with `sh -c` in the step's working directory.",
        ),
        (
            "pi",
            AdapterId::Pi,
            "pi in JSON mode with the parent's or the requested model.",
        ),
        (
            "claude",
            AdapterId::ClaudeCode,
            "Claude Code (`claude -p`), read-only tools.",
        ),
        (
            "claude-writer",
            AdapterId::ClaudeCodeWriter,
            "Claude Code allowed to edit files.",
        ),
        (
            "codex",
            AdapterId::CodexExec,
            "Codex (`codex exec`) in a read-only sandbox.",
        ),
        (
            "codex-writer",
            AdapterId::CodexExecWriter,
            "Codex allowed to write in the workspace.",
        ),
        (
            "cursor",
            AdapterId::CursorAgent,
            "Cursor's agent (`cursor-agent -p`), read-only.",
        ),
        (
            "cursor-writer",
            AdapterId::CursorAgentWriter,
            "Cursor's agent allowed to edit files.",
        ),
    ]
    .into_iter()
    .map(|(name, adapter, description)| {
        let runner = RunnerSpec::adapter(adapter);
        AgentDef {
            planner: Agent {
                name: name.to_owned(),
                runner: runner.planner_runner(),
                ..Agent::default()
            },
            description: description.to_owned(),
            system_prompt: String::new(),
            runner,
            worktree: false,
            source: AgentSource::BuiltIn,
        }
    })
    .collect()
}
