//! The generic external CLI (`runner: {type: external-cli}` without an adapter, upstream's
//! one-shot stdin runner): the agent file's argv as given, the task on standard input, stdout
//! as the output.

use super::{Adapter, AgentCommand, OutputParser, StepInput, TextParser};
use sublaunch_protocol::config::AdapterId;

/// The `external-cli` adapter.
#[derive(Clone, Copy, Debug, Default)]
pub struct GenericCliAdapter;

impl Adapter for GenericCliAdapter {
    fn id(&self) -> AdapterId {
        AdapterId::GenericCli
    }

    fn command(&self, input: &StepInput<'_>) -> Result<AgentCommand, String> {
        let argv = input
            .spec
            .and_then(|s| s.argv.clone())
            .filter(|a| !a.is_empty())
            .ok_or_else(|| format!("Step {} uses an external CLI without a command.", input.index))?;
        Ok(input.agent_command(argv, Some(input.task.as_bytes().to_vec())))
    }

    fn parser(&self, _input: &StepInput<'_>) -> Box<dyn OutputParser> {
        Box::new(TextParser)
    }
}
