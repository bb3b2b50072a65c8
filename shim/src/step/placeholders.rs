//! Placeholders in the task texts of chain and parallel runs (a single run's task is used
//! verbatim), replaced by the shim when a step starts:
//! * `{task}` — the run's task (the configuration's `workflow.task`, else the first step's
//!   task as planned);
//! * `{previous}` — the output of the previous sequential step, or for a step after a
//!   parallel group the outputs of all its tasks in order (see [`aggregate`]); empty for the
//!   first step;
//! * `{chain_dir}` — the run's shared artifacts directory (`<run>/chain` unless the
//!   configuration names another), created (0700) before the first step when any task uses it;
//! * `{outputs.NAME}` — the answer of the earlier step named `as: NAME` (the planner checked
//!   that it runs before).
//!
//! Substitution is one pass, so text inserted by a placeholder is never expanded again, and
//! any other `{…}` in a task stays as written (tasks are prose).
//!
//! A task that is a shell script gets no values pasted in: its placeholders become quoted
//! references to `$SUBLAUNCH_TASK`, `$SUBLAUNCH_PREVIOUS`, `$SUBLAUNCH_CHAIN_DIR` and
//! `$SUBLAUNCH_OUTPUT_<NAME>`, which carry the values ([`Values::script_values`]). Where bash
//! would evaluate even a quoted reference as code (arithmetic, subscripts, `eval`…), the
//! step is refused instead (see `adapter::script_refs`).

use crate::adapter::{ScriptValues, fill_template};
use crate::step::end::StepEnd;

/// The values of the placeholders for one step.
#[derive(Clone, Debug, Default)]
pub struct Values {
    /// `{task}`.
    pub task: String,
    /// `{previous}`.
    pub previous: String,
    /// `{chain_dir}`.
    pub chain_dir: String,
    /// `{outputs.NAME}`: each named answer so far, as (`outputs.NAME`, answer).
    pub outputs: Vec<(String, String)>,
}

impl Values {
    /// `text` with the placeholders replaced.
    pub fn apply(&self, text: &str) -> String {
        let mut values = vec![
            ("task", self.task.as_str()),
            ("previous", self.previous.as_str()),
            ("chain_dir", self.chain_dir.as_str()),
        ];
        values.extend(self.outputs.iter().map(|(key, value)| (key.as_str(), value.as_str())));
        fill_template(text, &values)
    }

    /// Keeps `end`'s answer under `name` for the steps after it.
    pub fn name_output(&mut self, name: &str, end: &StepEnd) {
        self.outputs.push((format!("outputs.{name}"), handoff(end)));
    }

    /// The values as a shell script receives them: in environment variables.
    pub fn script_values(&self) -> ScriptValues {
        let mut values = ScriptValues::default();
        values.push("task", "SUBLAUNCH_TASK", &self.task);
        values.push("previous", "SUBLAUNCH_PREVIOUS", &self.previous);
        values.push("chain_dir", "SUBLAUNCH_CHAIN_DIR", &self.chain_dir);
        for (key, value) in &self.outputs {
            let name = key.trim_start_matches("outputs.");
            values.push(key, &format!("SUBLAUNCH_OUTPUT_{}", name.to_ascii_uppercase()), value);
        }
        values
    }
}

/// What a step hands to the next one: its structured output as pretty JSON when it has one,
/// else its output text.
pub fn handoff(end: &StepEnd) -> String {
    match &end.structured {
        Some(value) => serde_json::to_string_pretty(value).unwrap_or_default(),
        None => end.output.clone(),
    }
}

/// `{previous}` after a group: one section per task, in order,
/// `=== task <n>: <agent> ===` followed by its output, sections separated by a blank line.
/// A single sequential step hands on its output as it is.
pub fn aggregate(ends: &[&StepEnd], parallel: bool) -> String {
    if !parallel && ends.len() == 1 {
        return handoff(ends[0]);
    }
    ends.iter()
        .enumerate()
        .map(|(i, end)| {
            // Named as progress and `logs` name the task (`2.1 reviewer (lexer)`).
            let position = match end.position {
                (_, None) => (i + 1).to_string(),
                _ => end.position_label(),
            };
            format!("=== {position} {} ===\n{}", end.shown_agent(), handoff(end))
        })
        .collect::<Vec<_>>()
        .join("\n\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_replaced_once() {
        let values = Values {
            task: "the task".into(),
            previous: "prev says {task}".into(),
            chain_dir: "/run/chain".into(),
            outputs: vec![("outputs.plan".into(), "the plan".into())],
        };
        assert_eq!(
            values.apply("Do {task} with {previous} in {chain_dir}/x, keep {other}, follow {outputs.plan}"),
            "Do the task with prev says {task} in /run/chain/x, keep {other}, follow the plan"
        );
    }

    #[test]
    fn group_outputs_are_aggregated_in_order() {
        let end = |task: u32, output: &str| StepEnd {
            agent: "r".into(),
            position: (Some(1), Some(task)),
            output: output.into(),
            ..StepEnd::default()
        };
        let (a, b) = (end(0, "A"), end(1, "B"));
        assert_eq!(aggregate(&[&a, &b], true), "=== 2.1 r ===\nA\n\n=== 2.2 r ===\nB");
        assert_eq!(aggregate(&[&a], false), "A");
    }
}
