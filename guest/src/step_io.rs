//! What a step takes and gives beyond its task text: the files its agent reads first
//! (`reads`, an agent's `defaultReads`), the file its answer is also written to (`output`),
//! the name later steps give its answer (`as`, referred to as `{outputs.NAME}`), and the
//! label and phase progress shows. The planner decides what is valid and what each child
//! gets; paths stay lexical (the host resolves them against the final directory and checks
//! that they exist).

use crate::children::Child;
use crate::paths;
use std::collections::BTreeMap;
use sublaunch_contract::{Agent, ErrorCode, MachineRef, PlanError};

/// The most files one step may read first.
const READS_LIMIT: usize = 100;
/// The longest path, name, label or phase accepted (bytes).
const TEXT_LIMIT: usize = 4096;
/// The longest answer name.
const NAME_LIMIT: usize = 64;

/// One child's planned inputs and outputs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StepIo {
    /// Files to read first (see `PlanStep::reads`).
    pub reads: Vec<String>,
    /// The output file.
    pub output: Option<String>,
    /// The answer's name.
    pub output_name: Option<String>,
    /// Label.
    pub label: Option<String>,
    /// Phase.
    pub phase: Option<String>,
}

/// `invalid-request` at `path`.
pub fn invalid(path: &str, message: impl std::fmt::Display) -> PlanError {
    PlanError::invalid_request(format!("Invalid request at {path}: {message}"))
}

/// A path, label or phase: not empty, no NUL or other control character, not too long.
pub fn check_text(path: &str, what: &str, text: &str) -> Result<(), PlanError> {
    if text.trim().is_empty() {
        return Err(invalid(path, format!("{what} is empty.")));
    }
    if text.len() > TEXT_LIMIT {
        return Err(invalid(path, format!("{what} is longer than {TEXT_LIMIT} bytes.")));
    }
    if text.chars().any(char::is_control) {
        return Err(invalid(path, format!("{what} holds a control character.")));
    }
    Ok(())
}

/// Plans `child`'s inputs and outputs; `machine` is where it was placed, if anywhere.
pub fn plan(child: &Child<'_>, agent: &Agent, machine: Option<&MachineRef>) -> Result<StepIo, PlanError> {
    let (reads, reads_path) = match child.fields.reads {
        Some(reads) => (reads, child.field_path("reads")),
        None => (
            agent.default_reads.as_deref().unwrap_or_default(),
            format!("agents[{}].defaultReads", agent.name),
        ),
    };
    if reads.len() > READS_LIMIT {
        return Err(invalid(
            &reads_path,
            format!("{} files; a step reads at most {READS_LIMIT} first.", reads.len()),
        ));
    }
    if !reads.is_empty() && adapter(agent) == Some("shell") {
        return Err(PlanError::new(
            ErrorCode::RunnerOptionUnsupported,
            format!(
                "Agent '{}' ({}) runs its task with sh -c and reads no files first: drop reads (a script can read them itself).",
                agent.name,
                child.position.describe()
            ),
        ));
    }
    let mut planned_reads = Vec::with_capacity(reads.len());
    for (index, read) in reads.iter().enumerate() {
        check_text(&format!("{reads_path}[{index}]"), "the file path", read)?;
        planned_reads.push(match machine {
            Some(machine) if !paths::is_remote_absolute(read) && !read.starts_with('/') => {
                paths::join(&machine.cwd, read)
            }
            _ if read.starts_with('/') || read == "~" || read.starts_with("~/") => read.clone(),
            _ => paths::normalize(read),
        });
    }
    let output = match child.fields.output {
        None => None,
        Some(output) => Some(plan_output(child, output, machine)?),
    };
    let output_name = child.fields.output_name.map(str::to_owned);
    for (field, value) in [("label", child.fields.label), ("phase", child.fields.phase)] {
        if let Some(text) = value {
            check_text(&child.field_path(field), &format!("the {field}"), text)?;
        }
    }
    Ok(StepIo {
        reads: planned_reads,
        output,
        output_name,
        label: child.fields.label.map(str::to_owned),
        phase: child.fields.phase.map(str::to_owned),
    })
}

fn adapter(agent: &Agent) -> Option<&str> {
    agent.runner.as_ref().and_then(|r| r.adapter.as_deref())
}

/// An output file: absolute (or `~/…`) as given; relative, normalised and inside the step's
/// directory — which a placed step does not have here, where its answer is written.
fn plan_output(child: &Child<'_>, output: &str, machine: Option<&MachineRef>) -> Result<String, PlanError> {
    let path = child.field_path("output");
    check_text(&path, "the output file", output)?;
    if output.starts_with('/') || output.starts_with("~/") {
        return Ok(output.to_owned());
    }
    if let Some(machine) = machine {
        return Err(invalid(
            &path,
            format!(
                "'{output}' is relative, and the step runs on machine '{}' while its answer is written on this one: give an absolute path.",
                machine.label.as_deref().unwrap_or(&machine.id)
            ),
        ));
    }
    let normalized = paths::normalize(output);
    if normalized == "." || normalized.ends_with('/') {
        return Err(invalid(&path, format!("'{output}' names a directory, not a file.")));
    }
    if normalized == ".." || normalized.starts_with("../") {
        return Err(invalid(
            &path,
            format!("'{output}' climbs out of the step's directory; give a path inside it, or an absolute path."),
        ));
    }
    Ok(normalized)
}

/// Every `as` is a name of its own, and every `{outputs.NAME}` in a task names the answer of
/// a step that ends before the task's step starts.
pub fn check_names(children: &[Child<'_>]) -> Result<(), PlanError> {
    let mut named: BTreeMap<&str, &Child<'_>> = BTreeMap::new();
    for child in children {
        let Some(name) = child.fields.output_name else { continue };
        let path = child.field_path("as");
        let word = name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !word || name.len() > NAME_LIMIT {
            return Err(invalid(
                &path,
                format!(
                    "'{name}' is not a name for an answer (a letter or '_', then letters, digits or '_', at most {NAME_LIMIT})."
                ),
            ));
        }
        if let Some(first) = named.insert(name, child) {
            return Err(invalid(
                &path,
                format!("the name '{name}' is already given to the answer of {}.", first.path),
            ));
        }
    }
    for child in children {
        for reference in references(child.fields.task) {
            let path = child.field_path("task");
            let Some(source) = named.get(reference) else {
                let known: Vec<&str> = named.keys().copied().collect();
                return Err(invalid(
                    &path,
                    format!(
                        "{{outputs.{reference}}} names no answer; {}.",
                        if known.is_empty() {
                            "no step is named with `as`".to_owned()
                        } else {
                            format!("named answers: {}", known.join(", "))
                        }
                    ),
                ));
            };
            let (from, to) = (source.position.step_index(), child.position.step_index());
            if from >= to {
                let when = if from == to { "beside it" } else { "after it" };
                return Err(invalid(
                    &path,
                    format!(
                        "{{outputs.{reference}}} is the answer of {}, which runs {when}; only an earlier step's answer can be used.",
                        source.path
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// The names of the `{outputs.NAME}` references in `text`, in order.
pub fn references(text: &str) -> Vec<&str> {
    const OPEN: &str = "{outputs.";
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find(OPEN) {
        let after = &rest[at + OPEN.len()..];
        match after.find('}') {
            Some(close) if after[..close].chars().all(|c| c.is_ascii_alphanumeric() || c == '_') && close > 0 => {
                out.push(&after[..close]);
                rest = &after[close + 1..];
            }
            _ => rest = after,
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_are_found_once_each_in_order() {
        assert_eq!(
            references("use {outputs.plan} and {outputs.review_2}, not {outputs.} or {outputs.a b}"),
            ["plan", "review_2"]
        );
        assert!(references("{outputs").is_empty());
    }
}
