//! What one launch starts: the plan and everything decided about its run, merged once
//! (`runs::start::prepare` builds it from a `runs::RunRequest`, and
//! `runs::resume` from a finished run). [`super::LaunchOptions`] says *how* it is
//! launched; this says *what*.

use super::options::{Caller, Continuation, OnEnd, WorkflowOptions};
use crate::inputs::agents::AgentDef;
use crate::inputs::settings::Settings;
use std::num::NonZeroU32;
use std::path::PathBuf;
use std::sync::Arc;
use sublaunch_contract::LaunchPlan;
use sublaunch_protocol::records::config::ProjectConfig;

/// How long the run may take and how many runs may be active with it (R12, capacity).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RunLimits {
    /// The run's timeout (`timeoutMs`, R12).
    pub timeout_ms: Option<u64>,
    /// The run's absolute deadline in wall ms (`deadlineAt`, R12); the earlier of the two
    /// ends the run.
    pub deadline_at: Option<u64>,
    /// At most this many runs of the state root are active at once; a run over the cap is
    /// recorded `queued` and starts, in arrival order, when a slot frees (`None`: no cap).
    pub max_active: Option<NonZeroU32>,
    /// Refuse the launch rather than have it wait, queued, for a spend limit, a provider's
    /// rate-limit cooldown or a capacity slot.
    pub no_queue: bool,
}

/// One launch: the plan and the run's settings, each decided once.
#[derive(Clone, Debug)]
pub struct Launch {
    /// What runs, step by step.
    pub plan: LaunchPlan,
    /// The run id to use (default: a new `<agent>-<8 base36>` id). It must not name an
    /// existing run.
    pub run_id: Option<String>,
    /// The run's local working directory (default: the first local step's cwd).
    pub cwd: Option<PathBuf>,
    /// Who asks for the run.
    pub caller: Caller,
    /// The run's time and capacity limits.
    pub limits: RunLimits,
    /// The agents whose runners the launch may start (default: the built-ins).
    pub agents: Vec<AgentDef>,
    /// How the steps of a chain or parallel run are executed.
    pub workflow: WorkflowOptions,
    /// Continue this agent conversation instead of starting one (a plan of one step whose
    /// agent keeps conversations).
    pub continuation: Option<Continuation>,
    /// The completion hook: a shell command run once when the run ends, with its result on
    /// stdin (see [`sublaunch_protocol::records::hook`]). `None`: no hook.
    pub on_end: Option<OnEnd>,
    /// How the managed worktrees of steps that ask for one are made (the base commit, a
    /// clean-repository requirement, where they go, which steps share the one before).
    pub worktrees: crate::worktrees::WorktreeOptions,
    /// Whether the agents may load their own configuration from the project (set from the
    /// user's trust in it by `runs::start::prepare`).
    pub project_config: ProjectConfig,
    /// The settings the run was prepared with, so the launch does not read them again
    /// (`None`: the launch reads those of its directory when a step needs them).
    pub settings: Option<Arc<Settings>>,
    /// The run (and step) whose agent launched this one, for its records (G61).
    pub launched_from: Option<crate::launch::plan_record::LaunchedFrom>,
}

impl Launch {
    /// A launch of `plan` with the built-in agents and nothing else decided.
    pub fn new(plan: LaunchPlan) -> Self {
        Self {
            plan,
            run_id: None,
            cwd: None,
            caller: Caller::default(),
            limits: RunLimits::default(),
            agents: crate::inputs::agents::builtins(),
            workflow: WorkflowOptions::default(),
            continuation: None,
            on_end: None,
            worktrees: crate::worktrees::WorktreeOptions::default(),
            project_config: ProjectConfig::default(),
            settings: None,
            launched_from: None,
        }
    }
}
