//! Structured output that the agent's own CLI enforces. The planner refuses an output schema
//! for an external runner (P-S4: pi-subagents' external CLIs had no way to honour one), but
//! Claude Code (`--json-schema`) and Codex (`--output-schema`) have one. So for agents run by
//! those adapters the host takes the schemas out of the request before planning and puts the
//! effective schema back into the plan afterwards (the step's or task's own, else the agent's
//! default; `false` opts out), the same resolution the planner gives native steps.
//! The schema is still validated by the shim when the run ends.

use crate::inputs::agents::{AdapterId, AgentDef};
use std::collections::BTreeMap;
use sublaunch_contract::{GraphStep, LaunchPlan, PlanRequest};

/// The schemas held back from one request.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NativeSchemas {
    /// Agent name → its default schema (JSON text), for the agents whose CLI enforces one.
    defaults: BTreeMap<String, Option<String>>,
    /// (request step, task of its group) → that step's or task's own schema (JSON text).
    overrides: BTreeMap<(u32, Option<u32>), String>,
}

/// Whether agents run by `adapter` get their schema enforced by their CLI.
pub fn enforced_natively(adapter: AdapterId) -> bool {
    matches!(
        adapter,
        AdapterId::ClaudeCode | AdapterId::ClaudeCodeWriter | AdapterId::CodexExec | AdapterId::CodexExecWriter
    )
}

impl NativeSchemas {
    /// Takes the schemas of natively structured agents out of `request`.
    pub fn take(request: &mut PlanRequest, agents: &[AgentDef]) -> Self {
        let mut schemas = Self::default();
        for agent in &mut request.agents {
            let native = agents
                .iter()
                .find(|def| def.name() == agent.name)
                .is_some_and(|def| enforced_natively(def.runner.adapter));
            if native {
                schemas.defaults.insert(agent.name.clone(), agent.output_schema.take());
            }
        }
        for (index, step) in request.steps.iter_mut().enumerate() {
            let index = u32::try_from(index).unwrap_or(u32::MAX);
            if let Some(agent) = &step.agent
                && schemas.defaults.contains_key(agent)
                && let Some(schema) = step.output_schema.take()
            {
                schemas.overrides.insert((index, None), schema);
            }
            for (task_index, task) in step.parallel.iter_mut().flatten().enumerate() {
                if schemas.defaults.contains_key(&task.agent)
                    && let Some(schema) = task.output_schema.take()
                {
                    let task_index = u32::try_from(task_index).unwrap_or(u32::MAX);
                    schemas.overrides.insert((index, Some(task_index)), schema);
                }
            }
        }
        schemas
    }

    /// Puts the effective schemas back into `plan`'s steps and graph.
    pub fn restore(&self, plan: &mut LaunchPlan) {
        for step in &mut plan.steps {
            if let Some(schema) = self.effective(&step.agent, step.step_index, step.task_index) {
                step.output_schema = Some(schema);
                step.structured = true;
            }
        }
        let Some(graph) = plan.graph.as_mut() else { return };
        for (index, entry) in graph.steps.iter_mut().enumerate() {
            let index = u32::try_from(index).unwrap_or(u32::MAX);
            let nodes: Vec<(Option<u32>, &mut sublaunch_contract::GraphNode)> = match entry {
                GraphStep::Sequential(node) => vec![(None, node)],
                GraphStep::Parallel(nodes) => nodes
                    .iter_mut()
                    .enumerate()
                    .map(|(t, node)| (Some(u32::try_from(t).unwrap_or(u32::MAX)), node))
                    .collect(),
            };
            for (task, node) in nodes {
                if let Some(schema) = self.effective(&node.agent, index, task) {
                    node.output_schema = Some(schema);
                    node.structured = true;
                }
            }
        }
    }

    /// The schema of `agent` at this position: its own override, else the agent's default;
    /// `false` (either) is no schema.
    fn effective(&self, agent: &str, step: u32, task: Option<u32>) -> Option<String> {
        let default = self.defaults.get(agent)?;
        let schema = self.overrides.get(&(step, task)).or(default.as_ref())?;
        (schema.trim() != "false").then(|| schema.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sublaunch_contract::{Agent, PlanStep, Step};

    #[test]
    fn schemas_of_natively_structured_agents_skip_the_planner_and_come_back() {
        let agents = crate::inputs::agents::builtins();
        let mut request = PlanRequest {
            agents: ["claude", "pi"]
                .iter()
                .map(|name| Agent {
                    name: (*name).into(),
                    output_schema: Some(r#"{"type":"object"}"#.into()),
                    ..Agent::default()
                })
                .collect(),
            steps: vec![
                Step {
                    agent: Some("claude".into()),
                    output_schema: Some(r#"{"type":"array"}"#.into()),
                    ..Step::default()
                },
                Step {
                    agent: Some("claude".into()),
                    output_schema: Some("false".into()),
                    ..Step::default()
                },
            ],
            ..PlanRequest::default()
        };
        let schemas = NativeSchemas::take(&mut request, &agents);
        assert_eq!(request.agents[0].output_schema, None, "hidden from the P-S4 gate");
        assert!(request.agents[1].output_schema.is_some(), "pi's is the planner's");
        assert_eq!(request.steps[0].output_schema, None);
        let step = |index: u32| PlanStep {
            step_index: index,
            ..PlanStep::local("claude", "t", "/w")
        };
        let mut plan = LaunchPlan::single(step(0));
        plan.steps.push(step(1));
        schemas.restore(&mut plan);
        assert_eq!(plan.steps[0].output_schema.as_deref(), Some(r#"{"type":"array"}"#));
        assert!(plan.steps[0].structured);
        assert!(!plan.steps[1].structured, "false opts out");
    }
}
