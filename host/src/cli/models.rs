//! `sublaunch models`: the effective model registry, and what a name resolves to.

use super::{EXIT_USAGE, load_planner, plan::print_outcome};
use clap::Subcommand;
use std::path::PathBuf;
use std::process::ExitCode;
use sublaunch::contract::{Agent, LooseString, PlanRequest, Step, ThinkingSetting};
use sublaunch::inputs::registry::Registry;
use sublaunch::inputs::settings::Settings;

/// Arguments of `sublaunch models`.
#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: Option<Command>,
    /// Print JSON instead of a table (`resolve`: the resolved step, or `{"error": …}`).
    #[arg(short, long, global = true)]
    json: bool,
    /// Add a registry file on top of the configured ones.
    #[arg(long, value_name = "FILE", global = true)]
    models: Option<PathBuf>,
}

#[derive(Subcommand)]
enum Command {
    /// Show what a model name resolves to, or why it resolves to nothing (exit 2).
    Resolve {
        /// A model name, e.g. `anthropic/claude-sonnet-4-5`, `openai:gpt-5-mini:high`.
        name: String,
        /// A thinking level to apply, as a step override would.
        #[arg(long)]
        thinking: Option<String>,
        /// The preferred provider for ambiguous names.
        #[arg(long)]
        provider: Option<String>,
    },
}

/// Runs `sublaunch models`.
pub fn run(args: Args) -> ExitCode {
    let cwd = match std::env::current_dir() {
        Ok(cwd) => cwd,
        Err(e) => return usage(format!("cannot read the working directory: {e}")),
    };
    let env = super::environment();
    let project = sublaunch::inputs::project::Project::open(&cwd, &env);
    super::print_notices("models", project.ignored());
    let registry = match Registry::load(&cwd, &project, args.models.as_deref(), &env) {
        Ok(registry) => registry,
        Err(e) => return usage(format!("{e:#}")),
    };
    for warning in &registry.warnings {
        eprintln!("sublaunch models: warning: {warning}");
    }
    match args.command {
        None => list(&registry, args.json),
        Some(Command::Resolve {
            name,
            thinking,
            provider,
        }) => {
            let settings = match Settings::load(&project, &env) {
                Ok(settings) => settings,
                Err(e) => return usage(format!("{e:#}")),
            };
            resolve(&cwd, &registry, &settings, name, thinking, provider, args.json)
        }
    }
}

fn usage(message: String) -> ExitCode {
    eprintln!("sublaunch models: {message}");
    ExitCode::from(EXIT_USAGE)
}

fn list(registry: &Registry, json: bool) -> ExitCode {
    if json {
        // Each entry as the planner sees it, plus the layer it came from.
        let models: Vec<_> = registry
            .entries
            .iter()
            .map(|e| {
                let mut value = serde_json::to_value(&e.model).expect("models serialise");
                value["source"] = e.source.clone().into();
                value
            })
            .collect();
        super::runs::say!("{}", serde_json::to_string_pretty(&models).expect("models serialise"));
        return ExitCode::SUCCESS;
    }
    let rows: Vec<[String; 4]> = registry
        .entries
        .iter()
        .map(|entry| {
            let model = &entry.model;
            let reasoning = match model.reasoning {
                Some(true) => "yes",
                Some(false) => "no",
                None => "-",
            };
            [
                format!("{}/{}", model.provider, model.id),
                model.context_window.map_or_else(|| "-".into(), |c| format!("{c}")),
                reasoning.into(),
                entry.source.clone(),
            ]
        })
        .collect();
    super::print_table(["MODEL", "CONTEXT", "REASONING", "SOURCE"], &rows);
    ExitCode::SUCCESS
}

fn resolve(
    cwd: &std::path::Path,
    registry: &Registry,
    settings: &Settings,
    name: String,
    thinking: Option<String>,
    provider: Option<String>,
    json: bool,
) -> ExitCode {
    let request = PlanRequest {
        cwd: cwd.to_string_lossy().into_owned(),
        agents: vec![Agent {
            name: "resolve".into(),
            model_provider: provider,
            ..Agent::default()
        }],
        steps: vec![Step {
            agent: Some("resolve".into()),
            task: Some(String::new()),
            model: Some(LooseString::Text(name)),
            thinking: thinking.map(ThinkingSetting::Text),
            ..Step::default()
        }],
        available_models: Some(registry.models()),
        thinking_ceiling: settings.thinking_ceiling().map(|v| match v {
            serde_json::Value::String(text) => LooseString::Text(text),
            other => LooseString::NotText(other.to_string()),
        }),
        ..PlanRequest::default()
    };
    let outcome = load_planner().and_then(|planner| planner.plan(&request));
    match (&outcome, json) {
        (Ok(plan), false) => {
            let step = &plan.steps[0];
            println!("{}", step.model.as_deref().unwrap_or("(no model)"));
            if let Some(thinking) = step.thinking {
                println!("  thinking: {}", thinking.name());
            }
            if let Some(limit) = step.context_limit {
                println!("  context:  {limit} tokens");
            }
            if let Some(ceiling) = step.thinking_ceiling {
                println!("  ceiling:  {}", ceiling.name());
            }
            for warning in &plan.warnings {
                println!("  warning:  {warning}");
            }
            ExitCode::SUCCESS
        }
        (Ok(plan), true) => print_outcome(&Ok::<_, sublaunch::contract::PlanError>(&plan.steps[0])),
        // The `{"error": …}` document is for --json; a person gets one line on stderr.
        (Err(_), true) => {
            print_outcome(&outcome);
            ExitCode::from(EXIT_USAGE)
        }
        (Err(error), false) => usage(error.message.clone()),
    }
}
