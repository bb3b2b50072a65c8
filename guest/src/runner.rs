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
/// `runner-option-unsupported`. A schema is kept for an adapter that enforces it itself when
/// the request says the runner hands it over (`launch.nativeSchemas`).
pub fn check_external_options(
    child: &Child<'_>,
    agent: &Agent,
    structured: bool,
    native_schemas: bool,
) -> Result<(), PlanError> {
    if !is_external(agent) {
        return Ok(());
    }
    let structured = structured && !(native_schemas && adapter(agent).is_some_and(AdapterId::enforces_schema_natively));
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

#[cfg(test)]
mod tests {
    use crate::plan;
    use serde_json::{Value, json};
    use sublaunch_contract::{ErrorCode, LaunchPlan, PlanError, parse_request};

    fn run(native_schemas: Option<bool>, steps: Value) -> Result<LaunchPlan, PlanError> {
        let agent = |name: &str, adapter: &str| {
            json!({"name": name, "runner": {"type": "external-cli", "adapter": adapter},
                   "outputSchema": {"type": "object"}})
        };
        let request = json!({
            "cwd": "/code/repo", "mode": "chain",
            "agents": [agent("claude", "claude-code"), agent("codex", "codex-exec-writer"),
                       agent("cursor", "cursor-agent")],
            "launch": {"nativeSchemas": native_schemas},
            "steps": steps,
        });
        plan(&parse_request(request.to_string().as_bytes())?)
    }

    #[test]
    fn schemas_an_adapter_enforces_itself_are_kept_when_the_runner_hands_them_over() {
        let steps = json!([
            {"agent": "claude", "task": "t", "outputSchema": {"type": "array"}},
            {"agent": "claude", "task": "t", "outputSchema": false},
            {"parallel": [{"agent": "codex", "task": "t"}]},
        ]);
        let plan = run(Some(true), steps.clone()).expect("planned");
        let schemas: Vec<(Option<&str>, bool)> = plan
            .steps
            .iter()
            .map(|s| (s.output_schema.as_deref(), s.structured))
            .collect();
        assert_eq!(
            schemas,
            [
                (Some(r#"{"type":"array"}"#), true),
                (None, false),
                (Some(r#"{"type":"object"}"#), true)
            ],
            "the step's own, `false` opts out, else the agent's default"
        );
        let graph = serde_json::to_value(plan.graph.expect("a chain has a graph")).unwrap();
        assert_eq!(graph["steps"][0]["outputSchema"], json!({"type": "array"}));
        assert_eq!(graph["steps"][2]["parallel"][0]["structured"], json!(true));
        for flag in [None, Some(false)] {
            let error = run(flag, steps.clone()).expect_err("P-S4 without the runner's word");
            assert_eq!(error.code, ErrorCode::StructuredOutputUnsupported);
        }
    }

    #[test]
    fn an_adapter_that_enforces_no_schema_is_still_refused_one() {
        let error = run(Some(true), json!([{"agent": "cursor", "task": "t"}])).expect_err("refused");
        assert_eq!(error.code, ErrorCode::StructuredOutputUnsupported);
        assert!(error.message.contains("'cursor'"), "{}", error.message);
    }
}
