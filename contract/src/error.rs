//! Planning errors (`plan-error` in wit/planner.wit).

use serde::{Deserialize, Serialize};
use std::fmt;

/// Why a plan was refused; the codes of spec/README.md plus `planner-fault`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[cfg_attr(
    feature = "wasmtime",
    derive(
        wasmtime::component::ComponentType,
        wasmtime::component::Lift,
        wasmtime::component::Lower
    ),
    component(enum)
)]
#[repr(u8)]
#[allow(missing_docs)]
pub enum ErrorCode {
    #[cfg_attr(feature = "wasmtime", component(name = "invalid-request"))]
    InvalidRequest,
    #[cfg_attr(feature = "wasmtime", component(name = "unknown-agent"))]
    UnknownAgent,
    #[cfg_attr(feature = "wasmtime", component(name = "unknown-model"))]
    UnknownModel,
    #[cfg_attr(feature = "wasmtime", component(name = "ambiguous-model"))]
    AmbiguousModel,
    #[cfg_attr(feature = "wasmtime", component(name = "model-out-of-scope"))]
    ModelOutOfScope,
    #[cfg_attr(feature = "wasmtime", component(name = "no-parent-model"))]
    NoParentModel,
    #[cfg_attr(feature = "wasmtime", component(name = "invalid-thinking-level"))]
    InvalidThinkingLevel,
    #[cfg_attr(feature = "wasmtime", component(name = "thinking-above-ceiling"))]
    ThinkingAboveCeiling,
    #[cfg_attr(feature = "wasmtime", component(name = "runner-option-unsupported"))]
    RunnerOptionUnsupported,
    #[cfg_attr(feature = "wasmtime", component(name = "structured-output-unsupported"))]
    StructuredOutputUnsupported,
    #[cfg_attr(feature = "wasmtime", component(name = "invalid-output-schema"))]
    InvalidOutputSchema,
    #[cfg_attr(feature = "wasmtime", component(name = "invalid-machine-name"))]
    InvalidMachineName,
    #[cfg_attr(feature = "wasmtime", component(name = "machine-not-found"))]
    MachineNotFound,
    #[cfg_attr(feature = "wasmtime", component(name = "machine-disabled"))]
    MachineDisabled,
    #[cfg_attr(feature = "wasmtime", component(name = "machine-ambiguous"))]
    MachineAmbiguous,
    #[cfg_attr(feature = "wasmtime", component(name = "machine-runner-unsupported"))]
    MachineRunnerUnsupported,
    #[cfg_attr(feature = "wasmtime", component(name = "machine-no-root"))]
    MachineNoRoot,
    #[cfg_attr(feature = "wasmtime", component(name = "invalid-machine-settings"))]
    InvalidMachineSettings,
    #[cfg_attr(feature = "wasmtime", component(name = "invalid-machine-catalog"))]
    InvalidMachineCatalog,
    #[cfg_attr(feature = "wasmtime", component(name = "unsafe-ssh-target"))]
    UnsafeSshTarget,
    #[cfg_attr(feature = "wasmtime", component(name = "invalid-remote-cwd"))]
    InvalidRemoteCwd,
    #[cfg_attr(feature = "wasmtime", component(name = "above-ceiling"))]
    AboveCeiling,
    #[cfg_attr(feature = "wasmtime", component(name = "planner-fault"))]
    PlannerFault,
}

impl ErrorCode {
    /// The kebab-case code as it appears in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::InvalidRequest => "invalid-request",
            Self::UnknownAgent => "unknown-agent",
            Self::UnknownModel => "unknown-model",
            Self::AmbiguousModel => "ambiguous-model",
            Self::ModelOutOfScope => "model-out-of-scope",
            Self::NoParentModel => "no-parent-model",
            Self::InvalidThinkingLevel => "invalid-thinking-level",
            Self::ThinkingAboveCeiling => "thinking-above-ceiling",
            Self::RunnerOptionUnsupported => "runner-option-unsupported",
            Self::StructuredOutputUnsupported => "structured-output-unsupported",
            Self::InvalidOutputSchema => "invalid-output-schema",
            Self::InvalidMachineName => "invalid-machine-name",
            Self::MachineNotFound => "machine-not-found",
            Self::MachineDisabled => "machine-disabled",
            Self::MachineAmbiguous => "machine-ambiguous",
            Self::MachineRunnerUnsupported => "machine-runner-unsupported",
            Self::MachineNoRoot => "machine-no-root",
            Self::InvalidMachineSettings => "invalid-machine-settings",
            Self::InvalidMachineCatalog => "invalid-machine-catalog",
            Self::UnsafeSshTarget => "unsafe-ssh-target",
            Self::InvalidRemoteCwd => "invalid-remote-cwd",
            Self::AboveCeiling => "above-ceiling",
            Self::PlannerFault => "planner-fault",
        }
    }
}

/// A refused plan: one code and a message that says what and where.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(
    feature = "wasmtime",
    derive(
        wasmtime::component::ComponentType,
        wasmtime::component::Lift,
        wasmtime::component::Lower
    ),
    component(record)
)]
pub struct PlanError {
    /// The error code.
    pub code: ErrorCode,
    /// What went wrong and where.
    pub message: String,
}

impl PlanError {
    /// An error with this code and message.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }

    /// An `invalid-request` error.
    pub fn invalid_request(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::InvalidRequest, message)
    }
}

impl fmt::Display for PlanError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code.as_str(), self.message)
    }
}

impl std::error::Error for PlanError {}
