//! The built-in `shell` adapter (spec README "sublaunch additions"): `sh -c <task>` in the
//! step's cwd; stdout is untrusted plain text. A step without an adapter but with a
//! `command` runs that argv as it is (the runner's tests start programs this way).

use super::{AgentCommand, StepInput};

/// The command of a step.
pub fn command(input: &StepInput<'_>) -> Result<AgentCommand, String> {
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
    let (script, data) = match input.script_values {
        Some(values) => values
            .apply(input.step.task.as_deref().unwrap_or(input.task))
            .map_err(|e| {
                format!(
                    "Step {} ({}): {e}",
                    input.index + 1,
                    input.step.agent.as_deref().unwrap_or("shell")
                )
            })?,
        None => (input.task.to_owned(), Default::default()),
    };
    // `--` ends sh's options, so a script that starts with `-` is still the script.
    let mut argv = input.argv("sh", &["-c", "--"]);
    argv.push(script);
    let mut command = input.agent_command(argv, None);
    command.env.extend(data);
    Ok(command)
}

#[cfg(test)]
mod tests {
    use super::*;
    use sublaunch_protocol::files::dir::Dir;
    use sublaunch_protocol::records::config::{AdapterId, AdapterSpec, StepConfig};

    #[test]
    fn the_shell_step_runs_its_task_in_its_cwd_and_a_bare_command_runs_as_given() {
        let tmp = tempfile::tempdir().unwrap();
        let run = Dir::open(tmp.path()).unwrap();
        let step = StepConfig::shell("echo {previous}", "/tmp", Default::default());
        let spec = AdapterSpec::new(AdapterId::Shell);
        let input = StepInput {
            index: 0,
            step: &step,
            spec: Some(&spec),
            task: "echo hi",
            script_values: None,
            cwd: "/tmp",
            run: &run,
            live: Default::default(),
        };
        let command = super::command(&input).unwrap();
        assert_eq!(command.argv, ["sh", "-c", "--", "echo hi"]);
        assert_eq!((command.cwd.as_str(), command.stdin), ("/tmp", None));
        let mut custom = step.clone();
        custom.adapter = None;
        custom.command = Some(sublaunch_protocol::records::config::CommandSpec {
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
            live: Default::default(),
        };
        assert_eq!(super::command(&input).unwrap().argv, ["/bin/agent", "x"]);
        let mut bare = custom.clone();
        bare.command = None;
        let input = StepInput { step: &bare, ..input };
        assert!(super::command(&input).unwrap_err().contains("has no command to run"));
    }

    #[test]
    fn a_chain_step_gets_references_and_the_values_in_its_environment() {
        let tmp = tempfile::tempdir().unwrap();
        let run = Dir::open(tmp.path()).unwrap();
        let step = StepConfig::shell("echo got {previous}", "/tmp", Default::default());
        let spec = AdapterSpec::new(AdapterId::Shell);
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
            live: Default::default(),
        };
        let command = super::command(&input).unwrap();
        assert_eq!(command.argv, ["sh", "-c", "--", "echo got \"${SUBLAUNCH_PREVIOUS}\""]);
        assert_eq!(command.env["SUBLAUNCH_PREVIOUS"], "$(touch /tmp/PWNED)");
    }
}
