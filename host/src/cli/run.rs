//! `sublaunch run`: plan a launch from the command line, agents, settings and registry.

use super::{EXIT_USAGE, load_planner, plan::print_outcome};
use std::path::PathBuf;
use std::process::ExitCode;
use sublaunch::registry::Registry;
use sublaunch::request::{self, Inputs, RunSpec};
use sublaunch::settings::Settings;

/// Arguments of `sublaunch run`.
#[derive(clap::Args)]
pub struct Args {
    /// The agent to run (`sublaunch agents` lists them; `shell` runs the task with sh -c).
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
}

/// Runs `sublaunch run`.
pub fn run(args: Args) -> ExitCode {
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
    let outcome = load_planner().and_then(|planner| planner.plan(&request));
    if args.dry_run || outcome.is_err() {
        return print_outcome(&outcome);
    }
    eprintln!("sublaunch run: launching is not available yet; use --dry-run");
    ExitCode::FAILURE
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
