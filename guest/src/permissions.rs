//! The permission contract per child: the most restrictive of the settings', the run's, the
//! agent's, its group's and its own layer (rules G1–G4), and the gate that refuses what the
//! agent's CLI cannot enforce before anything is launched (rule G5). Nothing is dropped: a
//! field is either mapped to the CLI's own control by the runner or refused here.

use crate::ceilings::Parent;
use crate::children::Child;
use crate::runner::adapter;
use sublaunch_contract::permissions::combine;
use sublaunch_contract::{
    Agent, ErrorCode, LaunchOptions, PermissionMode, Permissions, PlanError, ResolvedPermissions, Rule, SandboxPlan,
    SandboxProfile,
};

/// One layer and where it was given, for messages.
struct Layer<'r> {
    /// How messages name it: `agent 'x'`, `steps[1]`, `the run`, `the settings`.
    origin: String,
    /// The JSON path of the layer, for malformed fields.
    path: String,
    permissions: &'r Permissions,
}

/// The child's layers, lowest first.
fn layers<'r>(
    child: &Child<'r>,
    agent: &'r Agent,
    launch: Option<&'r LaunchOptions>,
    parents: &'r [Parent<'r>],
) -> Vec<Layer<'r>> {
    let mut layers = Vec::new();
    let mut push = |origin: String, path: String, permissions: Option<&'r Permissions>| {
        if let Some(permissions) = permissions {
            layers.push(Layer {
                origin,
                path,
                permissions,
            });
        }
    };
    // G13: the user's settings and the project's are separate layers, so a project narrows.
    for (i, settings) in launch
        .and_then(|l| l.settings_permissions.as_ref())
        .into_iter()
        .flatten()
        .enumerate()
    {
        push(
            "the settings".into(),
            format!("launch.settingsPermissions[{i}]"),
            Some(settings),
        );
    }
    // G62: what a parent run allows is a layer, so the defaults below narrow to it.
    for parent in parents {
        push(
            parent.source().to_owned(),
            parent.source().to_owned(),
            parent.permissions.as_ref(),
        );
    }
    push(
        "the run".into(),
        "launch.permissions".into(),
        launch.and_then(|l| l.permissions.as_ref()),
    );
    push(
        format!("agent '{}'", agent.name),
        format!("agents[{}].permissions", agent.name),
        agent.permissions.as_ref(),
    );
    if let Some(group) = child.group_permissions {
        let path = format!("steps[{}]", child.position.step_index());
        push(path.clone(), format!("{path}.permissions"), Some(group));
    }
    push(
        child.path.clone(),
        child.field_path("permissions"),
        child.fields.permissions,
    );
    layers
}

/// Refuses a malformed tool name or rule, naming where it was given.
fn check_layer(layer: &Layer<'_>) -> Result<(), PlanError> {
    let p = layer.permissions;
    if let Some((field, error)) = p.bad_rules().next() {
        return Err(PlanError::invalid_request(format!(
            "Invalid request at {}.{field}: {error}.",
            layer.path
        )));
    }
    for (field, tools) in [("tools", &p.tools), ("excludeTools", &p.exclude_tools)] {
        for tool in tools.iter().flatten() {
            if !Rule::parse(tool).is_ok_and(|r| r.pattern.is_none()) {
                return Err(PlanError::invalid_request(format!(
                    "Invalid request at {}.{field}: '{tool}' is not a tool name; list each tool as its own item (Read, Bash), patterns belong in allow and deny rules.",
                    layer.path
                )));
            }
        }
    }
    Ok(())
}

/// The permissions the child runs with: `None` when no layer says anything (the adapter's
/// defaults hold). A read-only or plan step never has its CLI's writing tools: they are
/// taken out of its tool list (with a warning naming them) and excluded.
pub fn resolve(
    child: &Child<'_>,
    agent: &Agent,
    launch: Option<&LaunchOptions>,
    parents: &[Parent<'_>],
    sandbox: Option<&SandboxPlan>,
    warnings: &mut Vec<String>,
) -> Result<Option<ResolvedPermissions>, PlanError> {
    let layers = layers(child, agent, launch, parents);
    for layer in &layers {
        check_layer(layer)?;
    }
    if layers.iter().all(|l| l.permissions.is_empty()) {
        return Ok(None);
    }
    let combined = combine(adapter(agent), layers.iter().map(|l| l.permissions));
    let resolved = combined.permissions;
    if !combined.withheld.is_empty() {
        warnings.push(format!(
            "Agent '{}' ({}) runs {}, so it does not get {}, which its tools list.",
            agent.name,
            child.position.describe(),
            resolved.mode,
            combined.withheld.join(", ")
        ));
    }
    // An allow rule for a tool the step never has does nothing (the exclusion wins): say so,
    // rather than let it look like a permission.
    let idle: Vec<&str> = resolved
        .allow
        .iter()
        .filter(|rule| {
            Rule::parse(rule).is_ok_and(|r| resolved.exclude_tools.iter().any(|t| t.eq_ignore_ascii_case(r.tool)))
        })
        .map(String::as_str)
        .collect();
    if !idle.is_empty() {
        warnings.push(format!(
            "Agent '{}' ({}) does not have the tools of its allow rules {}: they have no effect.",
            agent.name,
            child.position.describe(),
            idle.join(", ")
        ));
    }
    check_enforceable(child, agent, &layers, &resolved, sandbox)?;
    Ok(Some(resolved))
}

/// Refuses a resolved field the agent's CLI cannot enforce (rule G5), naming the agent, the
/// field, the layers that gave it and what to do instead.
fn check_enforceable(
    child: &Child<'_>,
    agent: &Agent,
    layers: &[Layer<'_>],
    resolved: &ResolvedPermissions,
    sandbox: Option<&SandboxPlan>,
) -> Result<(), PlanError> {
    let Some(adapter) = adapter(agent) else {
        return Ok(());
    };
    let can = adapter.permission_support();
    let given_by = |set: fn(&Permissions) -> bool| -> String {
        let origins: Vec<&str> = layers
            .iter()
            .filter(|l| set(l.permissions))
            .map(|l| l.origin.as_str())
            .collect();
        if origins.is_empty() {
            format!("agent '{}' (its adapter {adapter})", agent.name)
        } else {
            origins.join(", ")
        }
    };
    let (field, origin, fix) = if resolved.tools.is_some() && !can.tools {
        (
            "tools",
            given_by(|p| p.tools.is_some()),
            "remove `tools` there, or give the step to an agent whose CLI can restrict tools (claude-code, pi)",
        )
    } else if !resolved.exclude_tools.is_empty() && !can.exclude_tools {
        (
            "excludeTools",
            given_by(|p| p.exclude_tools.as_ref().is_some_and(|t| !t.is_empty())),
            "remove `excludeTools` there, or give the step to an agent whose CLI can exclude tools (claude-code, pi)",
        )
    } else if (!resolved.allow.is_empty() || !resolved.deny.is_empty()) && !can.rules {
        let field = if resolved.deny.is_empty() { "allow" } else { "deny" };
        let fix = if can.tools {
            "its CLI takes no permission rules or argument patterns: remove the rules there and list bare tool names in `tools` or `excludeTools` instead"
        } else {
            "its CLI takes no permission rules or argument patterns: remove them there, or give the step to a claude-code agent"
        };
        (
            field,
            given_by(|p| {
                p.allow.as_ref().is_some_and(|r| !r.is_empty()) || p.deny.as_ref().is_some_and(|r| !r.is_empty())
            }),
            fix,
        )
    } else if !can.enforces_mode(resolved.mode) && !sandbox_keeps_read_only(sandbox, resolved.mode) {
        let fix = match resolved.mode {
            PermissionMode::Plan if can.enforces_mode(PermissionMode::ReadOnly) => {
                "its CLI has no plan mode: use `mode: read-only` instead"
            }
            _ => {
                "its CLI cannot keep the agent from changing files: remove the mode there, or run the step in an OS sandbox (`--sandbox read-only`)"
            }
        };
        (
            "mode",
            given_by(|p| p.mode.is_some_and(|m| m < PermissionMode::Writer)),
            fix,
        )
    } else {
        return Ok(());
    };
    let value = match field {
        "mode" => format!("mode {}", resolved.mode),
        other => format!("`{other}`"),
    };
    Err(PlanError::new(
        ErrorCode::RunnerOptionUnsupported,
        format!(
            "Agent '{}' ({}, adapter {adapter}) cannot enforce {value} (given by {origin}): {fix}.",
            agent.name,
            child.position.describe(),
        ),
    ))
}

/// Whether a read-only or plan mode is kept by the OS sandbox alone (the step cannot write
/// its directory), for CLIs that cannot keep it themselves (G5, G20).
fn sandbox_keeps_read_only(sandbox: Option<&SandboxPlan>, mode: PermissionMode) -> bool {
    mode < PermissionMode::Writer && sandbox.is_some_and(|s| s.profile == SandboxProfile::ReadOnly)
}

#[cfg(test)]
mod tests {
    use crate::plan;
    use serde_json::{Value, json};
    use sublaunch_contract::{ErrorCode, LaunchPlan, PlanError, parse_request};

    fn agent(name: &str, adapter: &str, permissions: Value) -> Value {
        let runner = match adapter {
            "pi" => json!({"type": "native"}),
            "command" => json!({"type": "command"}),
            other => json!({"type": "external-cli", "adapter": other}),
        };
        json!({"name": name, "runner": runner, "permissions": permissions})
    }

    fn run(agents: Value, steps: Value, launch: Value) -> Result<LaunchPlan, PlanError> {
        let request = json!({"cwd": "/code/repo", "mode": "chain", "agents": agents, "steps": steps,
                             "launch": launch});
        plan(&parse_request(request.to_string().as_bytes())?)
    }

    fn resolved(plan: &LaunchPlan, index: usize) -> Value {
        serde_json::to_value(&plan.steps[index].permissions).unwrap()
    }

    #[test]
    fn layers_combine_to_the_most_restrictive() {
        // G1, G2, G3: tools intersect, exclusions and deny union, allow where every listing
        // layer agrees, the lowest mode, nested off when any layer says so.
        let agents = json!([agent(
            "w",
            "claude-code-writer",
            json!({
            "tools": ["Read", "Grep", "Bash", "Edit"], "excludeTools": ["WebFetch"],
            "allow": ["Bash(git *)", "Bash(ls *)"], "deny": ["Bash(rm *)"]})
        )]);
        let steps = json!([
            {"agent": "w", "task": "t", "permissions": {"tools": ["Read", "Bash", "Edit", "Write"],
                "allow": ["Bash(git *)"], "deny": ["Read(./.env)"]}},
            {"parallel": [{"agent": "w", "task": "t", "permissions": {"mode": "plan"}}],
             "permissions": {"nested": false}},
        ]);
        let launch = json!({"permissions": {"excludeTools": ["Edit"], "mode": "writer"},
                            "settingsPermissions": [{"deny": ["Bash(curl *)"]}]});
        let plan = run(agents, steps, launch).expect("planned");
        assert_eq!(
            resolved(&plan, 0),
            json!({"tools": ["Read", "Bash"], "excludeTools": ["Edit", "WebFetch"],
                   "allow": ["Bash(git *)"], "deny": ["Bash(curl *)", "Bash(rm *)", "Read(./.env)"],
                   "mode": "writer", "nested": true})
        );
        let task = resolved(&plan, 1);
        assert_eq!(task["mode"], "plan", "{task}");
        assert_eq!(task["nested"], false, "the group's layer counts for its tasks: {task}");
        assert_eq!(
            task["tools"],
            json!(["Read", "Grep"]),
            "plan mode has no writing tools: {task}"
        );
        assert_eq!(
            task["excludeTools"],
            json!(["Edit", "WebFetch", "Bash", "MultiEdit", "Write", "NotebookEdit"])
        );
        assert_eq!(plan.warnings.len(), 2, "{:?}", plan.warnings);
        assert!(
            plan.warnings[0].contains("does not get Bash, Edit"),
            "{:?}",
            plan.warnings
        );
        assert!(
            plan.warnings[1].contains("allow rules Bash(git *), Bash(ls *): they have no effect"),
            "{:?}",
            plan.warnings
        );
    }

    #[test]
    fn a_read_only_agents_writing_tools_are_taken_out_with_a_warning() {
        // G4.
        // The issue's `tools: ["Read,Bash"]` on a read-only agent, as the host splits it.
        let agents = json!([agent("r", "claude-code", json!({"tools": ["Read", "Bash"]}))]);
        let plan = run(agents, json!([{"agent": "r", "task": "t"}]), Value::Null).expect("planned");
        let permissions = resolved(&plan, 0);
        assert_eq!(permissions["tools"], json!(["Read"]));
        let agents = json!([agent("r", "claude-code", json!({"allow": ["Bash(git *)"]}))]);
        let with_rule = run(agents, json!([{"agent": "r", "task": "t"}]), Value::Null).expect("planned");
        assert!(
            with_rule.warnings[0].contains("allow rules Bash(git *): they have no effect"),
            "{:?}",
            with_rule.warnings
        );
        assert_eq!(permissions["mode"], "read-only");
        assert!(permissions["excludeTools"].as_array().unwrap().contains(&json!("Bash")));
        assert!(plan.warnings[0].contains("runs read-only"), "{:?}", plan.warnings);
    }

    #[test]
    fn a_run_cannot_widen_a_read_only_adapter_and_nothing_said_changes_nothing() {
        let agents = json!([agent("r", "codex-exec", Value::Null)]);
        let plan = run(agents.clone(), json!([{"agent": "r", "task": "t"}]), Value::Null).expect("planned");
        assert_eq!(plan.steps[0].permissions, None, "no layer: the adapter's defaults");
        let launch = json!({"permissions": {"mode": "writer"}});
        let plan = run(agents, json!([{"agent": "r", "task": "t"}]), launch).expect("planned");
        assert_eq!(resolved(&plan, 0)["mode"], "read-only");
    }

    fn refusal(adapter: &str, permissions: Value) -> String {
        let agents = json!([agent("x", adapter, permissions)]);
        let error = run(agents, json!([{"agent": "x", "task": "t"}]), Value::Null).expect_err("refused");
        assert_eq!(error.code, ErrorCode::RunnerOptionUnsupported, "{}", error.message);
        assert!(error.message.contains("Agent 'x' (step 1"), "{}", error.message);
        error.message
    }

    #[test]
    fn what_a_cli_cannot_enforce_is_refused_naming_agent_field_and_fix() {
        // G5: adapter x field, each with the field, its source and what to do.
        let cases = [
            ("codex-exec", json!({"tools": ["shell"]}), "`tools`", "remove `tools`"),
            (
                "cursor-agent",
                json!({"excludeTools": ["x"]}),
                "`excludeTools`",
                "remove `excludeTools`",
            ),
            (
                "pi",
                json!({"deny": ["bash(rm *)"]}),
                "`deny`",
                "`tools` or `excludeTools`",
            ),
            (
                "codex-exec-writer",
                json!({"allow": ["shell(git *)"]}),
                "`allow`",
                "claude-code",
            ),
            ("cursor-agent", json!({"deny": ["Shell(git)"]}), "`deny`", "claude-code"),
            ("shell", json!({"allow": ["x"]}), "`allow`", "claude-code"),
            ("command", json!({"deny": ["x(y)"]}), "`deny`", "claude-code"),
            (
                "codex-exec",
                json!({"mode": "plan"}),
                "mode plan",
                "use `mode: read-only`",
            ),
            ("pi", json!({"mode": "plan"}), "mode plan", "use `mode: read-only`"),
            (
                "shell",
                json!({"mode": "read-only"}),
                "mode read-only",
                "--sandbox read-only",
            ),
            ("command", json!({"mode": "plan"}), "mode plan", "--sandbox read-only"),
            ("shell", json!({"tools": ["sh"]}), "`tools`", "remove `tools`"),
        ];
        for (adapter, permissions, field, fix) in cases {
            let message = refusal(adapter, permissions);
            assert!(
                message.contains(&format!("cannot enforce {field}"))
                    && message.contains("given by agent 'x'")
                    && message.contains(fix)
                    && message.contains(adapter),
                "{adapter}: {message}"
            );
        }
        for (adapter, permissions) in [
            (
                "claude-code",
                json!({"tools": ["Read"], "deny": ["Bash(rm *)"], "mode": "plan", "nested": false}),
            ),
            (
                "pi",
                json!({"tools": ["read"], "excludeTools": ["bash"], "mode": "read-only"}),
            ),
            ("codex-exec-writer", json!({"mode": "read-only"})),
            // G60: nested runs are kept from widening by the ceiling the nested launch
            // finds, whatever the CLI can hide.
            ("pi", json!({"nested": false})),
            ("codex-exec", json!({"nested": false})),
            ("cursor-agent-writer", json!({"nested": false})),
            ("cursor-agent", json!({"mode": "plan"})),
            ("shell", json!({"mode": "writer"})),
        ] {
            let agents = json!([agent("x", adapter, permissions)]);
            run(agents, json!([{"agent": "x", "task": "t"}]), Value::Null).expect(adapter);
        }
        // A read-only sandbox keeps a shell step read-only where its CLI cannot.
        let agents = json!([agent("x", "shell", json!({"mode": "read-only"}))]);
        let launch = json!({"sandbox": {"profile": "read-only"}});
        run(agents, json!([{"agent": "x", "task": "t"}]), launch).expect("sandboxed read-only shell");
    }

    #[test]
    fn a_field_from_the_run_is_refused_naming_the_run() {
        let agents = json!([
            agent("c", "claude-code", Value::Null),
            agent("x", "codex-exec", Value::Null)
        ]);
        let steps = json!([{"agent": "c", "task": "t"}, {"agent": "x", "task": "t"}]);
        let error = run(agents, steps, json!({"permissions": {"tools": ["Read"]}})).expect_err("refused");
        assert!(
            error
                .message
                .contains("Agent 'x' (step 2, adapter codex-exec) cannot enforce `tools` (given by the run)"),
            "{}",
            error.message
        );
    }

    #[test]
    fn malformed_rules_and_tool_names_name_the_rule_and_where() {
        // G7.
        let agents = json!([agent("c", "claude-code", Value::Null)]);
        let steps = json!([{"agent": "c", "task": "t", "permissions": {"deny": ["Bash(rm *"]}}]);
        let error = run(agents.clone(), steps, Value::Null).expect_err("refused");
        assert_eq!(error.code, ErrorCode::InvalidRequest);
        assert!(
            error.message.contains("steps[0].permissions.deny") && error.message.contains("'Bash(rm *'"),
            "{}",
            error.message
        );
        let steps = json!([{"agent": "c", "task": "t"}]);
        let error = run(agents, steps, json!({"permissions": {"tools": ["Read,Bash"]}})).expect_err("refused");
        assert!(
            error.message.contains("launch.permissions.tools") && error.message.contains("'Read,Bash'"),
            "{}",
            error.message
        );
    }
}
