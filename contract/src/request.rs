//! The planning request (`plan-request` in wit/planner.wit). Field order matches the WIT.

use crate::loose::{LooseString, LooseStrings, ThinkingSetting};
use serde::{Deserialize, Serialize};

/// The parent session's model (rule M1).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(
    feature = "wasmtime",
    derive(
        wasmtime::component::ComponentType,
        wasmtime::component::Lift,
        wasmtime::component::Lower
    ),
    component(record)
)]
pub struct ParentModel {
    /// Provider; a non-string value arrives as `None` (M1 treats it as absent).
    #[serde(default, deserialize_with = "crate::loose::string_or_none")]
    pub provider: Option<String>,
    /// Model id; a non-string value arrives as `None`.
    #[serde(default, deserialize_with = "crate::loose::string_or_none")]
    pub id: Option<String>,
}

/// One entry of the model registry.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
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
pub struct ModelEntry {
    /// Provider id.
    pub provider: String,
    /// Model id within the provider.
    pub id: String,
    /// Human-readable name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Whether the model reasons (informational).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<bool>,
    /// Advertised thinking levels (informational).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "wasmtime", component(name = "thinking-levels"))]
    pub thinking_levels: Option<Vec<String>>,
    /// Context window in tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "wasmtime", component(name = "context-window"))]
    pub context_window: Option<f64>,
}

/// One model-scope rule.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(
    feature = "wasmtime",
    derive(
        wasmtime::component::ComponentType,
        wasmtime::component::Lift,
        wasmtime::component::Lower
    ),
    component(record)
)]
pub struct ModelScope {
    /// Allowed patterns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow: Option<LooseStrings>,
    /// Whether the rule is enforced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enforce: Option<bool>,
    /// Where the rule came from, for messages.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<String>,
    /// Whether violations by inherited/configured models fail.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strict: Option<bool>,
    /// Agent the rule is limited to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
}

/// How an agent runs.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(
    feature = "wasmtime",
    derive(
        wasmtime::component::ComponentType,
        wasmtime::component::Lift,
        wasmtime::component::Lower
    ),
    component(record)
)]
pub struct Runner {
    /// `native`, `external-cli`, `external-job` or another value.
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "wasmtime", component(name = "type"))]
    pub kind: Option<String>,
    /// Adapter id for `external-cli`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adapter: Option<String>,
}

/// An agent definition as the planner sees it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
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
pub struct Agent {
    /// Unique agent name.
    pub name: String,
    /// Configured model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<LooseString>,
    /// Default thinking value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking: Option<ThinkingSetting>,
    /// Preferred provider.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "wasmtime", component(name = "model-provider"))]
    pub model_provider: Option<String>,
    /// Per-agent thinking ceiling.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "wasmtime", component(name = "max-thinking"))]
    pub max_thinking: Option<LooseString>,
    /// Default machine.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine: Option<LooseString>,
    /// How the agent runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runner: Option<Runner>,
    /// Default output schema (JSON text).
    #[serde(
        default,
        with = "crate::loose::json_text_opt",
        skip_serializing_if = "Option::is_none"
    )]
    #[cfg_attr(feature = "wasmtime", component(name = "output-schema"))]
    pub output_schema: Option<String>,
    /// Files every step of the agent reads first, unless the step names its own.
    #[serde(
        default,
        deserialize_with = "crate::loose::reads",
        skip_serializing_if = "Option::is_none"
    )]
    #[cfg_attr(feature = "wasmtime", component(name = "default-reads"))]
    pub default_reads: Option<Vec<String>>,
    /// Limits on the tokens and money each of its steps may use (`usageBudget`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "wasmtime", component(name = "usage-budget"))]
    pub usage_budget: Option<crate::UsageBudget>,
    /// The most tool calls each of its steps may make (`toolBudget`: N or `{"maxCalls": N}`).
    #[serde(
        default,
        deserialize_with = "crate::budget::tool_budget",
        skip_serializing_if = "Option::is_none"
    )]
    #[cfg_attr(feature = "wasmtime", component(name = "tool-budget"))]
    pub tool_budget: Option<u32>,
    /// How each of its steps is run again (`retry`: `{"rateLimit": N}`, rule U6).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry: Option<crate::RetryPolicy>,
    /// pi extensions to load instead of the ones pi discovers (an empty list: none).
    #[serde(
        default,
        deserialize_with = "crate::loose::names",
        skip_serializing_if = "Option::is_none"
    )]
    pub extensions: Option<Vec<String>>,
    /// pi extensions each of its steps must load: a missing one fails the launch.
    #[serde(
        default,
        deserialize_with = "crate::loose::names",
        skip_serializing_if = "Option::is_none"
    )]
    #[cfg_attr(feature = "wasmtime", component(name = "required-extensions"))]
    pub required_extensions: Option<Vec<String>>,
    /// pi skills to load instead of the ones pi discovers (an empty list: none).
    #[serde(
        default,
        deserialize_with = "crate::loose::names",
        skip_serializing_if = "Option::is_none"
    )]
    pub skills: Option<Vec<String>>,
    /// What it may do (tools, rules, mode, nested runs): one layer of the permission contract.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permissions: Option<crate::Permissions>,
    /// The OS sandbox its steps ask for (`sandbox`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<crate::SandboxSetting>,
    /// What the agent claims to be for acceptance (`acceptanceRole`: `read-only` or
    /// `writer`), used only to infer a contract nobody asked for (rule G74).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "wasmtime", component(name = "acceptance-role"))]
    pub acceptance_role: Option<String>,
}

/// A task of a parallel group. On the wire a task is a step that is not itself a group.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", try_from = "Step")]
#[cfg_attr(
    feature = "wasmtime",
    derive(
        wasmtime::component::ComponentType,
        wasmtime::component::Lift,
        wasmtime::component::Lower
    ),
    component(record)
)]
pub struct Task {
    /// Agent name.
    pub agent: String,
    /// Task text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task: Option<String>,
    /// Model override.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<LooseString>,
    /// Thinking override.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thinking: Option<ThinkingSetting>,
    /// Machine.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub machine: Option<LooseString>,
    /// Working directory.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cwd: Option<LooseString>,
    /// Output-schema override (JSON text).
    #[serde(with = "crate::loose::json_text_opt", skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "wasmtime", component(name = "output-schema"))]
    pub output_schema: Option<String>,
    /// Ignored worktree flag (rule L4).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub worktree: Option<bool>,
    /// Files the agent reads before the task (`false` or `[]`: none, not the agent's).
    #[serde(
        default,
        deserialize_with = "crate::loose::reads",
        skip_serializing_if = "Option::is_none"
    )]
    pub reads: Option<Vec<String>>,
    /// A file the step's final answer is also written to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<String>,
    /// The name later steps use for this step's answer (`{outputs.NAME}`).
    #[serde(rename = "as", default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "wasmtime", component(name = "output-name"))]
    pub output_name: Option<String>,
    /// A short name shown in progress and status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// The phase of the workflow the step belongs to, shown in progress and status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    /// Limits on the tokens and money the task may use (`usageBudget`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "wasmtime", component(name = "usage-budget"))]
    pub usage_budget: Option<crate::UsageBudget>,
    /// The most tool calls the task may make (`toolBudget`: N or `{"maxCalls": N}`).
    #[serde(
        default,
        deserialize_with = "crate::budget::tool_budget",
        skip_serializing_if = "Option::is_none"
    )]
    #[cfg_attr(feature = "wasmtime", component(name = "tool-budget"))]
    pub tool_budget: Option<u32>,
    /// How the task is run again (`retry`: `{"rateLimit": N}`, rule U6).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry: Option<crate::RetryPolicy>,
    /// pi extensions to load instead of the ones pi discovers (an empty list: none).
    #[serde(
        default,
        deserialize_with = "crate::loose::names",
        skip_serializing_if = "Option::is_none"
    )]
    pub extensions: Option<Vec<String>>,
    /// pi extensions the task must load: a missing one fails the launch.
    #[serde(
        default,
        deserialize_with = "crate::loose::names",
        skip_serializing_if = "Option::is_none"
    )]
    #[cfg_attr(feature = "wasmtime", component(name = "required-extensions"))]
    pub required_extensions: Option<Vec<String>>,
    /// pi skills to load instead of the ones pi discovers (an empty list: none).
    #[serde(
        default,
        deserialize_with = "crate::loose::names",
        skip_serializing_if = "Option::is_none"
    )]
    pub skills: Option<Vec<String>>,
    /// What it may do (tools, rules, mode, nested runs): one layer of the permission contract.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permissions: Option<crate::Permissions>,
    /// The OS sandbox the task asks for (`sandbox`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<crate::SandboxSetting>,
    /// The acceptance contract the task asks for (`acceptance`: a level, an object, or `false`),
    /// as JSON text; the planner checks it (rule G70).
    #[serde(
        default,
        with = "crate::loose::json_text_opt",
        skip_serializing_if = "Option::is_none"
    )]
    pub acceptance: Option<String>,
    /// One verification command that is the whole acceptance contract (`gate`: a command, or
    /// `{command, output: "json", schema}` for a typed gate), as JSON text (rule G70).
    #[serde(
        default,
        with = "crate::loose::json_text_opt",
        skip_serializing_if = "Option::is_none"
    )]
    pub gate: Option<String>,
}

/// A request step or parallel group.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
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
pub struct Step {
    /// Agent name (not used by a group).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// Task text (not used by a group).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<String>,
    /// Model override.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<LooseString>,
    /// Thinking override.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking: Option<ThinkingSetting>,
    /// Machine.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine: Option<LooseString>,
    /// Working directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<LooseString>,
    /// Output-schema override (JSON text).
    #[serde(
        default,
        with = "crate::loose::json_text_opt",
        skip_serializing_if = "Option::is_none"
    )]
    #[cfg_attr(feature = "wasmtime", component(name = "output-schema"))]
    pub output_schema: Option<String>,
    /// Worktree flag; only `true` counts.
    #[serde(
        default,
        deserialize_with = "crate::loose::true_or_none",
        skip_serializing_if = "Option::is_none"
    )]
    pub worktree: Option<bool>,
    /// Files the agent reads before the task (for a group: each of its tasks; `false` or `[]`: none, not the agent's).
    #[serde(
        default,
        deserialize_with = "crate::loose::reads",
        skip_serializing_if = "Option::is_none"
    )]
    pub reads: Option<Vec<String>>,
    /// A file the step's final answer is also written to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<String>,
    /// The name later steps use for this step's answer (`{outputs.NAME}`).
    #[serde(rename = "as", default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "wasmtime", component(name = "output-name"))]
    pub output_name: Option<String>,
    /// A short name shown in progress and status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// The phase of the workflow the step (a group: each of its tasks) belongs to, shown in progress and status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    /// Limits on the tokens and money the step (a group: each of its tasks) may use (`usageBudget`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "wasmtime", component(name = "usage-budget"))]
    pub usage_budget: Option<crate::UsageBudget>,
    /// The most tool calls the step (a group: each of its tasks) may make (`toolBudget`: N or `{"maxCalls": N}`).
    #[serde(
        default,
        deserialize_with = "crate::budget::tool_budget",
        skip_serializing_if = "Option::is_none"
    )]
    #[cfg_attr(feature = "wasmtime", component(name = "tool-budget"))]
    pub tool_budget: Option<u32>,
    /// How the step (a group: each of its tasks) is run again (`retry`: `{"rateLimit": N}`, rule U6).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry: Option<crate::RetryPolicy>,
    /// pi extensions to load instead of the ones pi discovers (an empty list: none).
    #[serde(
        default,
        deserialize_with = "crate::loose::names",
        skip_serializing_if = "Option::is_none"
    )]
    pub extensions: Option<Vec<String>>,
    /// pi extensions the step (a group: each of its tasks) must load: a missing one fails the launch.
    #[serde(
        default,
        deserialize_with = "crate::loose::names",
        skip_serializing_if = "Option::is_none"
    )]
    #[cfg_attr(feature = "wasmtime", component(name = "required-extensions"))]
    pub required_extensions: Option<Vec<String>>,
    /// pi skills to load instead of the ones pi discovers (an empty list: none).
    #[serde(
        default,
        deserialize_with = "crate::loose::names",
        skip_serializing_if = "Option::is_none"
    )]
    pub skills: Option<Vec<String>>,
    /// What the step (a group: each of its tasks) may do: one layer of the permission contract.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permissions: Option<crate::Permissions>,
    /// Tasks of a parallel group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parallel: Option<Vec<Task>>,
    /// The OS sandbox the step (a group: each of its tasks) asks for (`sandbox`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<crate::SandboxSetting>,
    /// The acceptance contract the step (a group: each of its tasks) asks for (`acceptance`: a level, an object, or `false`),
    /// as JSON text; the planner checks it (rule G70).
    #[serde(
        default,
        with = "crate::loose::json_text_opt",
        skip_serializing_if = "Option::is_none"
    )]
    pub acceptance: Option<String>,
    /// One verification command that is the whole acceptance contract (`gate`: a command, or
    /// `{command, output: "json", schema}` for a typed gate), as JSON text (rule G70).
    #[serde(
        default,
        with = "crate::loose::json_text_opt",
        skip_serializing_if = "Option::is_none"
    )]
    pub gate: Option<String>,
}

/// How the steps run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[cfg_attr(
    feature = "wasmtime",
    derive(
        wasmtime::component::ComponentType,
        wasmtime::component::Lift,
        wasmtime::component::Lower
    ),
    component(enum)
)]
#[repr(u8)]
pub enum Mode {
    /// Exactly one step.
    #[default]
    #[cfg_attr(feature = "wasmtime", component(name = "single"))]
    Single,
    /// Sequential steps.
    #[cfg_attr(feature = "wasmtime", component(name = "chain"))]
    Chain,
    /// Side by side.
    #[cfg_attr(feature = "wasmtime", component(name = "parallel"))]
    Parallel,
}

/// Run-level launch options.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
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
pub struct LaunchOptions {
    /// Machine for every step that names none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine: Option<LooseString>,
    /// Working directory (remote when `machine` is set).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<LooseString>,
    /// Run-level worktree flag; only `true` counts.
    #[serde(
        default,
        deserialize_with = "crate::loose::true_or_none",
        skip_serializing_if = "Option::is_none"
    )]
    pub worktree: Option<bool>,
    /// Limits on the tokens and money the whole run may use (`usageBudget`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "wasmtime", component(name = "usage-budget"))]
    pub usage_budget: Option<crate::UsageBudget>,
    /// How long before the run's deadline its agents are asked to wrap up.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "wasmtime", component(name = "checkpoint-before-deadline-ms"))]
    pub checkpoint_before_deadline_ms: Option<u64>,
    /// Whether the runner hands a structured step's schema to the agents whose own CLI
    /// enforces it (Claude Code, Codex: [`crate::AdapterId::enforces_schema_natively`]), so
    /// that the planner keeps their schemas instead of refusing them as an external runner's
    /// (P-S4). sublaunch's runner does; absent means it does not (pi-subagents' external CLIs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "wasmtime", component(name = "native-schemas"))]
    pub native_schemas: Option<bool>,
    /// Whether the runner hands a step's own model and thinking level to the coding-agent
    /// CLIs that take them per launch (Claude Code, Codex, Cursor's agent:
    /// [`crate::AdapterId::takes_launch_model`]), so that the planner maps them to what the
    /// CLI names them instead of refusing them as an external runner's options (M19).
    /// sublaunch's runner does; absent means it does not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "wasmtime", component(name = "native-models"))]
    pub native_models: Option<bool>,
    /// What every step of the run may do: the run's layer of the permission contract.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permissions: Option<crate::Permissions>,
    /// The permission defaults of the user's settings and of the project's, each a layer of
    /// its own: a project narrows the user's defaults and never widens them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "wasmtime", component(name = "settings-permissions"))]
    pub settings_permissions: Option<Vec<crate::Permissions>>,
    /// The OS sandbox every step of the run asks for (`run --sandbox`) (`sandbox`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<crate::SandboxSetting>,
    /// The acceptance contract every step of the run asks for (`acceptance`: a level, an object, or `false`),
    /// as JSON text; the planner checks it (rule G70).
    #[serde(
        default,
        with = "crate::loose::json_text_opt",
        skip_serializing_if = "Option::is_none"
    )]
    pub acceptance: Option<String>,
    /// One verification command that is the whole acceptance contract (`gate`: a command, or
    /// `{command, output: "json", schema}` for a typed gate), as JSON text (rule G70).
    #[serde(
        default,
        with = "crate::loose::json_text_opt",
        skip_serializing_if = "Option::is_none"
    )]
    pub gate: Option<String>,
}

/// Herdr machine settings per scope (JSON text of each parsed settings object).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(
    feature = "wasmtime",
    derive(
        wasmtime::component::ComponentType,
        wasmtime::component::Lift,
        wasmtime::component::Lower
    ),
    component(record)
)]
pub struct MachineSettings {
    /// User settings object.
    #[serde(
        default,
        with = "crate::loose::json_text_opt",
        skip_serializing_if = "Option::is_none"
    )]
    pub user: Option<String>,
    /// Project settings object.
    #[serde(
        default,
        with = "crate::loose::json_text_opt",
        skip_serializing_if = "Option::is_none"
    )]
    pub project: Option<String>,
}

/// The whole planning request.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
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
pub struct PlanRequest {
    /// Local runner directory (absolute).
    pub cwd: String,
    /// How the steps run.
    pub mode: Mode,
    /// The steps.
    pub steps: Vec<Step>,
    /// Every agent a step may name.
    #[serde(default)]
    pub agents: Vec<Agent>,
    /// The parent session's model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "wasmtime", component(name = "parent-model"))]
    pub parent_model: Option<ParentModel>,
    /// Preferred provider of the session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "wasmtime", component(name = "current-model-provider"))]
    pub current_model_provider: Option<String>,
    /// The model registry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "wasmtime", component(name = "available-models"))]
    pub available_models: Option<Vec<ModelEntry>>,
    /// Scoped models (not interpreted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "wasmtime", component(name = "scoped-models"))]
    pub scoped_models: Option<Vec<String>>,
    /// Model-scope rules.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "wasmtime", component(name = "model-scopes"))]
    pub model_scopes: Option<Vec<ModelScope>>,
    /// Thinking ceiling from settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "wasmtime", component(name = "thinking-ceiling"))]
    pub thinking_ceiling: Option<LooseString>,
    /// Thinking ceiling inherited from a parent runtime.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "wasmtime", component(name = "inherited-thinking-ceiling"))]
    pub inherited_thinking_ceiling: Option<LooseString>,
    /// Run-level launch options.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub launch: Option<LaunchOptions>,
    /// Raw Herdr catalog text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "wasmtime", component(name = "machine-catalog"))]
    pub machine_catalog: Option<LooseString>,
    /// Herdr machine settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "wasmtime", component(name = "machine-settings"))]
    pub machine_settings: Option<MachineSettings>,
    /// Host platform.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub platform: Option<String>,
    /// The default sandbox of the user's settings and of the project's (`sandbox` in
    /// settings.json), each a source of its own: a project never loosens the user's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "wasmtime", component(name = "settings-sandbox"))]
    pub settings_sandbox: Option<Vec<crate::SandboxSetting>>,
    /// What the planner needs to know about the machine for sandbox paths.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "wasmtime", component(name = "sandbox-host"))]
    pub sandbox_host: Option<crate::SandboxHost>,
    /// The runs this one is launched from inside, each with what it allows (rules G60–G66).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ceilings: Option<Vec<crate::Ceiling>>,
}

impl TryFrom<Step> for Task {
    type Error = String;

    fn try_from(step: Step) -> Result<Self, Self::Error> {
        if step.parallel.is_some() {
            return Err("a task of a parallel group cannot itself be a parallel group".into());
        }
        let agent = step.agent.ok_or("missing field `agent`")?;
        Ok(Self {
            agent,
            task: step.task,
            model: step.model,
            thinking: step.thinking,
            machine: step.machine,
            cwd: step.cwd,
            output_schema: step.output_schema,
            worktree: step.worktree,
            reads: step.reads,
            output: step.output,
            output_name: step.output_name,
            label: step.label,
            phase: step.phase,
            usage_budget: step.usage_budget,
            tool_budget: step.tool_budget,
            retry: step.retry,
            extensions: step.extensions,
            required_extensions: step.required_extensions,
            skills: step.skills,
            permissions: step.permissions,
            sandbox: step.sandbox,
            acceptance: step.acceptance,
            gate: step.gate,
        })
    }
}
