//! The runner configuration of a launch (H5): one runner step per plan step, built by the
//! adapter of the step's agent. Only the built-in `shell` adapter (`sh -c <task>` in the
//! step's cwd) exists so far; other adapters plug in at [`step_config`].

use std::collections::BTreeMap;
use crate::agents::{AdapterKind, AgentDef};
use sublaunch_contract::{GraphStep, LaunchPlan, PlanStep};
use sublaunch_runfiles::config::{RevivalLease, RunnerConfig, StepConfig};

/// The plan's mode: `single` for one child, `parallel` when the graph has a parallel group,
/// `chain` otherwise.
pub fn plan_mode(plan: &LaunchPlan) -> &'static str {
    let parallel = plan
        .graph
        .as_ref()
        .is_some_and(|g| g.steps.iter().any(|s| matches!(s, GraphStep::Parallel(_))));
    if parallel {
        "parallel"
    } else if plan.steps.len() > 1 {
        "chain"
    } else {
        "single"
    }
}

/// The runner steps of `plan`, or the reason one cannot be started.
pub fn runner_steps(plan: &LaunchPlan, agents: &[AgentDef]) -> Result<Vec<StepConfig>, String> {
    if plan.steps.is_empty() {
        return Err("Subagent launch aborted: the plan has no steps.".into());
    }
    plan.steps
        .iter()
        .enumerate()
        .map(|(index, step)| step_config(index, step, agents.iter().find(|a| a.name() == step.agent)))
        .collect()
}

/// The runner step of plan step `index`, chosen by its agent's runner adapter.
pub fn step_config(index: usize, step: &PlanStep, agent: Option<&AgentDef>) -> Result<StepConfig, String> {
    if let Some(machine) = &step.machine {
        return Err(format!(
            "Subagent launch aborted: step {index} ('{}') is placed on machine '{}'; launching on machines is not available yet.",
            step.agent, machine.id
        ));
    }
    let Some(agent) = agent else {
        return Err(format!("Subagent launch aborted: agent '{}' is not known to the launcher.", step.agent));
    };
    match agent.runner.adapter {
        AdapterKind::Shell => {
            let mut config = StepConfig::shell(&step.task, &step.cwd, BTreeMap::new());
            config.model.clone_from(&step.model);
            Ok(config)
        }
        other => Err(format!(
            "Subagent launch aborted: agent '{}' uses the {} adapter, which sublaunch cannot start yet.",
            step.agent,
            other.id()
        )),
    }
}

/// Everything [`runner_config`] needs.
pub(crate) struct ConfigInputs<'a> {
    pub run_id: &'a str,
    pub steps: Vec<StepConfig>,
    pub result_path: String,
    pub cwd: String,
    pub async_dir: String,
    pub session_id: Option<String>,
    pub completion_owner_id: Option<String>,
    pub tool_call_id: Option<String>,
    pub revival_lease: Option<RevivalLease>,
    pub timeout_ms: Option<u64>,
    pub runner_process_instance_id: &'a str,
}

/// H4/H5: the configuration object; a fresh launch's barrier token is its instance id.
pub(crate) fn runner_config(inputs: ConfigInputs<'_>) -> RunnerConfig {
    let revival_lease = inputs.revival_lease.map(|mut lease| {
        lease.run_id = inputs.run_id.to_owned();
        lease
    });
    let launch_barrier_token = revival_lease
        .is_none()
        .then(|| inputs.runner_process_instance_id.to_owned());
    RunnerConfig {
        id: inputs.run_id.to_owned(),
        steps: inputs.steps,
        result_path: inputs.result_path,
        cwd: inputs.cwd,
        async_dir: inputs.async_dir,
        session_id: inputs.session_id,
        completion_owner_id: inputs.completion_owner_id,
        tool_call_id: inputs.tool_call_id,
        revival_lease,
        timeout_ms: inputs.timeout_ms,
        deadline_at: None,
        command: None,
        runner_process_instance_id: inputs.runner_process_instance_id.to_owned(),
        launch_barrier_token,
        extra: serde_json::Map::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(agent: &str, task: &str) -> PlanStep {
        PlanStep {
            agent: agent.into(),
            step_index: 0,
            task_index: None,
            task: task.into(),
            model: None,
            requested_model: None,
            model_origin: None,
            thinking: None,
            thinking_ceiling: None,
            context_limit: None,
            machine: None,
            cwd: "/w".into(),
            requested_cwd: "/w".into(),
            output_schema: None,
            structured: false,
            worktree: false,
        }
    }

    #[test]
    fn h5_shell_steps_run_sh_c_in_the_step_cwd() {
        let shell = crate::agents::builtins().into_iter().find(|a| a.name() == "shell").unwrap();
        let plan = LaunchPlan {
            steps: vec![step("shell", "echo hi")],
            graph: None,
            warnings: vec![],
        };
        let steps = runner_steps(&plan, &[shell]).unwrap();
        let command = steps[0].command.as_ref().unwrap();
        assert_eq!(command.argv, ["sh", "-c", "echo hi"]);
        assert_eq!(command.cwd.as_deref(), Some("/w"));
        assert_eq!(plan_mode(&plan), "single");
        let error = runner_steps(&plan, &[]).unwrap_err();
        assert!(error.contains("not known to the launcher"), "{error}");
    }

    #[test]
    fn h4_fresh_launches_get_a_barrier_token_revivals_do_not() {
        let inputs = |lease| ConfigInputs {
            run_id: "r-1",
            steps: vec![],
            result_path: "/r/results/r-1.json".into(),
            cwd: "/w".into(),
            async_dir: "/r/runs/r-1".into(),
            session_id: None,
            completion_owner_id: None,
            tool_call_id: None,
            revival_lease: lease,
            timeout_ms: None,
            runner_process_instance_id: "uuid",
        };
        assert_eq!(
            runner_config(inputs(None)).launch_barrier_token.as_deref(),
            Some("uuid")
        );
        let lease = RevivalLease {
            session_file: "/s".into(),
            run_id: String::new(),
            source_run_id: "src".into(),
            parent_session_id: None,
            extra: serde_json::Map::new(),
        };
        let config = runner_config(inputs(Some(lease)));
        assert_eq!(config.launch_barrier_token, None);
        assert_eq!(config.revival_lease.unwrap().run_id, "r-1");
    }
}
