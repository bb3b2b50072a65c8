//! The built-in `shell` adapter (spec README "sublaunch additions"): `sh -c <task>` in the
//! step's cwd; stdout is untrusted plain text. A step without an adapter but with a
//! `command` runs that argv as it is (the runner's tests start programs this way).

use super::{Adapter, AgentCommand, OutputParser, StepInput, TextParser};
use sublaunch_protocol::config::AdapterId;

/// The `shell` adapter.
#[derive(Clone, Copy, Debug, Default)]
pub struct ShellAdapter;

impl Adapter for ShellAdapter {
    fn id(&self) -> AdapterId {
        AdapterId::Shell
    }

    fn command(&self, input: &StepInput<'_>) -> Result<AgentCommand, String> {
        if input.spec.is_none() {
            let command = input
                .step
                .command
                .as_ref()
                .filter(|c| !c.argv.is_empty())
                .ok_or_else(|| format!("Step {} has no command to run.", input.index))?;
            let mut agent_command = input.agent_command(command.argv.clone(), None);
            agent_command.env = command.env.clone();
            return Ok(agent_command);
        }
        // A chain's values reach the script in its environment; a single run's task is the
        // script exactly as the user wrote it.
        let mut env = input.env();
        let script = match input.script_values {
            Some(values) => {
                let (script, data) = values.apply(input.step.task.as_deref().unwrap_or(input.task))?;
                env.extend(data);
                script
            }
            None => input.task.to_owned(),
        };
        Ok(AgentCommand {
            // `--` ends sh's options, so a script that starts with `-` is still the script.
            argv: vec![input.program("sh"), "-c".into(), "--".into(), script],
            env,
            cwd: input.cwd.to_owned(),
            stdin: None,
            clear_env: false,
        })
    }

    fn parser(&self, _input: &StepInput<'_>) -> Box<dyn OutputParser> {
        Box::new(TextParser)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sublaunch_protocol::config::{AdapterSpec, StepConfig};
    use sublaunch_protocol::dir::Dir;

    #[test]
    fn the_shell_step_runs_its_task_in_its_cwd_and_a_bare_command_runs_as_given() {
        let tmp = tempfile::tempdir().unwrap();
        let run = Dir::open(tmp.path()).unwrap();
        let step = StepConfig::shell("echo {previous}", "/tmp", Default::default());
        let spec = AdapterSpec::new("shell");
        let input = StepInput {
            index: 0,
            step: &step,
            spec: Some(&spec),
            task: "echo hi",
            script_values: None,
            cwd: "/tmp",
            run: &run,
        };
        let command = ShellAdapter.command(&input).unwrap();
        assert_eq!(command.argv, ["sh", "-c", "--", "echo hi"]);
        assert_eq!((command.cwd.as_str(), command.stdin), ("/tmp", None));
        let mut custom = step.clone();
        custom.adapter = None;
        custom.command = Some(sublaunch_protocol::config::CommandSpec {
            argv: vec!["/bin/agent".into(), "x".into()],
            ..Default::default()
        });
        let input = StepInput {
            index: 0,
            step: &custom,
            spec: None,
            task: "echo hi",
            script_values: None,
            cwd: "/tmp",
            run: &run,
        };
        assert_eq!(ShellAdapter.command(&input).unwrap().argv, ["/bin/agent", "x"]);
        let mut bare = custom.clone();
        bare.command = None;
        let input = StepInput { step: &bare, ..input };
        assert!(
            ShellAdapter
                .command(&input)
                .unwrap_err()
                .contains("has no command to run")
        );
    }

    #[test]
    fn a_chain_step_gets_references_and_the_values_in_its_environment() {
        let tmp = tempfile::tempdir().unwrap();
        let run = Dir::open(tmp.path()).unwrap();
        let step = StepConfig::shell("echo got {previous}", "/tmp", Default::default());
        let spec = AdapterSpec::new("shell");
        let mut values = crate::adapter::ScriptValues::default();
        values.push("previous", "SUBLAUNCH_PREVIOUS", "$(touch /tmp/PWNED)");
        let input = StepInput {
            index: 1,
            step: &step,
            spec: Some(&spec),
            task: "echo got $(touch /tmp/PWNED)",
            script_values: Some(&values),
            cwd: "/tmp",
            run: &run,
        };
        let command = ShellAdapter.command(&input).unwrap();
        assert_eq!(command.argv, ["sh", "-c", "--", "echo got \"${SUBLAUNCH_PREVIOUS}\""]);
        assert_eq!(command.env["SUBLAUNCH_PREVIOUS"], "$(touch /tmp/PWNED)");
    }
}
