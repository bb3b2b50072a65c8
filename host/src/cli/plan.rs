//! `sublaunch plan`: PlanRequest JSON in, LaunchPlan JSON (or the error) out.

use super::EXIT_USAGE;
use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use sublaunch::contract::{self, MAX_REQUEST_BYTES, PlanError};

/// Arguments of `sublaunch plan`.
#[derive(clap::Args)]
pub struct Args {
    /// Read the request from FILE instead of standard input (`-` is standard input).
    #[arg(long, value_name = "FILE")]
    request: Option<PathBuf>,
    /// Fill in `availableModels` with the effective registry when the request has none.
    #[arg(long)]
    with_registry: bool,
    /// With --with-registry: add a registry file on top of the configured ones.
    #[arg(long, value_name = "FILE", requires = "with_registry")]
    models: Option<PathBuf>,
}

/// Prints the plan (exit 0) or `{"error": …}` (exit 1) on stdout.
pub fn run(args: Args) -> ExitCode {
    let bytes = match read_request(args.request.as_ref()) {
        Ok(bytes) => bytes,
        Err(message) => {
            eprintln!("sublaunch plan: {message}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let mut request = match contract::parse_request(&bytes) {
        Ok(request) => request,
        Err(error) => return print_outcome(&Err::<(), _>(error)),
    };
    if args.with_registry && request.available_models.is_none() {
        let cwd = std::path::Path::new(&request.cwd);
        let env = super::environment();
        let project = sublaunch::inputs::project::Project::open(cwd, &env);
        super::print_notices("plan", project.ignored());
        match sublaunch::inputs::registry::Registry::load(cwd, &project, args.models.as_deref(), &env) {
            Ok(registry) => {
                for warning in &registry.warnings {
                    eprintln!("sublaunch plan: warning: {warning}");
                }
                request.available_models = Some(registry.models());
            }
            Err(e) => {
                eprintln!("sublaunch plan: {e:#}");
                return ExitCode::from(EXIT_USAGE);
            }
        }
    }
    print_outcome(&super::load_planner().and_then(|planner| planner.plan(&request)))
}

/// Prints a planning outcome as `sublaunch plan` does and returns its exit code.
pub fn print_outcome<T: serde::Serialize>(outcome: &Result<T, PlanError>) -> ExitCode {
    let (text, code) = match outcome {
        Ok(value) => match serde_json::to_string_pretty(value) {
            Ok(text) => (text, 0),
            Err(error) => (contract::render(&Err(fault(error))), 1),
        },
        Err(error) => (contract::render(&Err(error.clone())), 1),
    };
    let mut stdout = std::io::stdout().lock();
    let _ = writeln!(stdout, "{text}");
    ExitCode::from(code)
}

fn fault(error: serde_json::Error) -> PlanError {
    PlanError::new(
        contract::ErrorCode::PlannerFault,
        format!("The plan cannot be printed: {error}"),
    )
}

/// Reads at most one byte more than the limit, so an oversized request is refused without
/// reading all of it.
fn read_request(path: Option<&PathBuf>) -> Result<Vec<u8>, String> {
    let limit = MAX_REQUEST_BYTES as u64 + 1;
    let mut bytes = Vec::new();
    let result = match path.filter(|p| p.as_os_str() != "-") {
        Some(path) => std::fs::File::open(path)
            .and_then(|file| file.take(limit).read_to_end(&mut bytes))
            .map_err(|e| format!("cannot read the request file {}: {e}", path.display())),
        None => std::io::stdin()
            .lock()
            .take(limit)
            .read_to_end(&mut bytes)
            .map_err(|e| format!("cannot read the request from standard input: {e}")),
    };
    result.map(|_| bytes)
}
