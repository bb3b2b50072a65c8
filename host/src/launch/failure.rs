//! A launch that did not start (H18): how far it got, as a value an embedder can match on,
//! and the caller-facing text.

use super::error::LaunchError;
use super::handle::LaunchHandle;
use std::fmt;

/// How far a failed launch got. A failed launch never proceeded (H18): its agent never ran.
#[derive(Clone, Debug)]
pub enum LaunchStage {
    /// Refused before anything was written or started (H1–H3): a missing or unusable working
    /// directory, no runner, an untrusted state root, invalid options.
    Refused,
    /// The run directory was set up but no runner was started (its configuration could not be
    /// written, or the spawn was refused, H11); what the launch created is gone again.
    NotSpawned {
        /// The run id.
        run_id: String,
        /// H4.
        runner_process_instance_id: String,
    },
    /// The runner started but the launch did not commit (handshake, bookkeeping or capacity
    /// failed); the failure is recorded in the run's files.
    NotCommitted {
        /// The run id.
        run_id: String,
        /// H4.
        runner_process_instance_id: String,
        /// The runner's pid.
        pid: u32,
        /// Whether the runner's exit was observed by the end of the failure path (X1).
        termination_observed: bool,
        /// The runner's supervision, which finalizes the run whenever it exits (F27).
        handle: LaunchHandle,
    },
}

/// Why a launch did not start.
#[derive(Clone, Debug)]
pub struct LaunchFailure {
    /// The error (its text without the `Failed to start async run` prefix).
    pub error: LaunchError,
    /// How far the launch got.
    pub stage: LaunchStage,
}

impl LaunchFailure {
    /// A preflight refusal.
    pub(crate) fn preflight(error: impl Into<LaunchError>) -> Self {
        Self {
            error: error.into(),
            stage: LaunchStage::Refused,
        }
    }

    /// A failure of run `run_id` before its runner was spawned.
    pub(crate) fn before_spawn(run_id: &str, runner_process_instance_id: &str, error: LaunchError) -> Self {
        Self {
            error,
            stage: LaunchStage::NotSpawned {
                run_id: run_id.to_owned(),
                runner_process_instance_id: runner_process_instance_id.to_owned(),
            },
        }
    }

    /// Whether the launch was refused before anything was written or started.
    pub fn is_refusal(&self) -> bool {
        matches!(self.stage, LaunchStage::Refused)
    }

    /// The run id, once one was chosen.
    pub fn run_id(&self) -> Option<&str> {
        match &self.stage {
            LaunchStage::Refused => None,
            LaunchStage::NotSpawned { run_id, .. } | LaunchStage::NotCommitted { run_id, .. } => Some(run_id),
        }
    }

    /// H4, once generated.
    pub fn runner_process_instance_id(&self) -> Option<&str> {
        match &self.stage {
            LaunchStage::Refused => None,
            LaunchStage::NotSpawned {
                runner_process_instance_id,
                ..
            }
            | LaunchStage::NotCommitted {
                runner_process_instance_id,
                ..
            } => Some(runner_process_instance_id),
        }
    }

    /// The runner's pid, when it was spawned.
    pub fn pid(&self) -> Option<u32> {
        match &self.stage {
            LaunchStage::NotCommitted { pid, .. } => Some(*pid),
            _ => None,
        }
    }

    /// The runner's supervision, when it was spawned.
    pub fn handle(&self) -> Option<&LaunchHandle> {
        match &self.stage {
            LaunchStage::NotCommitted { handle, .. } => Some(handle),
            _ => None,
        }
    }

    /// Whether a spawned runner's exit was observed by the end of the failure path (X1).
    pub fn termination_observed(&self) -> bool {
        matches!(
            self.stage,
            LaunchStage::NotCommitted {
                termination_observed: true,
                ..
            }
        )
    }

    /// The caller-facing text: `Failed to start async run '<id>': <error>`, or the bare
    /// refusal.
    pub fn message(&self) -> String {
        match self.run_id() {
            Some(id) => format!("Failed to start async run '{id}': {}", self.error),
            None => self.error.to_string(),
        }
    }
}

impl fmt::Display for LaunchFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message())
    }
}

impl std::error::Error for LaunchFailure {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.error)
    }
}
