//! Cursor's agent (`cursor-agent`, `cursor-agent-writer`): print mode with the stream-json
//! event format (the same `system` / `assistant` / `result` events as Claude Code).
//!
//! ```text
//! cursor-agent -p --output-format stream-json [--model <model>] [--force] [--resume <chat>] <prompt>
//! ```
//!
//! `--force` (writer only) lets the agent apply changes and run commands without asking. The
//! prompt is the last argument: the agent's system prompt, a blank line, then the task (a
//! prompt starting with `-` gets a leading space so it cannot be read as an option). A prompt
//! over 128 KiB cannot be one argument and fails before the spawn. The output is the `result`
//! event's text; `is_error: true` or no result event fails the step.

use super::{ARG_LIMIT, AgentCommand, StepInput, push_option};

/// The command of a step (`writer`: `cursor-agent-writer`, `--force`).
pub fn command(input: &StepInput<'_>, writer: bool) -> Result<AgentCommand, String> {
    let mut argv = input.argv("cursor-agent", &["-p", "--output-format", "stream-json"]);
    push_option(&mut argv, "--model", input.model());
    if writer {
        argv.push("--force".into());
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
