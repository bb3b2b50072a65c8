//! The workflow graph of chain and parallel runs (rules P-S5, P-S6).

use sublaunch_contract::{Graph, GraphNode, GraphStep, Mode, PlanStep};

/// Projects the planned children onto the request's steps: one node per sequential step, one
/// group per parallel group (parallel mode: exactly one group). Single mode has no graph.
/// The nodes carry exactly the children's effective schemas (P-S6).
pub fn project(mode: Mode, steps: &[PlanStep]) -> Option<Graph> {
    let node = |step: &PlanStep| GraphNode {
        agent: step.agent.clone(),
        output_schema: step.output_schema.clone(),
        structured: step.structured,
    };
    let graph_steps = match mode {
        Mode::Single => return None,
        Mode::Parallel => vec![GraphStep::Parallel(steps.iter().map(node).collect())],
        Mode::Chain => {
            let mut graph_steps: Vec<GraphStep> = Vec::new();
            let mut group_of: Option<u32> = None;
            for step in steps {
                match (step.task_index, graph_steps.last_mut()) {
                    (Some(_), Some(GraphStep::Parallel(tasks))) if group_of == Some(step.step_index) => {
                        tasks.push(node(step));
                    }
                    (Some(_), _) => {
                        group_of = Some(step.step_index);
                        graph_steps.push(GraphStep::Parallel(vec![node(step)]));
                    }
                    (None, _) => {
                        group_of = None;
                        graph_steps.push(GraphStep::Sequential(node(step)));
                    }
                }
            }
            graph_steps
        }
    };
    Some(Graph { steps: graph_steps })
}
