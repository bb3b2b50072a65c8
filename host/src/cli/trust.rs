//! `sublaunch trust [DIR]`, `sublaunch trust --list`, `sublaunch trust --revoke DIR`: which
//! projects' own configuration takes effect ([`sublaunch::inputs::project`]).
//!
//! Trusting shows what it approves — the project's configuration and every program in it,
//! with what each runs — and records it in the user's store at once: scripts and CI call it,
//! and running it is the approval. A run's agents cannot change trust (they would widen what
//! their own runs may do).

use super::EXIT_USAGE;
use super::runs::say;
use super::terminal_text::for_terminal;
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use sublaunch::inputs::project::Project;
use sublaunch::inputs::project::lineage::LINEAGE_VAR;
use sublaunch::inputs::project::store::TrustStore;

/// Arguments of `sublaunch trust`.
#[derive(clap::Args)]
pub struct Args {
    /// The project to trust (any directory in it; default: the working directory).
    #[arg(conflicts_with_all = ["list"])]
    dir: Option<PathBuf>,
    /// List the trusted projects.
    #[arg(long)]
    list: bool,
    /// Stop trusting the project of this directory.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["list", "dir", "dry_run"])]
    revoke: Option<PathBuf>,
    /// Show what trusting would approve, and record nothing.
    #[arg(long, conflicts_with_all = ["list"])]
    dry_run: bool,
    /// Print JSON.
    #[arg(short, long)]
    json: bool,
}

/// Runs `sublaunch trust`.
pub fn run(args: Args) -> ExitCode {
    let env = super::environment();
    let Some(config_dir) = env.config_dir() else {
        return usage("there is no configuration directory to keep trusted projects in (set HOME)".into());
    };
    if args.list {
        return list(&config_dir, args.json);
    }
    if env.var(LINEAGE_VAR).is_some() && !args.dry_run {
        return usage(
            "trust cannot be changed from inside a run: its agents would widen what their own runs may do; run this at your own terminal"
                .into(),
        );
    }
    let cwd = match std::env::current_dir() {
        Ok(cwd) => cwd,
        Err(e) => return usage(format!("cannot read the working directory: {e}")),
    };
    if let Some(dir) = args.revoke {
        return revoke(&config_dir, &cwd.join(dir), env.home().as_deref(), args.json);
    }
    let dir = cwd.join(args.dir.unwrap_or_default());
    let dir = match dir.canonicalize() {
        Ok(dir) if dir.is_dir() => dir,
        Ok(dir) => return usage(format!("{} is not a directory", dir.display())),
        Err(e) => return usage(format!("{}: {e}", dir.display())),
    };
    let (project, entry) = match sublaunch::inputs::approval::approval(&dir, &env) {
        Ok(approved) => approved,
        Err(e) => return usage(format!("{e:#}")),
    };
    let configuration: Vec<String> = project.present().map(|p| relative(&project, p)).collect();
    if !args.dry_run
        && let Err(e) = TrustStore::new(&config_dir).record(&entry)
    {
        eprintln!("sublaunch trust: {}", for_terminal(&e.to_string()));
        return ExitCode::FAILURE;
    }
    if args.json {
        say!(
            "{}",
            json!({
                "root": entry.root,
                "recorded": !args.dry_run,
                "configuration": configuration,
                "approved": entry.approved,
            })
        );
        return ExitCode::SUCCESS;
    }
    let verb = if args.dry_run { "would trust" } else { "trusted" };
    say!("{verb} {}", for_terminal(&entry.root.display().to_string()));
    if configuration.is_empty() {
        say!("  it has no project configuration (.sublaunch/, .pi/) yet");
    } else {
        say!("  configuration: {}", for_terminal(&configuration.join(", ")));
    }
    if entry.approved.is_empty() {
        say!("  programs: none");
    }
    for approval in &entry.approved {
        say!(
            "  approved {} in {}: {}",
            approval.kind.label(),
            for_terminal(&approval.file.display().to_string()),
            for_terminal(&approval.shows)
        );
    }
    ExitCode::SUCCESS
}

fn relative(project: &Project, path: &Path) -> String {
    path.strip_prefix(project.root()).unwrap_or(path).display().to_string()
}

fn list(config_dir: &Path, json: bool) -> ExitCode {
    let projects = match TrustStore::new(config_dir).list() {
        Ok(projects) => projects,
        Err(e) => {
            eprintln!("sublaunch trust: {}", for_terminal(&e.to_string()));
            return ExitCode::FAILURE;
        }
    };
    if json {
        say!("{}", serde_json::to_string_pretty(&projects).unwrap_or_default());
        return ExitCode::SUCCESS;
    }
    if projects.is_empty() {
        say!("no trusted projects");
    }
    for project in &projects {
        let programs = project.approved.len();
        say!(
            "{}  ({programs} approved program{})",
            for_terminal(&project.root.display().to_string()),
            if programs == 1 { "" } else { "s" }
        );
    }
    ExitCode::SUCCESS
}

fn revoke(config_dir: &Path, dir: &Path, home: Option<&Path>, json: bool) -> ExitCode {
    // A project that is gone can still be forgotten by the path it had.
    let root = match dir.canonicalize() {
        Ok(dir) => Project::open_for_approval(&dir, home).root().to_owned(),
        Err(_) => dir.to_owned(),
    };
    match TrustStore::new(config_dir).revoke(&root) {
        Ok(removed) => {
            if json {
                say!("{}", json!({"root": root, "revoked": removed}));
            } else if removed {
                say!("no longer trusted: {}", for_terminal(&root.display().to_string()));
            } else {
                say!("{} was not trusted", for_terminal(&root.display().to_string()));
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("sublaunch trust: {}", for_terminal(&e.to_string()));
            ExitCode::FAILURE
        }
    }
}

fn usage(message: String) -> ExitCode {
    eprintln!("sublaunch trust: {}", for_terminal(&message));
    ExitCode::from(EXIT_USAGE)
}
