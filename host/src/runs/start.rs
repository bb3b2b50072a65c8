//! Preparing a run the way `sublaunch run` does, for every front end (the CLI, the MCP
//! server, embedders): the agents, settings and registry of the working directory, the plan
//! request of one agent or a chain, the plan and the launch options. Launching is then
//! [`crate::launch::launch`].

use crate::Environment;
use crate::engine::planner::Planner;
use crate::inputs::agents::{Catalog, discover};
use crate::inputs::chain::ChainFile;
use crate::inputs::project::{Ignored, Project};
use crate::inputs::registry::Registry;
use crate::inputs::settings::Settings;
use crate::launch::{Launch, LaunchOptions, RunLimits, WorkflowOptions};
use crate::request::{self, Inputs, RunSpec};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use sublaunch_contract::{LaunchPlan, Mode, PlanError, PlanRequest, Step};

pub use super::request::{RunRequest, Work};

/// What a working directory offers: its agents, settings and (read when a plan needs it)
/// registry.
pub struct Gathered {
    inputs: Inputs,
    catalog: Catalog,
    /// The project of the working directory and the user's trust in it.
    project: Project,
    /// The project's pi extensions, left out because the user has not approved them.
    pi_extensions: Option<Ignored>,
    /// The registry file on top of the configured ones.
    models: Option<PathBuf>,
}

impl Gathered {
    /// The agents and settings of `cwd`; `models` is a registry file on top of the configured
    /// ones, read with them only for a plan that picks models.
    pub fn read(cwd: &Path, models: Option<&Path>, env: &Environment) -> Result<Self, StartError> {
        Self::read_for(Project::open(cwd, env), models, env)
    }

    /// [`Gathered::read`] for a project the caller has decided on: an embedder that vouches
    /// for a directory itself passes [`Project::own`]; everyone else gets the user's trust
    /// through [`Gathered::read`].
    pub fn read_for(project: Project, models: Option<&Path>, env: &Environment) -> Result<Self, StartError> {
        let catalog = discover(&project, env);
        let inputs = Inputs {
            registry: Registry::default(),
            settings: Settings::load(&project, env).map_err(|e| StartError::Invalid(format!("{e:#}")))?,
            env: env.clone(),
            agents: catalog.agents.clone(),
            cwd: project.start().to_owned(),
        };
        let pi_extensions = project.unapproved_pi_extensions();
        Ok(Self {
            inputs,
            catalog,
            project,
            pi_extensions,
            models: models.map(Path::to_owned),
        })
    }

    /// Reads the registry when `request` picks a model: a step names a model or a thinking
    /// level, or runs an agent whose runner sublaunch plans models for (pi, a command). Runs
    /// of coding-agent CLIs and shell steps never read it (their models are their own, M19),
    /// so they do not pay for loading pi's catalog.
    fn load_registry_for(&mut self, request: &RunRequest) -> Result<(), StartError> {
        let steps = match &request.work {
            Work::Agent { agent, .. } => vec![Step {
                agent: Some(agent.clone()),
                ..Step::default()
            }],
            Work::Chain { chain, .. } => chain.request_steps(),
        };
        let planned = |agent: Option<&str>| {
            agent
                .and_then(|name| self.catalog.get(name))
                .is_some_and(|def| def.runner.adapter.plans_model())
        };
        let needed = request.model.is_some()
            || request.thinking.is_some()
            || steps.iter().any(|step| {
                step.model.is_some()
                    || step.thinking.is_some()
                    || planned(step.agent.as_deref())
                    || step
                        .parallel
                        .iter()
                        .flatten()
                        .any(|task| task.model.is_some() || task.thinking.is_some() || planned(Some(&task.agent)))
            });
        if needed {
            self.inputs.registry = Registry::load(
                &self.inputs.cwd,
                &self.project,
                self.models.as_deref(),
                &self.inputs.env,
            )
            .map_err(|e| StartError::Invalid(format!("{e:#}")))?;
        }
        Ok(())
    }

    /// The directory's agents, as the plan will find them.
    pub fn agents(&self) -> &[crate::inputs::agents::AgentDef] {
        &self.catalog.agents
    }

    /// Agent files left out because someone else could have written them, and completion
    /// hooks of settings files left out for the same reason.
    pub fn warnings(&self) -> Vec<String> {
        let hooks = self.inputs.settings.on_end().map(|s| s.ignored).unwrap_or_default();
        self.catalog
            .untrusted
            .iter()
            .map(ToString::to_string)
            .chain(hooks)
            .collect()
    }

    /// Project configuration left out because the project is not trusted or a program in it
    /// is not approved: each says which file, and the command that trusts it.
    pub fn ignored(&self) -> Vec<Ignored> {
        let hook = self.inputs.settings.on_end().ok().and_then(|s| s.unapproved);
        let mut ignored = self.project.ignored();
        ignored.extend(self.catalog.ignored.iter().cloned());
        ignored.extend(hook);
        ignored.extend(self.pi_extensions.iter().cloned());
        ignored
    }

    /// The project the configuration was read for.
    pub fn project(&self) -> &Project {
        &self.project
    }
}

/// A planned run, ready for [`crate::launch::launch`].
pub struct Prepared {
    /// The plan and the run's settings, merged once.
    pub launch: Launch,
    /// How to launch it: the environment of the request, the project's trust for its agents.
    pub options: LaunchOptions,
    /// What the caller should be told: project agents in place of built-in or user ones.
    pub notes: Vec<String>,
}

/// Why a run cannot start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The request itself is wrong (an empty task, an unknown agent, a bad chain, a bad
    /// registry file): the caller should change it.
    #[error("{0}")]
    Invalid(String),
    /// The planner refused it (its code says why).
    #[error("{}", .0.message)]
    Plan(PlanError),
    /// Something failed on the way (a machine catalog that could not be read, …).
    #[error("{0:#}")]
    Failed(anyhow::Error),
}

/// Plans `request` with the agents, settings and registry `gathered` (a machine catalog is
/// read only when something can be placed).
pub async fn prepare(request: RunRequest, gathered: Gathered, planner: &Planner) -> Result<Prepared, StartError> {
    let mut gathered = gathered;
    gathered.load_registry_for(&request)?;
    let project_config = gathered.project.agents_config();
    let Gathered {
        inputs,
        catalog,
        project,
        ..
    } = gathered;
    let mut notes = Vec::new();
    let mut plan_request = build(&request, &inputs, &catalog).await?;
    // G60, G61: the runs this process runs inside bound this one, found in their records.
    let lineage = super::lineage::Lineage::of_this_process();
    plan_request.ceilings = lineage.ceilings();
    let worktree_options = worktrees(&request, &mut plan_request, &inputs, &catalog)?;
    let mut planned = planner.plan(&plan_request).map_err(|error| {
        StartError::Plan(match &request.work {
            Work::Chain { chain, .. } => chain.locate(error),
            Work::Agent { .. } => error,
        })
    })?;
    if (worktree_options.base.is_some() || request.require_clean) && !planned.steps.iter().any(|s| s.worktree) {
        return Err(StartError::Invalid(
            "--base and --require-clean are for managed worktrees, and no step of this run runs in one (add --worktree)"
                .into(),
        ));
    }
    // Every step says what it runs with (rule G6): where no layer said anything, the planner
    // left the adapter's defaults implicit; the run's records and `--dry-run` spell them out.
    for step in &mut planned.steps {
        if step.permissions.is_none()
            && let Some(agent) = catalog.get(&step.agent)
        {
            step.permissions = Some(sublaunch_contract::ResolvedPermissions::adapter_default(
                agent.runner.adapter,
            ));
        }
    }
    notes.extend(project_overrides(&planned, &catalog));
    // The plan's warnings (a thinking level a CLI has no name for, …), but not the one every
    // pi run without a model gets: pi then picks its own default, as a user expects.
    notes.extend(
        planned
            .warnings
            .iter()
            .filter(|w| !w.contains("runtime default model"))
            .cloned(),
    );
    let (concurrency, fail_fast) = match &request.work {
        Work::Chain { chain, .. } => {
            let file = chain.workflow().map_err(|e| StartError::Invalid(e.to_string()))?;
            (
                request.concurrency.or(file.concurrency),
                request.fail_fast || file.fail_fast.unwrap_or(false),
            )
        }
        Work::Agent { .. } => (None, false),
    };
    let on_end = on_end_hook(request.on_end.as_deref(), &inputs.settings, &mut notes)?;
    let max_active = super::request::max_active(request.max_active, &inputs.env, || {
        inputs.settings.max_active().map_err(|e| e.to_string())
    })
    .map_err(|e| StartError::Invalid(e.to_string()))?;
    let deadline_at = request.deadline_at.or(match &request.work {
        Work::Chain { chain, .. } => chain.deadline_at,
        Work::Agent { .. } => None,
    });
    let launch = Launch {
        plan: planned,
        run_id: request.run_id,
        cwd: Some(inputs.cwd.clone()),
        caller: request.caller,
        limits: RunLimits {
            timeout_ms: request
                .timeout
                .map(|t| u64::try_from(t.as_millis()).unwrap_or(u64::MAX)),
            deadline_at,
            max_active,
            no_queue: request.no_queue,
        },
        agents: inputs.agents,
        workflow: WorkflowOptions {
            concurrency,
            fail_fast,
            task: match request.work {
                Work::Chain { task, .. } => task,
                Work::Agent { .. } => None,
            },
        },
        continuation: None,
        on_end,
        worktrees: worktree_options,
        project_config,
        settings: Some(Arc::new(inputs.settings)),
        launched_from: lineage.launched_from(),
    };
    let options = LaunchOptions {
        environment: inputs.env,
        // The run's agents trust at most what this launch did.
        env: vec![project.lineage_var()],
        ..LaunchOptions::default()
    };
    Ok(Prepared { launch, options, notes })
}

/// Which steps run in managed worktrees, and how those are made. A step's (or group's) own
/// `worktree` wins; else the run's (`--worktree`, the chain file's top-level flag), else the
/// frontmatter of its agent — for a group, of any of its agents, since its tasks share one
/// setting (rule L4). The planner then refuses a worktree step placed on a machine (P2).
fn worktrees(
    request: &RunRequest,
    plan_request: &mut PlanRequest,
    inputs: &Inputs,
    catalog: &Catalog,
) -> Result<crate::worktrees::WorktreeOptions, StartError> {
    let chain = match &request.work {
        Work::Chain { chain, .. } => Some(chain),
        Work::Agent { .. } => None,
    };
    let run_level = request.worktree || chain.is_some_and(|c| c.worktree == Some(true));
    let writes = |agent: &str| catalog.get(agent).is_some_and(|a| a.worktree);
    match plan_request.mode {
        Mode::Parallel => {
            let any = plan_request.steps.iter().any(|s| {
                s.agent.as_deref().is_some_and(writes) || s.parallel.iter().flatten().any(|t| writes(&t.agent))
            });
            if run_level || any {
                if let Some(launch) = plan_request.launch.as_mut() {
                    launch.worktree = Some(true);
                }
                for group in plan_request.steps.iter_mut().filter(|s| s.parallel.is_some()) {
                    group.worktree.get_or_insert(true);
                }
            }
        }
        Mode::Single | Mode::Chain => {
            for step in &mut plan_request.steps {
                if step.worktree.is_some() {
                    continue;
                }
                let agents = step.agent.as_deref().is_some_and(writes)
                    || step.parallel.iter().flatten().any(|t| writes(&t.agent));
                if run_level || agents {
                    step.worktree = Some(true);
                }
            }
        }
    }
    let (dir, settings_clean) = inputs
        .settings
        .worktrees(inputs.env.home().as_deref())
        .map_err(|e| StartError::Invalid(e.to_string()))?;
    Ok(crate::worktrees::WorktreeOptions {
        base: request
            .worktree_base
            .clone()
            .or_else(|| chain.and_then(|c| c.worktree_base.clone())),
        require_clean: request.require_clean || settings_clean,
        dir,
        share_previous: chain.map(ChainFile::shares_previous).unwrap_or_default(),
    })
}

/// The completion hook: the caller's command, else the trusted settings' `subagents.onEnd`
/// (an empty command is none), with the settings' time limit. A hook from the project's
/// settings is named in `notes`, as a project agent in place of a built-in is.
fn on_end_hook(
    asked: Option<&str>,
    settings: &Settings,
    notes: &mut Vec<String>,
) -> Result<Option<crate::launch::OnEnd>, StartError> {
    let configured = settings.on_end().map_err(|e| StartError::Invalid(e.to_string()))?;
    let command = match asked {
        Some(command) => command.to_owned(),
        None => {
            let Some(command) = configured.command.clone() else {
                return Ok(None);
            };
            if configured.from_project && !command.trim().is_empty() {
                let source = configured.source.as_deref().unwrap_or(Path::new("settings"));
                notes.push(format!(
                    "the completion hook comes from this project's settings ({}): {command}",
                    source.display()
                ));
            }
            command
        }
    };
    if command.trim().is_empty() {
        return Ok(None);
    }
    Ok(Some(crate::launch::OnEnd::new(command, configured.timeout_ms)))
}

/// Checks the work against the catalog and builds the plan request.
async fn build(request: &RunRequest, inputs: &Inputs, catalog: &Catalog) -> Result<PlanRequest, StartError> {
    let invalid = StartError::Invalid;
    let mut spec = RunSpec {
        agent: String::new(),
        task: String::new(),
        model: request.model.clone(),
        thinking: request.thinking.clone(),
        machine: request.machine.clone(),
        cwd: request.cwd.clone(),
        max_thinking: request.max_thinking.clone(),
        reads: (!request.reads.is_empty()).then(|| request.reads.clone()),
        output: request.output.clone(),
        usage_budget: request.usage_budget.clone(),
        tool_budget: request.tool_budget,
        checkpoint_before_deadline_ms: request
            .checkpoint_before_deadline
            .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
        extensions: request.extensions.clone(),
        required_extensions: (!request.required_extensions.is_empty()).then(|| request.required_extensions.clone()),
        skills: request.skills.clone(),
        permissions: request.permissions.clone(),
        sandbox: request.sandbox.clone(),
        acceptance: request.acceptance.clone(),
        gate: request.gate.clone(),
    };
    match &request.work {
        Work::Agent { agent, task } => {
            if task.trim().is_empty() {
                return Err(invalid("the task is empty: say what the agent should do.".into()));
            }
            request::check_task(task, "the task").map_err(|e| invalid(e.to_string()))?;
            catalog.require(agent).map_err(|e| invalid(e.to_string()))?;
            spec.agent.clone_from(agent);
            spec.task.clone_from(task);
            request::build(&spec, inputs).await.map_err(StartError::Failed)
        }
        Work::Chain { chain, task } => {
            if let Some(task) = task {
                if task.trim().is_empty() {
                    return Err(invalid("the task is empty: say what the agent should do.".into()));
                }
                request::check_task(task, "the task").map_err(|e| invalid(e.to_string()))?;
                spec.task.clone_from(task);
            }
            chain
                .check(catalog, task.as_deref())
                .map_err(|e| invalid(e.to_string()))?;
            if spec.cwd.is_none() {
                spec.cwd.clone_from(&chain.cwd);
            }
            let single_only = [
                ("a tool budget", spec.tool_budget.is_some()),
                (
                    "extensions",
                    spec.extensions.is_some() || spec.required_extensions.is_some(),
                ),
                ("skills", spec.skills.is_some()),
            ];
            if let Some((what, _)) = single_only.iter().find(|(_, given)| *given) {
                return Err(invalid(format!(
                    "{what} on the command line applies to a single agent; a chain file sets them on its steps"
                )));
            }
            if spec.usage_budget.is_none() {
                spec.usage_budget.clone_from(&chain.usage_budget);
            }
            if spec.checkpoint_before_deadline_ms.is_none() {
                spec.checkpoint_before_deadline_ms = chain.checkpoint_before_deadline_ms;
            }
            let mode = if chain.mode == Mode::Parallel {
                Mode::Parallel
            } else {
                Mode::Chain
            };
            request::build_steps(mode, chain.request_steps(), &spec, inputs)
                .await
                .map_err(StartError::Failed)
        }
    }
}

/// A repository can redefine what `claude` runs: a note per project agent of the plan that
/// replaces a built-in or user agent.
fn project_overrides(plan: &LaunchPlan, catalog: &Catalog) -> Vec<String> {
    let mut named: Vec<&str> = plan.steps.iter().map(|s| s.agent.as_str()).collect();
    named.sort_unstable();
    named.dedup();
    named
        .into_iter()
        .filter_map(|name| {
            let hidden = catalog.hidden_by_project(name);
            let agent = catalog.get(name)?;
            if hidden.is_empty() {
                return None;
            }
            let replaced: Vec<String> = hidden.iter().map(|h| h.source.describe()).collect();
            Some(format!(
                "agent '{name}' is defined by this project in {}, in place of the {} one",
                agent.source.describe(),
                replaced.join(" and the ")
            ))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A library caller gets the user's trust by default (an untrusted directory's agents are
    /// ignored, and it is told which), or vouches for the directory itself.
    #[test]
    fn an_embedder_gets_the_users_trust_or_vouches_itself() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().canonicalize().unwrap();
        std::fs::create_dir_all(dir.join(".sublaunch/agents")).unwrap();
        std::fs::write(
            dir.join(".sublaunch/agents/helper.md"),
            "---\ndescription: helps\n---\n",
        )
        .unwrap();
        let env = Environment::default();
        let read = Gathered::read(&dir, None, &env).unwrap();
        assert!(read.catalog.get("helper").is_none());
        assert!(read.ignored()[0].to_string().contains(".sublaunch/agents"));
        let own = Gathered::read_for(Project::own(&dir, None), None, &env).unwrap();
        assert!(own.catalog.get("helper").is_some());
        assert!(own.ignored().is_empty());
    }
}
