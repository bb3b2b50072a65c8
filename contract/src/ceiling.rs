//! What a run launched from inside another run inherits (rules G60–G66): the permissions,
//! sandbox and thinking ceiling the launching step ran with, found by the host in that run's
//! own records. The planner refuses a launch that asks for more and narrows the rest to it.

use crate::{ResolvedPermissions, SandboxSetting};
use serde::{Deserialize, Serialize};

/// One run the new run is launched from inside, and what it allows.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(
    feature = "wasmtime",
    derive(
        wasmtime::component::ComponentType,
        wasmtime::component::Lift,
        wasmtime::component::Lower
    ),
    component(record)
)]
pub struct Ceiling {
    /// Where the ceiling comes from, for messages: `run shell-ab12cd34, step 1 (agent scout)`.
    pub source: String,
    /// How many runs down from that run the new run is (1: launched by its own agent).
    pub depth: u32,
    /// The launching step's permissions (absent: its CLI's defaults, nested runs allowed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permissions: Option<ResolvedPermissions>,
    /// The launching step's OS sandbox (absent: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<SandboxSetting>,
    /// The launching step's thinking ceiling, a level name (absent: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "wasmtime", component(name = "max-thinking"))]
    pub max_thinking: Option<String>,
}
