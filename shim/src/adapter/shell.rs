//! The built-in `shell` adapter (spec README "sublaunch additions"): `sh -c <task>` in the
//! step's cwd; stdout is untrusted plain text. A step without an adapter runs its
//! `command.argv` verbatim, except that the `["sh", "-c", <task>]` of older configurations
//! gets the substituted task.

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
        let legacy = input.step.command.as_ref().filter(|c| !c.argv.is_empty());
        let (program, script) = match (input.spec, legacy) {
            (Some(_), _) => (input.program("sh"), input.step.task.as_deref().unwrap_or(input.task)),
            (None, Some(command)) if is_sh_c_of(&command.argv, input.step.task.as_deref()) => {
                (command.argv[0].clone(), command.argv[2].as_str())
            }
            (None, Some(command)) => (command.argv[0].clone(), ""),
            (None, None) => return Err(format!("Step {} has no command to run.", input.index)),
        };
        let mut env = legacy.map(|c| c.env.clone()).unwrap_or_default();
        env.extend(input.env());
        let argv = match (input.spec, legacy) {
            (None, Some(command)) if script.is_empty() => command.argv.clone(),
            _ => {
                // A chain's values reach the script in its environment; a single run's task
                // is the script exactly as the user wrote it.
                let script = match input.script_values {
                    Some(values) => {
                        let (script, data) = values.apply(script)?;
                        env.extend(data);
                        script
                    }
                    None => input.task.to_owned(),
                };
                // `--` ends sh's options, so a script that starts with `-` is still the script.
                vec![program, "-c".into(), "--".into(), script]
            }
        };
        Ok(AgentCommand {
            argv,
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

/// Whether `argv` is `[sh, -c, task]` for the step's own task.
fn is_sh_c_of(argv: &[String], task: Option<&str>) -> bool {
    matches!(argv, [sh, c, t] if sh.ends_with("sh") && c == "-c" && Some(t.as_str()) == task)
}

#[cfg(test)]
mod tests {
    use super::*;
    use sublaunch_protocol::config::{AdapterSpec, StepConfig};
    use sublaunch_protocol::dir::Dir;

    #[test]
    fn the_shell_step_runs_its_task_in_its_cwd() {
        let tmp = tempfile::tempdir().unwrap();
        let run = Dir::open(tmp.path()).unwrap();
        let step = StepConfig::shell("echo {previous}", "/tmp", Default::default());
        let spec = AdapterSpec::new("shell");
        for spec in [None, Some(&spec)] {
            let input = StepInput {
                index: 0,
                step: &step,
                spec,
                task: "echo hi",
                script_values: None,
                cwd: "/tmp",
                run: &run,
            };
            let command = ShellAdapter.command(&input).unwrap();
            assert_eq!(command.argv, ["sh", "-c", "--", "echo hi"]);
            assert_eq!((command.cwd.as_str(), command.stdin), ("/tmp", None));
        }
        let mut custom = step.clone();
        custom.command.as_mut().unwrap().argv = vec!["/bin/agent".into(), "x".into()];
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
