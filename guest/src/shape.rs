//! Request-shape checks of the placement spec (pipeline step 1: C3, L1, C4).

use crate::children::{self, Child};
use crate::jsstr;
use serde_json::Value;
use sublaunch_contract::{ErrorCode, LooseString, PlanError, PlanRequest};

/// Checks the request's shape and returns its children in flat order.
pub fn check(request: &PlanRequest) -> Result<Vec<Child<'_>>, PlanError> {
    if !request.cwd.starts_with('/') {
        return Err(PlanError::invalid_request(format!(
            "Invalid request at cwd: the runner directory must be an absolute POSIX path, got {}.",
            jsstr::json_quote(&request.cwd)
        )));
    }
    let children = children::flatten(request)?;
    for (index, step) in request.steps.iter().enumerate() {
        let path = format!("steps[{index}]");
        check_strings(&path, step.machine.as_ref(), step.cwd.as_ref())?;
        check_schema_override(&path, step.output_schema.as_deref())?;
        for (task_index, task) in step.parallel.iter().flatten().enumerate() {
            let path = format!("{path}.parallel[{task_index}]");
            check_strings(&path, task.machine.as_ref(), task.cwd.as_ref())?;
            check_schema_override(&path, task.output_schema.as_deref())?;
        }
    }
    if let Some(launch) = &request.launch {
        check_strings("launch", launch.machine.as_ref(), launch.cwd.as_ref())?;
    }
    for agent in &request.agents {
        check_string(&format!("agents[{}].machine", agent.name), agent.machine.as_ref())?;
    }
    Ok(children)
}

fn check_strings(path: &str, machine: Option<&LooseString>, cwd: Option<&LooseString>) -> Result<(), PlanError> {
    check_string(&format!("{path}.machine"), machine)?;
    check_string(&format!("{path}.cwd"), cwd)
}

fn check_string(path: &str, value: Option<&LooseString>) -> Result<(), PlanError> {
    match value {
        Some(LooseString::NotText(json)) => Err(PlanError::invalid_request(format!(
            "Invalid request at {path}: expected a string, got {json}."
        ))),
        _ => Ok(()),
    }
}

/// A step or task `outputSchema` must be an object or `false` (rules C4, P-S3).
fn check_schema_override(path: &str, schema: Option<&str>) -> Result<(), PlanError> {
    let Some(text) = schema else { return Ok(()) };
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(_) | Value::Bool(false)) => Ok(()),
        _ => Err(PlanError::new(
            ErrorCode::InvalidOutputSchema,
            format!("Invalid outputSchema at {path}.outputSchema: expected a JSON Schema object or false, got {text}."),
        )),
    }
}
