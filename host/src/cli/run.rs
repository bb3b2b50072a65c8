//! `sublaunch run`: plan a launch from the command line (one agent and task, or a chain file),
//! the discovered agents, settings and registry, then launch it (or print the plan with
//! `--dry-run`). Before launching, every local step's program must be found.

use super::launching::{CLI_SESSION_ID, Presentation, launch_and_report};
use super::{EXIT_USAGE, load_planner, plan::print_outcome};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use sublaunch::contract::{LaunchPlan, Mode, PlanRequest};
use sublaunch::inputs::agents::{Catalog, discover};
use sublaunch::inputs::chain::{ChainFile, read_chain_file};
use sublaunch::inputs::registry::Registry;
use sublaunch::inputs::settings::Settings;
use sublaunch::launch::{Caller, LaunchOptions, Timeouts, WorkflowOptions};
use sublaunch::native_schemas::NativeSchemas;
use sublaunch::request::{self, Inputs, RunSpec};

/// Arguments of `sublaunch run`.
#[derive(clap::Args)]
pub struct Args {
    /// The agent to run (`shell` runs the task with sh -c; `sublaunch agents` lists them).
    #[arg(long, required_unless_present = "chain", conflicts_with = "chain")]
    agent: Option<String>,
    /// The task handed to the agent; with --chain, the text `{task}` stands for. It may start
    /// with `-`.
    #[arg(long, required_unless_present = "chain", allow_hyphen_values = true)]
    task: Option<String>,
    /// Run the steps of a chain file (JSON or YAML) instead of one agent.
    #[arg(long, value_name = "FILE")]
    chain: Option<PathBuf>,
    /// With --chain: how many tasks of a parallel group run at once (overrides the file).
    #[arg(long, value_name = "N", requires = "chain", value_parser = clap::value_parser!(u32).range(1..))]
    concurrency: Option<u32>,
    /// With --chain: a failed task stops the rest of its parallel group (overrides the file).
    #[arg(long, requires = "chain")]
    fail_fast: bool,
    /// Model for this run (e.g. `anthropic/claude-sonnet-4-5`, `openai/gpt-5-mini:high`).
    #[arg(long, conflicts_with = "chain")]
    model: Option<String>,
    /// Thinking level: off, minimal, low, medium, high, xhigh, max.
    #[arg(long, conflicts_with = "chain")]
    thinking: Option<String>,
    /// Highest thinking level allowed, on top of the settings' ceilings.
    #[arg(long, value_name = "LEVEL")]
    max_thinking: Option<String>,
    /// Run on this saved Herdr machine.
    #[arg(long)]
    machine: Option<String>,
    /// Working directory (a directory on the machine when --machine is given).
    #[arg(long)]
    cwd: Option<String>,
    /// Add a model registry file on top of the configured ones.
    #[arg(long, value_name = "FILE")]
    models: Option<PathBuf>,
    /// Print the plan instead of launching.
    #[arg(long)]
    dry_run: bool,
    /// Wait for the run's end, showing its progress; exit 0 complete, 1 otherwise.
    #[arg(long)]
    wait: bool,
    /// Print `{"runId","runDir","pid"}` (with --wait also the final state and steps).
    #[arg(long)]
    json: bool,
    /// Stop the run after SECS seconds (timeoutMs).
    #[arg(long, value_name = "SECS")]
    timeout: Option<f64>,
    /// Use this run id instead of a generated one (it must not name an existing run).
    #[arg(long, value_name = "ID")]
    run_id: Option<String>,
}

/// What the command line asks to run.
enum Work {
    Single,
    Chain(ChainFile),
}

/// Runs `sublaunch run`.
pub fn run(args: Args) -> ExitCode {
    let usage = |message: String| {
        eprintln!("sublaunch run: {message}");
        ExitCode::from(EXIT_USAGE)
    };
    // clap does not enforce `requires` on these two next to `required_unless_present`.
    if args.chain.is_none() && (args.concurrency.is_some() || args.fail_fast) {
        return usage("--concurrency and --fail-fast need --chain".to_owned());
    }
    let timeout_ms = match args.timeout.map(super::runs::seconds).transpose() {
        Ok(timeout) => timeout.map(|t| u64::try_from(t.as_millis()).unwrap_or(u64::MAX)),
        Err(message) => return usage(message),
    };
    if let Some(task) = &args.task {
        if task.trim().is_empty() {
            return usage("the task is empty: say what the agent should do.".to_owned());
        }
        if let Err(message) = request::check_task(task, "the task") {
            return usage(message);
        }
    }
    let (inputs, catalog) = match gather(args.models.as_deref()) {
        Ok(gathered) => gathered,
        Err(e) => return usage(format!("{e:#}")),
    };
    for untrusted in &catalog.untrusted {
        eprintln!("sublaunch run: warning: {untrusted}");
    }
    let work = match &args.chain {
        Some(path) => match read_chain_file(path).and_then(|chain| {
            chain.check(&catalog, args.task.as_deref())?;
            Ok(chain)
        }) {
            Ok(chain) => Work::Chain(chain),
            Err(e) => return usage(e.to_string()),
        },
        None => {
            let agent = args.agent.as_deref().unwrap_or_default();
            if let Err(message) = catalog.require(agent) {
                return usage(message);
            }
            Work::Single
        }
    };
    let (concurrency, fail_fast) = match workflow(&work, &args) {
        Ok(workflow) => workflow,
        Err(message) => return usage(message),
    };
    let mut request = match build_request(&work, &args, &inputs) {
        Ok(request) => request,
        Err(e) => {
            eprintln!("sublaunch run: {e:#}");
            return ExitCode::FAILURE;
        }
    };
    let native = NativeSchemas::take(&mut request, &inputs.agents);
    let outcome = load_planner()
        .and_then(|planner| planner.plan(&request))
        .map(|mut plan| {
            native.restore(&mut plan);
            plan
        });
    let plan = match outcome {
        Ok(plan) if !args.dry_run => plan,
        // A person gets one line on stderr; the document is for --json and the plan printout.
        Err(error) if !args.json && !args.dry_run => {
            eprintln!("sublaunch run: {}", super::terminal_text::for_terminal(&error.message));
            return ExitCode::FAILURE;
        }
        other => return print_outcome(&other),
    };
    announce_project_overrides(&plan, &catalog);
    let options = LaunchOptions {
        environment: inputs.env.clone(),
        cwd: Some(inputs.cwd.clone()),
        run_id: args.run_id,
        caller: Caller {
            session_id: Some(CLI_SESSION_ID.into()),
            ..Caller::default()
        },
        timeouts: Timeouts {
            run_ms: timeout_ms,
            ..Timeouts::default()
        },
        agents: inputs.agents,
        workflow: WorkflowOptions {
            concurrency,
            fail_fast,
            task: match work {
                Work::Chain(_) => args.task,
                Work::Single => None,
            },
        },
        ..LaunchOptions::default()
    };
    launch_and_report(
        &plan,
        options,
        Presentation {
            json: args.json,
            wait: args.wait,
        },
    )
}

/// The PlanRequest: one step, or the chain file's steps in its mode; `--cwd` wins over the
/// file's `cwd`.
fn build_request(work: &Work, args: &Args, inputs: &Inputs) -> anyhow::Result<PlanRequest> {
    let mut spec = RunSpec {
        agent: args.agent.clone().unwrap_or_default(),
        task: args.task.clone().unwrap_or_default(),
        model: args.model.clone(),
        thinking: args.thinking.clone(),
        machine: args.machine.clone(),
        cwd: args.cwd.clone(),
        max_thinking: args.max_thinking.clone(),
    };
    let runtime = sublaunch::launch::runtime().expect("a tokio runtime");
    match work {
        Work::Single => runtime.block_on(request::build(&spec, inputs)),
        Work::Chain(chain) => {
            if spec.cwd.is_none() {
                spec.cwd.clone_from(&chain.cwd);
            }
            let mode = if chain.mode == Mode::Parallel {
                Mode::Parallel
            } else {
                Mode::Chain
            };
            runtime.block_on(request::build_steps(mode, chain.request_steps(), &spec, inputs))
        }
    }
}

/// Concurrency and fail-fast: the command line's, else the chain file's.
fn workflow(work: &Work, args: &Args) -> Result<(Option<u32>, bool), String> {
    let Work::Chain(chain) = work else {
        return Ok((None, false));
    };
    let file = chain.workflow().map_err(|e| e.to_string())?;
    Ok((
        args.concurrency.or(file.concurrency),
        args.fail_fast || file.fail_fast.unwrap_or(false),
    ))
}

/// A repository can redefine what `--agent claude` runs: say so, once per agent, when a run
/// uses a project agent that replaces a built-in or user agent.
fn announce_project_overrides(plan: &LaunchPlan, catalog: &Catalog) {
    let mut named: Vec<&str> = plan.steps.iter().map(|s| s.agent.as_str()).collect();
    named.dedup();
    named.sort_unstable();
    named.dedup();
    for name in named {
        let hidden = catalog.hidden_by_project(name);
        let (Some(agent), false) = (catalog.get(name), hidden.is_empty()) else {
            continue;
        };
        let replaced: Vec<String> = hidden.iter().map(|h| h.source.describe()).collect();
        eprintln!(
            "sublaunch run: note: agent '{name}' is defined by this project in {}, in place of the {} one",
            agent.source.describe(),
            replaced.join(" and the ")
        );
    }
}

/// The inputs of planning: the working directory, the discovered agents, the settings and
/// the registry.
fn gather(models: Option<&Path>) -> anyhow::Result<(Inputs, Catalog)> {
    let cwd = std::env::current_dir()?;
    let env = super::environment();
    let catalog = discover(&cwd, &env);
    let inputs = Inputs {
        registry: Registry::load(&cwd, models, &env)?,
        settings: Settings::load(&cwd, &env)?,
        env,
        agents: catalog.agents.clone(),
        cwd,
    };
    Ok((inputs, catalog))
}
