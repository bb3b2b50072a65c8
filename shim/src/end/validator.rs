//! Structured-output validation in a separate process (`sublaunch-validate`, next to the
//! shim). The validator links jsonschema (~2.5 MB of code); keeping it out of the resident
//! shim keeps every shim's memory small (a shim stays resident for its whole run). It is started only when a structured step
//! ends: the request `{"schema", "text"}` on its stdin, the verdict on its stdout.

use crate::end::structured::{self, StructuredError};
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
    let finished = crate::supervise::bounded::run(command, Some(request), DEADLINE).map_err(unavailable)?;
    if !finished.status.success() {
        return Err(unavailable(format!("failed ({})", finished.status)));
    }
    let out = finished.stdout;
    let verdict: Value = serde_json::from_slice(&out).map_err(|e| unavailable(format!("answered garbage: {e}")))?;
    decode(&verdict).unwrap_or_else(|| Err(unavailable("answered an unknown verdict".into())))
}

/// The validator's side: the verdict on one request.
pub fn verdict(request: &[u8]) -> Value {
    let Ok(request) = serde_json::from_slice::<Value>(request) else {
        return json!({"badSchema": "the validation request is not JSON"});
    };
    let text = request.get("text").and_then(Value::as_str).unwrap_or_default();
    let schema = request.get("schema").cloned().unwrap_or_else(|| json!({}));
    match structured::check(text, &schema) {
        Ok(value) => json!({"ok": value}),
        Err(StructuredError::NotJson(cause)) => json!({"notJson": cause}),
        Err(StructuredError::BadSchema(cause) | StructuredError::Unavailable(cause)) => json!({"badSchema": cause}),
        Err(StructuredError::Invalid(errors)) => {
            json!({"invalid": errors.iter().map(|(p, m)| json!({"path": p, "message": m})).collect::<Vec<_>>()})
        }
    }
}

fn decode(verdict: &Value) -> Option<Result<Value, StructuredError>> {
    let object = verdict.as_object()?;
    if let Some(value) = object.get("ok") {
        return Some(Ok(value.clone()));
    }
    if let Some(cause) = object.get("notJson").and_then(Value::as_str) {
        return Some(Err(StructuredError::NotJson(cause.to_owned())));
    }
    if let Some(cause) = object.get("badSchema").and_then(Value::as_str) {
        return Some(Err(StructuredError::BadSchema(cause.to_owned())));
    }
    let errors = object.get("invalid")?.as_array()?;
    let pairs = errors
        .iter()
        .map(|e| {
            Some((
                e.get("path")?.as_str()?.to_owned(),
                e.get("message")?.as_str()?.to_owned(),
            ))
        })
        .collect::<Option<Vec<_>>>()?;
    Some(Err(StructuredError::Invalid(pairs)))
}
