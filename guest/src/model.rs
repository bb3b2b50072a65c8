//! Model selection and thinking (model-and-thinking.md): the two entry points the pipeline
//! calls — request-level checks (E1 step 1, E2) and the plan of one native child (E1 steps
//! 3a–3e). The rules themselves live in [`crate::origin`] (M1–M2), [`crate::registry`]
//! (M4–M14, M20), [`crate::scope`] (M16–M18) and [`crate::thinking`] (T1–T11).

use crate::children::Child;
use crate::jsstr;
use crate::normalize::norm;
use crate::origin::{self, Parent, Source};
use crate::registry::Registry;
use crate::runner;
use crate::scope::Scopes;
use crate::thinking::{self, AppliedThinking};
use sublaunch_contract::{Agent, LooseString, ModelEntry, ModelOrigin, PlanError, PlanRequest, ThinkingLevel};

/// Request-level model inputs, validated in pipeline step 1 (rule E1.1).
pub struct ModelSettings<'r> {
    /// The usable parent model (M1).
    parent: Option<Parent<'r>>,
    /// `currentModelProvider`, trimmed and non-empty (M1).
    session_provider: Option<&'r str>,
    /// `availableModels`, normalised lazily once per plan.
    registry: Registry<'r>,
    /// Enforced scope rules (M16).
    scopes: Scopes<'r>,
    /// `thinkingCeiling` (T8).
    settings_ceiling: Option<ThinkingLevel>,
    /// `inheritedThinkingCeiling` (T8).
    inherited_ceiling: Option<ThinkingLevel>,
}

/// What the model area decides for one native child (rule M20).
#[derive(Debug, Default, PartialEq)]
pub struct ModelPlan {
    /// Final model string, thinking suffix included.
    pub model: Option<String>,
    /// The source string as written (M15).
    pub requested_model: Option<String>,
    /// Where the model came from (M2).
    pub model_origin: Option<ModelOrigin>,
    /// Effective thinking level (T6).
    pub thinking: Option<ThinkingLevel>,
    /// Effective ceiling (T11).
    pub thinking_ceiling: Option<ThinkingLevel>,
    /// Context window of the selected model (M20).
    pub context_limit: Option<u64>,
}

impl ModelPlan {
    /// The plan of a child for which no model could be determined (M2, N2, M-I8): only the
    /// effective ceiling is reported (T11).
    pub fn without_model(thinking_ceiling: Option<ThinkingLevel>) -> Self {
        Self {
            thinking_ceiling,
            ..Self::default()
        }
    }
}

impl<'r> ModelSettings<'r> {
    /// Validates the ceilings, scopes and model value types of the request (E1.1, E2), in
    /// that order: `thinkingCeiling`, `inheritedThinkingCeiling`, `modelScopes`, then every
    /// `model` value.
    /// `registry` is the one to use: the request's, else a session's.
    pub fn from_request(request: &'r PlanRequest, registry: Option<&'r [ModelEntry]>) -> Result<Self, PlanError> {
        let settings_ceiling = request_ceiling(request.thinking_ceiling.as_ref(), "thinkingCeiling")?;
        let inherited_ceiling =
            request_ceiling(request.inherited_thinking_ceiling.as_ref(), "inheritedThinkingCeiling")?;
        let scopes = Scopes::from_request(request.model_scopes.as_deref())?;
        check_model_types(request)?;
        Ok(Self {
            parent: Parent::from_request(request.parent_model.as_ref()),
            session_provider: origin::non_empty(request.current_model_provider.as_deref()),
            registry: Registry::new(registry),
            scopes,
            settings_ceiling,
            inherited_ceiling,
        })
    }

    /// Plans the model and thinking of one native child (E1.3a–e): thinking values and the
    /// agent ceiling, origin and the no-parent check, resolution, scopes, then the thinking
    /// suffix and the ceiling check.
    pub fn plan_child(
        &self,
        child: &Child<'r>,
        agent: &'r Agent,
        warnings: &mut Vec<String>,
    ) -> Result<ModelPlan, PlanError> {
        let applied = applied_thinking(child, agent)?;
        let ceiling = self.effective_ceiling(agent)?;
        let source = self.source(child, agent)?;
        if self.parent.is_none() {
            self.scopes.check_without_parent(&agent.name, source.origin())?;
        }
        let (Some(selected), Some(origin)) = (self.select(source, agent)?, source.origin()) else {
            warnings.push(format!(
                "No model could be determined for agent '{}'; the child will use its runtime default model.",
                agent.name
            ));
            return Ok(ModelPlan::without_model(ceiling));
        };
        let parent = self.parent.as_ref().map(|p| p.full_id.as_str());
        self.scopes.check(&agent.name, &selected, origin, parent, warnings)?;
        let model = thinking::apply(&selected, applied);
        let split = thinking::split_suffix(&model);
        thinking::check_ceiling(split.level, ceiling, &agent.name)?;
        let context_limit = self.registry.context_limit(split.base).unwrap_or_else(|warning| {
            // Several children may select the same entry: one warning about it is enough.
            if !warnings.contains(&warning) {
                warnings.push(warning);
            }
            None
        });
        Ok(ModelPlan {
            requested_model: requested_model(source),
            model_origin: Some(origin),
            thinking: split.level,
            thinking_ceiling: ceiling,
            context_limit,
            model: Some(model),
        })
    }

    /// T8: the lowest of the request ceilings and the agent's `maxThinking`.
    pub fn effective_ceiling(&self, agent: &Agent) -> Result<Option<ThinkingLevel>, PlanError> {
        let agent_ceiling = agent
            .max_thinking
            .as_ref()
            .map(|value| thinking::parse_ceiling(value, || format!("agents[{}].maxThinking", agent.name)))
            .transpose()?;
        Ok(thinking::effective_ceiling([
            self.settings_ceiling,
            agent_ceiling,
            self.inherited_ceiling,
        ]))
    }

    /// M2 for one child.
    fn source(&self, child: &Child<'r>, agent: &'r Agent) -> Result<Source<'r>, PlanError> {
        let step = model_text(child.fields.model, || child.field_path("model"))?;
        let configured = model_text(agent.model.as_ref(), || agent_model_path(agent))?;
        Ok(origin::select(step, configured, self.parent.is_some()))
    }

    /// The selected model before thinking is applied (M3, M4, M5).
    fn select(&self, source: Source<'r>, agent: &Agent) -> Result<Option<String>, PlanError> {
        match source {
            Source::Explicit(query) | Source::Configured(query) if self.registry.is_empty() => {
                Ok(Some(query.to_owned()))
            }
            Source::Explicit(query) | Source::Configured(query) => {
                let preferred = origin::preferred_provider(
                    agent.model_provider.as_deref(),
                    self.session_provider,
                    self.parent.as_ref(),
                )
                .map(norm);
                self.registry.resolve(query, preferred.as_deref()).map(Some)
            }
            Source::Inherited => Ok(self.parent.as_ref().map(|p| p.full_id.clone())),
            Source::NoModel => Ok(None),
        }
    }
}

/// M15 (M-I2): the trimmed source string as written, for explicit and configured models.
fn requested_model(source: Source<'_>) -> Option<String> {
    match source {
        Source::Explicit(query) | Source::Configured(query) => Some(query.to_owned()),
        Source::Inherited | Source::NoModel => None,
    }
}

/// T3/T4: validates the step's and then the agent's `thinking` (both, in that order) and
/// returns the one that applies: the step's as an override, else the agent's as a default.
fn applied_thinking(child: &Child<'_>, agent: &Agent) -> Result<Option<AppliedThinking>, PlanError> {
    let step = child
        .fields
        .thinking
        .map(|value| thinking::parse_thinking(value, || child.field_path("thinking")))
        .transpose()?;
    let default = agent
        .thinking
        .as_ref()
        .map(|value| thinking::parse_thinking(value, || format!("agents[{}].thinking", agent.name)))
        .transpose()?;
    Ok(step
        .map(AppliedThinking::Override)
        .or(default.map(AppliedThinking::Default)))
}

/// A request ceiling (T8), validated in pipeline step 1.
fn request_ceiling(value: Option<&LooseString>, field: &str) -> Result<Option<ThinkingLevel>, PlanError> {
    value
        .map(|value| thinking::parse_ceiling(value, || field.to_owned()))
        .transpose()
}

/// E2: every `model` on a step (group steps included), a task or a native agent must be a
/// string; an external-runner agent's own model is not validated (M19).
fn check_model_types(request: &PlanRequest) -> Result<(), PlanError> {
    for (index, step) in request.steps.iter().enumerate() {
        model_text(step.model.as_ref(), || format!("steps[{index}].model"))?;
        for (task, value) in step.parallel.iter().flatten().enumerate() {
            model_text(value.model.as_ref(), || {
                format!("steps[{index}].parallel[{task}].model")
            })?;
        }
    }
    for agent in request.agents.iter().filter(|agent| !runner::is_external(agent)) {
        model_text(agent.model.as_ref(), || agent_model_path(agent))?;
    }
    Ok(())
}

fn agent_model_path(agent: &Agent) -> String {
    format!("agents[{}].model", agent.name)
}

/// A present `model` value, trimmed; a non-string is `invalid-request` (E2).
pub fn model_text(value: Option<&LooseString>, path: impl FnOnce() -> String) -> Result<Option<&str>, PlanError> {
    match value {
        None => Ok(None),
        Some(LooseString::Text(text)) => Ok(Some(jsstr::trim(text))),
        Some(LooseString::NotText(json)) => Err(PlanError::invalid_request(format!(
            "Invalid request at {}: expected a string, got {json}.",
            path()
        ))),
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::{Value, json};
    use sublaunch_contract::{ErrorCode, LaunchPlan, PlanError, ThinkingLevel};

    fn plan(request: Value) -> Result<LaunchPlan, PlanError> {
        let mut request = request;
        request["cwd"] = json!("/work");
        if request.get("mode").is_none() {
            request["mode"] = json!("single");
        }
        let bytes = serde_json::to_vec(&request).unwrap();
        crate::plan(&sublaunch_contract::parse_request(&bytes).unwrap())
    }

    fn error(request: Value) -> PlanError {
        plan(request).unwrap_err()
    }

    fn worker_step(step: Value) -> Value {
        let mut step = step;
        step["agent"] = json!("worker");
        step["task"] = json!("t");
        step
    }

    #[test]
    fn e1_request_checks_run_in_order() {
        let bad_everything = json!({
            "thinkingCeiling": 3, "inheritedThinkingCeiling": "nope",
            "modelScopes": [{"allow": "x"}],
            "agents": [{"name": "worker", "model": 1}], "steps": [worker_step(json!({}))]
        });
        let e = error(bad_everything.clone());
        assert_eq!(e.code, ErrorCode::InvalidThinkingLevel);
        assert!(e.message.contains("level 3 in thinkingCeiling;"), "{}", e.message);
        let mut next = bad_everything.clone();
        next.as_object_mut().unwrap().remove("thinkingCeiling");
        assert!(
            error(next.clone())
                .message
                .contains("'nope' in inheritedThinkingCeiling")
        );
        next.as_object_mut().unwrap().remove("inheritedThinkingCeiling");
        assert!(error(next.clone()).message.contains("modelScopes[0].allow"));
        next.as_object_mut().unwrap().remove("modelScopes");
        let e = error(next);
        assert_eq!(e.code, ErrorCode::InvalidRequest);
        assert!(e.message.contains("agents[worker].model"), "{}", e.message);
    }

    #[test]
    fn e1_model_types_come_before_unknown_agents() {
        let e = error(json!({"agents": [], "steps": [{"agent": "ghost", "task": "t", "model": 5}]}));
        assert_eq!(e.code, ErrorCode::InvalidRequest);
        assert!(e.message.contains("steps[0].model"));
    }

    #[test]
    fn e2_group_step_and_task_models_must_be_strings() {
        let group = |group_model: Value, task_model: Value| {
            json!({"mode": "chain", "agents": [{"name": "worker"}],
                   "steps": [{"parallel": [worker_step(json!({"model": task_model}))], "model": group_model}]})
        };
        assert!(error(group(json!(true), json!("a"))).message.contains("steps[0].model"));
        assert!(
            error(group(json!("a"), json!(["a"])))
                .message
                .contains("steps[0].parallel[0].model")
        );
    }

    #[test]
    fn m19_external_agent_model_is_not_validated() {
        let plan = plan(json!({
            "thinkingCeiling": "off",
            "agents": [{"name": "worker", "model": 7, "thinking": "bogus", "maxThinking": 1,
                        "runner": {"type": "external-job"}}],
            "steps": [worker_step(json!({}))]
        }))
        .unwrap();
        assert_eq!(plan.steps[0].model, None);
        assert_eq!(plan.steps[0].thinking_ceiling, None);
    }

    #[test]
    fn e1_3a_step_thinking_then_agent_thinking_then_max_thinking() {
        let request = |step: Value| {
            json!({"parentModel": {"provider": "p", "id": "m"},
                   "agents": [{"name": "worker", "thinking": "loud", "maxThinking": "huge"}],
                   "steps": [worker_step(step)]})
        };
        assert!(
            error(request(json!({"thinking": 2})))
                .message
                .contains("level 2 in steps[0].thinking")
        );
        // The agent's default is validated even when the step overrides it.
        assert!(
            error(request(json!({"thinking": "low"})))
                .message
                .contains("'loud' in agents[worker].thinking")
        );
        let e = error(json!({"agents": [{"name": "worker", "maxThinking": ""}], "steps": [worker_step(json!({}))]}));
        assert!(e.message.contains("'' in agents[worker].maxThinking"), "{}", e.message);
    }

    #[test]
    fn e1_3b_before_3c_no_parent_check_precedes_resolution() {
        let e = error(json!({
            "availableModels": [{"provider": "p", "id": "m"}],
            "modelScopes": [{"allow": ["inherit", "p/*"], "enforce": true}],
            "agents": [{"name": "worker", "model": "missing"}], "steps": [worker_step(json!({}))]
        }));
        assert_eq!(e.code, ErrorCode::NoParentModel);
    }

    #[test]
    fn e1_3c_before_3e_unknown_model_precedes_the_ceiling() {
        let e = error(json!({
            "thinkingCeiling": "low", "availableModels": [{"provider": "p", "id": "m"}],
            "agents": [{"name": "worker", "model": "missing:max"}], "steps": [worker_step(json!({}))]
        }));
        assert_eq!(e.code, ErrorCode::UnknownModel);
    }

    #[test]
    fn n2_no_model_drops_thinking_reports_the_ceiling_and_warns() {
        let plan = plan(json!({
            "thinkingCeiling": "off", "inheritedThinkingCeiling": " low ",
            "agents": [{"name": "worker", "thinking": "max"}], "steps": [worker_step(json!({"model": "  "}))]
        }))
        .unwrap();
        let step = &plan.steps[0];
        assert_eq!(
            (step.model.as_deref(), step.model_origin, step.thinking),
            (None, None, None)
        );
        assert_eq!(step.thinking_ceiling, Some(sublaunch_contract::ThinkingLevel::Off));
        assert!(
            plan.warnings
                .iter()
                .any(|w| w.contains("No model could be determined for agent 'worker'"))
        );
    }

    #[test]
    fn t9_a_default_that_did_not_take_effect_is_not_checked() {
        let plan = plan(json!({
            "thinkingCeiling": "low",
            "agents": [{"name": "worker", "model": "p/m:low", "thinking": "max"}], "steps": [worker_step(json!({}))]
        }))
        .unwrap();
        assert_eq!(plan.steps[0].model.as_deref(), Some("p/m:low"));
    }

    #[test]
    fn t9_an_override_that_replaced_the_suffix_is_checked() {
        let e = error(json!({
            "thinkingCeiling": "low",
            "agents": [{"name": "worker", "model": "p/m:low"}], "steps": [worker_step(json!({"thinking": "high"}))]
        }));
        assert_eq!(e.code, ErrorCode::ThinkingAboveCeiling);
        assert!(
            e.message
                .contains("Thinking level 'high' for agent 'worker' is above the configured maximum 'low'.")
        );
    }

    #[test]
    fn m17_configured_violation_becomes_a_plan_warning() {
        let plan = plan(json!({
            "modelScopes": [{"allow": ["anthropic/*"], "enforce": true, "origin": "settings"}],
            "agents": [{"name": "worker", "model": "openai/x"}], "steps": [worker_step(json!({}))]
        }))
        .unwrap();
        assert_eq!(
            plan.warnings,
            [
                "Subagent model 'openai/x' is outside model scope 'settings' (allowed patterns: anthropic/*); kept because the model was not chosen explicitly."
            ]
        );
    }

    #[test]
    fn m1_i1_agent_provider_applies_to_a_per_step_model() {
        let plan = plan(json!({
            "currentModelProvider": "anthropic",
            "availableModels": [{"provider": "openai", "id": "shared"}, {"provider": "anthropic", "id": "shared"}],
            "agents": [{"name": "worker", "modelProvider": " OpenAI "}], "steps": [worker_step(json!({"model": "Shared"}))]
        }))
        .unwrap();
        assert_eq!(plan.steps[0].model.as_deref(), Some("openai/shared"));
        assert_eq!(plan.steps[0].requested_model.as_deref(), Some("Shared"));
    }

    #[test]
    fn m3_m20_inherited_model_is_never_looked_up_but_gets_a_context_limit() {
        let registry = json!([{"provider": "p", "id": "m", "contextWindow": 1000}]);
        let inherited = |parent: Value| {
            plan(json!({"parentModel": parent, "availableModels": registry.clone(),
                        "agents": [{"name": "worker", "thinking": "low"}], "steps": [worker_step(json!({}))]}))
            .unwrap()
        };
        let step = &inherited(json!({"provider": " p ", "id": "m"})).steps[0];
        assert_eq!(
            (step.model.as_deref(), step.context_limit),
            (Some("p/m:low"), Some(1000))
        );
        let step = &inherited(json!({"provider": "P", "id": "M"})).steps[0];
        assert_eq!((step.model.as_deref(), step.context_limit), (Some("P/M:low"), None));
        // A non-string parent part means no parent: no model at all.
        let step = &inherited(json!({"provider": 1, "id": "m"})).steps[0];
        assert_eq!(step.model, None);
    }

    fn level_name() -> impl proptest::strategy::Strategy<Value = &'static str> {
        proptest::sample::select(vec!["off", "minimal", "low", "medium", "high", "xhigh", "max"])
    }

    proptest::proptest! {
        /// T8/T9/T11 through the whole pipeline: a planned child never reports a level above
        /// any of the ceilings, and reports the lowest ceiling.
        #[test]
        fn a_reported_level_never_exceeds_a_lower_ceiling(
            suffix in proptest::option::of(level_name()),
            agent_thinking in proptest::option::of(level_name()),
            step_thinking in proptest::option::of(level_name()),
            ceilings in proptest::collection::vec(proptest::option::of(level_name()), 3),
        ) {
            let model = suffix.map_or("p/m".to_owned(), |level| format!("p/m:{level}"));
            let mut agent = json!({"name": "worker", "model": model});
            if let Some(level) = agent_thinking { agent["thinking"] = json!(level); }
            if let Some(level) = ceilings[1] { agent["maxThinking"] = json!(level); }
            let mut step = worker_step(json!({}));
            if let Some(level) = step_thinking { step["thinking"] = json!(level); }
            let mut request = json!({"agents": [agent], "steps": [step]});
            if let Some(level) = ceilings[0] { request["thinkingCeiling"] = json!(level); }
            if let Some(level) = ceilings[2] { request["inheritedThinkingCeiling"] = json!(level); }
            let rank = |name: &str| ThinkingLevel::from_name(name).unwrap();
            let lowest = ceilings.iter().flatten().map(|c| rank(c)).min();
            match plan(request) {
                Ok(plan) => {
                    let step = &plan.steps[0];
                    prop_assert_eq!(step.thinking_ceiling, lowest);
                    if let (Some(level), Some(ceiling)) = (step.thinking, lowest) {
                        prop_assert!(level <= ceiling);
                    }
                }
                Err(error) => prop_assert_eq!(error.code, ErrorCode::ThinkingAboveCeiling),
            }
        }
    }

    // M9 tier B: an undated, differently written query finds the one dated entry. (Its speed
    // is measured by `cargo bench -p sublaunch --bench planner`, not asserted here.)
    #[test]
    fn a_fuzzy_lookup_in_a_500_entry_registry_finds_the_dated_entry() {
        let registry: Vec<Value> = (0..500)
            .map(|i| json!({"provider": format!("provider-{}", i % 20), "id": format!("model-{i}-2025-01-01")}))
            .collect();
        let request = json!({"cwd": "/w", "mode": "single", "availableModels": registry,
                             "agents": [{"name": "worker"}], "steps": [worker_step(json!({"model": "Model_499"}))]});
        let request = sublaunch_contract::parse_request(&serde_json::to_vec(&request).unwrap()).unwrap();
        assert_eq!(
            crate::plan(&request).unwrap().steps[0].model.as_deref(),
            Some("provider-19/model-499-2025-01-01")
        );
    }
}
