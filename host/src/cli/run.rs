//! `sublaunch run`: plan a launch from the command line, agents, settings and registry, then
//! launch it (or print the plan with `--dry-run`).

use super::launching::{CLI_SESSION_ID, Presentation, launch_and_report};
use super::{EXIT_USAGE, load_planner, plan::print_outcome};
use std::path::PathBuf;
use std::process::ExitCode;
use sublaunch::launch::LaunchOptions;
use sublaunch::registry::Registry;
use sublaunch::request::{self, Inputs, RunSpec};
use sublaunch::settings::Settings;

/// Arguments of `sublaunch run`.
#[derive(clap::Args)]
pub struct Args {
    /// The agent to run (`shell` runs the task with sh -c).
    #[arg(long)]
    agent: String,
    /// The task handed to the agent.
    #[arg(long)]
    task: String,
    /// Model for this run (e.g. `sonnet-4.5`, `openai/gpt-5-mini:high`).
    #[arg(long)]
    model: Option<String>,
    /// Thinking level: off, minimal, low, medium, high, xhigh, max.
    #[arg(long)]
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
    /// Wait for the run's end; exit 0 complete, 1 otherwise.
    #[arg(long)]
    wait: bool,
    /// Print `{"runId","runDir","pid"}` (with --wait also the final state).
    #[arg(long)]
    json: bool,
    /// Stop the run after SECS seconds (timeoutMs).
    #[arg(long, value_name = "SECS")]
    timeout: Option<f64>,
    /// Use this run id instead of a generated one (it must not name an existing run).
    #[arg(long, value_name = "ID")]
    run_id: Option<String>,
}

/// Runs `sublaunch run`.
pub fn run(args: Args) -> ExitCode {
    let timeout_ms = match args.timeout.map(super::wait::seconds).transpose() {
        Ok(timeout) => timeout.map(|t| u64::try_from(t.as_millis()).unwrap_or(u64::MAX)),
        Err(message) => {
            eprintln!("sublaunch run: {message}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let spec = RunSpec {
        agent: args.agent,
        task: args.task,
        model: args.model,
        thinking: args.thinking,
        machine: args.machine,
        cwd: args.cwd,
        max_thinking: args.max_thinking,
    };
    let inputs = match gather(args.models) {
        Ok(inputs) => inputs,
        Err(e) => {
            eprintln!("sublaunch run: {e:#}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let runtime = super::runtime();
    let request = match runtime.block_on(request::build(&spec, &inputs)) {
        Ok(request) => request,
        Err(e) => {
            eprintln!("sublaunch run: {e:#}");
            return ExitCode::FAILURE;
        }
    };
    drop(runtime);
    let outcome = load_planner().and_then(|planner| planner.plan(&request));
    let plan = match outcome {
        Ok(plan) if !args.dry_run => plan,
        other => return print_outcome(&other),
    };
    let options = LaunchOptions {
        cwd: Some(inputs.cwd.clone()),
        run_id: args.run_id,
        session_id: Some(CLI_SESSION_ID.into()),
        timeout_ms,
        agents: inputs.agents.clone(),
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

fn gather(models: Option<PathBuf>) -> anyhow::Result<Inputs> {
    let cwd = std::env::current_dir()?;
    Ok(Inputs {
        registry: Registry::load(&cwd, models.as_deref())?,
        settings: Settings::load(&cwd)?,
        agents: sublaunch::agents::builtins(),
        cwd,
    })
}
