//! The arguments of the MCP tools, with the JSON schemas and descriptions an agent reads.
//!
//! Every number is read as any JSON number and checked here against its range, so that a
//! value out of range (negative, fractional where a count is meant, 1e19, 1e300) comes back as
//! a tool error naming the argument and the range, never as a protocol error or a panic. The
//! schemas still say what is expected.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use std::time::Duration;

/// `run`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
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
    /// Stop the run after this many seconds (at most a year).
    #[serde(alias = "timeout_seconds")]
    pub timeout_seconds: Option<f64>,
    /// Stop the run at this time at the latest (RFC 3339, e.g. `2026-12-01T23:00:00Z`).
    #[serde(alias = "deadline_at")]
    pub deadline_at: Option<String>,
    /// Run each step in its own git worktree on a new branch `sublaunch/<run-id>/<step>`,
    /// so that writers never collide with each other or with the user's checkout; the result
    /// says which commits each step made there. Nothing is merged (the integrate tool does
    /// that, when asked).
    #[serde(default)]
    pub worktree: bool,
    /// The commit or branch the worktrees start at (default: HEAD).
    pub base: Option<String>,
    /// Refuse the run, saying why, rather than have it wait queued for a spend limit, a
    /// provider's rate-limit cooldown or a capacity slot.
    #[serde(default, alias = "no_queue")]
    pub no_queue: bool,
    /// Files the agent must read before the task (relative to the working directory).
    pub reads: Option<Vec<String>>,
    /// A file the agent's final answer is also written to (relative to the working
    /// directory, or absolute).
    pub output: Option<String>,
    /// Stop the run once its agents have used more than this many input and output tokens
    /// in all (pi, Claude Code and Codex report them).
    #[schemars(with = "Option<u64>")]
    #[serde(alias = "max_tokens")]
    pub max_tokens: Option<f64>,
    /// Stop the run once its agents have spent more than this many US dollars in all (pi and
    /// Claude Code report their cost).
    #[serde(alias = "max_cost_usd")]
    pub max_cost_usd: Option<f64>,
    /// Stop the agent when it starts a tool call beyond this many (one agent only; a chain's
    /// steps set `toolBudget`).
    #[schemars(with = "Option<u32>")]
    #[serde(alias = "max_tool_calls")]
    pub max_tool_calls: Option<f64>,
    /// Ask the agents (pi, Claude Code) to wrap up this many seconds before the run's timeout
    /// or deadline.
    #[serde(alias = "checkpoint_before_deadline_seconds")]
    pub checkpoint_before_deadline_seconds: Option<f64>,
    /// Run every agent in an OS sandbox: `none`, `read-only`, `workspace` (write only its
    /// directory or worktree) or `offline` (workspace without network). It can only tighten
    /// what the settings and agents ask for.
    pub sandbox: Option<String>,
    /// The only TCP ports the sandboxed agents may connect to.
    #[serde(alias = "sandbox_ports")]
    pub sandbox_ports: Option<Vec<u16>>,
    /// Apply as much of the sandbox as the kernel offers instead of refusing to launch.
    #[serde(alias = "sandbox_best_effort")]
    pub sandbox_best_effort: Option<bool>,
    /// Wait for the run's end and return its result; otherwise the run id comes back at once
    /// (use `wait` later).
    #[serde(default)]
    pub wait: bool,
    /// The only tools every agent of the run has (each keeps those its agent also has). An
    /// agent whose CLI cannot restrict tools (Codex, Cursor, shell) is refused with it.
    pub tools: Option<Vec<String>>,
    /// Tools no agent of the run has.
    #[serde(alias = "exclude_tools")]
    pub exclude_tools: Option<Vec<String>>,
    /// Tool uses pre-approved for the run: `Tool` or `Tool(pattern)`, e.g. `Bash(git *)`
    /// (Claude Code only).
    pub allow: Option<Vec<String>>,
    /// Tool uses refused for the run: `Tool` or `Tool(pattern)`, e.g. `Bash(rm *)`.
    pub deny: Option<Vec<String>>,
    /// What the agents may change at most: `plan`, `read-only` or `writer` (a read-only agent
    /// stays read-only).
    pub mode: Option<String>,
    /// `false`: the agents may not launch nested runs of sublaunch.
    pub nested: Option<bool>,
    /// How many levels of nested runs the agents may launch below this run (0: none).
    #[serde(alias = "max_depth")]
    pub max_depth: Option<u32>,
    /// The only agents nested runs launched from this run may start.
    #[serde(alias = "nested_agents")]
    pub nested_agents: Option<Vec<String>>,
    /// The only models nested runs may use (`*` matches any text, as in `anthropic/*`).
    #[serde(alias = "nested_models")]
    pub nested_models: Option<Vec<String>>,
    /// A shell command that verifies each step's work once its agent ended (run in the step's
    /// directory); a step whose command fails has failed. Shell code: the server runs it only
    /// with `--allow-shell`.
    pub gate: Option<String>,
    /// The evidence each step's work must show: `attested`, `checked`, `auto`, `false`, or
    /// `{level, criteria, evidence, verify}` (verify commands are shell code, as `gate`).
    pub acceptance: Option<serde_json::Value>,
}

impl RunParams {
    /// The run's layer of the permission contract, or what is wrong with it (naming the
    /// argument and the rule).
    pub fn permissions(&self) -> Result<Option<sublaunch::contract::Permissions>, String> {
        use sublaunch::contract::{PermissionMode, Permissions, Rule};
        for (name, tools) in [("tools", &self.tools), ("excludeTools", &self.exclude_tools)] {
            for tool in tools.iter().flatten() {
                if !Rule::parse(tool).is_ok_and(|r| r.pattern.is_none()) {
                    return Err(format!(
                        "{name}: '{tool}' is not a tool name (one tool per item; patterns go in allow or deny)"
                    ));
                }
            }
        }
        for (name, rules) in [("allow", &self.allow), ("deny", &self.deny)] {
            for rule in rules.iter().flatten() {
                Rule::parse(rule).map_err(|e| format!("{name}: {e}"))?;
            }
        }
        let mode = self
            .mode
            .as_deref()
            .map(|m| m.parse::<PermissionMode>().map_err(|e| format!("mode: {e}")))
            .transpose()?;
        let permissions = Permissions {
            tools: self.tools.clone(),
            exclude_tools: self.exclude_tools.clone(),
            allow: self.allow.clone(),
            deny: self.deny.clone(),
            mode,
            nested: self.nested,
            max_depth: self.max_depth,
            nested_agents: self.nested_agents.clone(),
            nested_models: self.nested_models.clone(),
        };
        Ok((!permissions.is_empty()).then_some(permissions))
    }
}

/// `wait`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WaitParams {
    /// The runs to wait for (ids or unique prefixes of ids).
    #[serde(alias = "run_ids")]
    pub run_ids: Vec<String>,
    /// `all` (default): until every run has ended; `any`: until the first one ends.
    pub mode: Option<WaitMode>,
    /// Give up after this many seconds and say which runs are still running.
    #[serde(alias = "timeout_seconds")]
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
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RunIdParams {
    /// The run's id or a unique prefix of it.
    #[serde(alias = "run_id")]
    pub run_id: String,
}

/// `resume`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ResumeParams {
    /// The finished run to continue: its id or a unique prefix of it.
    #[serde(alias = "run_id")]
    pub run_id: String,
    /// A follow-up for the agent: the new run continues the conversation of the run's last
    /// step (or `step`) with it, through the agent's own session (Claude Code, Codex, pi).
    /// Without it, the run's steps run again as a new run.
    pub task: Option<String>,
    /// With `task`: the step whose conversation to continue (`2`, or `2.1` for task 1 of the
    /// parallel group at step 2; default: the last).
    pub step: Option<String>,
    /// Wait for the new run's end and return its result; otherwise its id comes back at once.
    #[serde(default)]
    pub wait: bool,
}

/// `logs`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LogsParams {
    /// The run's id or a unique prefix of it.
    #[serde(alias = "run_id")]
    pub run_id: String,
    /// How many of the last lines to return (default 200, at most 2000).
    #[schemars(with = "Option<u32>")]
    #[serde(alias = "tail_lines")]
    pub tail_lines: Option<f64>,
    /// The output as the agents printed it (their JSON event streams) instead of what they
    /// said and did.
    #[serde(default)]
    pub raw: bool,
}

/// `stop`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StopParams {
    /// The run's id or a unique prefix of it.
    #[serde(alias = "run_id")]
    pub run_id: String,
    /// How long to wait for the end to be recorded (default 15).
    #[serde(alias = "timeout_seconds")]
    pub timeout_seconds: Option<f64>,
}

/// `integrate`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct IntegrateParams {
    /// The ended run whose branches are integrated: its id or a unique prefix of it.
    #[serde(alias = "run_id")]
    pub run_id: String,
    /// The revision the integration branch starts at when it does not exist yet (default: the
    /// run's base commit).
    pub onto: Option<String>,
    /// A shell command run on the merged tree after each merge instead of the steps' own
    /// verification commands (needs a server started with --allow-shell).
    pub gate: Option<String>,
    /// Run no gate at all.
    #[serde(default, alias = "no_gate")]
    pub no_gate: bool,
    /// How long one gate command may run, in seconds (default 1800).
    #[serde(alias = "gate_timeout_seconds")]
    pub gate_timeout_seconds: Option<f64>,
    /// Skip a branch that conflicts or fails the gate and try the rest (default: stop there).
    #[serde(default, alias = "keep_going")]
    pub keep_going: bool,
}

/// `usage`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UsageParams {
    /// From this local date (2026-12-01) or this long ago (7d, 12h); default: today and the
    /// 29 days before.
    pub since: Option<String>,
    /// Up to this local date (the day itself left out) or this long ago; default: now.
    pub until: Option<String>,
    /// Group by day (default), week, month, agent, model, provider, machine, run or tree.
    pub by: Option<String>,
    /// Only this run (its full id) and the runs launched from inside it.
    pub tree: Option<String>,
}

/// `list`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ListParams {
    /// Every run, newest first, a page at a time, not only the active ones.
    #[serde(default)]
    pub all: bool,
    /// With all: only runs in this state (complete, failed, stopped, running …).
    pub state: Option<String>,
    /// With all: only runs with a step of this agent.
    pub agent: Option<String>,
    /// With all: only runs started since then: an age (`30m`, `12h`, `7d`) or an RFC 3339 time.
    pub since: Option<String>,
    /// With all: only runs whose id, agents, cwd, session or error contain this text.
    pub text: Option<String>,
    /// With all: at most this many runs (default 50).
    #[schemars(with = "Option<u32>")]
    pub limit: Option<f64>,
    /// With all: the page after the one that returned this `nextCursor`.
    pub cursor: Option<String>,
}

impl ListParams {
    /// Whether an argument that only `all` uses was given without it.
    pub fn filters_without_all(&self) -> Option<&'static str> {
        if self.all {
            return None;
        }
        [
            ("state", self.state.is_some()),
            ("agent", self.agent.is_some()),
            ("since", self.since.is_some()),
            ("text", self.text.is_some()),
            ("limit", self.limit.is_some()),
            ("cursor", self.cursor.is_some()),
        ]
        .into_iter()
        .find_map(|(name, given)| given.then_some(name))
    }
}

/// `agents`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AgentsParams {
    /// The directory whose project agents count (default: the server's).
    pub cwd: Option<String>,
}

/// `models`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ModelsParams {
    /// Only models whose `provider/id` contains this text (case-insensitive).
    pub query: Option<String>,
    /// At most this many (default 100).
    #[schemars(with = "Option<u32>")]
    pub limit: Option<f64>,
}

/// A numeric argument out of its range.
#[derive(Debug, thiserror::Error)]
#[error("{name} must be {range}, not {}", shown(*.value))]
pub struct OutOfRange {
    /// The argument.
    name: &'static str,
    /// What was given.
    value: f64,
    /// What it may be, in words.
    range: String,
}

/// The largest budget in dollars a run may be given.
const MAX_DOLLARS: f64 = 1_000_000.0;

/// A number as the caller wrote it: `-1` rather than `-1.0`, `1e19` rather than 20 digits.
fn shown(value: f64) -> String {
    if value.fract() == 0.0 && value.abs() < 1e15 {
        format!("{value:.0}")
    } else {
        format!("{value:?}")
    }
}

/// `name`: a number of seconds from 0 to a year.
pub fn seconds(value: Option<f64>, name: &'static str) -> Result<Option<Duration>, OutOfRange> {
    value
        .map(|value| {
            crate::cli::runs::seconds(value).map_err(|_| OutOfRange {
                name,
                value,
                range: format!(
                    "a number of seconds from 0 to {} (a year)",
                    crate::cli::runs::MAX_SECONDS
                ),
            })
        })
        .transpose()
}

/// `name`: a whole number from `min` to `max`.
pub fn whole(value: Option<f64>, name: &'static str, min: u64, max: u64) -> Result<Option<u64>, OutOfRange> {
    value
        .map(|value| {
            // Both bounds are far below 2^53, so the comparisons are exact.
            #[allow(clippy::cast_precision_loss)]
            let within = value.fract() == 0.0 && value >= min as f64 && value <= max as f64;
            if within {
                #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
                Ok(value as u64)
            } else {
                Err(OutOfRange {
                    name,
                    value,
                    range: format!("a whole number from {min} to {max}"),
                })
            }
        })
        .transpose()
}

/// `name`: a number of dollars above 0, at most a million.
pub fn dollars(value: Option<f64>, name: &'static str) -> Result<Option<f64>, OutOfRange> {
    value
        .map(|value| {
            if value > 0.0 && value <= MAX_DOLLARS {
                Ok(value)
            } else {
                Err(OutOfRange {
                    name,
                    value,
                    range: format!("a number of dollars above 0 and at most {MAX_DOLLARS}"),
                })
            }
        })
        .transpose()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_out_of_range_are_refused_naming_the_argument_and_the_range() {
        for bad in [-1.0, 1e19, 1e300, f64::INFINITY, f64::NAN, 400.0 * 86_400.0] {
            let error = seconds(Some(bad), "timeout_seconds").unwrap_err().to_string();
            assert!(
                error.starts_with("timeout_seconds must be a number of seconds from 0 to 31536000"),
                "{error}"
            );
        }
        assert_eq!(
            seconds(Some(-1.0), "x").unwrap_err().to_string(),
            "x must be a number of seconds from 0 to 31536000 (a year), not -1"
        );
        assert!(seconds(Some(1e19), "x").unwrap_err().to_string().ends_with("not 1e19"));
        assert_eq!(seconds(Some(1.5), "x").unwrap(), Some(Duration::from_millis(1500)));
        assert_eq!(seconds(None, "x").unwrap(), None);

        for bad in [0.0, -1.0, 1.5, 1e19, 1e300, f64::NAN] {
            let error = whole(Some(bad), "max_tokens", 1, 1000).unwrap_err().to_string();
            assert!(
                error.starts_with("max_tokens must be a whole number from 1 to 1000, not "),
                "{error}"
            );
        }
        assert_eq!(whole(Some(1000.0), "x", 1, 1000).unwrap(), Some(1000));

        for bad in [0.0, -1.0, 1e19, 1e300, f64::INFINITY, f64::NAN] {
            let error = dollars(Some(bad), "max_cost_usd").unwrap_err().to_string();
            assert!(
                error.starts_with("max_cost_usd must be a number of dollars above 0"),
                "{error}"
            );
        }
        assert_eq!(dollars(Some(0.5), "x").unwrap(), Some(0.5));
    }
}

/// `events`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EventsParams {
    /// Only the events after this cursor: the `cursor` of the last event you handled (default:
    /// every event the log keeps).
    pub since: Option<u64>,
    /// When there is no newer event yet, wait at most this long for one (default 0, at most
    /// 300).
    pub wait_seconds: Option<f64>,
    /// At most this many events (default and at most 1000).
    pub max: Option<f64>,
}
