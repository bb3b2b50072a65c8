//! Cursor's agent (`cursor-agent`, `cursor-agent-writer`): print mode with the stream-json
//! event format (the same `system` / `assistant` / `result` events as Claude Code).
//!
//! ```text
//! cursor-agent -p --output-format stream-json [--model <model>] --force | --mode ask|plan
//!              [--resume <chat>] <prompt>
//! ```
//!
//! `--force` (a writer only) lets the agent apply changes and run commands without asking; a
//! read-only step runs in ask mode (`--mode ask`: it reads and answers, it applies no edit),
//! a plan step in plan mode. Cursor takes no tool list or rules on its command line, so the
//! planner refused those for it. The
//! prompt is the last argument: the agent's system prompt, a blank line, then the task (a
//! prompt starting with `-` gets a leading space so it cannot be read as an option). A prompt
//! over 128 KiB cannot be one argument and fails before the spawn. The output is the `result`
//! event's text; `is_error: true` or no result event fails the step.

use super::{ARG_LIMIT, AgentCommand, StepInput, push_option};
use sublaunch_protocol::records::config::{AdapterId, PermissionMode};

/// The command of a step of adapter `id`, in the mode the planner resolved for it (rule G11).
pub fn command(input: &StepInput<'_>, id: AdapterId) -> Result<AgentCommand, String> {
    let mut argv = input.argv("cursor-agent", &["-p", "--output-format", "stream-json"]);
    push_option(&mut argv, "--model", input.model());
    match input.permissions(id).mode {
        PermissionMode::Writer => argv.push("--force".into()),
        PermissionMode::ReadOnly => push_option(&mut argv, "--mode", Some("ask")),
        PermissionMode::Plan => push_option(&mut argv, "--mode", Some("plan")),
    }
    // A resumed chat already has the system prompt.
    push_option(&mut argv, "--resume", input.resume());
    let mut prompt = if input.resume().is_some() {
        input.task.to_owned()
    } else {
        input.prompt_with_system()
    };
    if prompt.starts_with('-') {
        prompt.insert(0, ' ');
    }
    if prompt.len() > ARG_LIMIT {
        return Err(format!(
            "The prompt of step {} is {} bytes; cursor-agent takes its prompt as one argument, which may have at most {ARG_LIMIT} bytes.",
            input.index + 1,
            prompt.len()
        ));
    }
    argv.push(prompt);
    Ok(input.agent_command(argv, None))
}
