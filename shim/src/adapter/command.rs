//! The generic `command` adapter: an argv template from the agent file in which `{task}`,
//! `{model}` (the planned `provider/id`, without a thinking suffix), `{model_id}` (the id
//! alone), `{provider}`, `{thinking}` and `{cwd}` are replaced inside every element (no shell
//! is involved, so nothing is re-split or re-quoted). Standard input is `/dev/null`; the
//! output is stdout. The values are also in the environment: `$SUBLAUNCH_PROMPT`,
//! `$SUBLAUNCH_MODEL`, `$SUBLAUNCH_THINKING`, `$SUBLAUNCH_CWD`, `$SUBLAUNCH_MODEL_ID` and
//! `$SUBLAUNCH_PROVIDER`.
//!
//! Where an element is code, a value pasted into it would become code ([`argv`]):
//! * the script of a shell (`["sh", "-c", "agent --prompt {task}"]`, also behind `env`,
//!   `nice`, `timeout`… as in `["env", "sh", "-c", …]`) gets quoted references to the
//!   variables instead of the values;
//! * a placeholder in any other code — an interpreter's (`python3 -c`, `node -e`), a command
//!   line a program hands to a shell (`ssh host CMD`), a shell script behind a program or an
//!   option sublaunch does not read — refuses the step, saying how to pass the value instead.

mod argv;

use super::{AgentCommand, ScriptValues, StepInput};
use argv::{CodeArgument, CodeWhy};

/// The command of a step.
pub fn command(input: &StepInput<'_>) -> Result<AgentCommand, String> {
    let template = input
        .spec
        .and_then(|s| s.argv.as_ref())
        .filter(|a| !a.is_empty())
        .ok_or_else(|| {
            format!(
                "Step {} uses the command adapter without an argv template.",
                input.index
            )
        })?;
    let model = input.model().unwrap_or("");
    // `provider/id`: programs that name models without the provider take `{model_id}`.
    let (provider, model_id) = model.split_once('/').unwrap_or(("", model));
    let values = [
        ("task", input.task),
        ("model", model),
        ("thinking", input.thinking().unwrap_or("")),
        ("cwd", input.cwd),
        ("model_id", model_id),
        ("provider", provider),
    ];
    let mut script_values = ScriptValues::default();
    for ((name, value), variable) in values.iter().zip(SCRIPT_VARIABLES) {
        script_values.push(name, variable, value);
    }
    let step = format!(
        "Step {} ({})",
        input.index + 1,
        input.step.agent.as_deref().unwrap_or("command")
    );
    let reading = argv::read(template);
    for code in &reading.code {
        let element = &template[code.index];
        if let Some((name, variable)) = values
            .iter()
            .zip(SCRIPT_VARIABLES)
            .map(|((name, _), variable)| (*name, variable))
            .find(|(name, _)| element.contains(&format!("{{{name}}}")))
        {
            return Err(code_refusal(&step, template, code, name, variable));
        }
    }
    let mut argv = Vec::with_capacity(template.len());
    for (i, arg) in template.iter().enumerate() {
        if Some(i) == reading.script {
            let (script, _) = script_values
                .apply(arg)
                .map_err(|e| format!("{step}: {e} (The script is argument {i} of the command template.)"))?;
            argv.push(script);
        } else {
            argv.push(fill_template(arg, &values));
        }
    }
    let mut command = input.agent_command(argv, None);
    command.env.extend(script_values.environment());
    Ok(command)
}

/// Why a placeholder in a code element refuses the step, and what to do instead.
fn code_refusal(step: &str, template: &[String], code: &CodeArgument, name: &str, variable: &str) -> String {
    let element = &template[code.index];
    let shown: String = element.chars().take(60).collect();
    let shown = if shown.len() < element.len() {
        format!("{shown}…")
    } else {
        shown
    };
    let (what, fix) = match &code.why {
        CodeWhy::Interpreter(program) => (
            format!("which {program} runs as code"),
            format!(
                "Pass the value as an argument of its own after the code (the program reads it from its arguments: sys.argv, process.argv, @ARGV…), or read it from ${variable} in the code."
            ),
        ),
        CodeWhy::ShellBehind { shell, program } => (
            format!(
                "which {shell} runs as a script; {shell} is started through {program}, and sublaunch cannot tell whether {program} passes the script on unchanged"
            ),
            format!(
                "Start the shell directly or through a wrapper sublaunch reads (env, nice, timeout, nohup, stdbuf, setsid, ionice, chrt, taskset, time, command, exec, busybox), where the placeholder becomes a quoted variable; or pass the value as an argument after the script ([sh, -c, 'tool \"$1\"', sh, '{{{name}}}']), or read it from ${variable}."
            ),
        ),
        CodeWhy::CommandLine(program) => (
            format!("which {program} hands to a shell as a command line"),
            format!(
                "sublaunch cannot quote a value for that shell: deliver it another way, for example from ${variable} on the program's standard input."
            ),
        ),
        CodeWhy::UnreadOption { program, option } => (
            format!(
                "which follows the option {option} of {program}, one sublaunch does not read, so it cannot tell whether a shell or an interpreter runs it"
            ),
            format!(
                "Write the options of {program} in full and as separate elements, or read the value from ${variable} instead of using the placeholder."
            ),
        ),
    };
    format!(
        "{step}: the command template puts {{{name}}} into argument {} ({shown:?}), {what}, so the value would become code and the step is not run. {fix}",
        code.index
    )
}

/// The variables a template's script or code reads `{task}`, `{model}`, `{thinking}`,
/// `{cwd}`, `{model_id}` and `{provider}` from, in that order.
const SCRIPT_VARIABLES: [&str; 6] = [
    "SUBLAUNCH_PROMPT",
    "SUBLAUNCH_MODEL",
    "SUBLAUNCH_THINKING",
    "SUBLAUNCH_CWD",
    "SUBLAUNCH_MODEL_ID",
    "SUBLAUNCH_PROVIDER",
];

/// Replaces every `{name}` of `values` in `text` in one pass: inserted values are never
/// scanned again, and other `{…}` stay as they are.
pub fn fill_template(text: &str, values: &[(&str, &str)]) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let hit = values
            .iter()
            .find(|(name, _)| after.starts_with(name) && after[name.len()..].starts_with('}'));
        match hit {
            Some((name, value)) => {
                out.push_str(value);
                rest = &after[name.len() + 1..];
            }
            None => {
                out.push('{');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_filled_once_and_unknown_ones_stay() {
        let values = [("task", "say {model}"), ("model", "m1")];
        assert_eq!(
            fill_template("--prompt={task} --model {model} {other} {", &values),
            "--prompt=say {model} --model m1 {other} {"
        );
        assert_eq!(fill_template("{{task}}", &values), "{say {model}}");
        let split = [
            ("model", "anthropic/claude-x"),
            ("model_id", "claude-x"),
            ("provider", "anthropic"),
        ];
        assert_eq!(
            fill_template("--model={model_id} --via {provider}", &split),
            "--model=claude-x --via anthropic"
        );
    }

    /// The command a `command` runner with `template` builds for `task`.
    fn build(template: &[&str], task: &str) -> Result<AgentCommand, String> {
        let tmp = tempfile::tempdir().unwrap();
        let run = sublaunch_protocol::files::dir::Dir::open(tmp.path()).unwrap();
        let mut spec = sublaunch_protocol::records::config::AdapterSpec::new(
            sublaunch_protocol::records::config::AdapterId::Command,
        );
        spec.argv = Some(template.iter().map(|a| (*a).to_owned()).collect());
        let step = sublaunch_protocol::records::config::StepConfig {
            agent: Some("tool".into()),
            ..Default::default()
        };
        let input = StepInput {
            index: 1,
            step: &step,
            spec: Some(&spec),
            task,
            script_values: None,
            cwd: "/tmp",
            run: &run,
            live: Default::default(),
        };
        command(&input)
    }

    /// Runs `command` in `dir`; its stdout.
    fn run_in(command: &AgentCommand, dir: &std::path::Path) -> String {
        let output = std::process::Command::new(&command.argv[0])
            .args(&command.argv[1..])
            .envs(&command.env)
            .current_dir(dir)
            .output()
            .unwrap();
        String::from_utf8(output.stdout).unwrap()
    }

    const HOSTILE: [&str; 6] = [
        "x $(touch PWNED)",
        "'; touch PWNED; '",
        "x[$(touch PWNED)]",
        "`touch PWNED`",
        "a\"; touch PWNED; echo \"",
        "-n *",
    ];

    #[test]
    fn a_shell_behind_a_wrapper_gets_the_value_as_data() {
        let templates: [&[&str]; 8] = [
            &["env", "sh", "-c", "printf '%s|' {task} \"{task}\""],
            &[
                "/usr/bin/env",
                "-u",
                "HOME",
                "A=1",
                "sh",
                "-ec",
                "printf '%s|' {task} \"{task}\"",
            ],
            &["nice", "-n", "1", "sh", "-c", "printf '%s|' {task} \"{task}\""],
            &["timeout", "60", "bash", "-c", "printf '%s|' {task} \"{task}\""],
            &["nohup", "sh", "-c", "printf '%s|' {task} \"{task}\""],
            &["stdbuf", "-oL", "sh", "-c", "printf '%s|' {task} \"{task}\""],
            &["setsid", "bash", "-lc", "printf '%s|' {task} \"{task}\""],
            &[
                "env",
                "X=1",
                "timeout",
                "-s",
                "KILL",
                "5",
                "/bin/sh",
                "-c",
                "printf '%s|' {task} \"{task}\"",
            ],
        ];
        let dir = tempfile::tempdir().unwrap();
        for template in templates {
            for value in HOSTILE {
                let command = build(template, value).unwrap();
                assert_eq!(command.env["SUBLAUNCH_PROMPT"], value);
                assert!(
                    command.argv.last().unwrap().contains("\"${SUBLAUNCH_PROMPT}\""),
                    "{template:?}: {:?}",
                    command.argv
                );
                assert_eq!(
                    run_in(&command, dir.path()),
                    format!("{value}|{value}|"),
                    "{template:?}"
                );
                assert!(!dir.path().join("PWNED").exists(), "{template:?} ran {value:?}");
            }
        }
    }

    #[test]
    fn a_placeholder_in_an_interpreters_code_refuses_the_step() {
        let error = build(&["python3", "-c", "print('{task}')"], "x").unwrap_err();
        assert_eq!(
            error,
            "Step 2 (tool): the command template puts {task} into argument 2 (\"print('{task}')\"), which python3 runs as code, so the value would become code and the step is not run. Pass the value as an argument of its own after the code (the program reads it from its arguments: sys.argv, process.argv, @ARGV…), or read it from $SUBLAUNCH_PROMPT in the code."
        );
        for template in [
            &["node", "-e", "console.log('{task}')"][..],
            &["env", "perl", "-le", "print q({task})"][..],
            &["ruby", "-e", "puts '{model}'"][..],
            &["ssh", "host", "echo {task}"][..],
            &["sudo", "sh", "-c", "echo {task}"][..],
            &["env", "-S", "sh -c 'echo {task}'"][..],
        ] {
            let error = build(template, "x").unwrap_err();
            assert!(
                error.starts_with("Step 2 (tool): the command template puts {"),
                "{error}"
            );
        }
        let error = build(&["sudo", "sh", "-c", "echo {task}"], "x").unwrap_err();
        assert!(error.contains("sh is started through sudo"), "{error}");
        let error = build(&["env", "-S", "sh -c 'echo {task}'"], "x").unwrap_err();
        assert!(
            error.contains("the option -S of env, one sublaunch does not read"),
            "{error}"
        );
    }

    #[test]
    fn values_in_separate_arguments_stay_allowed_and_the_environment_carries_them() {
        let dir = tempfile::tempdir().unwrap();
        for value in HOSTILE {
            let command = build(
                &["python3", "-c", "import sys; print(sys.argv[1], end='|')", "{task}"],
                value,
            )
            .unwrap();
            assert_eq!(run_in(&command, dir.path()), format!("{value}|"));
            let command = build(
                &[
                    "python3",
                    "-c",
                    "import os; print(os.environ['SUBLAUNCH_PROMPT'], end='|')",
                ],
                value,
            )
            .unwrap();
            assert_eq!(run_in(&command, dir.path()), format!("{value}|"));
            let command = build(&["env", "sh", "-c", "printf '%s|' \"$1\"", "sh", "{task}"], value).unwrap();
            assert_eq!(command.argv[5], value, "after the script: a positional parameter");
            assert_eq!(run_in(&command, dir.path()), format!("{value}|"));
        }
        assert!(!dir.path().join("PWNED").exists());
    }

    #[test]
    fn bash_arithmetic_in_a_wrapped_script_refuses_the_step() {
        let error = build(&["env", "bash", "-c", "echo $(( {task} + 1 ))"], "x[$(touch PWNED)]").unwrap_err();
        assert!(
            error.starts_with("Step 2 (tool): {task} on line 1 of the shell script stands in bash arithmetic"),
            "{error}"
        );
        assert!(
            error.ends_with("(The script is argument 3 of the command template.)"),
            "{error}"
        );
    }
}
