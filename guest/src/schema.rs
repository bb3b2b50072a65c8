//! Output-schema projection (rules P-S1–P-S3, P-S6, P-S7).
//!
//! Step 1 of the pipeline (shape.rs) has already refused an override that is neither an
//! object nor `false`. Here pipeline step 3 checks every object override and every referenced
//! agent default deeply ([`keywords`]), and [`effective`] resolves a child's schema (P-S1).

mod canonical;
mod keywords;

use crate::children::Child;
use serde_json::Value;
use std::collections::BTreeSet;
use sublaunch_contract::{Agent, ErrorCode, PlanError};

/// The child's effective output schema as JSON text (rule P-S1): the override when it is an
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
/// flat order: the child's override, then its agent's default (pipeline step 3, rules P-S3,
/// P-I5). Each agent default is checked once, at the first child that references it.
pub fn validate_all(children: &[Child<'_>], agents: &[&Agent]) -> Result<(), PlanError> {
    let mut checked_agents = BTreeSet::new();
    for (child, agent) in children.iter().zip(agents) {
        if let Some(text) = child.fields.output_schema {
            validate_override(child, text)?;
        }
        if let Some(text) = &agent.output_schema
            && checked_agents.insert(agent.name.as_str())
        {
            validate_agent_default(child, agent, text)?;
        }
    }
    Ok(())
}

/// A typed gate's schema (G80), checked as an output schema is; `place` says where it is.
pub fn check_gate_schema(schema: &Value, place: &str) -> Result<(), PlanError> {
    keywords::check(schema).map_err(|problem| invalid(place, &problem))
}

/// A step or task override: `false` opts out; anything else must be a valid schema object.
fn validate_override(child: &Child<'_>, text: &str) -> Result<(), PlanError> {
    let place = format!("at {}.outputSchema", child.path);
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Bool(false)) => Ok(()),
        Ok(schema) => keywords::check(&schema).map_err(|problem| invalid(&place, &problem)),
        Err(error) => Err(unparsable(&place, &error)),
    }
}

/// An agent's default schema: present means it must be a valid schema object (`false`
/// included in what is refused).
fn validate_agent_default(child: &Child<'_>, agent: &Agent, text: &str) -> Result<(), PlanError> {
    let place = format!(
        "of agent '{}' (its default schema, first used by {})",
        agent.name, child.path
    );
    match serde_json::from_str::<Value>(text) {
        Ok(schema) => keywords::check(&schema).map_err(|problem| invalid(&place, &problem)),
        Err(error) => Err(unparsable(&place, &error)),
    }
}

/// The error for a schema problem; `place` says whose schema it is (`at steps[0].outputSchema`,
/// `of agent 'scout' …`), the problem's path where inside it.
fn invalid(place: &str, problem: &keywords::Problem) -> PlanError {
    let subject = if problem.path.is_empty() {
        "the schema"
    } else {
        problem.path.as_str()
    };
    PlanError::new(
        ErrorCode::InvalidOutputSchema,
        format!("Invalid outputSchema {place}: {subject} {}.", problem.problem),
    )
}

fn unparsable(place: &str, error: &serde_json::Error) -> PlanError {
    PlanError::new(
        ErrorCode::InvalidOutputSchema,
        format!("Invalid outputSchema {place}: the schema text is not JSON ({error})."),
    )
}

#[cfg(test)]
mod tests {
    use crate::plan;
    use serde_json::{Value, json};
    use sublaunch_contract::{Agent, ErrorCode, PlanError, parse_request};

    fn run(agents: Value, mode: &str, steps: Value) -> Result<(), PlanError> {
        let request = json!({"cwd": "/code/repo", "mode": mode, "agents": agents, "steps": steps});
        plan(&parse_request(request.to_string().as_bytes())?).map(drop)
    }

    fn refused(result: Result<(), PlanError>, fragments: &[&str]) {
        let error = result.expect_err("refused");
        assert_eq!(error.code, ErrorCode::InvalidOutputSchema, "{}", error.message);
        assert!(error.message.contains("outputSchema"));
        for fragment in fragments {
            assert!(
                error.message.contains(fragment),
                "{:?} lacks {fragment:?}",
                error.message
            );
        }
    }

    fn bad_items() -> Value {
        json!({"type": "object", "properties": {"files": {"type": "array", "items": {"type": "strin"}}}})
    }

    #[test]
    fn s3_step_override_errors_name_the_step_and_the_keyword_path() {
        let result = run(
            json!([{"name": "w"}]),
            "chain",
            json!([{"agent": "w", "task": "t", "outputSchema": bad_items()}]),
        );
        refused(result, &["steps[0]", "properties.files.items.type"]);
    }

    #[test]
    fn s3_task_override_errors_name_the_task() {
        let steps = json!([{"agent": "w", "task": "t"}, {"parallel": [{"agent": "w", "task": "t", "outputSchema": {"anyOf": []}}]}]);
        refused(
            run(json!([{"name": "w"}]), "chain", steps),
            &["steps[1].parallel[0]", "anyOf"],
        );
    }

    #[test]
    fn s3_agent_default_errors_name_the_agent() {
        let agents = json!([{"name": "scout", "outputSchema": bad_items()}]);
        refused(
            run(agents, "single", json!([{"agent": "scout", "task": "t"}])),
            &["'scout'", "properties.files.items.type"],
        );
    }

    #[test]
    fn s3_agent_default_must_be_an_object_even_false() {
        for default in [json!(false), json!(true), json!([]), json!("x"), json!(3)] {
            let agents = json!([{"name": "scout", "outputSchema": default}]);
            refused(
                run(agents, "single", json!([{"agent": "scout", "task": "t"}])),
                &["'scout'"],
            );
        }
    }

    #[test]
    fn s3_a_referenced_default_is_checked_even_when_the_step_overrides_it() {
        let agents = json!([{"name": "scout", "outputSchema": {"type": 3}}]);
        let steps = json!([{"agent": "scout", "task": "t", "outputSchema": false}]);
        refused(run(agents, "single", steps), &["'scout'", "type"]);
    }

    #[test]
    fn s3_unreferenced_agent_defaults_are_not_checked() {
        let agents = json!([{"name": "w"}, {"name": "unused", "outputSchema": false}]);
        assert_eq!(run(agents, "single", json!([{"agent": "w", "task": "t"}])), Ok(()));
    }

    #[test]
    fn s3_children_are_checked_in_flat_order_override_first() {
        let agents = json!([{"name": "a", "outputSchema": {"title": 1}}, {"name": "b"}]);
        let steps = json!([
            {"agent": "a", "task": "t", "outputSchema": {"minItems": -1}},
            {"agent": "b", "task": "t", "outputSchema": {"type": "x"}}
        ]);
        refused(run(agents.clone(), "chain", steps), &["steps[0]", "minItems"]);
        let steps = json!([{"agent": "a", "task": "t"}, {"agent": "b", "task": "t", "outputSchema": {"type": "x"}}]);
        refused(run(agents, "chain", steps), &["'a'", "title"]);
    }

    #[test]
    fn s3_runs_after_unknown_agents_and_before_placement() {
        let steps = json!([{"agent": "w", "task": "t", "machine": "m", "outputSchema": {"type": "x"}}, {"agent": "ghost", "task": "t"}]);
        let error = run(json!([{"name": "w"}]), "chain", steps).expect_err("refused");
        assert_eq!(error.code, ErrorCode::UnknownAgent);
        let steps = json!([{"agent": "w", "task": "t", "machine": "", "outputSchema": {"type": "x"}}]);
        refused(run(json!([{"name": "w"}]), "single", steps), &["steps[0]"]);
    }

    #[test]
    fn s3_schema_text_that_is_not_json_is_refused() {
        let agent = Agent {
            name: "a".into(),
            output_schema: Some("{".into()),
            ..Agent::default()
        };
        let error = super::validate_agent_default(&child(), &agent, "{").expect_err("refused");
        assert_eq!(error.code, ErrorCode::InvalidOutputSchema);
        let error = super::validate_override(&child(), "nope").expect_err("refused");
        assert!(error.message.contains("steps[0].outputSchema"));
    }

    fn child() -> crate::children::Child<'static> {
        use crate::children::{Child, ChildFields, Position};
        Child {
            position: Position::Sequential { step: 0 },
            path: "steps[0]".into(),
            fields: ChildFields {
                agent: "a",
                task: "t",
                model: None,
                thinking: None,
                machine: None,
                cwd: None,
                output_schema: None,
                ..ChildFields::default()
            },
            group_machine: None,
            worktree: false,
            group_permissions: None,
        }
    }
}
