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

/// What the runner hands over to external agents' own CLIs (`launch.nativeSchemas`,
/// `launch.nativeModels`).
#[derive(Clone, Copy, Debug, Default)]
pub struct Handed {
    /// Structured steps' schemas, to the CLIs that enforce them.
    pub schemas: bool,
    /// Steps' own models and thinking levels, to the CLIs that take them per launch.
    pub models: bool,
}

/// Whether `agent`'s CLI gets a step's own model and thinking level from this runner.
pub fn takes_step_model(agent: &Agent, handed: Handed) -> bool {
    handed.models && is_external(agent) && adapter(agent).is_some_and(AdapterId::takes_launch_model)
}

/// Refuses options an external runner cannot honour (rule P-S4, with `thinking override` from
/// M19/M-I9): `structured-output-unsupported` when structured output is among them, else
/// `runner-option-unsupported`. A schema is kept for an adapter that enforces it itself when
/// the request says the runner hands it over (`launch.nativeSchemas`), and a step's model and
/// thinking level for a CLI that takes them per launch when the runner hands those over
/// (`launch.nativeModels`). The message says where the option was given and what to do.
pub fn check_external_options(
    child: &Child<'_>,
    agent: &Agent,
    structured: bool,
    handed: Handed,
) -> Result<(), PlanError> {
    if !is_external(agent) {
        return Ok(());
    }
    let adapter = adapter(agent);
    let structured = structured && !(handed.schemas && adapter.is_some_and(AdapterId::enforces_schema_natively));
    let models = !takes_step_model(agent, handed);
    let mut unsupported = Vec::new();
    if models && child.fields.model.is_some() {
        unsupported.push("model override");
    }
    if models && child.fields.thinking.is_some() {
        unsupported.push("thinking override");
    }
    if structured {
        unsupported.push("structured output");
    }
    if unsupported.is_empty() {
        return Ok(());
    }
    let (code, at, hint) = if structured {
        let at = match child.fields.output_schema {
            Some(_) => child.field_path("outputSchema"),
            None => format!("the outputSchema of agent '{}'", agent.name),
        };
        (ErrorCode::StructuredOutputUnsupported, at, schema_hint(adapter, handed))
    } else {
        let at = ["model", "thinking"]
            .into_iter()
            .zip([child.fields.model.is_some(), child.fields.thinking.is_some()])
            .filter(|(_, given)| *given)
            .map(|(field, _)| child.field_path(field))
            .collect::<Vec<_>>()
            .join(", ");
        (ErrorCode::RunnerOptionUnsupported, at, model_hint(adapter))
    };
    Err(PlanError::new(
        code,
        format!(
            "Agent '{}' ({}, runner.type='{}') does not support: {} ({at}). {hint}",
            agent.name,
            child.position.describe(),
            runner_type(agent).unwrap_or_default(),
            unsupported.join(", ")
        ),
    ))
}

/// What to do instead of giving an external agent a model or thinking level of the step's own.
fn model_hint(adapter: Option<AdapterId>) -> &'static str {
    match adapter {
        Some(AdapterId::Shell) => {
            "A shell step runs its task with sh, which takes no model: drop --model and --thinking (model: and thinking: in a chain file)."
        }
        Some(AdapterId::GenericCli) => {
            "A generic external-cli agent gets only its task: to hand it a model, make it a runner.type: command agent with {model} and {thinking} in its command."
        }
        Some(a) if a.takes_launch_model() => {
            "This runner does not hand models to the agent's CLI: set model: (and thinking:) in the agent's file instead."
        }
        _ => "Drop the model and thinking level of the step.",
    }
}

/// What to do instead of giving an external agent a structured step.
fn schema_hint(adapter: Option<AdapterId>, handed: Handed) -> &'static str {
    match adapter {
        Some(a) if a.enforces_schema_natively() && !handed.schemas => {
            "This runner does not hand schemas to the agent's CLI: drop outputSchema, or check the answer in a later step."
        }
        Some(AdapterId::Shell) => {
            "A shell step's output is plain text that nothing checks: drop outputSchema, or run the command through an agent with runner.type: command (its output is checked against the schema), or give the step to pi, claude or codex."
        }
        _ => {
            "Its output is not checked against a schema: drop outputSchema, or give the step to an agent whose output is (pi, claude, codex, or a runner.type: command agent)."
        }
    }
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
    fn a_shell_steps_schema_is_refused_at_its_path_with_a_way_out() {
        let request = json!({
            "cwd": "/code/repo", "mode": "chain",
            "agents": [{"name": "shell", "runner": {"type": "external-cli", "adapter": "shell"}}],
            "launch": {"nativeSchemas": true, "nativeModels": true},
            "steps": [{"agent": "shell", "task": "echo {}"},
                      {"agent": "shell", "task": "echo {}", "outputSchema": {"type": "object"}}],
        });
        let error = plan(&parse_request(request.to_string().as_bytes()).unwrap()).expect_err("refused");
        assert_eq!(error.code, ErrorCode::StructuredOutputUnsupported);
        assert!(
            error.message.contains("structured output (steps[1].outputSchema)")
                && error.message.contains("runner.type: command"),
            "{}",
            error.message
        );
        let mut request = request;
        request["steps"] = json!([{"agent": "shell", "task": "t", "model": "a/b", "thinking": "low"}]);
        let error = plan(&parse_request(request.to_string().as_bytes()).unwrap()).expect_err("refused");
        assert_eq!(error.code, ErrorCode::RunnerOptionUnsupported);
        assert!(
            error
                .message
                .contains("model override, thinking override (steps[0].model, steps[0].thinking)")
                && error.message.contains("drop --model"),
            "a shell takes no model even from a runner that hands models over: {}",
            error.message
        );
    }

    #[test]
    fn an_adapter_that_enforces_no_schema_is_still_refused_one() {
        let error = run(Some(true), json!([{"agent": "cursor", "task": "t"}])).expect_err("refused");
        assert_eq!(error.code, ErrorCode::StructuredOutputUnsupported);
        assert!(error.message.contains("'cursor'"), "{}", error.message);
    }
}
