//! The sublaunch planner contract as Rust types.
//!
//! These types mirror `wit/planner.wit` field for field and carry its JSON mapping (serde,
//! camelCase, `null` ≡ absent). The guest planner consumes them; a wasmtime host passes them
//! to the component directly with the `wasmtime` feature, which derives the component-model
//! traits; `sublaunch plan` and the component's `plan-json` both parse and print JSON with
//! [`parse_request`] and [`render`], so every host prints the same bytes.

#![warn(missing_docs)]

pub mod acceptance;
mod adapter;
pub mod budget;
pub mod ceiling;
mod error;
pub mod loose;
pub mod nearest;
pub mod permissions;
mod plan;
mod request;
pub mod retry;
pub mod sandbox;

pub use acceptance::{
    AcceptanceLevel, AcceptancePlan, AcceptanceRole, Criterion, EvidenceKind, ReviewGate, VerifyCommand,
};
pub use adapter::{
    AdapterId, CliModelName, CliThinking, Conversation, InputFormat, LaunchModel, ModelProviders, ModelSource,
    NativeSchema, OutputFormat, Reports, RunnerType, UnknownAdapter, WrongProvider,
};
pub use budget::UsageBudget;
pub use ceiling::Ceiling;
pub use error::{ErrorCode, PlanError};
pub use loose::{LooseString, LooseStrings, ThinkingSetting};
pub use permissions::{PermissionMode, PermissionSupport, Permissions, ResolvedPermissions, Rule, RuleError};
pub use plan::{
    ClusterRef, Graph, GraphNode, GraphStep, LaunchPlan, MachineRef, ModelOrigin, PlanStep, PlannedReviewer,
    ThinkingLevel,
};
pub use request::{
    Agent, LaunchOptions, MachineSettings, Mode, ModelEntry, ModelScope, ParentModel, PlanRequest, Runner, Step, Task,
};
pub use retry::RetryPolicy;
pub use sandbox::{SandboxHost, SandboxPlan, SandboxProfile, SandboxSetting};

/// The largest PlanRequest JSON accepted (16 MiB): far above any real request, far below
/// what would strain the planner's memory cap.
pub const MAX_REQUEST_BYTES: usize = 16 * 1024 * 1024;

/// Parses PlanRequest JSON. A malformed request is an `invalid-request` error naming the
/// JSON path and position of the problem.
pub fn parse_request(json: &[u8]) -> Result<PlanRequest, PlanError> {
    if json.len() > MAX_REQUEST_BYTES {
        return Err(PlanError::invalid_request(format!(
            "Invalid request: larger than the limit of {MAX_REQUEST_BYTES} bytes (16 MiB); {} bytes read.",
            json.len()
        )));
    }
    let mut deserializer = serde_json::Deserializer::from_slice(json);
    let request = serde_path_to_error::deserialize(&mut deserializer).map_err(|error| {
        let path = error.path().to_string();
        let inner = error.into_inner();
        if path == "." || inner.is_syntax() || inner.is_eof() {
            PlanError::invalid_request(format!("Invalid request: {inner}"))
        } else {
            PlanError::invalid_request(format!("Invalid request at {path}: {inner}"))
        }
    })?;
    deserializer
        .end()
        .map_err(|error| PlanError::invalid_request(format!("Invalid request: {error}")))?;
    Ok(request)
}

/// The JSON document `sublaunch plan` prints for a planning outcome: the plan, or
/// `{"error": {"code", "message"}}`. Pretty-printed with two-space indentation.
pub fn render(outcome: &Result<LaunchPlan, PlanError>) -> String {
    let rendered = match outcome {
        Ok(plan) => serde_json::to_string_pretty(plan),
        Err(error) => render_error(error),
    };
    rendered.unwrap_or_else(|error| {
        let fault = PlanError::new(
            ErrorCode::PlannerFault,
            format!("The planner returned a plan that cannot be printed: {error}"),
        );
        render_error(&fault).expect("an error document always serialises")
    })
}

fn render_error(error: &PlanError) -> serde_json::Result<String> {
    serde_json::to_string_pretty(&serde_json::json!({ "error": error }))
}
