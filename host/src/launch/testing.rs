//! Helpers for the launch suites (compiled only with the `test-hooks` feature): plans, options
//! rooted in a scratch directory, and hooks that record what the launch did.

use super::options::{HostEvent, LaunchHooks, LaunchOptions};
use super::spec::Launch;
use std::path::Path;
use std::sync::Mutex;
use sublaunch_contract::{LaunchPlan, PlanStep};
use sublaunch_protocol::files::durability::DurabilityPolicy;
use sublaunch_protocol::os::faults::HostFaults;

/// A one-step plan running `task` with the built-in `shell` agent in `cwd`.
pub fn shell_plan(task: &str, cwd: &Path) -> LaunchPlan {
    LaunchPlan::single(PlanStep::local("shell", task, &cwd.to_string_lossy()))
}

/// A test launch of `plan` under the session `test-session`, everything else default.
pub fn test_launch(plan: &LaunchPlan) -> Launch {
    let mut launch = Launch::new(plan.clone());
    launch.caller.session_id = Some("test-session".into());
    launch
}

/// Options for a test launch: this root and shim, no host faults from the environment,
/// standard durability, the shim's test-parent monitor set to this process (R4).
pub fn test_options(root: &Path, shim: &Path) -> LaunchOptions {
    let mut options = LaunchOptions::at(root, shim);
    // The tests' shims and agents see the test process's environment, as the CLI's would.
    options.environment = crate::Environment::from_process();
    options.faults = Some(HostFaults::none());
    options.durability = Some(DurabilityPolicy::standard());
    options.env.push((
        "SUBLAUNCH_TEST_PARENT_PID".into(),
        std::process::id().to_string().into(),
    ));
    options
}

/// What [`RecordingHooks`] saw.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Recorded {
    /// `mark_started` calls (instance ids).
    pub marked: Vec<String>,
    /// `rollback_before_runner_proceed` calls.
    pub rolled_back_before_proceed: Vec<String>,
    /// `rollback` calls.
    pub rolled_back: usize,
    /// Events, in order.
    pub events: Vec<HostEvent>,
}

impl Recorded {
    /// Capacity in use: claimed instances not rolled back (0 after a failed launch, X12).
    pub fn capacity_used(&self) -> usize {
        self.marked
            .iter()
            .filter(|id| !self.rolled_back_before_proceed.contains(id))
            .count()
            .saturating_sub(self.rolled_back)
    }
}

type EventProbe = Box<dyn Fn(&HostEvent) + Send + Sync>;

/// Hooks recording every call; `mark_started` can be made to fail (F13) and
/// `rollback_before_runner_proceed` to return false; `on_event` runs inside the emission.
#[derive(Default)]
pub struct RecordingHooks {
    /// Everything seen.
    pub recorded: Mutex<Recorded>,
    /// `mark_started` fails with this text.
    pub fail_mark_started: Option<String>,
    /// What `rollback_before_runner_proceed` returns (default true).
    pub rollback_before_proceed_returns: Option<bool>,
    /// Called at each event (e.g. to read status.json at emission time, F28).
    pub on_event: Option<EventProbe>,
}

impl RecordingHooks {
    /// A snapshot of what was recorded.
    pub fn snapshot(&self) -> Recorded {
        self.recorded.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

impl LaunchHooks for RecordingHooks {
    fn mark_started(&self, runner_process_instance_id: &str) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
        if let Some(error) = &self.fail_mark_started {
            return Err(error.clone().into());
        }
        self.recorded
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .marked
            .push(runner_process_instance_id.to_owned());
        Ok(())
    }

    fn rollback_before_runner_proceed(&self, runner_process_instance_id: &str) -> bool {
        let answer = self.rollback_before_proceed_returns.unwrap_or(true);
        if answer {
            self.recorded
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .rolled_back_before_proceed
                .push(runner_process_instance_id.to_owned());
        }
        answer
    }

    fn rollback(&self) {
        self.recorded.lock().unwrap_or_else(|p| p.into_inner()).rolled_back += 1;
    }

    fn event(&self, event: &HostEvent) {
        if let Some(probe) = &self.on_event {
            probe(event);
        }
        self.recorded
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .events
            .push(event.clone());
    }
}

/// Runs `future` on a fresh single-threaded runtime.
pub fn block_on<F: std::future::Future>(future: F) -> F::Output {
    super::runtime().expect("a tokio runtime").block_on(future)
}
