//! What to run: [`RunRequest`], the one description of a run a front end hands the library
//! (the CLI's `sublaunch run` and the MCP server's `run` tool only convert their arguments
//! into it), and the precedence of the settings a request may leave open.

use crate::Environment;
use crate::inputs::chain::ChainFile;
use crate::launch::Caller;
use std::num::NonZeroU32;
use std::path::PathBuf;
use std::time::Duration;

/// The variable that caps the runs active at once under the state root.
pub const MAX_ACTIVE_VAR: &str = "SUBLAUNCH_MAX_ACTIVE";

/// What to run.
#[derive(Clone, Debug)]
pub enum Work {
    /// One agent with one task.
    Agent {
        /// The agent's name.
        agent: String,
        /// Its task.
        task: String,
    },
    /// The steps of a chain file; `task` is what `{task}` stands for.
    Chain {
        /// The parsed chain.
        chain: ChainFile,
        /// The run's task.
        task: Option<String>,
    },
}

/// A run as a person or an agent asks for it.
#[derive(Clone, Debug)]
pub struct RunRequest {
    /// What to run.
    pub work: Work,
    /// The model (a single agent only).
    pub model: Option<String>,
    /// The thinking level (a single agent only).
    pub thinking: Option<String>,
    /// The caller's thinking ceiling.
    pub max_thinking: Option<String>,
    /// A saved Herdr machine to run on.
    pub machine: Option<String>,
    /// The working directory (on the machine when one is given; else resolved locally).
    pub cwd: Option<String>,
    /// A registry file on top of the configured ones.
    pub models_file: Option<PathBuf>,
    /// Stop the run after this long.
    pub timeout: Option<Duration>,
    /// Stop the run at this wall time (ms since the epoch; `None`: the chain file's
    /// `deadlineAt`, if any).
    pub deadline_at: Option<u64>,
    /// The run id to use instead of a generated one.
    pub run_id: Option<String>,
    /// Tasks of a parallel group running at once (overrides the chain's).
    pub concurrency: Option<u32>,
    /// A failed task stops the rest of its group (or the chain's setting).
    pub fail_fast: bool,
    /// Who asks.
    pub caller: Caller,
    /// The completion hook's shell command (`None`: the settings' `subagents.onEnd`, if any;
    /// an empty command: no hook).
    pub on_end: Option<String>,
    /// The cap of active runs under the state root (`None`: `SUBLAUNCH_MAX_ACTIVE`, else the
    /// settings' `subagents.maxActive`, if any; see [`max_active`]).
    pub max_active: Option<NonZeroU32>,
    /// Refuse the run rather than have it wait, queued, for a spend limit, a provider's
    /// rate-limit cooldown or a capacity slot.
    pub no_queue: bool,
    /// Every step in its own managed git worktree (a chain file's steps and agents may ask
    /// for one too).
    pub worktree: bool,
    /// The revision the worktrees start at (`None`: the chain file's `worktreeBase`, else
    /// `HEAD`).
    pub worktree_base: Option<String>,
    /// Refuse to launch when a worktree's repository has uncommitted changes (also the
    /// settings' `subagents.worktrees.requireClean`).
    pub require_clean: bool,
    /// Files the agent reads before the task (a single agent; a chain's steps name their
    /// own).
    pub reads: Vec<String>,
    /// A file the answer is also written to (a single agent).
    pub output: Option<String>,
    /// Limits on the tokens and money the whole run may use (`None`: the chain file's).
    pub usage_budget: Option<sublaunch_contract::UsageBudget>,
    /// The most tool calls the agent may make (a single agent; a chain's steps set their own).
    pub tool_budget: Option<u32>,
    /// How long before the deadline the agents are asked to wrap up (`None`: the chain
    /// file's `checkpointBeforeDeadlineMs`).
    pub checkpoint_before_deadline: Option<Duration>,
    /// pi extensions instead of the discovered ones (a single agent).
    pub extensions: Option<Vec<String>>,
    /// pi extensions the agent must load (a single agent).
    pub required_extensions: Vec<String>,
    /// pi skills instead of the discovered ones (a single agent).
    pub skills: Option<Vec<String>>,
    /// The OS sandbox of every step (`run --sandbox`, the MCP `sandbox` parameter).
    pub sandbox: Option<sublaunch_contract::SandboxSetting>,
    /// Whether the caller waits for the run's end (the front end waits; the run is the same
    /// either way).
    pub wait: bool,
    /// What every step of the run may do: the run's layer of the permission contract (rule
    /// G1; a single agent or a chain alike).
    pub permissions: Option<sublaunch_contract::Permissions>,
    /// The run's acceptance contract (`--accept LEVEL`, MCP `acceptance`): a level, an
    /// object or `false`, checked by the planner (rule G70).
    pub acceptance: Option<serde_json::Value>,
    /// One verification command every step's work must pass (`--gate CMD`, MCP `gate`).
    pub gate: Option<serde_json::Value>,
}

impl RunRequest {
    /// A request for `agent` to do `task`, everything else default.
    pub fn agent(agent: &str, task: &str) -> Self {
        Self {
            work: Work::Agent {
                agent: agent.to_owned(),
                task: task.to_owned(),
            },
            model: None,
            thinking: None,
            max_thinking: None,
            machine: None,
            cwd: None,
            models_file: None,
            timeout: None,
            deadline_at: None,
            run_id: None,
            concurrency: None,
            fail_fast: false,
            caller: Caller::default(),
            on_end: None,
            max_active: None,
            no_queue: false,
            worktree: false,
            worktree_base: None,
            require_clean: false,
            reads: Vec::new(),
            output: None,
            usage_budget: None,
            tool_budget: None,
            checkpoint_before_deadline: None,
            extensions: None,
            required_extensions: Vec::new(),
            skills: None,
            sandbox: None,
            wait: false,
            permissions: None,
            acceptance: None,
            gate: None,
        }
    }
}

/// `SUBLAUNCH_MAX_ACTIVE` when set (an empty value counts as unset); anything but a whole
/// number above 0 is an error naming the variable.
pub fn max_active_var(env: &Environment) -> Result<Option<NonZeroU32>, MaxActiveError> {
    let Some(raw) = env.var(MAX_ACTIVE_VAR).filter(|v| !v.is_empty()) else {
        return Ok(None);
    };
    let text = raw.to_string_lossy();
    text.trim()
        .parse::<u32>()
        .ok()
        .and_then(NonZeroU32::new)
        .map(Some)
        .ok_or_else(|| MaxActiveError::Variable(text.into_owned()))
}

/// The cap of active runs, the one place its precedence is written: the request's own, else
/// `SUBLAUNCH_MAX_ACTIVE`, else the settings' `subagents.maxActive` (`settings` is asked only
/// when neither is given).
pub fn max_active(
    asked: Option<NonZeroU32>,
    env: &Environment,
    settings: impl FnOnce() -> Result<Option<NonZeroU32>, String>,
) -> Result<Option<NonZeroU32>, MaxActiveError> {
    if asked.is_some() {
        return Ok(asked);
    }
    match max_active_var(env)? {
        Some(cap) => Ok(Some(cap)),
        None => settings().map_err(MaxActiveError::Settings),
    }
}

/// Why the cap of active runs could not be read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum MaxActiveError {
    /// `SUBLAUNCH_MAX_ACTIVE` is not a whole number above 0 (its text).
    #[error("{MAX_ACTIVE_VAR} must be a whole number above 0 (the most runs active at once), not '{0}'")]
    Variable(String),
    /// The settings could not be read, or their `subagents.maxActive` is wrong (their words).
    #[error("{0}")]
    Settings(String),
}
