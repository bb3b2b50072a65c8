//! What a step or a run may spend: tokens and money (`usageBudget`) and tool calls
//! (`toolBudget`). The planner checks the numbers and which agents can honour them; the
//! runner counts what the agent reports and stops it when a limit is crossed.

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

/// Limits on the usage a step (or a whole run) may report; crossing one stops it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[cfg_attr(
    feature = "wasmtime",
    derive(
        wasmtime::component::ComponentType,
        wasmtime::component::Lift,
        wasmtime::component::Lower
    ),
    component(record)
)]
pub struct UsageBudget {
    /// The most input and output tokens (tokens read from the prompt cache are not counted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "wasmtime", component(name = "max-tokens"))]
    pub max_tokens: Option<u64>,
    /// The most US dollars, as the agent reports its cost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "wasmtime", component(name = "max-cost-usd"))]
    pub max_cost_usd: Option<f64>,
}

/// Reads `toolBudget`: a whole number of tool calls, or `{"maxCalls": N}`.
pub fn tool_budget<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<u32>, D::Error> {
    use serde::de::Error;
    let value = Value::deserialize(deserializer)?;
    let calls = match &value {
        Value::Null => return Ok(None),
        Value::Object(object) => {
            if let Some(key) = object.keys().find(|k| *k != "maxCalls") {
                return Err(D::Error::custom(format!(
                    "unknown field `{key}`, a tool budget has only `maxCalls`"
                )));
            }
            object.get("maxCalls").unwrap_or(&Value::Null)
        }
        number => number,
    };
    calls
        .as_u64()
        .and_then(|n| u32::try_from(n).ok())
        .map(Some)
        .ok_or_else(|| {
            D::Error::custom(format!(
                "a tool budget is a whole number of tool calls (or {{\"maxCalls\": N}}), not {value}"
            ))
        })
}
