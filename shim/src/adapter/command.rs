//! The generic `command` adapter: an argv template from the agent file in which `{task}`,
//! `{model}`, `{thinking}` and `{cwd}` are replaced inside every element (no shell is
//! involved, so nothing is re-split or re-quoted). Standard input is `/dev/null`; the output
//! is stdout.

use super::{Adapter, AgentCommand, OutputParser, StepInput, TextParser};

/// The `command` adapter.
#[derive(Clone, Copy, Debug, Default)]
pub struct CommandAdapter;

impl Adapter for CommandAdapter {
    fn id(&self) -> &'static str {
        "command"
    }

    fn command(&self, input: &StepInput<'_>) -> Result<AgentCommand, String> {
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
        let values = [
            ("task", input.task),
            ("model", input.model().unwrap_or("")),
            ("thinking", input.thinking().unwrap_or("")),
            ("cwd", input.cwd),
        ];
        Ok(input.agent_command(template.iter().map(|arg| fill_template(arg, &values)).collect(), None))
    }

    fn parser(&self, _input: &StepInput<'_>) -> Box<dyn OutputParser> {
        Box::new(TextParser)
    }
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
    }
}
