//! The output schemas of the tools whose answers are JSON objects: the fields a client can
//! count on, so that it may validate the structured content (the SDKs do). Only what every
//! answer of the tool holds is required; null members are left out of answers, so a field
//! that may be missing is described, never required. `list` has none: without `all` it answers
//! with an array, which structured content cannot carry.

use rmcp::model::JsonObject;
use serde_json::{Value, json};
use std::sync::Arc;

/// An object schema with these `required` members and `properties`.
fn object(required: &[&str], properties: Value) -> Arc<JsonObject> {
    let schema = json!({"type": "object", "properties": properties, "required": required});
    Arc::new(schema.as_object().cloned().unwrap_or_default())
}

fn run_id() -> Value {
    json!({"type": "string", "description": "The run's id."})
}

fn notes() -> Value {
    json!({"type": "array", "items": {"type": "string"}, "description": "Notes on the launch and the server: ignored project files, hooks from the project's settings."})
}

/// `run` and `resume`: the new run's id and directory, or with `wait` its result; or, for a
/// launch that did not go on (an error result), why — in words and in one word (D3).
pub fn launched() -> Arc<JsonObject> {
    let schema = json!({
        "type": "object",
        "properties": {
            "runId": run_id(),
            "runDir": {"type": "string", "description": "The run's directory (without wait)."},
            "state": {"type": "string", "description": "How the run ended (with wait)."},
            "answer": {"description": "The last step's output, or each task of a final parallel group (with wait)."},
            "steps": {"type": "array", "description": "Every step's output, structured value, exit code, error, usage and the permissions it ran with (with wait)."},
            "failureKind": {"type": "string", "description": "Why the run did not complete, in one word (refused: the launch was refused before it began; not-started; or how the run failed)."},
            "error": {"type": "string", "description": "Why the launch or the run failed."},
            "notes": notes(),
        },
        "anyOf": [{"required": ["runId"]}, {"required": ["error", "failureKind"]}],
    });
    Arc::new(schema.as_object().cloned().unwrap_or_default())
}

/// `wait`: the results of the runs that ended, and the ids still running.
pub fn waited() -> Arc<JsonObject> {
    object(
        &["ended", "stillRunning"],
        json!({
            "ended": {"type": "array", "items": {"type": "object"}, "description": "Each ended run's result."},
            "stillRunning": {"type": "array", "items": {"type": "string"}, "description": "The ids of the runs still running."},
            "notes": notes(),
        }),
    )
}

/// `status` and `stop`: a run as `status` shows it.
pub fn run_view() -> Arc<JsonObject> {
    object(
        &["runId"],
        json!({
            "runId": run_id(),
            "runDir": {"type": "string"},
            "state": {"type": "string"},
            "agents": {"type": "array", "items": {"type": "string"}},
            "result": {"type": "object", "description": "Once the run ended: its result."},
            "notes": notes(),
        }),
    )
}

/// `result`: a finished run's result.
pub fn result() -> Arc<JsonObject> {
    object(
        &["runId"],
        json!({
            "runId": run_id(),
            "state": {"type": "string"},
            "answer": {"description": "The last step's output, or each task of a final parallel group."},
            "steps": {"type": "array"},
            "notes": notes(),
        }),
    )
}

/// `logs`: the last lines of a run's output.
pub fn logs() -> Arc<JsonObject> {
    object(
        &["runId", "lines"],
        json!({"runId": run_id(), "lines": {"type": "array", "items": {"type": "string"}}, "notes": notes()}),
    )
}

/// `agents`: the agents of a directory.
pub fn agents() -> Arc<JsonObject> {
    object(
        &["agents"],
        json!({"agents": {"type": "array", "items": {"type": "object"}}, "notes": notes()}),
    )
}

/// `models`: the registry's models that match.
pub fn models() -> Arc<JsonObject> {
    object(
        &["total", "models"],
        json!({"total": {"type": "integer"}, "models": {"type": "array", "items": {"type": "object"}}, "notes": notes()}),
    )
}

/// `usage`: what the runs spent, per group and in all.
pub fn usage() -> Arc<JsonObject> {
    let totals = json!({"type": "object", "description": "steps, inputTokens, outputTokens, cacheReadTokens, cacheWriteTokens, totalTokens, costUsd (absent: unknown) and stepsWithoutCost."});
    object(
        &["by", "groups", "total", "damaged"],
        json!({
            "by": {"type": "string"},
            "groups": {"type": "array", "items": totals, "description": "A group each (its key: the day, agent, run …), in key order."},
            "total": totals,
            "damaged": {"type": "integer", "description": "Ledger lines left out as damaged (a write cut short by a power loss)."},
            "notes": notes(),
        }),
    )
}

/// `integrate`: what landed on the integration branch, and why the rest did not.
pub fn integration() -> Arc<JsonObject> {
    object(
        &["runId", "branch", "onto", "entries"],
        json!({
            "runId": run_id(),
            "repository": {"type": "string"},
            "branch": {"type": "string", "description": "The integration branch, sublaunch/<run>/integration."},
            "onto": {"type": "string", "description": "The commit it is built on."},
            "head": {"type": "string", "description": "Where it is now; absent when nothing landed."},
            "entries": {"type": "array", "items": {"type": "object"}, "description": "A branch each, in step order: step, branch, commit and outcome (landed, already-landed, conflict, gate-failed, not-accepted, nothing-to-land, not-tried) with its details."},
            "notes": notes(),
        }),
    )
}

/// `events`: a batch of the event stream and the cursor to read on from.
pub fn events() -> Arc<JsonObject> {
    object(
        &["events", "dropped"],
        json!({
            "events": {"type": "array", "items": {"type": "object"}, "description": "The events after the cursor asked for, in order; each has cursor, at, runId and type (launched, queued, started, step-started, step-ended, gate, ended, delivered, delivery-failed) and that type's fields."},
            "cursor": {"type": "integer", "description": "The cursor of the last event returned (or the one asked for): pass it as since to read on."},
            "dropped": {"type": "integer", "description": "How many events after the cursor asked for are no longer kept (the log keeps the newest)."},
        }),
    )
}
