//! Acceptance contracts through the whole pipeline (G70, G71, G73, G74): sources, precedence,
//! inference and every refusal naming its JSON path.

use crate::plan;
use serde_json::{Value, json};
use sublaunch_contract::{AcceptanceLevel, AcceptancePlan, EvidenceKind, PlanError, parse_request};

/// A chain of one step and one group of two tasks, for agents `worker` (a writer), `scout` (a
/// reader) and `plain`; `extra` is merged over the request.
fn request(extra: Value) -> Value {
    let mut base = json!({
        "cwd": "/code/repo",
        "mode": "chain",
        "agents": [
            {"name": "worker", "acceptanceRole": "writer"},
            {"name": "scout", "acceptanceRole": "read-only"},
            {"name": "plain"}
        ],
        "steps": [
            {"agent": "plain", "task": "a"},
            {"parallel": [{"agent": "worker", "task": "b"}, {"agent": "scout", "task": "c"}]}
        ]
    });
    if let (Some(base), Value::Object(extra)) = (base.as_object_mut(), extra) {
        base.extend(extra);
    }
    base
}

fn planned(request: &Value) -> Result<Vec<Option<AcceptancePlan>>, PlanError> {
    let request = parse_request(request.to_string().as_bytes())?;
    Ok(plan(&request)?.steps.into_iter().map(|s| s.acceptance).collect())
}

fn refused(request: &Value) -> String {
    match planned(request) {
        Ok(plans) => panic!("planned {plans:?}"),
        Err(e) => e.message,
    }
}

#[test]
fn g74_only_a_writer_role_infers_a_contract_and_it_is_only_shown() {
    let plans = planned(&request(json!({}))).unwrap();
    assert_eq!(plans[0], None, "no role: nothing inferred");
    let writer = plans[1].as_ref().unwrap();
    assert_eq!(writer.level, AcceptanceLevel::Checked);
    assert!(!writer.explicit && writer.report);
    assert_eq!(writer.origin, "agents[worker].acceptanceRole");
    assert!(writer.evidence.contains(&EvidenceKind::NoStagedFiles));
    assert_eq!(plans[2], None, "a reader has nothing inferred");
}

#[test]
fn g73_the_most_specific_source_decides_and_false_turns_a_wider_one_off() {
    let mut req = request(json!({"launch": {"gate": "make test"}}));
    req["steps"][1]["parallel"][0]["acceptance"] = json!(false);
    req["steps"][1]["acceptance"] = json!("attested");
    let plans = planned(&req).unwrap();
    let run = plans[0].as_ref().unwrap();
    assert_eq!(
        (run.level, run.verify[0].command.as_str()),
        (AcceptanceLevel::Verified, "make test")
    );
    assert_eq!(run.origin, "launch.gate");
    assert!(!run.report, "a gate asks for no report");
    assert_eq!(plans[1], None, "the task's false wins over its group's and the run's");
    let group = plans[2].as_ref().unwrap();
    assert_eq!(
        (group.level, group.origin.as_str()),
        (AcceptanceLevel::Attested, "steps[1].acceptance")
    );
    assert!(group.explicit && group.report);
}

#[test]
fn g71_an_object_is_checked_field_by_field() {
    let mut req = request(json!({}));
    req["steps"][0]["acceptance"] = json!({
        "criteria": ["fix the bug", {"id": "scope", "must": "touch nothing else"}],
        "evidence": ["changed-files", "tests-added", "changed-files"],
        "verify": ["cargo test", {"id": "lint", "command": "cargo clippy", "timeout": "2m"}]
    });
    let plan = planned(&req).unwrap().remove(0).unwrap();
    assert_eq!(
        plan.level,
        AcceptanceLevel::Verified,
        "verify commands make it verified"
    );
    assert_eq!(plan.criteria[0].id, "c1");
    assert_eq!(plan.criteria[1].id, "scope");
    assert_eq!(
        plan.evidence,
        vec![EvidenceKind::ChangedFiles, EvidenceKind::TestsAdded]
    );
    assert_eq!(plan.verify[0].id, "verify-1");
    assert_eq!(
        (plan.verify[1].id.as_str(), plan.verify[1].timeout_ms),
        ("lint", Some(120_000))
    );
}

#[test]
fn g71_meaningless_and_contradictory_contracts_are_refused_at_their_path() {
    let cases = [
        (json!("none"), "steps[0].acceptance", "reason"),
        (json!(true), "steps[0].acceptance", "true is not a contract"),
        (json!("verified"), "steps[0].acceptance", "verify"),
        (json!("reviewed"), "steps[0].acceptance", "not a level"),
        (json!("strict"), "steps[0].acceptance", "not a level"),
        (json!({"level": "none"}), "steps[0].acceptance.reason", "why"),
        (
            json!({"level": "none", "reason": "docs only", "evidence": ["diff-summary"]}),
            "steps[0].acceptance.level",
            "asks for nothing",
        ),
        (
            json!({"level": "checked", "verify": ["x"]}),
            "steps[0].acceptance.level",
            "verified",
        ),
        (
            json!({"level": "verified"}),
            "steps[0].acceptance.verify",
            "at least one",
        ),
        (
            json!({"evidence": ["tests"]}),
            "steps[0].acceptance.evidence[0]",
            "changed-files",
        ),
        (
            json!({"verify": [{"command": "a"}, {"command": "b", "id": "verify-1"}]}),
            "steps[0].acceptance.verify[1].id",
            "twice",
        ),
        (
            json!({"verify": [{"command": ""}]}),
            "steps[0].acceptance.verify[0]",
            "empty",
        ),
        (
            json!({"verify": [{"command": "a", "timeout": "soon"}]}),
            "steps[0].acceptance.verify[0].timeout",
            "duration",
        ),
        (
            json!({"criteria": [{"must": ""}]}),
            "steps[0].acceptance.criteria[0]",
            "what must hold",
        ),
        (
            json!({"levle": "checked"}),
            "steps[0].acceptance.levle",
            "unknown field",
        ),
        (json!(3), "steps[0].acceptance", "a number"),
    ];
    for (acceptance, at, says) in cases {
        let mut req = request(json!({}));
        req["steps"][0]["acceptance"] = acceptance.clone();
        let message = refused(&req);
        assert!(message.contains(&format!("at {at}:")), "{acceptance}: {message}");
        assert!(message.contains(says), "{acceptance}: {message}");
    }
}

#[test]
fn g70_a_gate_is_the_whole_contract() {
    let mut req = request(json!({}));
    req["steps"][0]["gate"] = json!("npm test");
    req["steps"][0]["acceptance"] = json!("checked");
    assert!(refused(&req).contains("at steps[0].gate: a gate is the whole acceptance contract"));
    req["steps"][0]["acceptance"] = json!(false);
    let plan = planned(&req).unwrap().remove(0).unwrap();
    assert_eq!(
        (plan.verify[0].id.as_str(), plan.level),
        ("gate", AcceptanceLevel::Verified)
    );
    req["steps"][0]["gate"] = json!({"command": "npm test", "output": "json", "schema": {"type": "object"}});
    let plan = planned(&req).unwrap().remove(0).unwrap();
    assert!(plan.verify[0].json && plan.verify[0].schema.is_some(), "{plan:?}");
    req["steps"][0]["gate"] = json!({"command": "npm test", "output": "text"});
    assert!(refused(&req).contains("at steps[0].gate.output:"));
    req["steps"][0]["gate"] = json!({"command": "npm test", "schema": {"type": "object"}});
    assert!(refused(&req).contains("add output"));
    req["steps"][0]["gate"] = json!({"command": "npm test", "output": "json", "schema": {"type": 7}});
    assert!(refused(&req).contains("at steps[0].gate.schema"));
    req["steps"][0]["gate"] = json!({"command": "npm test", "output": "json"});
    req["steps"][0]["outputSchema"] = json!({"type": "object"});
    assert!(refused(&req).contains("gives the step its structured value"));
    req["steps"][0].as_object_mut().unwrap().remove("outputSchema");
    req["steps"][0]["gate"] = json!({"command": "  "});
    assert!(refused(&req).contains("at steps[0].gate: the command is empty"));
}

#[test]
fn g74_a_role_that_is_not_one_is_refused_naming_the_agent() {
    let mut req = request(json!({}));
    req["agents"][2]["acceptanceRole"] = json!("boss");
    assert!(refused(&req).contains("at agents[plain].acceptanceRole: 'boss' is not a role"));
}

#[test]
fn a_placed_step_can_only_be_attested() {
    let req = json!({
        "cwd": "/code/repo",
        "mode": "single",
        "agents": [{"name": "worker"}],
        "machineCatalog": json!([{"id": "gpu", "label": "gpu", "target": "gpu-box"}]).to_string(),
        "steps": [{"agent": "worker", "task": "t", "machine": "gpu", "cwd": "/srv/repo", "gate": "make"}]
    });
    let message = refused(&req);
    assert!(message.contains("placed on another machine"), "{message}");
}

#[test]
fn requests_without_acceptance_plan_as_before() {
    let req = json!({
        "cwd": "/code/repo",
        "mode": "single",
        "agents": [{"name": "plain"}],
        "steps": [{"agent": "plain", "task": "t"}]
    });
    let request = parse_request(req.to_string().as_bytes()).unwrap();
    let text = sublaunch_contract::render(&plan(&request));
    assert!(!text.contains("acceptance"), "{text}");
}

/// G81: a review names an agent of the catalogue; its own fields, its level and the agent's
/// runner are checked, each refusal naming its path.
#[test]
fn g81_a_review_is_checked_field_by_field() {
    let cases = [
        (
            json!({"review": {"agnt": "scout"}}),
            "steps[1].acceptance.review.agnt",
            "unknown field",
        ),
        (
            json!({"review": {}}),
            "steps[1].acceptance.review.agent",
            "names the agent",
        ),
        (
            json!({"review": {"agent": " "}}),
            "steps[1].acceptance.review.agent",
            "an empty text",
        ),
        (
            json!({"review": {"agent": 3}}),
            "steps[1].acceptance.review.agent",
            "a number",
        ),
        (
            json!({"review": {"agent": "scout", "required": "yes"}}),
            "steps[1].acceptance.review.required",
            "true or false",
        ),
        (json!({"review": "scout"}), "steps[1].acceptance.review", "a text"),
        (
            json!({"level": "attested", "review": {"agent": "scout"}}),
            "steps[1].acceptance.review",
            "raise it to checked",
        ),
        (
            json!({"level": "none", "reason": "docs", "review": {"agent": "scout"}}),
            "steps[1].acceptance.review",
            "the level is none",
        ),
        (
            json!({"review": {"agent": "shell"}}),
            "steps[1].acceptance.review.agent",
            "shell script",
        ),
    ];
    for (acceptance, at, says) in cases {
        let mut req = request(json!({}));
        req["agents"]
            .as_array_mut()
            .unwrap()
            .push(json!({"name": "shell", "runner": {"type": "external-cli", "adapter": "shell"}}));
        req["steps"][1]["acceptance"] = acceptance.clone();
        let message = refused(&req);
        assert!(message.contains(&format!("at {at}")), "{acceptance}: {message}");
        assert!(message.contains(says), "{acceptance}: {message}");
    }
    let mut req = request(json!({}));
    req["steps"][0]["acceptance"] = json!({"review": {"agent": "scot"}});
    let request = parse_request(req.to_string().as_bytes()).unwrap();
    let error = plan(&request).unwrap_err();
    assert_eq!(error.code, sublaunch_contract::ErrorCode::UnknownAgent);
    assert!(
        error.message.contains("at steps[0].acceptance.review.agent") && error.message.contains("Did you mean 'scout'"),
        "{}",
        error.message
    );
}

/// G81: the reviewer is planned as a child in its child's place (its agent's own model,
/// the child's directory, no task, no contract), marked with the child it reviews; the
/// review defaults to required, and plans without one have no reviewers.
#[test]
fn g81_the_reviewer_is_planned_as_a_child_of_its_own() {
    let mut req = request(json!({}));
    req["agents"][1]["model"] = json!("openai/gpt-5");
    req["steps"][1]["parallel"][0]["acceptance"] = json!({"review": {"agent": "scout"}});
    req["steps"][1]["parallel"][0]["cwd"] = json!("sub");
    req["steps"][0]["acceptance"] = json!({"level": "checked", "review": {"agent": "plain", "required": false}});
    let request = parse_request(req.to_string().as_bytes()).unwrap();
    let planned = plan(&request).unwrap();
    assert_eq!(planned.steps.len(), 3, "a reviewer is no step of the workflow");
    let review = planned.steps[1].acceptance.as_ref().unwrap().review.as_ref().unwrap();
    assert_eq!((review.agent.as_str(), review.required), ("scout", true));
    let first = planned.steps[0].acceptance.as_ref().unwrap().review.as_ref().unwrap();
    assert!(!first.required);
    let reviewers: Vec<(u32, &str)> = planned
        .reviewers
        .iter()
        .map(|r| (r.review_of, r.step.agent.as_str()))
        .collect();
    assert_eq!(reviewers, [(0, "plain"), (1, "scout")]);
    let scout = &planned.reviewers[1].step;
    assert_eq!(scout.cwd, planned.steps[1].cwd, "it runs where its child does");
    assert_eq!(scout.cwd, "/code/repo/sub");
    assert_eq!((scout.step_index, scout.task_index), (1, Some(0)));
    assert_eq!(scout.task, "");
    assert!(scout.acceptance.is_none() && !scout.structured);
    assert!(scout.model.as_deref().is_some_and(|m| m.contains("gpt-5")), "{scout:?}");

    let plain = parse_request(request_json_without_review().to_string().as_bytes()).unwrap();
    let text = sublaunch_contract::render(&plan(&plain));
    assert!(!text.contains("reviewers"), "{text}");
}

fn request_json_without_review() -> Value {
    request(json!({}))
}

#[test]
fn g81_a_placed_step_cannot_be_reviewed() {
    let req = json!({
        "cwd": "/code/repo",
        "mode": "single",
        "agents": [{"name": "worker"}, {"name": "critic"}],
        "machineCatalog": json!([{"id": "gpu", "label": "gpu", "target": "gpu-box"}]).to_string(),
        "steps": [{"agent": "worker", "task": "t", "machine": "gpu", "cwd": "/srv/repo",
                   "acceptance": {"review": {"agent": "critic"}}}]
    });
    let message = refused(&req);
    assert!(
        message.contains("at steps[0].acceptance.review: a step placed on another machine cannot be reviewed"),
        "{message}"
    );
}
