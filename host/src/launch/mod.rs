//! The host launch path: from a [`Launch`] (a plan and its run's settings) to a detached,
//! committed run of `sublaunch-shim`, and the bookkeeping after its exit.
//!
//! Rule ids refer to `spec/host-and-shim.md`. The sequence ([`launch`]) is: preflight (H1–H3,
//! `preflight`, with the managed-worktree checks of [`crate::worktrees::plan`]) → the run
//! directory, created atomically with a preliminary `queued` status ([`run_dir`]) → the
//! worktrees ([`crate::worktrees::create`]) and the steps' reads and output files resolved
//! against their final directories (`step_files`) → the private cfg file (H5, [`config`]) → stale handshake files and runner
//! logs (H6, H7) → the spawn (H8–H11, `spawn`) with the exit watcher armed first (H12,
//! [`exit_watcher`]) → the initial status, marker, sidecars and capacity claim (H13–H15,
//! `bookkeeping`) → the proceed file of a fresh launch (H16) or the revival handshake
//! (K3–K8, K13–K16, `handshake`). A failure before proceed persists the failure (S5,
//! `startup_failure`), terminates the shim (X1, [`terminate`]), rolls back capacity (H18) and
//! removes the launch's worktrees.
//! A supervising task (`supervise`) then tracks the shim's commit (K14 `committed`) and, when
//! the exit watcher fires, finalizes the run (H19, H20, S7, `finalize`) — see
//! [`LaunchHandle`].
//!
//! The CLI is a short-lived host: `sublaunch run` returns once the shim committed, so nobody
//! observes the shim's exit and its proof stays `pending` until a lister applies S13
//! (`unknown/observer-unavailable`, F33). `sublaunch run --wait` observes the exit itself.
//!
//! Runs no live host observes are reconciled by the listers' and waiters' run store, in the
//! `runs` module above this one (S13, I5).
//!
//! Everything runs on tokio; blocking run-file calls go to the blocking pool (X2). The
//! runtime needs I/O and time enabled.

pub mod admission;
mod blocking;
mod bookkeeping;
mod cluster;
pub mod completion_hook;
pub mod config;
mod context;
mod doorbell;
pub mod environment;
pub mod error;
pub mod exit_watcher;
mod failure;
mod finalize;
mod handle;
mod handshake;
pub mod ids;
mod options;
mod pi_resources;
pub mod plan_record;
mod preflight;
pub mod readiness;
pub mod run_dir;
mod sequence;
mod setup;
mod spawn;
mod spec;
mod spend;
mod startup_failure;
mod step_files;
mod supervise;
pub mod terminate;
#[cfg(feature = "test-hooks")]
pub mod testing;

pub use error::LaunchError;
pub use exit_watcher::{ProcessControl, RunnerExit, SignalOutcome, TermSignal};
pub use failure::{LaunchFailure, LaunchStage};
pub use finalize::Finished;
pub use handle::{Abandoned, CommitError, CommitState, LaunchHandle};
pub use ids::new_run_id;
pub use options::{
    Caller, Continuation, DEFAULT_COMMIT_TIMEOUT, HostEvent, LaunchHooks, LaunchOptions, NoHooks, OnEnd, RunnerError,
    SHIM_ENV, SHIM_NAME, Timeouts, WorkflowOptions, default_shim_path,
};
pub use sequence::{Launched, check, launch};
pub use spec::{Launch, RunLimits};
pub use terminate::{Termination, terminate_runner};

/// The async runtime the launch API runs on, re-exported so embedders and the end-to-end
/// tests use the same version.
pub use tokio;

/// A single-threaded runtime with I/O and time, as the CLI uses.
pub fn runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread().enable_all().build()
}
