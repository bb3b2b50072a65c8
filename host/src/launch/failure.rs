//! A launch that did not start (H18): the caller-facing text and the upstream result shape.

use super::handle::LaunchHandle;
use std::fmt;

/// Why a launch did not start.
#[derive(Clone, Debug)]
pub struct LaunchFailure {
    /// The error (without the `Failed to start async run` prefix).
    pub error: String,
    /// A preflight refusal (H1–H3, invalid options): nothing was written or started and the
    /// text has no prefix.
    pub preflight: bool,
    /// The run id, once one was chosen.
    pub run_id: Option<String>,
    /// Always true: a failed launch never proceeded (H18).
    pub startup_did_not_proceed: bool,
    /// Whether the shim's exit was observed by the end of the failure path (X1).
    pub termination_observed: bool,
    /// The shim's pid, when it was spawned.
    pub pid: Option<u32>,
    /// H4, once generated.
    pub runner_process_instance_id: Option<String>,
    /// When a shim was spawned: its supervision, which finalizes the run whenever the shim
    /// exits (F27).
    pub handle: Option<LaunchHandle>,
}

impl LaunchFailure {
    /// A preflight refusal.
    pub(crate) fn preflight(error: impl Into<String>) -> Self {
        Self {
            error: error.into(),
            preflight: true,
            run_id: None,
            startup_did_not_proceed: true,
            termination_observed: false,
            pid: None,
            runner_process_instance_id: None,
            handle: None,
        }
    }

    /// A failure of run `run_id` before its shim was spawned.
    pub(crate) fn before_spawn(run_id: &str, runner_process_instance_id: &str, error: impl Into<String>) -> Self {
        Self {
            error: error.into(),
            preflight: false,
            run_id: Some(run_id.to_owned()),
            runner_process_instance_id: Some(runner_process_instance_id.to_owned()),
            ..Self::preflight("")
        }
    }

    /// The caller-facing text: `Failed to start async run '<id>': <error>`, or the bare
    /// preflight error.
    pub fn message(&self) -> String {
        match (&self.run_id, self.preflight) {
            (Some(id), false) => format!("Failed to start async run '{id}': {}", self.error),
            _ => self.error.clone(),
        }
    }
}

impl fmt::Display for LaunchFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message())
    }
}

impl std::error::Error for LaunchFailure {}
