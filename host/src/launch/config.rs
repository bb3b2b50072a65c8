//! The runner configuration of a launch (H5): one runner step per plan step, built from the
//! step's agent definition by its adapter ([`step_config`]), plus the run's workflow
//! (concurrency, failFast) from [`WorkflowOptions`]. The shim builds the agent's argv from
//! this (see `shim/src/adapter/`).

mod aliases;
mod cli_model;
mod placement;
mod strict_schema;

use super::options::{Caller, Continuation, LaunchOptions, WorkflowOptions};
use crate::inputs::agents::{AdapterId, AgentDef};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;
use sublaunch_contract::{Conversation, GraphStep, LaunchPlan, ModelOrigin, ModelSource, NativeSchema, PlanStep};
use sublaunch_protocol::config::{AdapterSpec, CONFIG_VERSION, ModelCheck, RunnerConfig, StepConfig, WorkflowConfig};

pub use aliases::{AliasTable, aliases_for};
pub use placement::{CONTROL_DIR_ENV, Placer, SSH_CONFIG_ENV, control_dir};

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

/// The runner steps of `plan` for a launch with `options`, or the reason one cannot be
/// started. Settings' `modelResponseAliases` are read (for the launch's directory) only when
/// a pi step verifies its model.
///
/// A placed step starts ssh in `local_cwd`; its ControlMaster sockets live under `root`.
pub fn runner_steps(
    plan: &LaunchPlan,
    options: &LaunchOptions,
    root: &Path,
    local_cwd: &str,
) -> Result<Vec<StepConfig>, String> {
    if plan.steps.is_empty() {
        return Err("Subagent launch aborted: the plan has no steps.".into());
    }
    let verifies = plan.steps.iter().any(|step| {
        find_agent(&options.agents, &step.agent).is_some_and(|a| a.runner.adapter.verifies_model())
            && verified_model(step).is_some()
    });
    let table = if verifies {
        aliases_for(Path::new(local_cwd), &options.environment)?
    } else {
        AliasTable::default()
    };
    let placer = plan
        .steps
        .iter()
        .any(|s| s.machine.is_some())
        .then(|| Placer::new(root, local_cwd.to_owned(), &options.environment));
    plan.steps
        .iter()
        .enumerate()
        .map(|(index, step)| {
            let agent = find_agent(&options.agents, &step.agent);
            let mut config = step_config(index, step, agent, &table)?;
            if let Some(placer) = &placer {
                placer.place(step, &mut config)?;
            }
            if let Some(continuation) = &options.continuation {
                continue_conversation(&mut config, plan.steps.len(), continuation)?;
            }
            Ok(config)
        })
        .collect()
}

/// Makes `config` continue an agent conversation: only a run of one step, by an agent that
/// keeps conversations, where the conversation is (pi's session file is local).
fn continue_conversation(config: &mut StepConfig, steps: usize, continuation: &Continuation) -> Result<(), String> {
    if steps != 1 {
        return Err(format!(
            "Subagent launch aborted: a conversation is continued by a run of one step, not {steps}."
        ));
    }
    let agent = config.agent.clone().unwrap_or_default();
    let Some(spec) = config.adapter.as_mut() else {
        return Err(format!(
            "Subagent launch aborted: agent '{agent}' keeps no conversation to continue."
        ));
    };
    let kind = spec.id;
    let Some(conversation) = kind.conversation() else {
        return Err(format!(
            "Subagent launch aborted: agent '{agent}' runs the {} adapter, which keeps no conversation to continue.",
            kind.id()
        ));
    };
    if conversation == Conversation::LocalFile && config.placement.is_some() {
        return Err(format!(
            "Subagent launch aborted: agent '{agent}' runs pi on another machine, where its conversation is not kept."
        ));
    }
    spec.resume = Some(continuation.session.clone());
    spec.session_usage.clone_from(&continuation.session_usage);
    Ok(())
}

fn find_agent<'a>(agents: &'a [AgentDef], name: &str) -> Option<&'a AgentDef> {
    agents.iter().find(|a| a.name() == name)
}

/// The planned model of a step without its thinking suffix, when the child must report it
/// (a model the parent session handed down is taken as given, M2).
fn verified_model(step: &PlanStep) -> Option<String> {
    if step.model_origin == Some(ModelOrigin::Inherited) {
        return None;
    }
    step.model.as_deref().map(|m| base_model(m, step))
}

/// `provider/id:level` → `provider/id` when `level` is the step's thinking level.
fn base_model(model: &str, step: &PlanStep) -> String {
    match step.thinking.map(|t| format!(":{}", t.name())) {
        Some(suffix) if model.ends_with(&suffix) => model[..model.len() - suffix.len()].to_owned(),
        _ => model.to_owned(),
    }
}

/// The runner step of plan step `index`, chosen by its agent's runner adapter.
pub fn step_config(
    index: usize,
    step: &PlanStep,
    agent: Option<&AgentDef>,
    aliases: &AliasTable,
) -> Result<StepConfig, String> {
    let Some(agent) = agent else {
        return Err(format!(
            "Subagent launch aborted: agent '{}' is not known to the launcher.",
            step.agent
        ));
    };
    let kind = agent.runner.adapter;
    let mut config = match kind {
        AdapterId::Shell => StepConfig::shell(&step.task, &step.cwd, BTreeMap::new()),
        _ if !kind.is_runnable() => {
            return Err(format!(
                "Subagent launch aborted: agent '{}' uses the {} runner, which sublaunch cannot start.",
                step.agent,
                kind.id()
            ));
        }
        _ => StepConfig {
            agent: Some(step.agent.clone()),
            task: Some(step.task.clone()),
            cwd: Some(step.cwd.clone()),
            runner: agent.runner.planner_runner().and_then(|r| serde_json::to_value(r).ok()),
            ..StepConfig::default()
        },
    };
    config.model.clone_from(&step.model);
    config.adapter = Some(adapter_spec(step, agent).map_err(|e| format!("Subagent launch aborted: {e}."))?);
    config.set_position(step.step_index, step.task_index);
    config.reads.clone_from(&step.reads);
    config.output_file.clone_from(&step.output);
    config.output_name.clone_from(&step.output_name);
    config.label.clone_from(&step.label);
    config.phase.clone_from(&step.phase);
    config.usage_budget.clone_from(&step.usage_budget);
    config.tool_budget = step.tool_budget;
    // Names and relative paths until the launch resolves them (`step_files`).
    config.extensions.clone_from(&step.extensions);
    config.required_extensions.clone_from(&step.required_extensions);
    config.skills.clone_from(&step.skills);
    if step.structured {
        let schema = match step.output_schema.as_deref() {
            Some(text) => serde_json::from_str::<Value>(text)
                .map_err(|e| format!("Subagent launch aborted: the output schema of step {index} is not JSON: {e}"))?,
            None => serde_json::json!({}),
        };
        if kind.native_schema() == Some(NativeSchema::Strict)
            && let Some(problem) = strict_schema::strict_problem(&schema)
        {
            return Err(format!(
                "Subagent launch aborted: Codex sends the output schema of step {} ('{}') as a strict JSON schema, which it is not: {problem}.",
                index + 1,
                step.agent
            ));
        }
        config.set_output_schema(Some(schema));
    }
    if kind.verifies_model()
        && let Some(planned) = verified_model(step)
    {
        let id = planned.split_once('/').map(|(_, id)| id.to_owned());
        config.model_check = Some(ModelCheck {
            aliases: aliases.for_model(&planned, id.as_deref()),
            planned,
            id,
        });
    }
    Ok(config)
}

/// What the shim's adapter needs: the program (when the agent replaces it), the argv of
/// `command` and generic external CLIs, the model and thinking level, system prompt and tools.
fn adapter_spec(step: &PlanStep, agent: &AgentDef) -> Result<AdapterSpec, String> {
    let kind = agent.runner.adapter;
    let mut spec = AdapterSpec::new(kind);
    if kind.runs_given_command() {
        spec.argv.clone_from(&agent.runner.command);
    } else {
        spec.program = agent.runner.command.as_ref().and_then(|argv| argv.first().cloned());
    }
    spec.thinking = step.thinking.map(|t| t.name().to_owned());
    match kind.model_source() {
        // Native runners get the planned model; the thinking level travels separately.
        ModelSource::Planned => spec.model = step.model.as_deref().map(|m| base_model(m, step)),
        // External CLIs take no planned model (M19).
        ModelSource::None => spec.model = None,
        // Coding-agent CLIs take the agent file's own model and thinking, as they name them.
        ModelSource::AgentFile => {
            let cli = cli_model::cli_model(kind, agent)?;
            spec.model = cli.model;
            spec.provider = cli.provider;
            spec.thinking = cli.thinking.map(|t| t.name().to_owned());
        }
    }
    if !agent.system_prompt.trim().is_empty() {
        spec.system_prompt = Some(agent.system_prompt.clone());
    }
    spec.tools.clone_from(&agent.tools);
    Ok(spec)
}

/// The workflow section of the runner configuration: concurrency and failFast of parallel
/// groups, and the run's task that `{task}` stands for.
pub fn workflow_config(workflow: &WorkflowOptions) -> WorkflowConfig {
    WorkflowConfig {
        concurrency: workflow.concurrency.filter(|c| *c > 0),
        fail_fast: workflow.fail_fast,
        chain_dir: None,
        task: workflow.task.clone(),
    }
}

/// Everything [`runner_config`] needs.
pub(crate) struct ConfigInputs<'a> {
    pub run_id: &'a str,
    pub steps: Vec<StepConfig>,
    pub result_path: String,
    pub cwd: String,
    pub async_dir: String,
    pub caller: &'a Caller,
    pub timeout_ms: Option<u64>,
    pub deadline_at: Option<u64>,
    pub runner_process_instance_id: &'a str,
    pub workflow: &'a WorkflowOptions,
    pub agent_umask: Option<u32>,
    pub on_end: Option<&'a sublaunch_protocol::hook::OnEnd>,
    pub max_active: Option<std::num::NonZeroU32>,
    pub usage_budget: Option<sublaunch_contract::UsageBudget>,
    pub checkpoint_before_deadline_ms: Option<u64>,
    pub project_config: sublaunch_protocol::config::ProjectConfig,
}

/// H4/H5: the configuration object; a fresh launch's barrier token is its instance id.
pub(crate) fn runner_config(inputs: ConfigInputs<'_>) -> RunnerConfig {
    let revival_lease = inputs.caller.revival_lease.clone().map(|mut lease| {
        lease.run_id = inputs.run_id.to_owned();
        lease
    });
    let launch_barrier_token = revival_lease
        .is_none()
        .then(|| inputs.runner_process_instance_id.to_owned());
    RunnerConfig {
        config_version: CONFIG_VERSION,
        id: inputs.run_id.to_owned(),
        steps: inputs.steps,
        result_path: inputs.result_path,
        cwd: inputs.cwd,
        async_dir: inputs.async_dir,
        session_id: inputs.caller.session_id.clone(),
        completion_owner_id: inputs.caller.completion_owner_id.clone(),
        tool_call_id: inputs.caller.tool_call_id.clone(),
        revival_lease,
        timeout_ms: inputs.timeout_ms,
        deadline_at: inputs.deadline_at,
        command: None,
        runner_process_instance_id: inputs.runner_process_instance_id.to_owned(),
        launch_barrier_token,
        agent_umask: inputs.agent_umask.map(|mask| mask & 0o777),
        workflow: workflow_config(inputs.workflow),
        on_end: inputs.on_end.cloned(),
        max_active: inputs.max_active.map(std::num::NonZeroU32::get),
        usage_budget: inputs.usage_budget,
        checkpoint_before_deadline_ms: inputs.checkpoint_before_deadline_ms,
        project_config: inputs.project_config,
    }
}

#[cfg(test)]
mod tests;
