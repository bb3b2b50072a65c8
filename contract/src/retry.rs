//! When the runner runs a step again (`retry`): how many times after the provider's rate
//! limit refused it before it did any work (rule U6). The planner checks the number and
//! which source gave it; the runner recognises the refusal and waits out the cooldown.

use serde::{Deserialize, Serialize};

/// The most times a step may be run again after a rate limit (`retry.rateLimit`).
pub const MAX_RATE_LIMIT_RETRIES: u32 = 20;

/// How a step is run again (`retry: {rateLimit: N}`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
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
pub struct RetryPolicy {
    /// How many times the step runs again when the provider's rate limit refused it before
    /// it did any work (0 to [`MAX_RATE_LIMIT_RETRIES`]; absent: the runner's default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "wasmtime", component(name = "rate-limit"))]
    pub rate_limit: Option<u32>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// U6: `{"rateLimit": N}` in camelCase; a misspelt key or a number that is not a whole
    /// one is refused when parsed.
    #[test]
    fn u6_retry_reads_rate_limit_and_refuses_other_keys() {
        let policy: RetryPolicy = serde_json::from_str(r#"{"rateLimit": 0}"#).unwrap();
        assert_eq!(policy.rate_limit, Some(0));
        assert_eq!(serde_json::to_string(&policy).unwrap(), r#"{"rateLimit":0}"#);
        let empty: RetryPolicy = serde_json::from_str("{}").unwrap();
        assert_eq!(empty, RetryPolicy::default());
        let error = serde_json::from_str::<RetryPolicy>(r#"{"rateLimits": 1}"#).unwrap_err();
        assert!(error.to_string().contains("unknown field `rateLimits`"), "{error}");
        for bad in [r#"{"rateLimit": -1}"#, r#"{"rateLimit": 1.5}"#, r#"{"rateLimit": "2"}"#] {
            assert!(serde_json::from_str::<RetryPolicy>(bad).is_err(), "{bad}");
        }
    }
}
