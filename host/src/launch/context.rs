//! What every phase of one launch shares: the run's identity, its directory handles, the
//! policies and hooks in force.

use super::options::LaunchHooks;
use super::spec::Launch;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use sublaunch_protocol::files::dir::Dir;
use sublaunch_protocol::files::durability::DurabilityPolicy;
use sublaunch_protocol::files::trust::TrustedRoot;
use sublaunch_protocol::os::Os;
use sublaunch_protocol::os::faults::{HostFaults, HostPoint};
use sublaunch_protocol::records::index::ActiveRunIndex;

/// One launch's shared state.
pub(crate) struct RunContext {
    /// The run id.
    pub run_id: String,
    /// `<run>` opened.
    pub run: Arc<Dir>,
    /// The verified root.
    pub root: Arc<TrustedRoot>,
    /// `<root>/async-cfg-<runId>.json`.
    pub cfg_path: PathBuf,
    /// H4.
    pub runner_process_instance_id: String,
    /// Durability in force.
    pub policy: DurabilityPolicy,
    /// Host fault hooks (empty in production).
    pub faults: HostFaults,
    /// The embedder's hooks.
    pub hooks: Arc<dyn LaunchHooks>,
    /// Os (clock, random, fs).
    pub os: Arc<Os>,
    /// What is launched: the plan and the run's settings (its caller, its limits).
    pub launch: Arc<Launch>,
    /// X1 grace.
    pub terminate_grace: Duration,
    /// How to start the completion hook when the shim died without firing it (`None`: the
    /// run has no hook).
    pub on_end: Option<super::completion_hook::HookRunner>,
    /// The worktrees made for this launch, removed again when it fails before the run
    /// started.
    pub worktrees: std::sync::Mutex<Option<crate::worktrees::Created>>,
    /// The run did not fit under a spend limit when the launch looked (U9): it is recorded
    /// `queued`, and its runner waits for room.
    pub spend_waits: std::sync::atomic::AtomicBool,
}

impl RunContext {
    /// Who asked for the run.
    pub(crate) fn caller(&self) -> &super::Caller {
        &self.launch.caller
    }

    /// Removes the launch's worktrees (a launch that failed: nothing ran in them).
    pub(crate) fn remove_worktrees(&self) {
        let created = self.worktrees.lock().map(|mut w| w.take()).unwrap_or_default();
        if let Some(mut created) = created {
            created.remove();
        }
    }

    /// The active-run index of `<runs>`.
    pub(crate) fn index(&self) -> std::io::Result<ActiveRunIndex> {
        ActiveRunIndex::new(self.root.runs(), self.policy)
    }

    /// Sleeps for the `sleep:<ms>` faults of `point` (an async timer, X2).
    pub(crate) async fn fault_sleep(&self, point: HostPoint) {
        fault_sleep(&self.faults, point).await;
    }
}

/// Sleeps for the `sleep:<ms>` faults of `point`.
pub(crate) async fn fault_sleep(faults: &HostFaults, point: HostPoint) {
    if let Some(duration) = faults.sleep_before(point) {
        tokio::time::sleep(duration).await;
    }
}

/// Reports a non-fatal problem (alias or cleanup failures) through the `log` facade.
pub(crate) fn warn(message: &str) {
    log::warn!("{message}");
}
