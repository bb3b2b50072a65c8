//! Model selection and thinking (model-and-thinking.md). Implemented in issue 3.

use crate::children::Child;
use sublaunch_contract::{Agent, ModelOrigin, PlanError, PlanRequest, ThinkingLevel};

/// Request-level model inputs, validated in pipeline step 1 (rule E1.1).
pub struct ModelSettings<'r> {
    _request: &'r PlanRequest,
}

/// What the model area decides for one native child (rule M20).
#[derive(Debug, Default, PartialEq)]
pub struct ModelPlan {
    /// Final model string, thinking suffix included.
    pub model: Option<String>,
    /// The source string as written (M15).
    pub requested_model: Option<String>,
    /// Where the model came from (M2).
    pub model_origin: Option<ModelOrigin>,
    /// Effective thinking level (T6).
    pub thinking: Option<ThinkingLevel>,
    /// Effective ceiling (T11).
    pub thinking_ceiling: Option<ThinkingLevel>,
    /// Context window of the selected model (M20).
    pub context_limit: Option<u64>,
}

impl<'r> ModelSettings<'r> {
    /// Validates the ceilings, scopes and model value types of the request (E1.1, E2).
    pub fn from_request(request: &'r PlanRequest) -> Result<Self, PlanError> {
        Ok(Self { _request: request })
    }

    /// Plans the model and thinking of one native child (E1.3a–e).
    pub fn plan_child(
        &self,
        _child: &Child<'r>,
        _agent: &'r Agent,
        _warnings: &mut Vec<String>,
    ) -> Result<ModelPlan, PlanError> {
        Ok(ModelPlan::default())
    }
}
