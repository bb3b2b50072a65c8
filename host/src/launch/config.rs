//! The runner configuration of a launch (H5): one runner step per plan step, built from the
//! step's agent definition by its adapter ([`step_config`]), plus the run's workflow
//! (concurrency, failFast) from [`WorkflowOptions`]. The shim builds the agent's argv from
//! this (see `shim/src/adapter/`).

mod aliases;
mod cli_model;
mod placement;
mod strict_schema;

use super::options::{Continuation, WorkflowOptions};
use super::spec::Launch;
use crate::inputs::agents::{AdapterId, AgentDef};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;
use sublaunch_contract::{Conversation, GraphStep, LaunchPlan, ModelOrigin, ModelSource, NativeSchema, PlanStep};
use sublaunch_protocol::records::config::{
    AdapterSpec, CONFIG_VERSION, ModelCheck, RunnerConfig, StepConfig, WorkflowConfig,
};

pub use aliases::{AliasError, AliasProblem, AliasTable, AliasesError, aliases_for};
pub use cli_model::CliModelError;
pub use placement::{CONTROL_DIR_ENV, ControlDirError, NotPrivate, Placer, SSH_CONFIG_ENV, control_dir};

/// Why a runner step cannot be built from its plan step and agent.
#[derive(Clone, Debug, thiserror::Error)]
pub enum StepError {
    /// The plan has no steps.
    #[error("the plan has no steps.")]
    NoSteps,
    /// A step's agent is not among the launch's agents.
    #[error("agent '{0}' is not known to the launcher.")]
    UnknownAgent(String),
    /// A step's agent uses a runner sublaunch does not start.
    #[error("agent '{agent}' uses the {adapter} runner, which sublaunch cannot start.")]
    NotStartable {
        /// The agent.
        agent: String,
        /// Its adapter.
        adapter: AdapterId,
    },
    /// An agent file asks for a model or thinking level its CLI cannot take.
    #[error("{0}.")]
    Model(#[from] CliModelError),
    /// A step's output schema is not JSON (`index` counts from 0).
    #[error("the output schema of step {index} is not JSON: {source}")]
    SchemaNotJson {
        /// The step's index in the plan.
        index: usize,
        /// Why.
        source: std::sync::Arc<serde_json::Error>,
    },
    /// Codex is given an output schema that is not strict (`step` counts from 1).
    #[error(
        "Codex sends the output schema of step {step} ('{agent}') as a strict JSON schema, which it is not: {problem}."
    )]
    NotStrict {
        /// The step's number.
        step: usize,
        /// Its agent.
        agent: String,
        /// What makes the schema not strict.
        problem: String,
    },
    /// A conversation is continued by a run of more than one step.
    #[error("a conversation is continued by a run of one step, not {0}.")]
    ContinuedBySeveral(usize),
    /// The step's agent has no adapter, so no conversation.
    #[error("agent '{0}' keeps no conversation to continue.")]
    NoConversation(String),
    /// The step's adapter keeps no conversations.
    #[error(
        "agent '{agent}' runs the {} adapter, which keeps no conversation to continue.",
        .adapter.id()
    )]
    AdapterKeepsNone {
        /// The agent.
        agent: String,
        /// Its adapter.
        adapter: AdapterId,
    },
    /// pi's conversation on another machine is not kept.
    #[error("agent '{0}' runs pi on another machine, where its conversation is not kept.")]
    PiElsewhere(String),
    /// The ssh control directory of a placed step cannot be used.
    #[error(transparent)]
    ControlDir(#[from] ControlDirError),
    /// The settings' model aliases cannot be read.
    #[error(transparent)]
    Aliases(#[from] AliasesError),
}

impl From<AliasError> for StepError {
    fn from(error: AliasError) -> Self {
        Self::Aliases(AliasesError::Invalid(error))
    }
}

/// The plan's mode, as the request had it: `parallel` when the graph is one parallel group
/// (parallel mode always is), `chain` for any other graph (a chain may hold groups among its
/// steps, or be one step long), `single` without one. A chain whose only step is a group is
/// told apart from parallel mode by nothing in the plan, and runs exactly as it does: it is
/// `parallel`. A plan made by hand without a graph is `single` for one step, else `chain`.
pub fn plan_mode(plan: &LaunchPlan) -> &'static str {
    match plan.graph.as_ref().map(|g| g.steps.as_slice()) {
        None if plan.steps.len() > 1 => "chain",
        None => "single",
        Some([GraphStep::Parallel(_)]) => "parallel",
        Some(_) => "chain",
    }
}

/// The runner steps of `launch`'s plan in `env`, or the reason one cannot be started.
/// Settings' `modelResponseAliases` are needed only when a pi step verifies its model: those
/// the run was prepared with, else those of the launch's directory.
///
/// A placed step starts ssh in `local_cwd`; its ControlMaster sockets live under `root`.
pub fn runner_steps(
    launch: &Launch,
    env: &crate::Environment,
    root: &Path,
    local_cwd: &str,
) -> Result<Vec<StepConfig>, StepError> {
    let plan = &launch.plan;
    if plan.steps.is_empty() {
        return Err(StepError::NoSteps);
    }
    let verifies = plan.steps.iter().any(|step| {
        find_agent(&launch.agents, &step.agent).is_some_and(|a| a.runner.adapter.verifies_model())
            && verified_model(step).is_some()
    });
    let table = match &launch.settings {
        _ if !verifies => AliasTable::default(),
        Some(settings) => AliasTable::of(settings)?,
        None => aliases_for(Path::new(local_cwd), env)?,
    };
    let placer = plan
        .steps
        .iter()
        .any(|s| s.machine.is_some())
        .then(|| Placer::new(root, local_cwd.to_owned(), env));
    plan.steps
        .iter()
        .enumerate()
        .map(|(index, step)| {
            let agent = find_agent(&launch.agents, &step.agent);
            let mut config = step_config(index, step, agent, &table)?;
            if let Some(placer) = &placer {
                placer.place(step, &mut config)?;
            }
            if let Some(continuation) = &launch.continuation {
                continue_conversation(&mut config, plan.steps.len(), continuation)?;
            }
            // G81: the step's reviewer, configured as any step is, carried by its step.
            if let Some(reviewer) = plan.reviewers.iter().find(|r| r.review_of as usize == index) {
                let agent = find_agent(&launch.agents, &reviewer.step.agent);
                let mut reviewer = step_config(index, &reviewer.step, agent, &table)?;
                // The runner writes the reviewer's prompt; it runs in its step's directory.
                reviewer.cwd.clone_from(&config.cwd);
                config.reviewer = Some(Box::new(reviewer));
            }
            Ok(config)
        })
        .collect()
}

/// Makes `config` continue an agent conversation: only a run of one step, by an agent that
/// keeps conversations, where the conversation is (pi's session file is local).
fn continue_conversation(config: &mut StepConfig, steps: usize, continuation: &Continuation) -> Result<(), StepError> {
    if steps != 1 {
        return Err(StepError::ContinuedBySeveral(steps));
    }
    let agent = config.agent.clone().unwrap_or_default();
    let Some(spec) = config.adapter.as_mut() else {
        return Err(StepError::NoConversation(agent));
    };
    let kind = spec.id;
    let Some(conversation) = kind.conversation() else {
        return Err(StepError::AdapterKeepsNone { agent, adapter: kind });
    };
    if conversation == Conversation::LocalFile && config.placement.is_some() {
        return Err(StepError::PiElsewhere(agent));
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
) -> Result<StepConfig, StepError> {
    let Some(agent) = agent else {
        return Err(StepError::UnknownAgent(step.agent.clone()));
    };
    let kind = agent.runner.adapter;
    let mut config = match kind {
        AdapterId::Shell => StepConfig::shell(&step.task, &step.cwd, BTreeMap::new()),
        _ if !kind.is_runnable() => {
            return Err(StepError::NotStartable {
                agent: step.agent.clone(),
                adapter: kind,
            });
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
    config.adapter = Some(adapter_spec(step, agent)?);
    config.set_position(step.step_index, step.task_index);
    config.reads.clone_from(&step.reads);
    config.output_file.clone_from(&step.output);
    config.output_name.clone_from(&step.output_name);
    config.label.clone_from(&step.label);
    config.phase.clone_from(&step.phase);
    config.usage_budget.clone_from(&step.usage_budget);
    config.tool_budget = step.tool_budget;
    config.rate_limit_retries = step.retry.as_ref().and_then(|r| r.rate_limit);
    // Names and relative paths until the launch resolves them (`step_files`).
    config.extensions.clone_from(&step.extensions);
    config.required_extensions.clone_from(&step.required_extensions);
    config.skills.clone_from(&step.skills);
    config.sandbox.clone_from(&step.sandbox);
    config.acceptance.clone_from(&step.acceptance);
    if step.structured {
        let schema = match step.output_schema.as_deref() {
            Some(text) => serde_json::from_str::<Value>(text).map_err(|e| StepError::SchemaNotJson {
                index,
                source: std::sync::Arc::new(e),
            })?,
            None => serde_json::json!({}),
        };
        if kind.native_schema() == Some(NativeSchema::Strict)
            && let Some(problem) = strict_schema::strict_problem(&schema)
        {
            return Err(StepError::NotStrict {
                step: index + 1,
                agent: step.agent.clone(),
                problem,
            });
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
fn adapter_spec(step: &PlanStep, agent: &AgentDef) -> Result<AdapterSpec, CliModelError> {
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
        // Coding-agent CLIs take the step's own model and thinking level when it has them (the
        // planner mapped them to what the CLI takes), else the agent file's, as they name them.
        ModelSource::AgentFile => {
            let cli = cli_model::cli_model(kind, agent, step)?;
            spec.model = cli.model;
            spec.provider = cli.provider;
            spec.thinking = cli.thinking.map(|t| t.name().to_owned());
        }
    }
    if !agent.system_prompt.trim().is_empty() {
        spec.system_prompt = Some(agent.system_prompt.clone());
    }
    // What the planner resolved, written out in full so that the run's records say what it
    // ran with (rule G6).
    spec.permissions = Some(
        step.permissions
            .clone()
            .unwrap_or_else(|| sublaunch_contract::ResolvedPermissions::adapter_default(kind)),
    );
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

/// What [`runner_config`] needs besides the launch: what the launch chose and resolved.
pub(crate) struct ConfigInputs<'a> {
    pub launch: &'a Launch,
    pub run_id: &'a str,
    pub runner_process_instance_id: &'a str,
    /// The runner steps, resolved against their final directories.
    pub steps: Vec<StepConfig>,
    pub result_path: String,
    pub cwd: String,
    pub async_dir: String,
    pub agent_umask: Option<u32>,
    /// J6: the cluster the runner hands the run to.
    pub cluster: Option<sublaunch_protocol::records::cluster::ClusterSubmission>,
}

/// H4/H5: the configuration object; a fresh launch's barrier token is its instance id.
pub(crate) fn runner_config(inputs: ConfigInputs<'_>) -> RunnerConfig {
    let launch = inputs.launch;
    let caller = &launch.caller;
    let revival_lease = caller.revival_lease.clone().map(|mut lease| {
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
        session_id: caller.session_id.clone(),
        completion_owner_id: caller.completion_owner_id.clone(),
        tool_call_id: caller.tool_call_id.clone(),
        revival_lease,
        timeout_ms: launch.limits.timeout_ms,
        deadline_at: launch.limits.deadline_at,
        command: None,
        runner_process_instance_id: inputs.runner_process_instance_id.to_owned(),
        launch_barrier_token,
        agent_umask: inputs.agent_umask.map(|mask| mask & 0o777),
        workflow: workflow_config(&launch.workflow),
        on_end: launch.on_end.clone(),
        // J6: a cluster run's capacity queue is the engine's.
        max_active: (inputs.cluster.is_none())
            .then_some(launch.limits.max_active)
            .flatten()
            .map(std::num::NonZeroU32::get),
        usage_budget: launch.plan.usage_budget.clone(),
        checkpoint_before_deadline_ms: launch.plan.steps.iter().find_map(|s| s.checkpoint_before_deadline_ms),
        project_config: launch.project_config,
        // G44: the integrator turns this on when a sandbox is asked for.
        containment_required: false,
        cluster: inputs.cluster,
        parent_run_id: launch.launched_from.as_ref().map(|from| from.run_id.clone()),
        tree_root_run_id: launch.launched_from.as_ref().map(|from| from.root().to_owned()),
        // Decided by the launch once the steps are known (`super::spend`).
        spend: None,
    }
}

#[cfg(test)]
mod tests;
