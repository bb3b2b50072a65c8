//! A planner session: a model registry given once and used by many plans, so that a host
//! planning often passes the registry across the component boundary once (the WIT resource
//! `planner-session`). The session holds only that registry, which no plan changes: a plan in
//! a session is the plan of the same request with the registry in it.

use sublaunch_contract::{LaunchPlan, ModelEntry, PlanError, PlanRequest};

/// A model registry for many plans.
#[derive(Clone, Debug, Default)]
pub struct Session {
    registry: Vec<ModelEntry>,
}

impl Session {
    /// A session whose plans use `registry` when their request has no `availableModels`.
    pub fn new(registry: Vec<ModelEntry>) -> Self {
        Self { registry }
    }

    /// Plans `request` (its own `availableModels`, even an empty list, win over the session's).
    pub fn plan(&self, request: &PlanRequest) -> Result<LaunchPlan, PlanError> {
        crate::plan_with(request, Some(&self.registry))
    }

    /// Plans from PlanRequest JSON and returns the document `sublaunch plan` prints.
    pub fn plan_json(&self, request: &[u8]) -> Result<String, PlanError> {
        let request = sublaunch_contract::parse_request(request)?;
        let plan = self.plan(&request)?;
        Ok(sublaunch_contract::render(&Ok(plan)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn request(model: &str, registry: Option<serde_json::Value>) -> PlanRequest {
        let mut value = json!({
            "cwd": "/w", "mode": "single",
            "agents": [{"name": "a"}],
            "steps": [{"agent": "a", "task": "t", "model": model}],
        });
        if let Some(registry) = registry {
            value["availableModels"] = registry;
        }
        sublaunch_contract::parse_request(value.to_string().as_bytes()).unwrap()
    }

    #[test]
    fn plans_in_a_session_equal_plans_with_its_registry_and_leave_nothing_behind() {
        let registry = json!([{"provider": "p", "id": "model-one"}, {"provider": "q", "id": "other"}]);
        let entries: Vec<ModelEntry> = serde_json::from_value(registry.clone()).unwrap();
        let session = Session::new(entries);
        let own = json!([{"provider": "z", "id": "model-one"}]);
        // Interleaved: the session's registry, a request's own, an empty one, a failure.
        for _ in 0..3 {
            for (model, given) in [
                ("model-one", None),
                ("model-one", Some(own.clone())),
                ("other", Some(json!([]))),
                ("missing", None),
            ] {
                let in_session = session.plan(&request(model, given.clone()));
                let fresh = crate::plan(&request(model, given.or_else(|| Some(registry.clone()))));
                assert_eq!(in_session, fresh, "{model}");
            }
        }
        let plan = session.plan(&request("model-one", None)).unwrap();
        assert_eq!(plan.steps[0].model.as_deref(), Some("p/model-one"));
    }
}
