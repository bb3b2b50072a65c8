//! The generic `command` adapter: an argv template from the agent file in which `{task}`,
//! `{model}` (the planned `provider/id`, without a thinking suffix), `{model_id}` (the id
//! alone), `{provider}`, `{thinking}` and `{cwd}` are replaced inside every element (no shell
//! is involved, so nothing is re-split or re-quoted). Standard input is `/dev/null`; the
//! output is stdout.
//!
//! A template that hands a script to a shell (`["sh", "-c", "agent --prompt {task}"]`) is
//! the one place where a value would become code: there the script gets quoted references
//! to `$SUBLAUNCH_PROMPT`, `$SUBLAUNCH_MODEL`, `$SUBLAUNCH_THINKING`, `$SUBLAUNCH_CWD`,
//! `$SUBLAUNCH_MODEL_ID` and `$SUBLAUNCH_PROVIDER` instead, and the values travel in the
//! environment.

use super::{AgentCommand, ScriptValues, StepInput};

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
    let script_at = shell_script_index(template);
    let mut argv = Vec::with_capacity(template.len());
    let mut data = std::collections::BTreeMap::new();
    for (i, arg) in template.iter().enumerate() {
        if Some(i) == script_at {
            let mut script_values = ScriptValues::default();
            for ((name, value), variable) in values.iter().zip(SCRIPT_VARIABLES) {
                script_values.push(name, variable, value);
            }
            let (script, env) = script_values.apply(arg)?;
            argv.push(script);
            data = env;
        } else {
            argv.push(fill_template(arg, &values));
        }
    }
    let mut command = input.agent_command(argv, None);
    command.env.extend(data);
    Ok(command)
}

/// The variables a shell script in a template reads `{task}`, `{model}`, `{thinking}`,
/// `{cwd}`, `{model_id}` and `{provider}` from, in that order.
const SCRIPT_VARIABLES: [&str; 6] = [
    "SUBLAUNCH_PROMPT",
    "SUBLAUNCH_MODEL",
    "SUBLAUNCH_THINKING",
    "SUBLAUNCH_CWD",
    "SUBLAUNCH_MODEL_ID",
    "SUBLAUNCH_PROVIDER",
];

/// The shells whose `-c` argument is a script.
const SHELLS: [&str; 7] = ["sh", "bash", "dash", "zsh", "ksh", "mksh", "ash"];

/// The index of the script in a template that runs a shell with `-c` (the first argument
/// after the options, which may be bundled, as in `-ec`).
fn shell_script_index(template: &[String]) -> Option<usize> {
    let program = template.first()?;
    let name = program.rsplit('/').next().unwrap_or(program);
    if !SHELLS.contains(&name) {
        return None;
    }
    let mut saw_c = false;
    let mut args = template.iter().enumerate().skip(1);
    while let Some((i, arg)) = args.next() {
        match arg.as_str() {
            "--" => return saw_c.then_some(i + 1),
            "--rcfile" | "--init-file" => {
                args.next();
            }
            long if long.starts_with("--") => {}
            flags if flags.len() > 1 && (flags.starts_with('-') || flags.starts_with('+')) => {
                saw_c |= flags.contains('c');
                // `-o NAME` (also bundled, as in `-eo pipefail`) takes the next element.
                if flags.ends_with('o') {
                    args.next();
                }
            }
            _ => return saw_c.then_some(i),
        }
    }
    None
}

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

    #[test]
    fn the_script_of_a_shell_template_is_found() {
        let t = |argv: &[&str]| shell_script_index(&argv.iter().map(|a| (*a).to_owned()).collect::<Vec<_>>());
        assert_eq!(t(&["sh", "-c", "x {task}"]), Some(2));
        assert_eq!(t(&["/bin/bash", "-e", "-o", "pipefail", "-c", "x"]), Some(5));
        assert_eq!(t(&["bash", "--norc", "-eo", "pipefail", "-c", "x"]), Some(5));
        assert_eq!(t(&["bash", "-ec", "x"]), Some(2));
        assert_eq!(t(&["sh", "-c", "--", "x"]), Some(3));
        assert_eq!(t(&["sh", "script.sh", "{task}"]), None);
        assert_eq!(t(&["agent", "-c", "{task}"]), None);
    }
}
