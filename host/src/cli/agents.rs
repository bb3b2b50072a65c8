//! `sublaunch agents [--json] [--all]`: the agents known in the working directory and where
//! each came from; files that could not be loaded are listed on stderr (exit 1), and so are
//! locations and files left out because someone else could write them. A project agent that
//! replaces a built-in or user agent of the same name is marked as such.

use super::runs::say;
use super::terminal_text::for_terminal;
use serde_json::{Value, json};
use std::process::ExitCode;
use sublaunch::contract::permissions::combine;
use sublaunch::contract::{LooseString, ResolvedPermissions, ThinkingSetting};
use sublaunch::inputs::agents::{AgentDef, AgentSource, Catalog, discover};

/// Arguments of `sublaunch agents`.
#[derive(clap::Args)]
pub struct Args {
    /// Print a JSON array instead of a table.
    #[arg(short, long)]
    json: bool,
    /// Also list the definitions hidden by a nearer one of the same name.
    #[arg(long)]
    all: bool,
}

/// Runs `sublaunch agents`.
pub fn run(args: Args) -> ExitCode {
    let cwd = match std::env::current_dir() {
        Ok(cwd) => cwd,
        Err(e) => {
            eprintln!("sublaunch agents: cannot read the working directory: {e}");
            return ExitCode::from(super::EXIT_USAGE);
        }
    };
    let env = super::environment();
    let project = sublaunch::inputs::project::Project::open(&cwd, &env);
    let catalog = discover(&project, &env);
    super::print_notices("agents", project.ignored().iter().chain(&catalog.ignored));
    let rows = rows(&catalog, args.all);
    if args.json {
        let list: Vec<Value> = rows
            .iter()
            .map(|(agent, shadowed)| agent_json(agent, *shadowed, &catalog))
            .collect();
        say!("{}", serde_json::to_string_pretty(&list).unwrap_or_default());
    } else {
        print_table(&rows, &catalog);
    }
    for untrusted in &catalog.untrusted {
        eprintln!("sublaunch agents: warning: {}", for_terminal(&untrusted.to_string()));
    }
    for problem in &catalog.problems {
        eprintln!("sublaunch agents: not loaded: {}", for_terminal(&problem.to_string()));
    }
    if catalog.problems.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// The agents in effect, each followed (with `all`) by the definitions it shadows.
fn rows(catalog: &Catalog, all: bool) -> Vec<(&AgentDef, bool)> {
    let mut rows = Vec::new();
    for agent in &catalog.agents {
        rows.push((agent, false));
        if all {
            rows.extend(
                catalog
                    .shadowed
                    .iter()
                    .filter(|s| s.name() == agent.name())
                    .map(|s| (s, true)),
            );
        }
    }
    if all {
        // Definitions shadowed by a broken file have no effective row to follow.
        rows.extend(
            catalog
                .shadowed
                .iter()
                .filter(|s| catalog.get(s.name()).is_none())
                .map(|s| (s, true)),
        );
    }
    rows
}

/// What a project agent replaces, for listings: `built-in`, `user`, … (empty for others).
fn overrides(agent: &AgentDef, catalog: &Catalog) -> Vec<&'static str> {
    catalog
        .hidden_by_project(agent.name())
        .iter()
        .map(|hidden| match &hidden.source {
            AgentSource::BuiltIn => "built-in",
            AgentSource::File { scope, .. } => scope.id(),
        })
        .collect()
}

/// A table cell: neutralised for the terminal, on one line.
fn cell(text: &str) -> String {
    for_terminal(text).replace(['\n', '\t'], " ")
}

fn print_table(rows: &[(&AgentDef, bool)], catalog: &Catalog) {
    let table: Vec<[String; 6]> = rows
        .iter()
        .map(|(agent, shadowed)| {
            let source = agent.source.describe();
            let replaced = overrides(agent, catalog);
            let source = if *shadowed {
                format!("{source} [shadowed]")
            } else if replaced.is_empty() {
                source
            } else {
                format!("{source} [overrides {}]", replaced.join(", "))
            };
            [
                agent.name(),
                &agent.runner.describe(),
                &agent.planner.model.as_ref().map_or_else(|| "-".to_owned(), text),
                &source,
                &effective_permissions(agent).summary(),
                &agent.description,
            ]
            .map(cell)
        })
        .collect();
    super::print_table(
        ["NAME", "RUNNER", "MODEL", "SOURCE", "PERMISSIONS", "DESCRIPTION"],
        &table,
    );
}

/// What an agent runs with when no step, run or settings says more (rule G6): its own layer
/// combined with its adapter's defaults, as the planner combines them.
pub fn effective_permissions(agent: &AgentDef) -> ResolvedPermissions {
    combine(Some(agent.runner.adapter), agent.planner.permissions.as_ref()).permissions
}

fn text(value: &LooseString) -> String {
    value.as_text().map_or_else(|| value.to_json(), str::to_owned)
}

/// The JSON object of one agent.
/// One agent as JSON (`agents --json`, the MCP `agents` tool).
pub fn agent_json(agent: &AgentDef, shadowed: bool, catalog: &Catalog) -> Value {
    let planner = &agent.planner;
    let thinking = match &planner.thinking {
        None => Value::Null,
        Some(ThinkingSetting::Text(level)) => json!(level),
        Some(ThinkingSetting::Disabled) => json!(false),
        Some(ThinkingSetting::Invalid(raw)) => serde_json::from_str(raw).unwrap_or(Value::Null),
    };
    let schema = planner
        .output_schema
        .as_deref()
        .and_then(|s| serde_json::from_str::<Value>(s).ok());
    let source = match &agent.source {
        AgentSource::BuiltIn => json!({"kind": "built-in", "scope": null, "path": null}),
        AgentSource::File { path, scope } => json!({"kind": "file", "scope": scope.id(), "path": path}),
    };
    json!({
        "name": agent.name(),
        "description": agent.description,
        "runner": {
            "type": agent.runner.kind(),
            "adapter": agent.runner.adapter_id(),
            "command": agent.runner.command,
        },
        "model": planner.model.as_ref().map(text),
        "thinking": thinking,
        "maxThinking": planner.max_thinking.as_ref().map(text),
        "modelProvider": planner.model_provider,
        "machine": planner.machine.as_ref().map(text),
        "tools": planner.permissions.as_ref().and_then(|p| p.tools.clone()).unwrap_or_default(),
        "permissions": effective_permissions(agent),
        "outputSchema": schema,
        "source": source,
        "shadowed": shadowed,
        "overrides": if shadowed { Vec::new() } else { overrides(agent, catalog) },
    })
}
