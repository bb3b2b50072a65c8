//! Structured-output validation in a separate process (`sublaunch-validate`, next to the
//! shim). The validator links jsonschema (~2.5 MB of code); keeping it out of the resident
//! shim keeps every shim's memory small (a shim stays resident for its whole run). It is started only when a structured step
//! ends: the request `{"schema", "text"}` on its stdin, the verdict on its stdout.

use crate::step::structured::{self, StructuredError};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

/// Overrides where the validator is (tests, packaging).
pub const VALIDATOR_ENV: &str = "SUBLAUNCH_VALIDATOR";

/// The validator's file name.
pub const VALIDATOR_NAME: &str = "sublaunch-validate";

/// The longest a validation may take.
const DEADLINE: Duration = Duration::from_secs(60);

/// The validator: `$SUBLAUNCH_VALIDATOR`, else `sublaunch-validate` next to this executable.
pub fn validator_path() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os(VALIDATOR_ENV).filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(path));
    }
    Some(std::env::current_exe().ok()?.parent()?.join(VALIDATOR_NAME))
}

/// Extracts and validates `text` against `schema` in the validator process.
pub fn check(text: &str, schema: &Value) -> Result<Value, StructuredError> {
    let path =
        validator_path().ok_or_else(|| StructuredError::Unavailable("the validator cannot be located".into()))?;
    let unavailable = |why: String| StructuredError::Unavailable(format!("the validator {} {why}", path.display()));
    let request =
        serde_json::to_vec(&json!({"schema": schema, "text": text})).map_err(|e| unavailable(e.to_string()))?;
    let mut command = Command::new(&path);
    command.env_clear();
    let finished = crate::process::bounded::run(command, Some(request), DEADLINE).map_err(unavailable)?;
    if !finished.status.success() {
        return Err(unavailable(format!("failed ({})", finished.status)));
    }
    let verdict: Value =
        serde_json::from_slice(&finished.stdout).map_err(|e| unavailable(format!("answered garbage: {e}")))?;
    match serde_json::from_value(verdict) {
        Ok(Verdict::Ok(value)) => Ok(value),
        Ok(Verdict::NotJson(cause)) => Err(StructuredError::NotJson(cause)),
        Ok(Verdict::BadSchema(cause)) => Err(StructuredError::BadSchema(cause)),
        Ok(Verdict::Invalid(errors)) => Err(StructuredError::Invalid(
            errors.into_iter().map(|e| (e.path, e.message)).collect(),
        )),
        Err(_) => Err(unavailable("answered an unknown verdict".into())),
    }
}

/// The validator's answer: `{"ok": <value>}`, `{"notJson": <cause>}`, `{"badSchema": <cause>}`
/// or `{"invalid": [{"path", "message"}, …]}`.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Verdict {
    /// The parsed structured output.
    Ok(Value),
    /// No JSON was found.
    NotJson(String),
    /// The schema cannot be compiled (or the request was not understood).
    BadSchema(String),
    /// Every schema violation.
    Invalid(Vec<Violation>),
}

/// One schema violation.
#[derive(Debug, Serialize, Deserialize)]
pub struct Violation {
    /// The JSON path of the offending value.
    pub path: String,
    /// What is wrong with it.
    pub message: String,
}

/// The validator's side: the verdict on one request.
pub fn verdict(request: &[u8]) -> Verdict {
    let Ok(request) = serde_json::from_slice::<Value>(request) else {
        return Verdict::BadSchema("the validation request is not JSON".into());
    };
    let text = request.get("text").and_then(Value::as_str).unwrap_or_default();
    let schema = request.get("schema").cloned().unwrap_or_else(|| json!({}));
    match structured::check(text, &schema) {
        Ok(value) => Verdict::Ok(value),
        Err(StructuredError::NotJson(cause)) => Verdict::NotJson(cause),
        Err(StructuredError::BadSchema(cause) | StructuredError::Unavailable(cause)) => Verdict::BadSchema(cause),
        Err(StructuredError::Invalid(errors)) => Verdict::Invalid(
            errors
                .into_iter()
                .map(|(path, message)| Violation { path, message })
                .collect(),
        ),
    }
}
