//! sublaunch: launch background AI-coding subagent runs.
//!
//! The host does every privileged step natively and leaves planning to a sandboxed
//! WebAssembly component ([`engine::planner`]), which it never links natively.
//!
//! The modules are layered, each using only those below it, never one above:
//!
//! - at the bottom, [`environment`] (the process environment as a value), [`inputs`] (what a
//!   plan request is built from) and [`engine`] (the planner component), with
//!   [`runner_install`] and [`request`] on them;
//! - [`worktrees`]: the managed git worktrees of steps, planned, made and pruned (where a run
//!   stands is passed in);
//! - [`launch`]: from a plan to a detached, committed run;
//! - [`runs`]: everything about runs, for the CLI, the MCP server and embedders alike — the
//!   one [`runs::RunRequest`] that describes a run, starting it, resuming one, the run store that reconciles runs nobody observes,
//!   waiting, stopping, answers, the view listers print, and pruning runs and their worktrees;
//! - [`integrate`]: on top, the accepted work of a run's writers merged, gated and landed on
//!   one branch.

#![warn(missing_docs)]

pub mod cluster;
pub mod engine;
pub mod environment;
pub mod inputs;
pub mod integrate;
pub mod launch;
pub mod request;
pub mod runner_install;
pub mod runs;
pub mod usage;
pub mod worktrees;

pub use engine::limits::Limits;
pub use engine::planner::{Options, Planner};
pub use environment::Environment;
pub use sublaunch_contract as contract;

/// Converts a wasmtime error (its own type, not `anyhow::Error`) keeping its whole chain.
pub(crate) fn wasmtime_error(error: wasmtime::Error) -> anyhow::Error {
    anyhow::anyhow!("{error:?}")
}
