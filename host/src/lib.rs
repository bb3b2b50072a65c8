//! sublaunch: launch background AI-coding subagent runs.
//!
//! The host does every privileged step natively and leaves planning to a sandboxed
//! WebAssembly component ([`planner`]), which it never links natively.

#![warn(missing_docs)]

pub mod agents;
pub mod artifact_cache;
pub mod chain;
pub mod config_files;
pub mod environment;
pub mod herdr;
pub mod launch;
pub mod planner;
pub mod registry;
pub mod request;
pub mod runner_install;
pub mod runs;
pub mod sandbox;
pub mod settings;

pub use environment::Environment;
pub use planner::{Limits, Options, Planner};
pub use sublaunch_contract as contract;

/// Converts a wasmtime error (its own type, not `anyhow::Error`) keeping its whole chain.
pub(crate) fn wasmtime_error(error: wasmtime::Error) -> anyhow::Error {
    anyhow::anyhow!("{error:?}")
}
