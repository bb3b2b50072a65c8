//! Validation of a stored proof (S6): a proof that fails it is projected to
//! `unknown/proof-write-failed` with one of these diagnostics, and S7 renames it aside.

use super::{ProcessTerminal, ProofState};
use serde_json::Value;
use std::path::Path;

/// Validates `value` as the proof of `run_id` / `runner_process_instance_id` stored in `dir`.
/// The error is the S6 diagnostic.
pub fn validate_stored_proof(
    value: &Value,
    dir: &Path,
    run_id: &str,
    runner_process_instance_id: &str,
) -> Result<ProcessTerminal, String> {
    let dir = dir.display();
    let invalid = || format!("Invalid process-terminal proof in '{dir}'.");
    let object = value.as_object().ok_or_else(invalid)?;
    if object.get("version").and_then(Value::as_u64) != Some(1) {
        return Err(invalid());
    }
    let state: ProofState = object
        .get("state")
        .and_then(|s| serde_json::from_value(s.clone()).ok())
        .ok_or_else(invalid)?;
    let stored_run = object.get("runId").and_then(Value::as_str).ok_or_else(invalid)?;
    let stored_runner = object
        .get("runnerProcessInstanceId")
        .and_then(Value::as_str)
        .ok_or_else(invalid)?;
    if stored_run != run_id {
        return Err(format!(
            "Process-terminal proof in '{dir}' belongs to run '{stored_run}', expected '{run_id}'."
        ));
    }
    if stored_runner != runner_process_instance_id {
        return Err(format!(
            "Process-terminal proof in '{dir}' belongs to runner '{stored_runner}', expected '{runner_process_instance_id}'."
        ));
    }
    if state == ProofState::Observed {
        if !object.get("observedAt").is_some_and(Value::is_number) {
            return Err(format!(
                "Observed process-terminal proof in '{dir}' is missing observedAt."
            ));
        }
        let instances = object
            .get("instances")
            .and_then(Value::as_array)
            .ok_or_else(|| format!("Observed process-terminal proof in '{dir}' is missing instances."))?;
        let runners: Vec<&Value> = instances
            .iter()
            .filter(|i| i.get("kind").and_then(Value::as_str) == Some("runner"))
            .collect();
        let matching = runners.len() == 1
            && runners[0].get("processInstanceId").and_then(Value::as_str) == Some(runner_process_instance_id);
        if !matching {
            return Err(format!(
                "Observed process-terminal proof in '{dir}' has no matching runner instance."
            ));
        }
    }
    let proof: ProcessTerminal = serde_json::from_value(value.clone()).map_err(|_| invalid())?;
    if proof.state == ProofState::Unknown && proof.reason.is_none() {
        return Err(invalid());
    }
    Ok(proof)
}
