//! What the runner configuration says about adapters and workflows:
//!
//! ```json
//! { "workflow": {"concurrency": 2, "failFast": true, "chainDir": "<run>/chain"},
//!   "steps": [{ "agent": "reviewer", "task": "Review {previous}", "cwd": "/w",
//!               "stepIndex": 1, "taskIndex": 0,
//!               "adapter": {"id": "pi", "program": "pi", "model": "anthropic/claude-sonnet-4-5",
//!                           "thinking": "low", "systemPrompt": "…",
//!                           "permissions": {"tools": ["read"], "mode": "writer", "nested": true}},
//!               "structured": true, "outputSchema": {"type": "object"},
//!               "modelCheck": {"planned": "anthropic/claude-sonnet-4-5",
//!                              "id": "claude-sonnet-4-5", "aliases": ["sonnet-4.5"]} }] }
//! ```
//!
//! A step with an `adapter` needs no `command`: the shim builds the argv from the adapter and
//! the task (after `{task}`/`{previous}`/`{chain_dir}` substitution).

use super::{ConfigError, StepConfig, invalid};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::path::Path;
use sublaunch_contract::{AdapterId, ResolvedPermissions};

/// The adapters the shim can run (`steps[i].adapter.id`): every [`AdapterId`] but the
/// external jobs, which are only planned.
pub fn runnable_adapters() -> impl Iterator<Item = AdapterId> {
    AdapterId::ALL.into_iter().filter(|a| a.is_runnable())
}

/// `steps[i].adapter`: which adapter runs the step and what it needs.
#[serde_with_macros::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AdapterSpec {
    /// One of [`runnable_adapters`] (written as its id).
    pub id: AdapterId,
    /// The program to start instead of the adapter's default (`claude`, `codex`, …).
    pub program: Option<String>,
    /// `command`: the argv template; `external-cli`: the program and its arguments.
    pub argv: Option<Vec<String>>,
    /// The model handed to the program (without a thinking suffix).
    pub model: Option<String>,
    /// The model provider, for programs that have several (Codex's `model_providers`).
    pub provider: Option<String>,
    /// The thinking level handed to the program.
    pub thinking: Option<String>,
    /// The agent's system prompt (empty: none).
    pub system_prompt: Option<String>,
    /// What the agent may do, as the planner resolved it (rules G1–G4); absent in a
    /// configuration written before the permission contract: the adapter's defaults.
    pub permissions: Option<ResolvedPermissions>,
    /// Environment overrides for the program.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub env: Map<String, Value>,
    /// The agent's conversation to continue (a resumed run): Claude Code's session id,
    /// Codex's thread id or pi's session file.
    pub resume: Option<String>,
    /// What the resumed conversation had used before, as its agent counts it (Codex reports
    /// a thread's running total, so this run's share is the difference).
    pub session_usage: Option<crate::records::usage::Usage>,
}

impl AdapterSpec {
    /// An adapter with nothing but its id.
    pub fn new(id: AdapterId) -> Self {
        Self {
            id,
            program: None,
            argv: None,
            model: None,
            provider: None,
            thinking: None,
            system_prompt: None,
            permissions: None,
            env: Map::new(),
            resume: None,
            session_usage: None,
        }
    }
}

impl AdapterSpec {
    /// The permissions the step runs with: the planned ones, else the adapter's defaults.
    pub fn resolved_permissions(&self) -> ResolvedPermissions {
        self.permissions
            .clone()
            .unwrap_or_else(|| ResolvedPermissions::adapter_default(self.id))
    }
}

/// `steps[i].modelCheck`: the model a pi child must report, so one that silently ran another model fails.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelCheck {
    /// The planned model without its thinking suffix (`anthropic/claude-sonnet-4-5`).
    pub planned: String,
    /// The registry entry's id (`claude-sonnet-4-5`), when the planned model names a provider.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Other names the child may report for it (settings' `modelResponseAliases`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub aliases: Vec<String>,
}

/// `workflow`: how the children of a chain or parallel run are executed.
#[serde_with_macros::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkflowConfig {
    /// Tasks of a parallel group running at once (absent: all of them).
    pub concurrency: Option<u32>,
    /// Stop a group's other tasks as soon as one fails.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub fail_fast: bool,
    /// The shared artifacts directory `{chain_dir}` (default `<asyncDir>/chain`).
    pub chain_dir: Option<String>,
    /// The run's task `{task}` (default: the first step's task).
    pub task: Option<String>,
}

impl StepConfig {
    /// Sets the plan position (`stepIndex`, `taskIndex`).
    pub fn set_position(&mut self, step_index: u32, task_index: Option<u32>) {
        self.step_index = Some(step_index);
        self.task_index = task_index;
    }

    /// Sets the structured-output contract (`structured` + `outputSchema`).
    pub fn set_output_schema(&mut self, schema: Option<Value>) {
        self.structured = schema.is_some();
        self.output_schema = schema;
    }
}

/// R2 checks of the adapter and workflow fields of one step (`steps[i]`); `Ok(true)` when it has an adapter.
pub(super) fn check_step(step: &Map<String, Value>, file: Option<&Path>) -> Result<bool, ConfigError> {
    for key in ["stepIndex", "taskIndex"] {
        if step.get(key).is_some_and(|v| !v.is_null() && !v.is_u64()) {
            return Err(invalid(format_args!("'steps[].{key}' must be a non-negative integer.")));
        }
    }
    if step.get("structured").is_some_and(|v| !v.is_null() && !v.is_boolean()) {
        return Err(invalid("'steps[].structured' must be a boolean."));
    }
    if step
        .get("outputSchema")
        .is_some_and(|v| !v.is_null() && !v.is_object() && !v.is_boolean())
    {
        return Err(invalid("'steps[].outputSchema' must be a JSON Schema object."));
    }
    if let Some(check) = step.get("modelCheck").filter(|v| !v.is_null())
        && serde_json::from_value::<ModelCheck>(check.clone()).is_err()
    {
        return Err(invalid(
            "'steps[].modelCheck' must be {planned, id?, aliases?} of strings.",
        ));
    }
    let Some(adapter) = step.get("adapter").filter(|v| !v.is_null()) else {
        return Ok(false);
    };
    let object = adapter
        .as_object()
        .ok_or_else(|| invalid("'steps[].adapter' must be an object."))?;
    let id = object
        .get("id")
        .and_then(Value::as_str)
        .ok_or_else(|| invalid("'steps[].adapter.id' must be a string."))?;
    let Some(adapter_id) = AdapterId::from_id(id).filter(|a| a.is_runnable()) else {
        return Err(unknown_adapter(id, file));
    };
    if serde_json::from_value::<AdapterSpec>(adapter.clone()).is_err() {
        return Err(invalid("'steps[].adapter' has a field of the wrong type."));
    }
    if object
        .get("env")
        .is_some_and(|e| !e.is_null() && !e.as_object().is_some_and(|m| m.values().all(Value::is_string)))
    {
        return Err(invalid("'steps[].adapter.env' must be an object of strings."));
    }
    let needs_argv = adapter_id.runs_given_command();
    let argv_ok = object
        .get("argv")
        .and_then(Value::as_array)
        .is_some_and(|a| !a.is_empty() && a.iter().all(Value::is_string));
    if needs_argv && !argv_ok {
        return Err(invalid(format_args!(
            "'steps[].adapter.argv' must be a non-empty array of strings for the {id} adapter."
        )));
    }
    Ok(true)
}

/// The error for an adapter id this runner cannot start: never a silent fallback to `shell`
/// (a configuration from another build is refused as such). The id is named when it looks
/// like one (R2 echoes no configuration value that could carry a task or a token), and so is
/// the file it was read from.
fn unknown_adapter(id: &str, file: Option<&Path>) -> ConfigError {
    let looks_like_an_id = !id.is_empty()
        && id.len() <= 64
        && id
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
    let named = looks_like_an_id.then(|| format!("'{id}'"));
    let read_from = file.map(|f| format!("in '{}'", f.display()));
    let context: Vec<String> = [named, read_from].into_iter().flatten().collect();
    let context = if context.is_empty() {
        String::new()
    } else {
        format!(" ({})", context.join(", "))
    };
    let known: Vec<&str> = runnable_adapters().map(AdapterId::id).collect();
    invalid(format_args!(
        "'steps[].adapter.id' names an adapter this runner cannot start{context}; it must be one of {}.",
        known.join(", ")
    ))
}

/// R2 checks of `workflow`.
pub(super) fn check_workflow(root: &Map<String, Value>) -> Result<(), ConfigError> {
    let Some(workflow) = root.get("workflow").filter(|v| !v.is_null()) else {
        return Ok(());
    };
    let object = workflow
        .as_object()
        .ok_or_else(|| invalid("'workflow' must be an object."))?;
    if object
        .get("concurrency")
        .is_some_and(|v| !v.is_null() && v.as_u64().is_none_or(|n| n == 0 || n > u64::from(u32::MAX)))
    {
        return Err(invalid("'workflow.concurrency' must be a positive integer."));
    }
    if object.get("failFast").is_some_and(|v| !v.is_null() && !v.is_boolean()) {
        return Err(invalid("'workflow.failFast' must be a boolean."));
    }
    for key in ["chainDir", "task"] {
        if object.get(key).is_some_and(|v| !v.is_null() && !v.is_string()) {
            return Err(invalid(format_args!("'workflow.{key}' must be a string.")));
        }
    }
    Ok(())
}
