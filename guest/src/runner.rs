//! Runner kinds and the external-runner option gate (rules M19, P-S4).

use crate::children::Child;
use sublaunch_contract::{AdapterId, Agent, ErrorCode, PlanError};

/// The agent's runner type, when it declares one.
pub fn runner_type(agent: &Agent) -> Option<&str> {
    agent.runner.as_ref().and_then(|r| r.kind.as_deref())
}

/// The adapter an agent runs with (`None`: a runner type or adapter the planner does not know).
pub fn adapter(agent: &Agent) -> Option<AdapterId> {
    let runner = agent.runner.as_ref();
    AdapterId::from_runner(runner_type(agent), runner.and_then(|r| r.adapter.as_deref()))
}

/// Whether the agent runs outside the native runtime (`external-cli` or `external-job`) and
/// so takes no part in model and thinking planning (rule M19).
pub fn is_external(agent: &Agent) -> bool {
    matches!(runner_type(agent), Some("external-cli" | "external-job"))
}

/// Refuses options an external runner cannot honour (rule P-S4, with `thinking override` from
/// M19/M-I9): `structured-output-unsupported` when structured output is among them, else
/// `runner-option-unsupported`.
pub fn check_external_options(child: &Child<'_>, agent: &Agent, structured: bool) -> Result<(), PlanError> {
    if !is_external(agent) {
        return Ok(());
    }
    let mut unsupported = Vec::new();
    if child.fields.model.is_some() {
        unsupported.push("model override");
    }
    if child.fields.thinking.is_some() {
        unsupported.push("thinking override");
    }
    if structured {
        unsupported.push("structured output");
    }
    if unsupported.is_empty() {
        return Ok(());
    }
    let code = if structured {
        ErrorCode::StructuredOutputUnsupported
    } else {
        ErrorCode::RunnerOptionUnsupported
    };
    Err(PlanError::new(
        code,
        format!(
            "Agent '{}' ({}, runner.type='{}') does not support: {}.",
            agent.name,
            child.position.describe(),
            runner_type(agent).unwrap_or_default(),
            unsupported.join(", ")
        ),
    ))
}
