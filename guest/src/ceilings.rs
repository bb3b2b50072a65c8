//! The ceilings of the runs a new run is launched from inside (rules G60–G66). The host finds
//! them in the parent runs' own records; here a launch that asks for more than one of them
//! allows is refused naming it, and what the launch leaves to defaults (its settings, its
//! agent, its CLI) is narrowed to it, so that no nested run is wider than its parent.

use crate::children::Child;
use crate::scope::matches;
use crate::thinking;
use sublaunch_contract::{
    Agent, Ceiling, ErrorCode, LaunchOptions, LooseString, Permissions, PlanError, PlanRequest, ResolvedPermissions,
    SandboxProfile, SandboxSetting, ThinkingLevel,
};

/// A parent run's ceiling, as the layers the planner combines.
pub struct Parent<'r> {
    ceiling: &'r Ceiling,
    /// Its permissions as one more layer, with the depth left below the new run.
    pub permissions: Option<Permissions>,
    /// Its sandbox as one more source, named after the ceiling.
    pub sandbox: Option<SandboxSetting>,
}

impl Parent<'_> {
    /// How messages name the ceiling: `run shell-ab12cd34, step 1 (agent scout)`.
    pub fn source(&self) -> &str {
        &self.ceiling.source
    }
}

/// Every ceiling of the request, after the checks that concern the whole launch: no parent
/// forbids nested runs, and none is deeper than its parent allows (G60, G61).
pub fn parents(request: &PlanRequest) -> Result<Vec<Parent<'_>>, PlanError> {
    let mut parents = Vec::new();
    for ceiling in request.ceilings.iter().flatten() {
        if let Some(p) = &ceiling.permissions {
            if !p.nested {
                return Err(above(format!(
                    "This run is launched from inside {}, which may not launch nested runs.",
                    ceiling.source
                )));
            }
            if let Some(max) = p.max_depth.filter(|&max| ceiling.depth > max) {
                return Err(above(format!(
                    "This run would be {} runs below {}, which allows nested runs {max} deep.",
                    ceiling.depth, ceiling.source
                )));
            }
        }
        if let Some(level) = &ceiling.max_thinking {
            thinking::parse_ceiling(&LooseString::Text(level.clone()), || {
                format!("the thinking ceiling of {}", ceiling.source)
            })?;
        }
        parents.push(Parent {
            ceiling,
            permissions: ceiling.permissions.as_ref().map(|p| layer(p, ceiling.depth)),
            sandbox: ceiling.sandbox.as_ref().map(|s| SandboxSetting {
                origin: Some(ceiling.source.clone()),
                ..s.clone()
            }),
        });
    }
    Ok(parents)
}

/// A parent's resolved permissions as a layer over the new run: everything it had, with the
/// depth it allowed reduced by how far below it the new run is.
fn layer(p: &ResolvedPermissions, depth: u32) -> Permissions {
    Permissions {
        tools: p.tools.clone(),
        exclude_tools: Some(p.exclude_tools.clone()),
        allow: Some(p.allow.clone()),
        deny: Some(p.deny.clone()),
        mode: Some(p.mode),
        nested: Some(p.nested),
        max_depth: p.max_depth.map(|max| max.saturating_sub(depth)),
        nested_agents: p.nested_agents.clone(),
        nested_models: p.nested_models.clone(),
    }
}

/// Refuses a child that asks, in the launch itself (the run's flags or parameters, its step,
/// group or task), for more than a parent allows (G62–G64). What the launch does not ask for
/// is narrowed by the parent's layer and sandbox source instead.
pub fn check_child(
    parents: &[Parent<'_>],
    child: &Child<'_>,
    agent: &Agent,
    launch: Option<&LaunchOptions>,
) -> Result<(), PlanError> {
    let asked: Vec<(&Permissions, String)> = [
        (launch.and_then(|l| l.permissions.as_ref()), "the run".to_owned()),
        (
            child.group_permissions,
            format!("steps[{}]", child.position.step_index()),
        ),
        (child.fields.permissions, child.path.clone()),
    ]
    .into_iter()
    .filter_map(|(p, origin)| p.map(|p| (p, origin)))
    .collect();
    let sandboxes: Vec<(&SandboxSetting, String)> = [
        (launch.and_then(|l| l.sandbox.as_ref()), "the run".to_owned()),
        (
            child.fields.group_sandbox,
            format!("steps[{}]", child.position.step_index()),
        ),
        (child.fields.sandbox, child.path.clone()),
    ]
    .into_iter()
    .filter_map(|(s, origin)| s.map(|s| (s, origin)))
    .collect();
    let who = format!("Agent '{}' ({})", agent.name, child.position.describe());
    for parent in parents {
        let source = parent.source();
        if let Some(p) = &parent.ceiling.permissions {
            if let Some(agents) = p.nested_agents.as_ref().filter(|a| !a.contains(&agent.name)) {
                return Err(above(format!(
                    "{who} may not be started from inside {source}, which allows only the agents {}.",
                    list(agents)
                )));
            }
            for (asked, origin) in &asked {
                if let Some(mode) = asked.mode.filter(|&m| m > p.mode) {
                    return Err(above(format!(
                        "{who} asks for mode {mode} (given by {origin}), but {source} allows only {}.",
                        p.mode
                    )));
                }
                if let (Some(tools), Some(allowed)) = (&asked.tools, &p.tools) {
                    let outside: Vec<&str> = tools
                        .iter()
                        .filter(|t| !allowed.iter().any(|a| a.eq_ignore_ascii_case(t)))
                        .map(String::as_str)
                        .collect();
                    if !outside.is_empty() {
                        return Err(above(format!(
                            "{who} asks for the tools {} (given by {origin}), which {source} does not have; it allows {}.",
                            outside.join(", "),
                            list(allowed)
                        )));
                    }
                }
                if asked.nested == Some(true) && !p.nested {
                    return Err(above(format!(
                        "{who} asks to launch nested runs (given by {origin}), but {source} may not."
                    )));
                }
            }
        }
        if let Some(ceiling) = &parent.ceiling.sandbox {
            let floor = profile(ceiling).unwrap_or_default();
            for (asked, origin) in &sandboxes {
                if let Some(wanted) = profile(asked).filter(|&wanted| wanted < floor) {
                    return Err(above(format!(
                        "{who} asks for the sandbox {} (given by {origin}), but {source} runs in the {} sandbox; a nested run can only be as tight or tighter.",
                        wanted.as_str(),
                        floor.as_str()
                    )));
                }
                if let (Some(wanted), Some(allowed)) = (&asked.ports, allowed_ports(ceiling)) {
                    let outside: Vec<String> = wanted
                        .iter()
                        .filter(|p| !allowed.contains(p))
                        .map(u16::to_string)
                        .collect();
                    if !outside.is_empty() {
                        return Err(above(format!(
                            "{who} asks for the ports {} (given by {origin}), which {source} may not connect to.",
                            outside.join(", ")
                        )));
                    }
                }
            }
        }
    }
    Ok(())
}

/// Refuses a model or thinking level a parent does not allow (G65), and returns the lowest
/// thinking ceiling of the parents and the child's own, which nested runs of the child inherit.
pub fn check_model(
    parents: &[Parent<'_>],
    child: &Child<'_>,
    agent: &Agent,
    model: Option<&str>,
    thinking: Option<ThinkingLevel>,
    own_ceiling: Option<ThinkingLevel>,
) -> Result<Option<ThinkingLevel>, PlanError> {
    let who = format!("Agent '{}' ({})", agent.name, child.position.describe());
    let mut lowest = own_ceiling;
    for parent in parents {
        let source = parent.source();
        if let Some(patterns) = parent
            .ceiling
            .permissions
            .as_ref()
            .and_then(|p| p.nested_models.as_ref())
        {
            // A thinking suffix (`:high`) is governed by the thinking ceiling; patterns match
            // the rest as model scopes do (G65, M16): `*` for any text, case ignored.
            let bare = model.map(|m| thinking::split_suffix(m).base);
            match bare {
                None => {
                    return Err(above(format!(
                        "{who} has no model, but {source} allows only the models {}: name one of them with --model.",
                        list(patterns)
                    )));
                }
                Some(m)
                    if !patterns
                        .iter()
                        .any(|p| matches(&p.trim().to_lowercase(), &m.to_lowercase())) =>
                {
                    return Err(above(format!(
                        "{who} would use the model {m}, but {source} allows only {}.",
                        list(patterns)
                    )));
                }
                Some(_) => {}
            }
        }
        let Some(level) = &parent.ceiling.max_thinking else {
            continue;
        };
        let level = thinking::parse_ceiling(&LooseString::Text(level.clone()), String::new)?;
        if let Some(asked) = thinking.filter(|&t| t > level) {
            return Err(PlanError::new(
                ErrorCode::ThinkingAboveCeiling,
                format!(
                    "{who} would think at {}, above {}, whose thinking is limited to {}.",
                    asked.name(),
                    source,
                    level.name()
                ),
            ));
        }
        lowest = Some(lowest.map_or(level, |l| l.min(level)));
    }
    Ok(lowest)
}

fn profile(setting: &SandboxSetting) -> Option<SandboxProfile> {
    setting.profile.as_deref().and_then(|p| SandboxProfile::parse(p.trim()))
}

/// The ports a parent's sandbox lets it connect to (`None`: any).
fn allowed_ports(setting: &SandboxSetting) -> Option<Vec<u16>> {
    if profile(setting) == Some(SandboxProfile::Offline) {
        return Some(Vec::new());
    }
    setting.ports.clone()
}

fn list(items: &[String]) -> String {
    if items.is_empty() {
        "none".to_owned()
    } else {
        items.join(", ")
    }
}

fn above(message: String) -> PlanError {
    PlanError::new(ErrorCode::AboveCeiling, message)
}

#[cfg(test)]
mod tests {
    use crate::plan;
    use serde_json::{Value, json};
    use sublaunch_contract::{ErrorCode, LaunchPlan, PlanError, parse_request};

    const SOURCE: &str = "run shell-ab12cd34, step 1 (agent scout)";

    fn agents() -> Value {
        json!([
            {"name": "w", "runner": {"type": "external-cli", "adapter": "claude-code-writer"}},
            {"name": "s", "runner": {"type": "external-cli", "adapter": "shell"}},
            {"name": "p", "runner": {"type": "native"}},
        ])
    }

    fn ceiling(permissions: Value, sandbox: Value) -> Value {
        let mut ceiling = json!({"source": SOURCE, "depth": 1});
        if !permissions.is_null() {
            let mut p = json!({"excludeTools": [], "allow": [], "deny": [], "mode": "writer", "nested": true});
            p.as_object_mut()
                .unwrap()
                .extend(permissions.as_object().unwrap().clone());
            ceiling["permissions"] = p;
        }
        if !sandbox.is_null() {
            ceiling["sandbox"] = sandbox;
        }
        ceiling
    }

    fn run(step: Value, launch: Value, ceilings: Value) -> Result<LaunchPlan, PlanError> {
        let request = json!({"cwd": "/code/repo", "mode": "single", "agents": agents(), "steps": [step],
                             "launch": launch, "ceilings": ceilings, "sandboxHost": {"home": "/h"},
                             "availableModels": [{"provider": "anthropic", "id": "claude-haiku-4-5"},
                                                 {"provider": "openai", "id": "gpt-5"}]});
        plan(&parse_request(request.to_string().as_bytes())?)
    }

    fn refused(step: Value, launch: Value, ceilings: Value) -> String {
        let error = run(step, launch, ceilings).expect_err("refused");
        assert_eq!(error.code, ErrorCode::AboveCeiling, "{}", error.message);
        assert!(error.message.contains(SOURCE), "names the ceiling: {}", error.message);
        error.message
    }

    #[test]
    fn a_parent_that_allows_no_nested_runs_or_no_deeper_ones_refuses_the_launch() {
        // G60.
        let step = json!({"agent": "s", "task": "t"});
        let message = refused(
            step.clone(),
            Value::Null,
            json!([ceiling(json!({"nested": false}), Value::Null)]),
        );
        assert!(message.contains("may not launch nested runs"), "{message}");
        let mut deep = ceiling(json!({"maxDepth": 1}), Value::Null);
        deep["depth"] = json!(2);
        let message = refused(step.clone(), Value::Null, json!([deep]));
        assert!(message.contains("1 deep"), "{message}");
        let plan = run(step, Value::Null, json!([ceiling(json!({"maxDepth": 2}), Value::Null)])).expect("within");
        let p = serde_json::to_value(&plan.steps[0].permissions).unwrap();
        assert_eq!(p["maxDepth"], 1, "one level is used up: {p}");
    }

    #[test]
    fn asking_for_more_is_refused_and_defaults_narrow_to_the_parent() {
        // G62: the launch's own mode and tools are checked; the agent's are narrowed.
        let read_only = || {
            json!([ceiling(
                json!({"mode": "read-only", "tools": ["Read", "Grep"]}),
                Value::Null
            )])
        };
        let message = refused(
            json!({"agent": "w", "task": "t"}),
            json!({"permissions": {"mode": "writer"}}),
            read_only(),
        );
        assert!(
            message.contains("mode writer (given by the run)") && message.contains("only read-only"),
            "{message}"
        );
        let message = refused(
            json!({"agent": "w", "task": "t", "permissions": {"tools": ["Read", "Bash"]}}),
            Value::Null,
            read_only(),
        );
        assert!(message.contains("the tools Bash (given by steps[0])"), "{message}");
        let plan = run(json!({"agent": "w", "task": "t"}), Value::Null, read_only()).expect("narrowed");
        let p = serde_json::to_value(&plan.steps[0].permissions).unwrap();
        assert_eq!(p["mode"], "read-only", "{p}");
        assert_eq!(p["tools"], json!(["Read", "Grep"]), "{p}");
    }

    #[test]
    fn a_parents_sandbox_is_inherited_and_cannot_be_loosened() {
        // G63.
        let sandboxed = || json!([ceiling(Value::Null, json!({"profile": "offline", "bestEffort": false}))]);
        let step = json!({"agent": "s", "task": "t"});
        let message = refused(step.clone(), json!({"sandbox": {"profile": "none"}}), sandboxed());
        assert!(message.contains("sandbox none (given by the run)"), "{message}");
        let message = refused(step.clone(), json!({"sandbox": {"ports": [443]}}), sandboxed());
        assert!(message.contains("ports 443"), "{message}");
        let plan = run(step.clone(), Value::Null, sandboxed()).expect("inherited");
        let sandbox = plan.steps[0].sandbox.as_ref().expect("sandboxed");
        assert_eq!(sandbox.profile.as_str(), "offline");
        assert_eq!(sandbox.ports, Some(Vec::new()));
        assert!(
            sandbox.sources.iter().any(|s| s.starts_with(SOURCE)),
            "{:?}",
            sandbox.sources
        );
        // Tighter is fine.
        run(step, json!({"sandbox": {"profile": "read-only"}}), sandboxed()).expect("tighter");
    }

    #[test]
    fn only_the_agents_and_models_a_parent_lists_are_started() {
        // G64, G65.
        let listed = || {
            json!([ceiling(
                json!({"nestedAgents": ["p"], "nestedModels": ["anthropic/*"]}),
                Value::Null
            )])
        };
        let message = refused(json!({"agent": "s", "task": "t"}), Value::Null, listed());
        assert!(message.contains("allows only the agents p"), "{message}");
        let message = refused(json!({"agent": "p", "task": "t"}), Value::Null, listed());
        assert!(message.contains("has no model"), "{message}");
        let message = refused(
            json!({"agent": "p", "task": "t", "model": "openai/gpt-5"}),
            Value::Null,
            listed(),
        );
        assert!(message.contains("model openai/gpt-5"), "{message}");
        let plan = run(
            json!({"agent": "p", "task": "t", "model": "anthropic/claude-haiku-4-5"}),
            Value::Null,
            listed(),
        )
        .expect("allowed");
        let p = serde_json::to_value(&plan.steps[0].permissions).unwrap();
        assert_eq!(
            p["nestedModels"],
            json!(["anthropic/*"]),
            "grandchildren inherit the list: {p}"
        );
    }

    #[test]
    fn model_patterns_match_as_model_scopes_do() {
        // G65 with M16: `*` for any text (also in the middle), case ignored, and a thinking
        // suffix left to the thinking ceiling.
        let listed = |patterns: Value| json!([ceiling(json!({"nestedModels": patterns}), Value::Null)]);
        let step = |model: &str| json!({"agent": "p", "task": "t", "model": model});
        let patterns = json!(["OPENAI/GPT-5-*", "*/claude-*-4-5"]);
        run(
            step("anthropic/claude-haiku-4-5:high"),
            Value::Null,
            listed(patterns.clone()),
        )
        .expect("middle star");
        let message = refused(step("openai/gpt-5"), Value::Null, listed(patterns));
        assert!(
            message.contains("allows only OPENAI/GPT-5-*, */claude-*-4-5"),
            "{message}"
        );
        run(step("openai/gpt-5"), Value::Null, listed(json!(["OpenAI/*"]))).expect("case ignored");
    }

    #[test]
    fn thinking_above_a_parents_ceiling_is_refused_and_the_ceiling_carries_on() {
        // G65 with T8.
        let mut c = ceiling(Value::Null, Value::Null);
        c["maxThinking"] = json!("low");
        let step = json!({"agent": "p", "task": "t", "model": "anthropic/claude-haiku-4-5:high"});
        let error = run(step, Value::Null, json!([c.clone()])).expect_err("too much thinking");
        assert_eq!(error.code, ErrorCode::ThinkingAboveCeiling);
        assert!(error.message.contains(SOURCE), "{}", error.message);
        let step = json!({"agent": "p", "task": "t", "model": "anthropic/claude-haiku-4-5"});
        let plan = run(step, Value::Null, json!([c])).expect("within");
        assert_eq!(plan.steps[0].thinking_ceiling.map(|l| l.name()), Some("low"));
    }
}
