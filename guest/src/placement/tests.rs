//! Placement through the whole pipeline: precedence (P15, L10), laziness (P16) and hostile
//! inputs. Each test names the rules it checks.

use crate::plan;
use serde_json::{Value, json};
use sublaunch_contract::{ErrorCode, LaunchPlan, MachineRef, PlanError, parse_request};

fn catalog() -> Value {
    json!([
        {"id": "w-id", "label": "workmac", "target": "100.82.67.118", "session": "default", "enabled": true},
        {"id": "gpu-id", "label": "gpu", "target": " me@gpu-box ", "session": "work"},
        {"id": "bad-id", "label": "bad", "target": "-oProxyCommand=evil"},
        {"id": "off-id", "label": "off", "target": "off.example", "enabled": false}
    ])
}

/// A single-mode request for agent `claude` (claude-code adapter) with the standard catalog;
/// `extra` is merged over it.
fn request(extra: Value) -> Value {
    let mut base = json!({
        "cwd": "/code/repo",
        "mode": "single",
        "agents": [
            {"name": "claude", "runner": {"type": "external-cli", "adapter": "claude-code"}},
            {"name": "worker"},
            {"name": "job", "runner": {"type": "external-job"}}
        ],
        "machineCatalog": catalog().to_string(),
        "steps": [{"agent": "claude", "task": "t"}]
    });
    if let (Some(base), Value::Object(extra)) = (base.as_object_mut(), extra) {
        base.extend(extra);
    }
    base
}

fn settings(machines: Value) -> Value {
    json!({"user": {"subagents": {"machines": machines}}})
}

fn run(request: Value) -> Result<LaunchPlan, PlanError> {
    plan(&parse_request(request.to_string().as_bytes())?)
}

fn placed(request: Value) -> MachineRef {
    let plan = run(request).expect("a plan");
    plan.steps
        .into_iter()
        .next()
        .and_then(|step| step.machine)
        .expect("placed")
}

fn refused(request: Value, code: ErrorCode, fragments: &[&str]) {
    let error = run(request).expect_err("an error");
    assert_eq!(error.code, code, "{}", error.message);
    for fragment in fragments {
        assert!(
            error.message.contains(fragment),
            "{:?} lacks {fragment:?}",
            error.message
        );
    }
}

#[test]
fn p14_reference_drops_the_default_session_and_keeps_a_named_one() {
    let machine = placed(request(json!({"launch": {"machine": "workmac", "cwd": "/w"}})));
    assert_eq!(
        machine,
        MachineRef {
            provider: "herdr".into(),
            id: "w-id".into(),
            label: Some("workmac".into()),
            target: "100.82.67.118".into(),
            session: None,
            cwd: "/w".into(),
        }
    );
    let machine = placed(request(json!({"launch": {"machine": " gpu ", "cwd": "~/g/"}})));
    assert_eq!(
        (
            machine.session.as_deref(),
            machine.target.as_str(),
            machine.cwd.as_str()
        ),
        (Some("work"), "me@gpu-box", "~/g")
    );
}

#[test]
fn p1_p_i1_empty_string_machine_is_placed_and_refused() {
    refused(
        request(
            json!({"steps": [{"agent": "claude", "task": "t", "machine": ""}], "agents": [{"name": "claude", "machine": "workmac"}]}),
        ),
        ErrorCode::InvalidMachineName,
        &["required"],
    );
}

#[test]
fn p2_gate_wins_over_selector_and_catalog_errors() {
    let job = |machine: &str, catalog: &str| {
        request(json!({"steps": [{"agent": "job", "task": "t", "machine": machine}], "machineCatalog": catalog}))
    };
    refused(
        job("   ", "[]"),
        ErrorCode::MachineRunnerUnsupported,
        &["'job'", "'   '", "external-job"],
    );
    refused(
        job("workmac", "garbage{"),
        ErrorCode::MachineRunnerUnsupported,
        &["external-job"],
    );
}

#[test]
fn p3_names_of_128_units_pass_p3_and_129_are_refused() {
    let name128 = "n".repeat(128);
    refused(
        request(json!({"launch": {"machine": name128}})),
        ErrorCode::MachineNotFound,
        &["not found"],
    );
    let label_catalog = json!([{"id": "x", "label": name128, "target": "h"}]).to_string();
    let machine = placed(request(
        json!({"launch": {"machine": name128, "cwd": "/x"}, "machineCatalog": label_catalog}),
    ));
    assert_eq!(machine.label.as_deref(), Some(name128.as_str()));
    refused(
        request(json!({"launch": {"machine": "n".repeat(129)}})),
        ErrorCode::InvalidMachineName,
        &["128"],
    );
}

#[test]
fn p3_comes_before_the_catalog() {
    refused(
        request(json!({"launch": {"machine": "a\u{1}"}, "machineCatalog": "not json"})),
        ErrorCode::InvalidMachineName,
        &["control characters"],
    );
}

#[test]
fn p4_catalog_problems_are_reported_when_a_child_is_placed() {
    let with = |catalog: Value| request(json!({"launch": {"machine": "workmac"}, "machineCatalog": catalog}));
    refused(
        with(json!("not json")),
        ErrorCode::InvalidMachineCatalog,
        &["catalog", "parse"],
    );
    refused(
        with(json!("{\"machines\": 3}")),
        ErrorCode::InvalidMachineCatalog,
        &["catalog", "no machine list"],
    );
    refused(
        with(json!(["not", "text"])),
        ErrorCode::InvalidMachineCatalog,
        &["catalog"],
    );
    refused(with(Value::Null), ErrorCode::InvalidMachineCatalog, &["catalog"]);
}

#[test]
fn p16_nothing_placed_means_catalog_and_settings_are_never_read() {
    let plan = run(request(
        json!({"machineCatalog": "garbage{", "machineSettings": {"user": {"subagents": {"machines": []}}}}),
    ))
    .expect("a plan");
    assert_eq!(plan.steps[0].machine, None);
    let plan = run(request(json!({"machineCatalog": 42}))).expect("a plan");
    assert_eq!(plan.steps[0].cwd, "/code/repo");
}

#[test]
fn p15_selection_errors_come_before_settings_errors() {
    let broken = json!({"user": {"subagents": {"machines": []}}});
    refused(
        request(json!({"launch": {"machine": "nope"}, "machineSettings": broken})),
        ErrorCode::MachineNotFound,
        &["'nope'"],
    );
    refused(
        request(json!({"launch": {"machine": "off"}, "machineSettings": broken})),
        ErrorCode::MachineDisabled,
        &["off-id"],
    );
}

#[test]
fn p15_settings_are_validated_even_for_an_absolute_cwd() {
    refused(
        request(
            json!({"launch": {"machine": "workmac", "cwd": "/abs"}, "machineSettings": settings(json!({"workmac": {"cwd": "rel"}}))}),
        ),
        ErrorCode::InvalidMachineSettings,
        &["User settings", "'machines.workmac.cwd'", "absolute"],
    );
}

#[test]
fn q2_p15_missing_root_is_reported_before_an_unsafe_target() {
    refused(
        request(json!({"launch": {"machine": "bad"}})),
        ErrorCode::MachineNoRoot,
        &["subagents.machines.bad.cwd"],
    );
    refused(
        request(json!({"launch": {"machine": "bad", "cwd": "/x"}})),
        ErrorCode::UnsafeSshTarget,
        &["'bad'", "\"-oProxyCommand=evil\""],
    );
}

#[test]
fn p15_unsafe_target_is_reported_before_cwd_validation() {
    refused(
        request(json!({"launch": {"machine": "bad", "cwd": "/a\u{1}"}})),
        ErrorCode::UnsafeSshTarget,
        &["'bad'"],
    );
}

#[test]
fn p13_hostile_targets_never_reach_a_plan() {
    for target in [
        "-oProxyCommand=sh -c 'x'",
        "a b",
        "host\u{0}",
        "\u{1B}]0;x\u{7}",
        "",
        "   ",
        "-",
    ] {
        let catalog = json!([{"id": "m", "target": target}]).to_string();
        refused(
            request(json!({"launch": {"machine": "m", "cwd": "/x"}, "machineCatalog": catalog})),
            ErrorCode::UnsafeSshTarget,
            &["'m'", &crate::jsstr::json_quote(crate::jsstr::trim(target))],
        );
    }
}

#[test]
fn p12_hostile_cwds_are_refused_or_kept_under_the_root() {
    let with_root = |cwd: &str| {
        request(
            json!({"launch": {"machine": "workmac", "cwd": cwd}, "machineSettings": settings(json!({"workmac": {"cwd": "~/proj"}}))}),
        )
    };
    refused(
        with_root("../.."),
        ErrorCode::InvalidRemoteCwd,
        &["'workmac'", "absolute", "\".\""],
    );
    refused(
        with_root("x\u{1B}y"),
        ErrorCode::InvalidRemoteCwd,
        &["'workmac'", "control characters"],
    );
    assert_eq!(placed(with_root("~user/x")).cwd, "~/proj/~user/x", "Q6");
    assert_eq!(placed(with_root("../other")).cwd, "~/other", "Q3");
}

#[test]
fn p_i2_machine_labelled_like_an_object_prototype_member() {
    for label in ["constructor", "__proto__", "toString"] {
        let catalog = json!([{"id": "pid", "label": label, "target": "h"}]).to_string();
        let base = json!({"launch": {"machine": label}, "machineCatalog": catalog});
        let mut without_entry = base.clone();
        without_entry["machineSettings"] = settings(json!({"other": {"cwd": "/o"}}));
        refused(
            request(without_entry),
            ErrorCode::MachineNoRoot,
            &[&format!("subagents.machines.{label}.cwd")],
        );
        let mut own_entry = base;
        own_entry["machineSettings"] = json!({"user": serde_json::from_str::<Value>(&format!(
            r#"{{"subagents": {{"machines": {{"{label}": {{"cwd": "/own"}}}}}}}}"#
        )).expect("json")});
        assert_eq!(placed(request(own_entry)).cwd, "/own");
    }
}

#[test]
fn l10_the_first_failing_child_decides() {
    let chain = request(json!({
        "mode": "chain",
        "steps": [
            {"agent": "worker", "task": "t", "machine": "nope"},
            {"agent": "job", "task": "t", "machine": "workmac"}
        ]
    }));
    refused(chain, ErrorCode::MachineNotFound, &["'nope'", "step 1"]);
}

#[test]
fn s4_runs_after_placement() {
    let schema = json!({"type": "object"});
    refused(
        request(
            json!({"launch": {"machine": "nope"}, "steps": [{"agent": "claude", "task": "t", "outputSchema": schema}]}),
        ),
        ErrorCode::MachineNotFound,
        &["'nope'"],
    );
}

#[test]
fn p4_p16_a_huge_catalog_is_parsed_once_and_stays_fast() {
    let machines: Vec<Value> = (0..100_000)
        .map(|i| json!({"id": format!("id-{i}"), "label": format!("m{i}"), "target": format!("h{i}")}))
        .collect();
    let steps: Vec<Value> = (0..2_000)
        .map(|i| json!({"agent": "worker", "task": "t", "cwd": "/srv", "machine": format!("m{}", i * 50)}))
        .collect();
    let started = std::time::Instant::now();
    let plan = run(request(json!({
        "mode": "chain",
        "steps": steps,
        "machineCatalog": Value::Array(machines).to_string(),
    })))
    .expect("a plan");
    assert_eq!(plan.steps.len(), 2_000);
    assert_eq!(
        plan.steps[1_999].machine.as_ref().map(|m| m.target.as_str()),
        Some("h99950")
    );
    assert!(started.elapsed().as_secs() < 10, "took {:?}", started.elapsed());
}
