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

/// Whether `model` matches `pattern`, where `*` stands for any text (`anthropic/*`,
/// `*-mini`); letters are compared exactly.
pub fn model_matches(pattern: &str, model: &str) -> bool {
    let mut parts = pattern.split('*');
    let first = parts.next().unwrap_or_default();
    let Some(mut rest) = model.strip_prefix(first) else {
        return false;
    };
    let parts: Vec<&str> = parts.collect();
    let Some((last, middle)) = parts.split_last() else {
        return rest.is_empty();
    };
    for part in middle {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

#[cfg(test)]
mod tests {
    use super::model_matches;

    #[test]
    fn patterns_match_models_with_stars_for_any_text() {
        assert!(model_matches("anthropic/*", "anthropic/claude-haiku-4-5"));
        assert!(!model_matches("anthropic/*", "openai/gpt-5"));
        assert!(model_matches("openai/gpt-5", "openai/gpt-5"));
        assert!(!model_matches("openai/gpt-5", "openai/gpt-5-mini"));
        assert!(model_matches("*-mini", "openai/gpt-5-mini"));
        assert!(model_matches("*/gpt-*-mini", "openai/gpt-5-mini"));
        assert!(!model_matches("*/gpt-*-mini", "openai/gpt-5"));
        assert!(model_matches("*", "x"));
        assert!(!model_matches("a*a", "a"));
    }
}
