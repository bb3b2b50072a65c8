//! The runner configuration (H5, R1, R2): `<root>/async-cfg-<runId>.json`, written by the host
//! and read (then unlinked) by the shim. Every field is typed: the host and the shim ship
//! together, and [`CONFIG_VERSION`] makes a shim refuse a configuration written by another
//! build instead of misreading it.
//!
//! Validation messages never echo configuration values (R2).

use crate::files::layout::validate_run_id;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::fmt;
use std::io::Read;
use std::path::Path;
use std::time::Duration;

pub mod groups;
mod placement;
mod provider;
mod workflow;

pub use placement::Placement;
pub use provider::provider_of;
pub use sublaunch_contract::{
    AcceptanceLevel, AcceptancePlan, AdapterId, CliThinking, EvidenceKind, InputFormat, PermissionMode,
    ResolvedPermissions, Rule, ThinkingLevel, UsageBudget, VerifyCommand,
};
pub use workflow::{AdapterSpec, ModelCheck, WorkflowConfig, runnable_adapters};

/// The argv, environment overrides and cwd of one agent command.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CommandSpec {
    /// Program and arguments (non-empty).
    pub argv: Vec<String>,
    /// Environment overrides on top of the shim's sanitised environment (H10).
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Working directory (default: the step's, then the config's cwd).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
}

/// How many times a step a provider's rate limit refused before it did any work is run again,
/// when its plan does not say (U6).
pub const DEFAULT_RATE_LIMIT_RETRIES: u32 = 2;

/// One step of the run.
#[serde_with_macros::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StepConfig {
    /// Agent name.
    pub agent: Option<String>,
    /// The task text.
    pub task: Option<String>,
    /// The step's cwd.
    pub cwd: Option<String>,
    /// Model, when the adapter has one.
    pub model: Option<String>,
    /// The runner descriptor (`{type:"external-cli", adapter:"shell"}` …), kept raw.
    pub runner: Option<Value>,
    /// The command the shim spawns for this step.
    pub command: Option<CommandSpec>,
    /// Which adapter runs the step and what it needs.
    pub adapter: Option<AdapterSpec>,
    /// The plan's `stepIndex` (the request step this child belongs to).
    pub step_index: Option<u32>,
    /// The plan's `taskIndex` (present for the tasks of a parallel group).
    pub task_index: Option<u32>,
    /// The final output must be JSON that validates against `output_schema`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub structured: bool,
    /// The output schema (a JSON Schema object), when structured.
    pub output_schema: Option<Value>,
    /// The model a pi child must report.
    pub model_check: Option<ModelCheck>,
    /// The managed git worktree the step runs in, when it asked for one.
    pub worktree: Option<StepWorktree>,
    /// Files the agent reads before the task (absolute; for a placed step, on its machine).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reads: Vec<String>,
    /// The file (absolute, on this machine) the step's answer is also written to.
    pub output_file: Option<String>,
    /// The name later steps give this step's answer (`{outputs.NAME}`).
    pub output_name: Option<String>,
    /// A short name shown in progress and status.
    pub label: Option<String>,
    /// The workflow phase the step belongs to.
    pub phase: Option<String>,
    /// Limits on the tokens and money the step may use: crossing one stops it.
    pub usage_budget: Option<UsageBudget>,
    /// The most tool calls the step may make: one more stops it.
    pub tool_budget: Option<u32>,
    /// How many times the step is run again when a provider's rate limit refused it before it
    /// did any work (`retry.rateLimit`; absent: [`DEFAULT_RATE_LIMIT_RETRIES`]).
    pub rate_limit_retries: Option<u32>,
    /// pi extensions (absolute paths) loaded instead of the ones pi discovers.
    pub extensions: Option<Vec<String>>,
    /// pi extensions (absolute paths) loaded in every case (the host found each).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub required_extensions: Vec<String>,
    /// pi skills (absolute paths) loaded instead of the ones pi discovers.
    pub skills: Option<Vec<String>>,
    /// Where the step runs, when the plan placed it on a machine.
    pub placement: Option<Placement>,
    /// The OS sandbox the planner decided for the step (absent: none).
    pub sandbox: Option<crate::records::sandbox::SandboxPlan>,
    /// The acceptance contract the runner keeps once the agent ended (G73).
    pub acceptance: Option<sublaunch_contract::AcceptancePlan>,
    /// The reviewer the contract's review gate names (G81), configured as any step is; the
    /// runner starts it in this step's directory once the step's checks and commands passed,
    /// and never runs it as a step of the workflow.
    pub reviewer: Option<Box<StepConfig>>,
    /// J11: the cluster this step of a run that stays here runs on, through `srun`.
    pub cluster: Option<crate::records::cluster::ClusterStep>,
}

/// The managed git worktree a step runs in (created by the host before the launch): the
/// shim records, when the step ends, the commits made on its branch since `startCommit` and
/// what is left uncommitted.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StepWorktree {
    /// The worktree's directory (its top, not the step's cwd inside it).
    pub path: String,
    /// The branch created for it (`sublaunch/<run-id>/<step>[-<task>]`).
    pub branch: String,
    /// The commit it was created at.
    pub base_commit: String,
    /// The repository it belongs to (its main working tree).
    pub repository: String,
}

impl StepConfig {
    /// The built-in `shell` step: `sh -c <task>` in `cwd` with `env` on top of the runner's
    /// environment (spec/README.md "sublaunch additions").
    pub fn shell(task: &str, cwd: &str, env: BTreeMap<String, String>) -> Self {
        let mut adapter = AdapterSpec::new(AdapterId::Shell);
        adapter.env = env.into_iter().map(|(k, v)| (k, Value::String(v))).collect();
        Self {
            agent: Some("shell".into()),
            task: Some(task.to_owned()),
            cwd: Some(cwd.to_owned()),
            runner: Some(serde_json::json!({"type": "external-cli", "adapter": "shell"})),
            adapter: Some(adapter),
            ..Self::default()
        }
    }
}

/// `revivalLease` (H5).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RevivalLease {
    /// The session file to revive.
    pub session_file: String,
    /// The reviving run.
    pub run_id: String,
    /// The run being revived.
    pub source_run_id: String,
    /// Parent session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_session_id: Option<String>,
}

/// The version of the configuration format this build writes and reads.
pub const CONFIG_VERSION: u32 = 1;

/// The runner configuration (H5).
#[serde_with_macros::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunnerConfig {
    /// [`CONFIG_VERSION`] of the build that wrote it.
    pub config_version: u32,
    /// Run id.
    pub id: String,
    /// Steps (non-empty).
    pub steps: Vec<StepConfig>,
    /// `<results>/<runId>.json`.
    pub result_path: String,
    /// The run's cwd.
    pub cwd: String,
    /// `<run>`.
    pub async_dir: String,
    /// Session id.
    pub session_id: Option<String>,
    /// Completion owner.
    pub completion_owner_id: Option<String>,
    /// Tool call.
    pub tool_call_id: Option<String>,
    /// Revival: the lease to take.
    pub revival_lease: Option<RevivalLease>,
    /// Run timeout in ms.
    pub timeout_ms: Option<u64>,
    /// Absolute deadline, wall epoch ms.
    pub deadline_at: Option<u64>,
    /// A run-level command (used by steps without their own).
    pub command: Option<CommandSpec>,
    /// H4.
    pub runner_process_instance_id: String,
    /// Fresh launches: the proceed token (H4).
    pub launch_barrier_token: Option<String>,
    /// The umask the agents run with: the launching process's, so files a writer agent
    /// creates look like files the user creates (the shim itself keeps 077 for run files).
    pub agent_umask: Option<u32>,
    /// How the children of a chain or parallel run are executed.
    #[serde(default)]
    pub workflow: WorkflowConfig,
    /// The completion hook the shim runs after the end records ([`crate::records::hook`]).
    pub on_end: Option<crate::records::hook::OnEnd>,
    /// The cap of active runs under the root: the shim waits for a slot in the capacity
    /// queue ([`crate::records::capacity`]) before it starts anything. `None`: it never waits.
    pub max_active: Option<u32>,
    /// Limits on the tokens and money the whole run may use: crossing one stops it.
    pub usage_budget: Option<UsageBudget>,
    /// How long before the deadline the agents are asked to wrap up.
    pub checkpoint_before_deadline_ms: Option<u64>,
    /// Whether the agents may load the configuration of the project they run in (their own
    /// project settings, extensions and hooks), as the user's project trust decided.
    #[serde(default, skip_serializing_if = "ProjectConfig::is_agents_own")]
    pub project_config: ProjectConfig,
    /// G44: fail an agent's start when the kernel refuses it a PID namespace of its own,
    /// instead of falling back to process-group supervision (`containmentRequired`; absent =
    /// false). The launch sets it when a sandbox is asked for.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub containment_required: bool,
    /// J6: the cluster the runner hands the run to, as a job of its engine, once committed.
    pub cluster: Option<crate::records::cluster::ClusterSubmission>,
    /// The run an agent of which launched this one (its nearest parent run), recorded with
    /// the run's spend in the usage ledger so that a run tree's spend can be summed.
    pub parent_run_id: Option<String>,
    /// The run at the top of this run's tree (its farthest launching run), when it has one.
    pub tree_root_run_id: Option<String>,
    /// The spend limits the run is held to and what it reserves (U8, U9; absent: none).
    pub spend: Option<crate::records::spend::SpendPlan>,
}

/// Whether agents load their own configuration from the project they run in (pi's `.pi/`
/// settings and extensions, Claude Code's project settings and hooks), as the user's trust
/// in the project decided. A cloned repository's configuration can run programs inside the
/// agent, so an untrusted project's is refused to the agent as it is to sublaunch.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ProjectConfig {
    /// Nobody decided (a library caller that did not say): each agent's own rules apply.
    #[default]
    AgentsOwn,
    /// The user trusts the project and approved its programs: the agents load it.
    Load,
    /// The project is not trusted, or a program in it is not approved: the agents do not
    /// load it.
    Ignore,
}

impl ProjectConfig {
    /// Whether this is [`ProjectConfig::AgentsOwn`] (left out of the file).
    pub fn is_agents_own(&self) -> bool {
        *self == Self::AgentsOwn
    }
}

/// A configuration error; its text is the R2 message (`Invalid runner configuration: …`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ConfigError(pub String);

fn invalid(detail: impl fmt::Display) -> ConfigError {
    ConfigError(format!("Invalid runner configuration: {detail}"))
}

impl RunnerConfig {
    /// Pretty JSON for the host's atomic write (H5).
    pub fn to_bytes(&self) -> Vec<u8> {
        crate::files::doc::to_pretty_bytes(self)
    }

    /// Whether this is a revival launch (K3) rather than a fresh one (K11).
    pub fn is_revival(&self) -> bool {
        self.revival_lease.is_some()
    }

    /// The command of step `index`: its own, else the run-level one.
    pub fn step_command(&self, index: usize) -> Option<&CommandSpec> {
        self.steps
            .get(index)
            .and_then(|s| s.command.as_ref())
            .or(self.command.as_ref())
    }

    /// The cwd of step `index`'s command: the command's, the step's, then the run's.
    pub fn step_cwd(&self, index: usize) -> &str {
        self.step_command(index)
            .and_then(|c| c.cwd.as_deref())
            .or_else(|| self.steps.get(index).and_then(|s| s.cwd.as_deref()))
            .unwrap_or(&self.cwd)
    }

    /// R12: the effective run budget from `timeoutMs` and `deadlineAt` (converted against the
    /// wall clock once, at start; the shim then arms a monotonic timer). `None` = no limit.
    pub fn effective_timeout(&self, now_wall_ms: u64) -> Option<Duration> {
        let by_deadline = self
            .deadline_at
            .map(|at| Duration::from_millis(at.saturating_sub(now_wall_ms)));
        let by_timeout = self.timeout_ms.map(Duration::from_millis);
        match (by_timeout, by_deadline) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}

/// Parses and validates configuration bytes (R2), in the order of the spec's messages.
pub fn parse_runner_config(bytes: &[u8]) -> Result<RunnerConfig, ConfigError> {
    parse_config_from(bytes, None)
}

/// [`parse_runner_config`] of the bytes of `file` (named by the errors that concern the file
/// as a whole, such as an adapter this runner does not have).
fn parse_config_from(bytes: &[u8], file: Option<&Path>) -> Result<RunnerConfig, ConfigError> {
    let value: Value = serde_json::from_slice(bytes).map_err(|e| invalid(format_args!("not valid JSON ({e}).")))?;
    let root = value.as_object().ok_or_else(|| invalid("root must be an object."))?;
    if root.get("configVersion").and_then(Value::as_u64) != Some(u64::from(CONFIG_VERSION)) {
        return Err(invalid(format_args!(
            "'configVersion' must be {CONFIG_VERSION}: the configuration was written by another sublaunch build (install the runner that came with it)."
        )));
    }
    for field in ["id", "resultPath", "cwd", "asyncDir", "runnerProcessInstanceId"] {
        require_string(root, field)?;
    }
    if validate_run_id(root["id"].as_str().unwrap_or_default()).is_err() {
        return Err(invalid("'id' must be a safe run id."));
    }
    let steps = root
        .get("steps")
        .and_then(Value::as_array)
        .filter(|s| !s.is_empty())
        .ok_or_else(|| invalid("'steps' must be a non-empty array."))?;
    for field in ["sessionId", "completionOwnerId", "toolCallId", "launchBarrierToken"] {
        optional_string(root, field)?;
    }
    for field in ["timeoutMs", "deadlineAt"] {
        if root.get(field).is_some_and(|v| !v.is_null() && !v.is_u64()) {
            return Err(invalid(format_args!("'{field}' must be a non-negative integer.")));
        }
    }
    match root.get("revivalLease") {
        None | Some(Value::Null) => {
            if root
                .get("launchBarrierToken")
                .and_then(Value::as_str)
                .is_none_or(str::is_empty)
            {
                return Err(invalid("'launchBarrierToken' must be a non-empty string."));
            }
        }
        Some(Value::Object(lease)) => {
            for field in ["sessionFile", "runId", "sourceRunId"] {
                if lease.get(field).and_then(Value::as_str).is_none_or(str::is_empty) {
                    return Err(invalid(format_args!(
                        "'revivalLease.{field}' must be a non-empty string."
                    )));
                }
            }
            optional_string(lease, "parentSessionId")
                .map_err(|_| invalid("'revivalLease.parentSessionId' must be a string."))?;
        }
        Some(_) => return Err(invalid("'revivalLease' must be an object.")),
    }
    let run_command = root.get("command").filter(|v| !v.is_null());
    if let Some(command) = run_command {
        check_command(command)?;
    }
    workflow::check_workflow(root)?;
    check_on_end(root)?;
    for step in steps {
        let step = step
            .as_object()
            .ok_or_else(|| invalid("'steps' must be a non-empty array."))?;
        for field in ["agent", "task", "cwd", "model"] {
            optional_string(step, field)?;
        }
        let has_adapter = workflow::check_step(step, file)?;
        placement::check_placement(step)?;
        match step.get("command").filter(|v| !v.is_null()) {
            Some(command) => check_command(command)?,
            None if run_command.is_some() || has_adapter => {}
            None => return Err(invalid("'command.argv' must be a non-empty array of strings.")),
        }
    }
    serde_json::from_value(value).map_err(|_| invalid("a field has an invalid type."))
}

fn require_string(object: &Map<String, Value>, field: &str) -> Result<(), ConfigError> {
    match object.get(field).and_then(Value::as_str) {
        Some(s) if !s.is_empty() => Ok(()),
        _ => Err(invalid(format_args!("'{field}' must be a non-empty string."))),
    }
}

fn optional_string(object: &Map<String, Value>, field: &str) -> Result<(), ConfigError> {
    match object.get(field) {
        None | Some(Value::Null | Value::String(_)) => Ok(()),
        Some(_) => Err(invalid(format_args!("'{field}' must be a string."))),
    }
}

/// `onEnd`: absent, or `{command: <non-empty string>, timeoutMs: <positive integer>}`.
fn check_on_end(root: &Map<String, Value>) -> Result<(), ConfigError> {
    let Some(on_end) = root.get("onEnd").filter(|v| !v.is_null()) else {
        return Ok(());
    };
    let command_ok = on_end
        .get("command")
        .and_then(Value::as_str)
        .is_some_and(|c| !c.trim().is_empty());
    let timeout_ok = on_end.get("timeoutMs").and_then(Value::as_u64).is_some_and(|t| t > 0);
    if command_ok && timeout_ok {
        Ok(())
    } else {
        Err(invalid(
            "'onEnd' must be an object with a non-empty 'command' and a positive integer 'timeoutMs'.",
        ))
    }
}

fn check_command(command: &Value) -> Result<(), ConfigError> {
    let argv_ok = command
        .get("argv")
        .and_then(Value::as_array)
        .is_some_and(|argv| !argv.is_empty() && argv.iter().all(Value::is_string));
    if !argv_ok {
        return Err(invalid("'command.argv' must be a non-empty array of strings."));
    }
    match command.get("env") {
        None | Some(Value::Null) => {}
        Some(Value::Object(env)) if env.values().all(Value::is_string) => {}
        Some(_) => return Err(invalid("'command.env' must be an object of strings.")),
    }
    if command.get("cwd").is_some_and(|c| !c.is_null() && !c.is_string()) {
        return Err(invalid("'command.cwd' must be a string."));
    }
    Ok(())
}

/// R1: reads the config from `path` (no symlink followed), then unlinks it (best effort, even
/// when it is invalid: it holds tokens).
pub fn read_runner_config_file(path: &Path) -> Result<RunnerConfig, ConfigError> {
    use std::os::unix::fs::OpenOptionsExt;
    let bytes = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
        .open(path)
        .and_then(|mut f| {
            let mut bytes = Vec::new();
            f.read_to_end(&mut bytes).map(|_| bytes)
        });
    let _ = std::fs::remove_file(path);
    let bytes = bytes.map_err(|e| {
        invalid(format_args!(
            "cannot read '{}': {}",
            path.display(),
            crate::errors::with_path(e, "open", path)
        ))
    })?;
    parse_config_from(&bytes, Some(path))
}

#[cfg(test)]
mod tests;
