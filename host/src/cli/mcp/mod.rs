//! `sublaunch mcp`: an MCP server on standard input and output, so a coding agent (Claude
//! Code, Codex, Cursor, opencode, pi) can hand tasks to any other agent and collect the
//! answers. Its tools call the same library functions as the commands of the same names;
//! it keeps no state of its own beyond the loaded planner. It opens no network socket: who
//! starts it already has the user's rights. Runs are detached: a client that goes away
//! leaves them running, and the server never holds a run's lifetime.

mod params;
mod tools;

use rmcp::ServiceExt;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::model::{Implementation, ServerCapabilities, ServerConfig};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use sublaunch::launch::reconcile::RunStore;
use sublaunch::{Options, Planner};

/// Arguments of `sublaunch mcp`.
#[derive(clap::Args)]
pub struct Args {}

/// What every tool call shares.
struct State {
    /// The process environment, read once.
    env: sublaunch::Environment,
    /// The directory the server started in: the default working directory of runs.
    cwd: PathBuf,
    /// The planner, loaded once (with its instance pool, as a long-lived host should).
    planner: Planner,
    /// The runs of the environment's root.
    store: Arc<RunStore>,
}

/// The server: the shared state and the tool router.
#[derive(Clone)]
pub struct Server {
    state: Arc<State>,
    tool_router: ToolRouter<Self>,
}

/// What the server tells a client when it connects.
const INSTRUCTIONS: &str = "sublaunch runs coding agents (pi, Claude Code, Codex, Cursor's agent, any command) in the background, \
locally or on saved machines. Start work with `run` (an agent and a task, or a chain of steps); it returns a run id at once, or the \
result with `wait: true`. Collect results with `wait` (several runs, any or all), `result` and `logs`; `list` and `status` show \
runs; `stop` ends one. `agents` and `models` say what can run. Runs keep going when this connection closes.";

/// Runs `sublaunch mcp` until the client closes standard input.
pub fn run(_args: Args) -> ExitCode {
    let runtime = match sublaunch::launch::runtime() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("sublaunch mcp: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let server = match Server::new() {
        Ok(server) => server,
        Err(message) => {
            eprintln!("sublaunch mcp: {message}");
            return ExitCode::FAILURE;
        }
    };
    runtime.block_on(async move {
        let service = match server.serve(rmcp::transport::stdio()).await {
            Ok(service) => service,
            Err(e) => {
                eprintln!("sublaunch mcp: the client did not start a session: {e}");
                return ExitCode::FAILURE;
            }
        };
        match service.waiting().await {
            Ok(_) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("sublaunch mcp: {e}");
                ExitCode::FAILURE
            }
        }
    })
}

impl Server {
    fn new() -> Result<Self, String> {
        let env = super::environment();
        let cwd = std::env::current_dir().map_err(|e| format!("cannot read the working directory: {e}"))?;
        let options = Options {
            cache: env
                .component_cache()
                .map(sublaunch::engine::artifact_cache::ArtifactCache::new),
            ..Options::default()
        };
        let planner = Planner::embedded(options).map_err(|e| format!("the planner could not be loaded: {e:#}"))?;
        let layout = env.layout(Some(&cwd)).map_err(|e| e.to_string())?;
        let store = RunStore::open(&layout, &env).map_err(|e| e.to_string())?;
        Ok(Self {
            state: Arc::new(State {
                env,
                cwd,
                planner,
                store: Arc::new(store),
            }),
            tool_router: Self::tool_router(),
        })
    }

    /// What the server advertises.
    fn config() -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("sublaunch", env!("CARGO_PKG_VERSION")))
            .with_instructions(INSTRUCTIONS)
    }
}
