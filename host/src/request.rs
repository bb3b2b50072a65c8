//! Building the PlanRequest of `sublaunch run` from the command line (or a chain file's steps),
//! the agents, the settings, the model registry and (only when something can be placed) the
//! Herdr catalog.

use crate::inputs::agents::AgentDef;
use crate::inputs::registry::Registry;
use crate::inputs::settings::Settings;
use std::path::PathBuf;
use sublaunch_contract::{
    Agent, LaunchOptions, LooseString, MachineSettings, Mode, PlanRequest, Step, ThinkingSetting,
};

/// The longest task sublaunch accepts: 8 MiB. A task travels through the plan, the runner
/// configuration and the agent's input, each a copy in memory; beyond this size it is a
/// mistake (a file pasted whole), and the agents' own context windows are far smaller.
pub const TASK_LIMIT: usize = 8 * 1024 * 1024;

/// Refuses a task over [`TASK_LIMIT`]; `what` names it in the message (`the task`,
/// `steps[2].task`).
pub fn check_task(task: &str, what: &str) -> Result<(), TaskTooLarge> {
    if task.len() > TASK_LIMIT {
        return Err(TaskTooLarge {
            what: what.to_owned(),
            bytes: task.len(),
        });
    }
    Ok(())
}

/// A task over [`TASK_LIMIT`], refused by [`check_task`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "{what} is {bytes} bytes; a task may have at most {} bytes (8 MiB). Put large inputs in a file and name the file in the task.",
    TASK_LIMIT
)]
pub struct TaskTooLarge {
    /// The task, as the message names it (`the task`, `steps[2].task`).
    pub what: String,
    /// Its size.
    pub bytes: usize,
}

/// What the user asked `sublaunch run` for.
#[derive(Clone, Debug, Default)]
pub struct RunSpec {
    /// Agent name.
    pub agent: String,
    /// Task text.
    pub task: String,
    /// `--model`.
    pub model: Option<String>,
    /// `--thinking`.
    pub thinking: Option<String>,
    /// `--machine`.
    pub machine: Option<String>,
    /// `--cwd` (remote when `--machine` is given, else resolved locally).
    pub cwd: Option<String>,
    /// `--max-thinking`: the caller's ceiling, on top of the settings.
    pub max_thinking: Option<String>,
    /// `--read`: files the agent reads before the task (a single agent only).
    pub reads: Option<Vec<String>>,
    /// `--output`: a file the answer is also written to (a single agent only).
    pub output: Option<String>,
    /// `--max-tokens` / `--max-cost`: the whole run's usage budget.
    pub usage_budget: Option<sublaunch_contract::UsageBudget>,
    /// `--max-tool-calls` (a single agent only).
    pub tool_budget: Option<u32>,
    /// `--checkpoint-before-deadline`: how long before the deadline agents are asked to wrap up.
    pub checkpoint_before_deadline_ms: Option<u64>,
    /// `--extension` (a single agent only; pi).
    pub extensions: Option<Vec<String>>,
    /// `--require-extension` (a single agent only; pi).
    pub required_extensions: Option<Vec<String>>,
    /// `--skill` (a single agent only; pi).
    pub skills: Option<Vec<String>>,
    /// `--tools`, `--exclude-tools`, `--allow`, `--deny`, `--mode`, `--no-nested`: the run's
    /// layer of the permission contract (rule G1).
    pub permissions: Option<sublaunch_contract::Permissions>,
    /// `--sandbox`, `--sandbox-port`, `--sandbox-best-effort`: the OS sandbox of every step.
    pub sandbox: Option<sublaunch_contract::SandboxSetting>,
    /// `--accept`: the run's acceptance contract (JSON: a level, an object or `false`).
    pub acceptance: Option<serde_json::Value>,
    /// `--gate`: one verification command for every step (JSON: a command or an object).
    pub gate: Option<serde_json::Value>,
}

/// Everything the host gathered for planning.
pub struct Inputs {
    /// The local runner directory (absolute).
    pub cwd: PathBuf,
    /// Known agents.
    pub agents: Vec<AgentDef>,
    /// User and project settings.
    pub settings: Settings,
    /// The model registry.
    pub registry: Registry,
    /// The environment (the Herdr binary and its timeout).
    pub env: crate::Environment,
}

/// Builds the single-step request of `spec`; the Herdr catalog is fetched only when a child
/// can be placed (P16).
pub async fn build(spec: &RunSpec, inputs: &Inputs) -> anyhow::Result<PlanRequest> {
    let step = Step {
        agent: Some(spec.agent.clone()),
        task: Some(spec.task.clone()),
        model: spec.model.as_deref().map(LooseString::from),
        thinking: spec.thinking.clone().map(ThinkingSetting::Text),
        reads: spec.reads.clone(),
        output: spec.output.clone(),
        tool_budget: spec.tool_budget,
        extensions: spec.extensions.clone(),
        required_extensions: spec.required_extensions.clone(),
        skills: spec.skills.clone(),
        ..Step::default()
    };
    build_steps(Mode::Single, vec![step], spec, inputs).await
}

/// Builds a request with these steps (a chain file's, say): only the run-level fields of
/// `spec` are used (`machine`, `cwd`, `max_thinking`); the Herdr catalog is fetched only when
/// a child can be placed (P16).
pub async fn build_steps(mode: Mode, steps: Vec<Step>, spec: &RunSpec, inputs: &Inputs) -> anyhow::Result<PlanRequest> {
    check_task(&spec.task, "the task").map_err(anyhow::Error::msg)?;
    for (index, step) in steps.iter().enumerate() {
        if let Some(task) = &step.task {
            check_task(task, &format!("steps[{index}].task")).map_err(anyhow::Error::msg)?;
        }
    }
    let settings = &inputs.settings;
    let mut request = PlanRequest {
        cwd: inputs.cwd.to_string_lossy().into_owned(),
        mode,
        steps,
        agents: inputs.agents.iter().map(|def| with_settings(def, settings)).collect(),
        available_models: Some(inputs.registry.models()),
        thinking_ceiling: settings.thinking_ceiling().map(loose),
        inherited_thinking_ceiling: spec.max_thinking.as_deref().map(LooseString::from),
        launch: Some(LaunchOptions {
            machine: spec.machine.as_deref().map(LooseString::from),
            cwd: spec.cwd.as_deref().map(LooseString::from),
            worktree: None,
            usage_budget: spec.usage_budget.clone(),
            checkpoint_before_deadline_ms: spec.checkpoint_before_deadline_ms,
            // sublaunch's runner gives Claude Code and Codex their schemas (`--json-schema`,
            // `--output-schema`), so the planner keeps them (P-S4).
            native_schemas: Some(true),
            // …and hands a step's model and thinking level to the CLIs that take them (M19).
            native_models: Some(true),
            permissions: spec.permissions.clone(),
            settings_permissions: Some(settings.permissions()?).filter(|all| !all.is_empty()),
            sandbox: spec.sandbox.clone(),
            acceptance: spec.acceptance.as_ref().map(serde_json::Value::to_string),
            gate: spec.gate.as_ref().map(serde_json::Value::to_string),
        }),
        settings_sandbox: Some(settings.sandbox().map_err(anyhow::Error::msg)?).filter(|all| !all.is_empty()),
        sandbox_host: Some(inputs.env.sandbox_host()),
        machine_settings: Some(MachineSettings {
            user: settings.user.as_ref().map(|f| f.value.to_string()),
            project: settings.project.as_ref().map(|f| f.value.to_string()),
        }),
        ..PlanRequest::default()
    };
    if can_place(&request) {
        request.machine_catalog = Some(LooseString::Text(
            crate::inputs::herdr::machine_list(&inputs.env).await?,
        ));
    }
    Ok(request)
}

/// Whether any step, task, the launch or a referenced agent names a saved machine: a
/// machine value that is not a cluster's name (`slurm`, `slurm:PARTITION`, or a key of
/// `subagents.clusters` in either settings scope, J1), which the planner places without the
/// catalog.
pub fn can_place(request: &PlanRequest) -> bool {
    let clusters = settings_clusters(request);
    let saved = |value: Option<&LooseString>| {
        value.is_some_and(|value| {
            value.as_text().is_none_or(|text| {
                let name = text.trim();
                name != "slurm" && !name.starts_with("slurm:") && !clusters.iter().any(|c| c == name)
            })
        })
    };
    let launch = saved(request.launch.as_ref().and_then(|l| l.machine.as_ref()));
    let referenced = |name: &str| {
        request
            .agents
            .iter()
            .find(|a| a.name == name)
            .is_some_and(|a| saved(a.machine.as_ref()))
    };
    let steps = request.steps.iter().any(|step| {
        saved(step.machine.as_ref())
            || step.agent.as_deref().is_some_and(referenced)
            || step
                .parallel
                .iter()
                .flatten()
                .any(|t| saved(t.machine.as_ref()) || referenced(&t.agent))
    });
    launch || steps
}

/// The names of the clusters either settings scope declares (`subagents.clusters`).
fn settings_clusters(request: &PlanRequest) -> Vec<String> {
    let Some(settings) = &request.machine_settings else {
        return Vec::new();
    };
    [&settings.user, &settings.project]
        .into_iter()
        .flatten()
        .filter_map(|text| serde_json::from_str::<serde_json::Value>(text).ok())
        .flat_map(|value| {
            value["subagents"]["clusters"]
                .as_object()
                .map(|clusters| clusters.keys().cloned().collect::<Vec<_>>())
                .unwrap_or_default()
        })
        .collect()
}

/// The planner's view of an agent, with its settings ceiling
/// (`subagents.agents.<name>.maxThinking`) when the definition sets none.
fn with_settings(def: &AgentDef, settings: &Settings) -> Agent {
    let mut agent = def.planner.clone();
    if agent.max_thinking.is_none() {
        agent.max_thinking = settings.agent_thinking_ceiling(&agent.name).map(loose);
    }
    agent
}

fn loose(value: serde_json::Value) -> LooseString {
    match value {
        serde_json::Value::String(text) => LooseString::Text(text),
        other => LooseString::NotText(other.to_string()),
    }
}

#[cfg(test)]
mod task_limit_tests {
    use super::*;

    #[test]
    fn a_task_over_8_mib_is_refused_with_its_size() {
        assert_eq!(check_task(&"x".repeat(TASK_LIMIT), "the task"), Ok(()));
        let error = check_task(&"x".repeat(TASK_LIMIT + 1), "steps[2].task")
            .unwrap_err()
            .to_string();
        assert!(
            error.starts_with("steps[2].task is 8388609 bytes; a task may have at most 8388608 bytes (8 MiB)."),
            "{error}"
        );
    }
}
