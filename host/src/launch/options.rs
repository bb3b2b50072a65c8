//! What a caller hands [`super::launch`]: where and how to launch, and the embedder hooks
//! (capacity, events) of host-and-shim.md H15/H18.

use std::ffi::OsString;
use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use sublaunch_protocol::files::durability::DurabilityPolicy;
use sublaunch_protocol::files::layout::Layout;
use sublaunch_protocol::os::Os;
use sublaunch_protocol::os::faults::HostFaults;
use sublaunch_protocol::records::config::RevivalLease;
use sublaunch_protocol::records::handshake::TERMINATE_GRACE;
use sublaunch_protocol::records::proof::ProcessTerminal;

pub use sublaunch_protocol::records::hook::OnEnd;

/// The environment variable naming the shim executable.
pub const SHIM_ENV: &str = crate::environment::SHIM_VAR;
/// The shim's file name, looked up next to the current executable by default.
pub const SHIM_NAME: &str = "sublaunch-shim";
/// How long [`super::LaunchHandle::committed`] waits by default: the shim's own wait for a
/// control (K13) plus a margin.
pub const DEFAULT_COMMIT_TIMEOUT: Duration = Duration::from_secs(40);

/// The agent conversation a resumed run continues: the handle its agent reported (Claude
/// Code's session id, Codex's thread id, pi's session file) and what it had used so far.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Continuation {
    /// The agent's conversation handle.
    pub session: String,
    /// The conversation's usage so far as the agent counts it (Codex's thread total).
    pub session_usage: Option<sublaunch_protocol::records::usage::Usage>,
}

/// How the children of a chain or parallel run are executed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WorkflowOptions {
    /// How many tasks of a parallel group run at once (`None`: all of them).
    pub concurrency: Option<u32>,
    /// Stop a parallel group's remaining tasks as soon as one fails.
    pub fail_fast: bool,
    /// The run-level task of a chain or parallel run (`sublaunch run --chain FILE --task T`):
    /// the text `{task}` stands for in the steps' task texts, which the runner replaces (with
    /// `{previous}` and `{chain_dir}`) when a step starts. `None` for single runs, whose task
    /// is used verbatim.
    pub task: Option<String>,
}

/// Who asks for the run: the identities the run records and reports (I1, K3).
#[derive(Clone, Debug, Default)]
pub struct Caller {
    /// The caller's session id (the CLI passes `sublaunch-cli`).
    pub session_id: Option<String>,
    /// The completion owner (I1, embedders only).
    pub completion_owner_id: Option<String>,
    /// The caller's tool call (I1 alias, embedders only).
    pub tool_call_id: Option<String>,
    /// Revival: the session lease the shim takes (K3). Its `runId` is replaced by the run id.
    pub revival_lease: Option<RevivalLease>,
}

/// How long the launch waits (the run's own limits are [`super::RunLimits`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timeouts {
    /// Host wait per handshake state (default: 10 000 ms, or the test override, K13).
    pub startup: Option<Duration>,
    /// How long [`super::LaunchHandle::committed`] waits for the shim to commit.
    pub commit: Duration,
    /// X1 grace after SIGTERM and after SIGKILL.
    pub terminate_grace: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Self {
            startup: None,
            commit: DEFAULT_COMMIT_TIMEOUT,
            terminate_grace: TERMINATE_GRACE,
        }
    }
}

/// Host events delivered to [`LaunchHooks::event`] (H18, S7, S13).
#[derive(Clone, Debug, PartialEq)]
pub enum HostEvent {
    /// `subagent:async-started`: the launch committed (the proceed file is durable).
    AsyncStarted {
        /// The run.
        run_id: String,
        /// The shim's pid.
        pid: u32,
        /// The caller's session.
        session_id: Option<String>,
        /// `single` / `chain` / `parallel`.
        mode: String,
        /// The agents, in step order (task texts are not included).
        agents: Vec<String>,
        /// `<run>`.
        async_dir: PathBuf,
    },
    /// `subagent:process-terminal`: a run's final proof was written (once per run).
    ProcessTerminal {
        /// The run.
        run_id: String,
        /// The persisted proof.
        proof: ProcessTerminal,
    },
}

/// The embedder's hooks: a capacity ledger (H15, H18, X12) and an event sink. Every method
/// has a no-op default; the CLI uses [`NoHooks`]. The methods are called on the launch's
/// runtime thread and must return promptly (no blocking I/O, no waiting).
pub trait LaunchHooks: Send + Sync {
    /// H15: the launch claims its capacity slot for this runner instance. An error fails the
    /// launch with `Failed to establish async runner capacity ownership: <error>`.
    fn mark_started(&self, runner_process_instance_id: &str) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
        let _ = runner_process_instance_id;
        Ok(())
    }

    /// H18: a launch failed before the runner proceeded; release the slot of this instance.
    /// Returning `false` makes the launch call [`LaunchHooks::rollback`] instead. Called for
    /// every launch failure after preflight.
    fn rollback_before_runner_proceed(&self, runner_process_instance_id: &str) -> bool {
        let _ = runner_process_instance_id;
        true
    }

    /// H18: release a slot claimed for this launch without an instance.
    fn rollback(&self) {}

    /// A host event (H18, S7, S13).
    fn event(&self, event: &HostEvent) {
        let _ = event;
    }
}

/// Hooks that do nothing (the CLI: no capacity limit, no event consumer).
#[derive(Clone, Copy, Debug, Default)]
pub struct NoHooks;

impl LaunchHooks for NoHooks {}

/// How one [`super::Launch`] is launched: the environment, the operating system, the hooks,
/// the runner. Nothing is read from the process environment: values the CLI takes
/// from it come from [`LaunchOptions::environment`] (empty by default, so the shim and its
/// agents get only what the caller put there).
#[derive(Clone)]
pub struct LaunchOptions {
    /// The environment: the base of the shim's, and where the defaults below come from.
    pub environment: crate::Environment,
    /// Where runs live (default: from [`LaunchOptions::environment`]).
    pub layout: Option<Layout>,
    /// The shim executable (default: [`default_shim_path`] of the environment).
    pub shim: Option<PathBuf>,
    /// How long the launch waits.
    pub timeouts: Timeouts,
    /// Capacity and event hooks.
    pub hooks: Arc<dyn LaunchHooks>,
    /// Whether the doorbell socket is used (K14); off = legacy polling (F32).
    pub doorbell: bool,
    /// The operating system's files, processes, clocks and randomness (default: the real
    /// ones, with the retry setting of the environment).
    pub os: Option<Arc<Os>>,
    /// Which writes are fsynced (default: `SUBLAUNCH_DURABILITY`).
    pub durability: Option<DurabilityPolicy>,
    /// Host faults (default: `SUBLAUNCH_HOST_FAULT` in test-hooks builds, else none).
    pub faults: Option<HostFaults>,
    /// The umask the agents get (default: this process's, read from `/proc/self/status`), so
    /// files a writer agent creates look like the user's own; the runner itself keeps 077.
    pub agent_umask: Option<u32>,
    /// Extra environment for the shim, applied after H10 (test hooks, embedder settings).
    pub env: Vec<(OsString, OsString)>,
}

impl Default for LaunchOptions {
    fn default() -> Self {
        Self {
            environment: crate::Environment::default(),
            layout: None,
            shim: None,
            timeouts: Timeouts::default(),
            hooks: Arc::new(NoHooks),
            doorbell: true,
            os: None,
            durability: None,
            faults: None,
            agent_umask: sublaunch_protocol::ids::process_umask(),
            env: Vec::new(),
        }
    }
}

impl fmt::Debug for LaunchOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LaunchOptions")
            .field("layout", &self.layout)
            .field("shim", &self.shim)
            .field("doorbell", &self.doorbell)
            .finish_non_exhaustive()
    }
}

impl LaunchOptions {
    /// Options rooted at `root` with the shim at `shim` (tests, benchmarks).
    pub fn at(root: impl Into<PathBuf>, shim: impl Into<PathBuf>) -> Self {
        Self {
            layout: Some(Layout::new(root)),
            shim: Some(shim.into()),
            ..Self::default()
        }
    }

    /// Adds a shim environment variable.
    #[must_use]
    pub fn with_env(mut self, key: impl Into<OsString>, value: impl Into<OsString>) -> Self {
        self.env.push((key.into(), value.into()));
        self
    }
}

/// H2: why there is no runner to start.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RunnerError {
    /// The runner the launch was given (or found) is not a file.
    #[error("Background runner shim not found: {}", .0.display())]
    NotFound(PathBuf),
    /// None next to this executable, and no cache directory for the built-in copy.
    #[error(
        "Background runner shim not found: no {SHIM_NAME} next to this executable, and no cache directory to install the built-in copy into (set HOME, SUBLAUNCH_CACHE_DIR or {SHIM_ENV})."
    )]
    NoCache,
    /// None next to this executable, and the built-in copy could not be installed (why).
    #[error(
        "Background runner shim not found next to this executable, and the built-in copy could not be installed: {0}"
    )]
    Install(String),
}

/// The shim executable: `$SUBLAUNCH_SHIM`; else `sublaunch-shim` next to the current
/// executable (a packaged install, or a workspace build); else the copy embedded in this
/// binary, written into the cache directory on first use ([`crate::runner_install`]).
pub fn default_shim_path(env: &crate::Environment) -> Result<PathBuf, RunnerError> {
    if let Some(path) = env.shim() {
        return Ok(path);
    }
    let beside = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|dir| dir.join(SHIM_NAME)));
    if let Some(path) = beside.filter(|p| p.is_file()) {
        return Ok(path);
    }
    let cache = env.cache_dir().ok_or(RunnerError::NoCache)?;
    crate::runner_install::install_embedded_runner(&cache).map_err(|e| RunnerError::Install(e.to_string()))
}
