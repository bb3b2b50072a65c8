//! `sublaunch mcp`: an MCP server on standard input and output, so a coding agent (Claude
//! Code, Codex, Cursor, opencode, pi) can hand tasks to any other agent and collect the
//! answers. Its tools call the same library functions as the commands of the same names;
//! it keeps no state of its own beyond the loaded planner. It opens no network socket. Its
//! client is an agent, possibly prompt-injected, so the server's owner bounds what it may do
//! ([`policy`]: a root, the agents, the nesting depth). Runs are detached: a client that goes
//! away leaves them running, and the server never holds a run's lifetime.

mod params;
mod policy;
mod schemas;
mod stream;
mod tools;

use policy::Policy;
use rmcp::ServiceExt;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::model::{Implementation, ServerCapabilities, ServerConfig};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use sublaunch::runs::RunStore;
use sublaunch::{Options, Planner};

/// The nesting depth from which the server starts no run, unless `--max-depth` says otherwise.
const DEFAULT_MAX_DEPTH: u32 = 2;

/// Arguments of `sublaunch mcp`.
#[derive(clap::Args)]
pub struct Args {
    /// Keep every run inside DIR: working directories, the files agents read first and the
    /// files answers are written to, after `~`, `..` and symlinks (default: the working
    /// directory).
    #[arg(long, value_name = "DIR")]
    root: Option<PathBuf>,
    /// Start only these agents (comma-separated). Default: every agent that does not run its
    /// task as shell code.
    #[arg(long, value_name = "NAMES", value_delimiter = ',')]
    agents: Option<Vec<String>>,
    /// Also start agents that run their task as shell code: `shell` and `command` runners.
    #[arg(long)]
    allow_shell: bool,
    /// Start no run when the server itself runs N runs deep or deeper (SUBLAUNCH_DEPTH: 1 in
    /// the agents of a top-level run); 0 starts none.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_DEPTH)]
    max_depth: u32,
}

/// What every tool call shares.
struct State {
    /// The process environment, read once.
    env: sublaunch::Environment,
    /// The default working directory of runs, which relative ones are resolved in: the
    /// directory the server started in, or the root when that is outside it.
    base: PathBuf,
    /// What the server's owner allows.
    policy: Policy,
    /// What every answer tells the client, whatever it asked (see `Server::reply`), besides
    /// what its directory's project has ignored, which is read at each answer.
    notes: Vec<String>,
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
    /// The follower announcing appends to the event stream while the client is subscribed.
    follower: Arc<std::sync::Mutex<Option<tokio::task::JoinHandle<()>>>>,
}

/// What the server tells a client when it connects.
const INSTRUCTIONS: &str = "sublaunch runs coding agents (pi, Claude Code, Codex, Cursor's agent, any command) in the background, \
locally or on saved machines. Start work with `run` (an agent and a task, or a chain of steps); it returns a run id at once, or the \
result with `wait: true`. Collect results with `wait` (several runs, any or all), `result` and `logs`; `list` and `status` show \
runs; `stop` ends one. `agents` and `models` say what can run (`agents` marks those this server may not start). Runs stay inside \
the server's root directory. Runs keep going when this connection closes.";

/// Runs `sublaunch mcp` until the client closes standard input.
pub fn run(args: Args) -> ExitCode {
    let cwd = match std::env::current_dir() {
        Ok(cwd) => cwd,
        Err(e) => {
            eprintln!("sublaunch mcp: cannot read the working directory: {e}");
            return ExitCode::FAILURE;
        }
    };
    let root = match root_dir(args.root.as_deref(), &cwd) {
        Ok(root) => root,
        Err(message) => {
            eprintln!("sublaunch mcp: {message}");
            return ExitCode::from(super::EXIT_USAGE);
        }
    };
    let runtime = match sublaunch::launch::runtime() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("sublaunch mcp: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let server = match Server::new(args, root, cwd) {
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

/// The root: `given` (relative to `cwd`), else `cwd`, with every symlink resolved.
fn root_dir(given: Option<&Path>, cwd: &Path) -> Result<PathBuf, String> {
    let root = cwd.join(given.unwrap_or(Path::new(".")));
    let named = || match given {
        Some(given) => format!("--root {}", given.display()),
        None => format!("the working directory {}", cwd.display()),
    };
    let root = std::fs::canonicalize(&root).map_err(|e| format!("{}: {e}", named()))?;
    if root.is_dir() {
        Ok(root)
    } else {
        Err(format!("{} is not a directory", named()))
    }
}

impl Server {
    fn new(args: Args, root: PathBuf, cwd: PathBuf) -> Result<Self, String> {
        let env = super::environment();
        let options = Options {
            cache: env
                .component_cache()
                .map(sublaunch::engine::artifact_cache::ArtifactCache::new),
            ..Options::default()
        };
        let planner = Planner::embedded(options).map_err(|e| format!("the planner could not be loaded: {e:#}"))?;
        let layout = env.layout(Some(&cwd)).map_err(|e| e.to_string())?;
        let store = RunStore::open(&layout, &env).map_err(|e| e.to_string())?;
        let base = match std::fs::canonicalize(&cwd) {
            Ok(real) if real.starts_with(&root) => real,
            _ => root.clone(),
        };
        let agents = args.agents.map(|names| {
            names
                .iter()
                .map(|name| name.trim().to_owned())
                .filter(|name| !name.is_empty())
                .collect()
        });
        let found = sublaunch::runs::lineage::Lineage::of_this_process().depth();
        let policy = Policy::new(root, agents, args.allow_shell, args.max_depth, found, &env);
        Ok(Self {
            state: Arc::new(State {
                env,
                base,
                policy,
                notes: Vec::new(),
                planner,
                store: Arc::new(store),
            }),
            tool_router: Self::tool_router(),
            follower: Arc::default(),
        })
    }

    /// What the server advertises.
    fn config() -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_resources()
                .enable_resources_subscribe()
                .build(),
        )
        .with_server_info(Implementation::new("sublaunch", env!("CARGO_PKG_VERSION")))
        .with_instructions(INSTRUCTIONS)
    }
}
