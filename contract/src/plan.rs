//! The launch plan (`launch-plan` in wit/planner.wit). Field order matches the WIT.

use serde::{Deserialize, Serialize};

/// Where a model came from (rule M2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
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
pub enum ModelOrigin {
    /// Named by the step.
    #[cfg_attr(feature = "wasmtime", component(name = "explicit"))]
    Explicit,
    /// Configured on the agent.
    #[cfg_attr(feature = "wasmtime", component(name = "configured"))]
    Configured,
    /// The parent session's model.
    #[cfg_attr(feature = "wasmtime", component(name = "inherited"))]
    Inherited,
}

/// The seven thinking levels, lowest first (rule T1); `Ord` follows that order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
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
pub enum ThinkingLevel {
    /// No thinking.
    #[cfg_attr(feature = "wasmtime", component(name = "off"))]
    Off,
    /// Minimal.
    #[cfg_attr(feature = "wasmtime", component(name = "minimal"))]
    Minimal,
    /// Low.
    #[cfg_attr(feature = "wasmtime", component(name = "low"))]
    Low,
    /// Medium.
    #[cfg_attr(feature = "wasmtime", component(name = "medium"))]
    Medium,
    /// High.
    #[cfg_attr(feature = "wasmtime", component(name = "high"))]
    High,
    /// Extra high.
    #[cfg_attr(feature = "wasmtime", component(name = "xhigh"))]
    Xhigh,
    /// Maximum.
    #[cfg_attr(feature = "wasmtime", component(name = "max"))]
    Max,
}

impl ThinkingLevel {
    /// All levels, lowest first.
    pub const ALL: [Self; 7] = [
        Self::Off,
        Self::Minimal,
        Self::Low,
        Self::Medium,
        Self::High,
        Self::Xhigh,
        Self::Max,
    ];

    /// The level's name as written in model strings and settings.
    pub fn name(self) -> &'static str {
        match self {
            Self::Off => "off",
            Self::Minimal => "minimal",
            Self::Low => "low",
            Self::Medium => "medium",
            Self::High => "high",
            Self::Xhigh => "xhigh",
            Self::Max => "max",
        }
    }

    /// The level with exactly this (case-sensitive) name.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|level| level.name() == name)
    }
}

/// A saved machine a child is placed on (rule P14).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(
    feature = "wasmtime",
    derive(
        wasmtime::component::ComponentType,
        wasmtime::component::Lift,
        wasmtime::component::Lower
    ),
    component(record)
)]
pub struct MachineRef {
    /// Always `herdr`.
    pub provider: String,
    /// Catalog id.
    pub id: String,
    /// Label, when present.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// Safe ssh target.
    pub target: String,
    /// Herdr session, when not `default`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// Remote working directory.
    pub cwd: String,
}

/// One launched child.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
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
pub struct PlanStep {
    /// Agent name.
    pub agent: String,
    /// Request step index.
    #[cfg_attr(feature = "wasmtime", component(name = "step-index"))]
    pub step_index: u32,
    /// Index within the parallel group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "wasmtime", component(name = "task-index"))]
    pub task_index: Option<u32>,
    /// Task text.
    pub task: String,
    /// Final model string.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Model as requested.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "wasmtime", component(name = "requested-model"))]
    pub requested_model: Option<String>,
    /// Where the model came from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "wasmtime", component(name = "model-origin"))]
    pub model_origin: Option<ModelOrigin>,
    /// Effective thinking level.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking: Option<ThinkingLevel>,
    /// Enforced ceiling.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "wasmtime", component(name = "thinking-ceiling"))]
    pub thinking_ceiling: Option<ThinkingLevel>,
    /// Context window of the selected model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "wasmtime", component(name = "context-limit"))]
    pub context_limit: Option<u64>,
    /// Placement.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine: Option<MachineRef>,
    /// Working directory.
    pub cwd: String,
    /// Working directory as requested.
    #[cfg_attr(feature = "wasmtime", component(name = "requested-cwd"))]
    pub requested_cwd: String,
    /// Effective output schema (JSON text).
    #[serde(
        default,
        with = "crate::loose::json_text_opt",
        skip_serializing_if = "Option::is_none"
    )]
    #[cfg_attr(feature = "wasmtime", component(name = "output-schema"))]
    pub output_schema: Option<String>,
    /// Whether structured output is required.
    pub structured: bool,
    /// Whether the child runs in a managed worktree (written only when true).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub worktree: bool,
    /// Files the agent reads before the task: relative ones relative to the child's local
    /// directory (the host resolves and checks them), `~/…` and absolute ones as given; a
    /// placed child's are resolved against its remote directory.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reads: Vec<String>,
    /// The file the final answer is also written to: relative to the local directory (never
    /// above it), or absolute.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<String>,
    /// The name of the child's answer for later steps (`{outputs.NAME}`).
    #[serde(rename = "as", default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "wasmtime", component(name = "output-name"))]
    pub output_name: Option<String>,
    /// Shown in progress and status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// The workflow phase, shown in progress and status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    /// Limits on the tokens and money the child may use; crossing one stops it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "wasmtime", component(name = "usage-budget"))]
    pub usage_budget: Option<crate::UsageBudget>,
    /// The most tool calls the child may make; one more stops it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "wasmtime", component(name = "tool-budget"))]
    pub tool_budget: Option<u32>,
    /// How the child is run again: how many times after the provider's rate limit refused it
    /// before it did any work (rule U6; absent: the runner's default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry: Option<crate::RetryPolicy>,
    /// pi extensions loaded instead of the ones pi discovers (absent: pi discovers its own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extensions: Option<Vec<String>>,
    /// pi extensions the child must load (the host finds each before the launch).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[cfg_attr(feature = "wasmtime", component(name = "required-extensions"))]
    pub required_extensions: Vec<String>,
    /// pi skills loaded instead of the ones pi discovers (absent: pi discovers its own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skills: Option<Vec<String>>,
    /// How long before the run's deadline the child is asked to wrap up.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "wasmtime", component(name = "checkpoint-before-deadline-ms"))]
    pub checkpoint_before_deadline_ms: Option<u64>,
    /// The permissions the child runs with, every layer combined (rules G1–G4); absent when
    /// no layer says anything: the adapter's defaults
    /// ([`crate::ResolvedPermissions::adapter_default`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permissions: Option<crate::ResolvedPermissions>,
    /// The OS sandbox the child runs in (absent: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<crate::SandboxPlan>,
    /// What must be shown before the child's work counts as done, every source combined
    /// (rule G73); absent when nothing is asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub acceptance: Option<crate::AcceptancePlan>,
    /// The cluster the child runs on as a batch job (rule J1); absent when it runs here or on
    /// a saved machine.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster: Option<ClusterRef>,
}

/// A cluster placement (rules J1–J4): the engine, and what the job is submitted with; an
/// option left out is the cluster's own default.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
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
pub struct ClusterRef {
    /// Always `slurm`.
    pub engine: String,
    /// The name the child asked for: `slurm`, `slurm:PARTITION`, or a cluster named in
    /// settings.
    pub name: String,
    /// The partition (`--partition`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partition: Option<String>,
    /// The account charged (`--account`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub account: Option<String>,
    /// The quality of service (`--qos`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub qos: Option<String>,
    /// The job's time limit in minutes (`--time`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "wasmtime", component(name = "time-limit-minutes"))]
    pub time_limit_minutes: Option<u32>,
    /// CPUs for the job (`--cpus-per-task`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpus: Option<u32>,
    /// Memory for the job, in Slurm's notation (`--mem`: `512M`, `8G`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<String>,
    /// The directory every node sees, where the runner travels with the job; absent: the
    /// state root, which must then be shared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "wasmtime", component(name = "shared-dir"))]
    pub shared_dir: Option<String>,
}

/// One child in the workflow graph.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
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
pub struct GraphNode {
    /// Agent name.
    pub agent: String,
    /// Effective output schema (JSON text).
    #[serde(
        default,
        with = "crate::loose::json_text_opt",
        skip_serializing_if = "Option::is_none"
    )]
    #[cfg_attr(feature = "wasmtime", component(name = "output-schema"))]
    pub output_schema: Option<String>,
    /// Whether the child is structured.
    pub structured: bool,
}

/// One request step of the graph: a node, or `{"parallel": [nodes]}` in JSON.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "GraphStepWire", into = "GraphStepWire")]
#[cfg_attr(
    feature = "wasmtime",
    derive(
        wasmtime::component::ComponentType,
        wasmtime::component::Lift,
        wasmtime::component::Lower
    ),
    component(variant)
)]
pub enum GraphStep {
    /// A sequential step.
    #[cfg_attr(feature = "wasmtime", component(name = "sequential"))]
    Sequential(GraphNode),
    /// A parallel group.
    #[cfg_attr(feature = "wasmtime", component(name = "parallel"))]
    Parallel(Vec<GraphNode>),
}

/// JSON shape of [`GraphStep`].
#[derive(Clone, Serialize, Deserialize)]
#[serde(untagged)]
enum GraphStepWire {
    Parallel { parallel: Vec<GraphNode> },
    Sequential(GraphNode),
}

impl From<GraphStepWire> for GraphStep {
    fn from(wire: GraphStepWire) -> Self {
        match wire {
            GraphStepWire::Parallel { parallel } => Self::Parallel(parallel),
            GraphStepWire::Sequential(node) => Self::Sequential(node),
        }
    }
}

impl From<GraphStep> for GraphStepWire {
    fn from(step: GraphStep) -> Self {
        match step {
            GraphStep::Parallel(parallel) => Self::Parallel { parallel },
            GraphStep::Sequential(node) => Self::Sequential(node),
        }
    }
}

/// The workflow graph of a chain or parallel run (rule P-S5).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(
    feature = "wasmtime",
    derive(
        wasmtime::component::ComponentType,
        wasmtime::component::Lift,
        wasmtime::component::Lower
    ),
    component(record)
)]
pub struct Graph {
    /// One entry per request step.
    pub steps: Vec<GraphStep>,
}

/// The result of planning.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
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
pub struct LaunchPlan {
    /// Children in flat execution order.
    pub steps: Vec<PlanStep>,
    /// Workflow graph (chain and parallel modes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub graph: Option<Graph>,
    /// Non-fatal notes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// Limits on the tokens and money the whole run may use.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "wasmtime", component(name = "usage-budget"))]
    pub usage_budget: Option<crate::UsageBudget>,
    /// The reviewer agents of the children whose contract has a review gate (G81), each
    /// planned as any child is, so that the runner can start it without the host.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reviewers: Vec<PlannedReviewer>,
}

/// The reviewer of one child (G81): planned as any child is (adapter, model, thinking,
/// permissions, sandbox), never run as a step of the workflow; the runner starts it once the
/// child's agent ended well and its checks and commands passed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
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
pub struct PlannedReviewer {
    /// The flat index (in `steps`) of the child it reviews.
    #[cfg_attr(feature = "wasmtime", component(name = "review-of"))]
    pub review_of: u32,
    /// The reviewer, planned as a child (its task is empty: the runner writes its prompt).
    pub step: PlanStep,
}

impl LaunchPlan {
    /// A plan of one step (hosts, tests and benchmarks building plans by hand).
    pub fn single(step: PlanStep) -> Self {
        Self {
            steps: vec![step],
            graph: None,
            warnings: Vec::new(),
            usage_budget: None,
            reviewers: Vec::new(),
        }
    }
}

impl PlanStep {
    /// Step 0 of `agent` running `task` in the local directory `cwd`, with no model, thinking
    /// level, placement or schema.
    pub fn local(agent: &str, task: &str, cwd: &str) -> Self {
        Self {
            agent: agent.to_owned(),
            step_index: 0,
            task_index: None,
            task: task.to_owned(),
            model: None,
            requested_model: None,
            model_origin: None,
            thinking: None,
            thinking_ceiling: None,
            context_limit: None,
            machine: None,
            cwd: cwd.to_owned(),
            requested_cwd: cwd.to_owned(),
            output_schema: None,
            structured: false,
            worktree: false,
            reads: Vec::new(),
            output: None,
            output_name: None,
            label: None,
            phase: None,
            usage_budget: None,
            tool_budget: None,
            retry: None,
            extensions: None,
            required_extensions: Vec::new(),
            skills: None,
            checkpoint_before_deadline_ms: None,
            permissions: None,
            acceptance: None,
            cluster: None,
            sandbox: None,
        }
    }
}
