//! Command-line interface: one module per command.

mod component;
mod models;
mod plan;
mod run;

use clap::{Parser, Subcommand};
use std::process::ExitCode;
use sublaunch::artifact_cache::ArtifactCache;
use sublaunch::contract::{ErrorCode, PlanError};
use sublaunch::{Options, Planner};

/// Launch background AI-coding subagent runs.
#[derive(Parser)]
#[command(name = "sublaunch", version, about, arg_required_else_help = true)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Plan a launch: PlanRequest JSON (stdin by default) to LaunchPlan JSON.
    Plan(plan::Args),
    /// Plan and launch a background run.
    Run(run::Args),
    /// List the model registry, or resolve a model name.
    Models(models::Args),
    /// Write the planner WebAssembly component embedded in this binary.
    Component(component::Args),
}

impl Cli {
    /// Runs the command and returns the process exit code.
    pub fn run(self) -> ExitCode {
        match self.command {
            Command::Plan(args) => plan::run(args),
            Command::Run(args) => run::run(args),
            Command::Models(args) => models::run(args),
            Command::Component(args) => component::run(args),
        }
    }
}

/// Exit code of a usage or input problem.
pub const EXIT_USAGE: u8 = 2;

/// Loads the embedded planner with the user's artifact cache; a failure is a `planner-fault`.
pub fn load_planner() -> Result<Planner, PlanError> {
    // One plan per process: on-demand instances start faster than a pool.
    let options = Options {
        cache: sublaunch::dirs::component_cache().map(ArtifactCache::new),
        instance_pool: None,
        ..Options::default()
    };
    Planner::embedded(options).map_err(|error| {
        PlanError::new(
            ErrorCode::PlannerFault,
            format!("The planner component could not be loaded: {error:#}"),
        )
    })
}

/// A single-threaded runtime for the commands that wait on processes and files.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime")
}
