//! The built-in `shell` adapter (spec README "sublaunch additions"): `sh -c <task>` in the
//! step's cwd; stdout is untrusted plain text. A step without an adapter runs its
//! `command.argv` verbatim, except that the `["sh", "-c", <task>]` of older configurations
//! gets the substituted task.

use super::{Adapter, AgentCommand, OutputParser, StepInput, TextParser};

/// The `shell` adapter.
#[derive(Clone, Copy, Debug, Default)]
pub struct ShellAdapter;

impl Adapter for ShellAdapter {
    fn id(&self) -> &'static str {
        "shell"
    }

    fn command(&self, input: &StepInput<'_>) -> Result<AgentCommand, String> {
        let legacy = input.step.command.as_ref().filter(|c| !c.argv.is_empty());
        let argv = match (input.spec, legacy) {
            (Some(_), _) => vec![input.program("sh"), "-c".into(), input.task.to_owned()],
            (None, Some(command)) if is_sh_c_of(&command.argv, input.step.task.as_deref()) => {
                vec![command.argv[0].clone(), "-c".into(), input.task.to_owned()]
            }
            (None, Some(command)) => command.argv.clone(),
            (None, None) => return Err(format!("Step {} has no command to run.", input.index)),
        };
        let mut env = legacy.map(|c| c.env.clone()).unwrap_or_default();
        env.extend(input.env());
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
    use sublaunch_runfiles::config::{AdapterSpec, StepConfig};
    use sublaunch_runfiles::dir::Dir;

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
                cwd: "/tmp",
                run: &run,
            };
            let command = ShellAdapter.command(&input).unwrap();
            assert_eq!(command.argv, ["sh", "-c", "echo hi"]);
            assert_eq!((command.cwd.as_str(), command.stdin), ("/tmp", None));
        }
        let mut custom = step.clone();
        custom.command.as_mut().unwrap().argv = vec!["/bin/agent".into(), "x".into()];
        let input = StepInput {
            index: 0,
            step: &custom,
            spec: None,
            task: "echo hi",
            cwd: "/tmp",
            run: &run,
        };
        assert_eq!(ShellAdapter.command(&input).unwrap().argv, ["/bin/agent", "x"]);
    }
}
