//! sublaunch: launch background AI-coding subagent runs.
//!
//! The host does every privileged step natively and leaves planning to a sandboxed
//! WebAssembly component ([`engine::planner`]), which it never links natively.

#![warn(missing_docs)]

pub mod engine;
pub mod environment;
pub mod inputs;
pub mod launch;
pub mod request;
pub mod runner_install;
pub mod runs;
pub mod worktrees;

pub use engine::limits::Limits;
pub use engine::planner::{Options, Planner};
pub use environment::Environment;
pub use sublaunch_contract as contract;

/// Converts a wasmtime error (its own type, not `anyhow::Error`) keeping its whole chain.
pub(crate) fn wasmtime_error(error: wasmtime::Error) -> anyhow::Error {
    anyhow::anyhow!("{error:?}")
}
