//! The sublaunch launch planner.
//!
//! Plain Rust over the contract types of `sublaunch-contract`; it compiles natively for unit
//! tests and to `wasm32-wasip2` as the planner component, where `bindings` (the only
//! wit-bindgen code) exports it. It is pure: no files, network, clocks or randomness (maps are
//! `BTreeMap`s so that no hasher seeds itself from WASI randomness).
//!
//! The pipeline follows placement-and-schemas.md §2 and model-and-thinking.md E1; the first
//! failure ends planning (L10).

mod acceptance;
mod budgets;
mod ceilings;
mod children;
mod cli_model;
mod graph;
mod jsstr;
mod model;
mod normalize;
mod origin;
mod paths;
mod permissions;
mod pi_resources;
mod placement;
mod registry;
mod retry;
mod runner;
mod sandbox;
mod schema;
mod scope;
mod session;
mod shape;
mod step_io;
mod thinking;
mod workdir;

#[cfg(target_arch = "wasm32")]
mod bindings;

use std::collections::BTreeMap;
use sublaunch_contract::{Agent, ErrorCode, LaunchPlan, ModelEntry, PlanError, PlanRequest, PlanStep, PlannedReviewer};

pub use session::Session;

/// Plans a launch: every child in flat order, or the first error (L10).
pub fn plan(request: &PlanRequest) -> Result<LaunchPlan, PlanError> {
    plan_with(request, None)
}

/// [`plan`] with `registry` standing in for a request that has no `availableModels` (a
/// [`Session`]'s).
fn plan_with(request: &PlanRequest, registry: Option<&[ModelEntry]>) -> Result<LaunchPlan, PlanError> {
    // 1. Request shape: C3, L1, C4, then the model area's E1.1 checks.
    let children = shape::check(request)?;
    let registry = request.available_models.as_deref().or(registry);
    let models = model::ModelSettings::from_request(request, registry)?;
    // 2. Every child's agent exists, in flat order.
    let agents = resolve_agents(request, &children)?;
    // 3. Deep output-schema validation (P-S3).
    schema::validate_all(&children, &agents)?;
    // 3b. Answer names and the references to them.
    step_io::check_names(&children)?;
    // 4. Each child in flat order.
    // 3c. The ceilings of the runs this one is launched from inside (G60, G61).
    let parents = ceilings::parents(request)?;
    let workdirs = workdir::Workdirs::new(request);
    let mut placement = placement::Placement::new(request);
    let launch_machine = request.launch.as_ref().and_then(|l| l.machine.as_ref());
    let handed = runner::Handed {
        schemas: request.launch.as_ref().and_then(|l| l.native_schemas) == Some(true),
        models: request.launch.as_ref().and_then(|l| l.native_models) == Some(true),
    };
    let mut planner = Planner {
        request,
        models: &models,
        parents: &parents,
        workdirs: &workdirs,
        placement: &mut placement,
        launch_machine,
        handed,
        warnings: Vec::new(),
    };
    let mut steps = Vec::with_capacity(children.len());
    for (child, &agent) in children.iter().zip(&agents) {
        steps.push(planner.child(child, agent, false)?);
    }
    // 4a. Each reviewer (G81), planned as a child in its child's place, after every child so
    // that plans without one are what they were.
    let mut reviewers = Vec::new();
    for (at, (child, step)) in children.iter().zip(&steps).enumerate() {
        let Some(contract) = &step.acceptance else { continue };
        acceptance::check_reviewer(contract, request.agents.iter().map(|a| a.name.as_str()))?;
        let Some(review) = &contract.review else { continue };
        let Some(agent) = request.agents.iter().find(|a| a.name == review.agent) else {
            continue;
        };
        // A shell step's task is a script: the reviewer's prompt must never become one.
        if matches!(
            runner::adapter(agent),
            Some(sublaunch_contract::AdapterId::Shell | sublaunch_contract::AdapterId::ExternalJob)
        ) {
            return Err(PlanError::invalid_request(format!(
                "Invalid request at {}.review.agent: '{}' runs its task as a shell script; a reviewer reads a prompt: name an agent (or a command runner).",
                contract.origin, agent.name
            )));
        }
        let reviewer = child.reviewer(&agent.name, format!("{}.review", contract.origin));
        let mut planned = planner.child(&reviewer, agent, true)?;
        planned.step_index = step.step_index;
        planned.task_index = step.task_index;
        reviewers.push(PlannedReviewer {
            review_of: index(at),
            step: planned,
        });
    }
    placement::check_one_cluster(&children, &steps)?;
    let warnings = planner.warnings;
    // 4b. The run's budget and checkpoint, now that every child's runner and place are known.
    let usage_budget = budgets::plan_run(request.launch.as_ref(), &children, &agents, &steps)?;
    // 5. Graph projection (P-S5).
    let graph = graph::project(request.mode, &steps);
    Ok(LaunchPlan {
        steps,
        graph,
        warnings,
        usage_budget,
        reviewers,
    })
}

/// What planning one child needs of the whole request.
struct Planner<'p, 'r> {
    request: &'r PlanRequest,
    models: &'p model::ModelSettings<'r>,
    parents: &'p [ceilings::Parent<'r>],
    workdirs: &'p workdir::Workdirs<'r>,
    placement: &'p mut placement::Placement<'r>,
    launch_machine: Option<&'r sublaunch_contract::LooseString>,
    handed: runner::Handed,
    warnings: Vec<String>,
}

impl<'r> Planner<'_, 'r> {
    /// Plans one child (`reviewer`: the reviewer of a child, G81, which runs where its child
    /// does, answers in text and has no contract of its own).
    fn child(&mut self, child: &children::Child<'r>, agent: &'r Agent, reviewer: bool) -> Result<PlanStep, PlanError> {
        let request = self.request;
        let handed = self.handed;
        let output_schema = if reviewer {
            None
        } else {
            schema::effective(child, agent)
        };
        let requested = if reviewer {
            None
        } else {
            children::requested_machine(child, self.launch_machine, agent.machine.as_ref())
        };
        let placed = match requested {
            Some(requested) => {
                Some(
                    self.placement
                        .place(child, agent, requested, self.workdirs.remote_input(child))?,
                )
            }
            None => None,
        };
        // A cluster job runs the child with a runner of its own, in the same directories the
        // nodes share: for everything but the submission it is a local child (J1).
        let (machine, cluster) = match placed {
            Some(placement::Placed::Machine(machine)) => (Some(machine), None),
            Some(placement::Placed::Cluster(cluster)) => (None, Some(cluster)),
            None => (None, None),
        };
        runner::check_external_options(child, agent, output_schema.is_some(), handed)?;
        let io = step_io::plan(child, agent, machine.as_ref())?;
        ceilings::check_child(self.parents, child, agent, request.launch.as_ref())?;
        let sandbox = sandbox::plan(request, child, agent, self.parents, machine.is_some())?;
        let permissions = permissions::resolve(
            child,
            agent,
            request.launch.as_ref(),
            self.parents,
            sandbox.as_ref(),
            &mut self.warnings,
        )?;
        let acceptance = if reviewer {
            None
        } else {
            acceptance::plan(
                child,
                agent,
                request.launch.as_ref(),
                machine.is_some(),
                output_schema.is_some(),
            )?
        };
        let budgets = budgets::plan(child, agent)?;
        let retry = retry::plan(child, agent)?;
        let resources = pi_resources::plan(child, agent, machine.as_ref())?;
        let cli = runner::adapter(agent).and_then(|a| a.launch_model());
        let model = if let Some(cli) = cli.filter(|_| runner::takes_step_model(agent, handed)) {
            cli_model::plan(
                child,
                agent,
                cli,
                self.models.effective_ceiling(agent)?,
                &mut self.warnings,
            )?
        } else if runner::is_external(agent) {
            model::ModelPlan::default()
        } else {
            self.models.plan_child(child, agent, &mut self.warnings)?
        };
        let thinking_ceiling = ceilings::check_model(
            self.parents,
            child,
            agent,
            model.model.as_deref(),
            model.thinking,
            model.thinking_ceiling,
        )?;
        let (cwd, requested_cwd) = match &machine {
            Some(machine) => (machine.cwd.clone(), machine.cwd.clone()),
            None => {
                let local = self.workdirs.local(child);
                (local.cwd, local.requested_cwd)
            }
        };
        Ok(PlanStep {
            agent: agent.name.clone(),
            step_index: index(child.position.step_index()),
            task_index: child.position.task_index().map(index),
            task: child.fields.task.to_owned(),
            model: model.model,
            requested_model: model.requested_model,
            model_origin: model.model_origin,
            thinking: model.thinking,
            thinking_ceiling,
            context_limit: model.context_limit,
            worktree: child.worktree && machine.is_none(),
            machine,
            cwd,
            requested_cwd,
            output_schema: output_schema.map(str::to_owned),
            structured: output_schema.is_some(),
            reads: io.reads,
            output: io.output,
            output_name: io.output_name,
            label: io.label,
            phase: io.phase,
            usage_budget: budgets.usage,
            tool_budget: budgets.tool_calls,
            retry,
            extensions: resources.extensions,
            required_extensions: resources.required_extensions,
            skills: resources.skills,
            checkpoint_before_deadline_ms: request.launch.as_ref().and_then(|l| l.checkpoint_before_deadline_ms),
            permissions,
            sandbox,
            acceptance,
            cluster,
        })
    }
}

/// Plans from PlanRequest JSON and returns the document `sublaunch plan` prints for a plan.
pub fn plan_json(request: &[u8]) -> Result<String, PlanError> {
    let request = sublaunch_contract::parse_request(request)?;
    let plan = plan(&request)?;
    Ok(sublaunch_contract::render(&Ok(plan)))
}

/// Looks up every child's agent in flat order; the first unknown name is `unknown-agent`.
/// With duplicate names the first definition counts.
fn resolve_agents<'r>(request: &'r PlanRequest, children: &[children::Child<'r>]) -> Result<Vec<&'r Agent>, PlanError> {
    let mut by_name = BTreeMap::new();
    for agent in &request.agents {
        by_name.entry(agent.name.as_str()).or_insert(agent);
    }
    children
        .iter()
        .map(|child| {
            by_name.get(child.fields.agent).copied().ok_or_else(|| {
                let known: Vec<&str> = request.agents.iter().map(|a| a.name.as_str()).collect();
                let near = sublaunch_contract::nearest::nearest(child.fields.agent, known.iter().copied())
                    .map(|near| format!(" Did you mean '{near}'?"))
                    .unwrap_or_default();
                PlanError::new(
                    ErrorCode::UnknownAgent,
                    format!(
                        "Unknown agent '{}' in {}.{near} Known agents: {}.",
                        child.fields.agent,
                        child.position.describe(),
                        if known.is_empty() {
                            "none".to_owned()
                        } else {
                            known.join(", ")
                        }
                    ),
                )
            })
        })
        .collect()
}

fn index(i: usize) -> u32 {
    u32::try_from(i).unwrap_or(u32::MAX)
}
