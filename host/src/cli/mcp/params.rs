//! The arguments of the MCP tools, with the JSON schemas and descriptions an agent reads.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

/// `run`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunParams {
    /// The agent to run (the `agents` tool lists them; `shell` runs the task with `sh -c`).
    /// Give `agent` and `task`, or `chain`.
    pub agent: Option<String>,
    /// What the agent should do. With `chain`: the text `{task}` stands for in the steps.
    pub task: Option<String>,
    /// Several steps instead of one agent, as a chain file holds them:
    /// `{"steps": [{"agent": "claude", "task": "review {task}"}, {"agent": "codex", "task": "fix: {previous}"}]}`;
    /// a step `{"parallel": [{"agent": …, "task": …}, …]}` runs its tasks side by side, and
    /// `"mode": "parallel"` makes every step a task of one group.
    pub chain: Option<Value>,
    /// The model (`provider/id`, optionally `:level`; the `models` tool lists them). Only for
    /// agents whose runner sublaunch plans (pi).
    pub model: Option<String>,
    /// Thinking level: off, minimal, low, medium, high, xhigh or max.
    pub thinking: Option<String>,
    /// A saved Herdr machine to run on.
    pub machine: Option<String>,
    /// The working directory (absolute; on the machine when `machine` is given). Default: the
    /// directory the MCP server was started in.
    pub cwd: Option<String>,
    /// Stop the run after this many seconds.
    pub timeout_seconds: Option<f64>,
    /// Stop the run at this time at the latest (RFC 3339, e.g. `2026-12-01T23:00:00Z`).
    pub deadline_at: Option<String>,
    /// Run each step in its own git worktree on a new branch `sublaunch/<run-id>/<step>`,
    /// so that writers never collide with each other or with the user's checkout; the result
    /// says which commits each step made there. Nothing is merged.
    #[serde(default)]
    pub worktree: bool,
    /// The commit or branch the worktrees start at (default: HEAD).
    pub base: Option<String>,
    /// Files the agent must read before the task (relative to the working directory).
    pub reads: Option<Vec<String>>,
    /// A file the agent's final answer is also written to (relative to the working
    /// directory, or absolute).
    pub output: Option<String>,
    /// Stop the run once its agents have used more than this many input and output tokens
    /// in all (pi, Claude Code and Codex report them).
    pub max_tokens: Option<u64>,
    /// Stop the run once its agents have spent more than this many US dollars in all (pi and
    /// Claude Code report their cost).
    pub max_cost_usd: Option<f64>,
    /// Stop the agent when it starts a tool call beyond this many (one agent only; a chain's
    /// steps set `toolBudget`).
    pub max_tool_calls: Option<u32>,
    /// Ask the agents (pi, Claude Code) to wrap up this many seconds before the run's timeout
    /// or deadline.
    pub checkpoint_before_deadline_seconds: Option<f64>,
    /// Wait for the run's end and return its result; otherwise the run id comes back at once
    /// (use `wait` later).
    #[serde(default)]
    pub wait: bool,
}

/// `wait`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WaitParams {
    /// The runs to wait for (ids or unique prefixes of ids).
    pub run_ids: Vec<String>,
    /// `all` (default): until every run has ended; `any`: until the first one ends.
    pub mode: Option<WaitMode>,
    /// Give up after this many seconds and say which runs are still running.
    pub timeout_seconds: Option<f64>,
}

/// When `wait` returns.
#[derive(Clone, Copy, Debug, Deserialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum WaitMode {
    /// When every run has ended.
    All,
    /// When the first run ends.
    Any,
}

/// Tools that name one run.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunIdParams {
    /// The run's id or a unique prefix of it.
    pub run_id: String,
}

/// `logs`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LogsParams {
    /// The run's id or a unique prefix of it.
    pub run_id: String,
    /// How many of the last lines to return (default 200, at most 2000).
    pub tail_lines: Option<usize>,
    /// The output as the agents printed it (their JSON event streams) instead of what they
    /// said and did.
    #[serde(default)]
    pub raw: bool,
}

/// `stop`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StopParams {
    /// The run's id or a unique prefix of it.
    pub run_id: String,
    /// How long to wait for the end to be recorded (default 15).
    pub timeout_seconds: Option<f64>,
}

/// `list`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListParams {
    /// Every run, not only the active ones.
    #[serde(default)]
    pub all: bool,
}

/// `agents`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AgentsParams {
    /// The directory whose project agents count (default: the server's).
    pub cwd: Option<String>,
}

/// `models`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ModelsParams {
    /// Only models whose `provider/id` contains this text (case-insensitive).
    pub query: Option<String>,
    /// At most this many (default 100).
    pub limit: Option<usize>,
}
