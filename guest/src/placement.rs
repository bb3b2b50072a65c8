//! Machine placement on saved Herdr machines (rules P1–P17). Implemented in issue 4.

use crate::children::Child;
use sublaunch_contract::{Agent, ErrorCode, LooseString, MachineRef, PlanError, PlanRequest};

/// Placement state for one plan (the catalog is parsed lazily, rule P16).
pub struct Placement<'r> {
    _request: &'r PlanRequest,
}

impl<'r> Placement<'r> {
    /// Prepares placement for a request without reading its catalog.
    pub fn new(request: &'r PlanRequest) -> Self {
        Self { _request: request }
    }

    /// Places one child on the machine it requested (rules P2–P15).
    pub fn place(
        &mut self,
        _child: &Child<'r>,
        agent: &'r Agent,
        requested: &'r LooseString,
        _remote_cwd: Option<&'r str>,
    ) -> Result<MachineRef, PlanError> {
        Err(PlanError::new(
            ErrorCode::MachineRunnerUnsupported,
            format!("Agent '{}' cannot be placed on machine {}: placement is not implemented yet.", agent.name, requested.to_json()),
        ))
    }
}
