//! Chain files (`sublaunch run --chain FILE`): sequential steps and parallel groups written
//! as JSON or YAML, checked against the agents and turned into the steps of a PlanRequest.
//!
//! ```yaml
//! mode: chain            # or parallel; default chain
//! concurrency: 2         # tasks of a parallel group running at once (default: all)
//! failFast: true         # a failed task stops the rest of its group
//! cwd: services/api      # run-level working directory (like --cwd)
//! worktree: true         # every step in its own managed git worktree (like --worktree)
//! worktreeBase: main     # the commit the worktrees start at (like --base; default HEAD)
//! deadlineAt: 2026-12-01T23:00:00Z   # the run ends then at the latest (like --deadline)
//! checkpointBeforeDeadlineMs: 60000   # agents are asked to wrap up a minute before it
//! usageBudget: {maxTokens: 2000000, maxCostUsd: 5}   # the whole run (like --max-tokens/--max-cost)
//! steps:
//!   - agent: scout
//!     task: "Map the code that {task} touches."
//!   - parallel:
//!       - {agent: reviewer, task: "Review the lexer. Notes: {previous}"}
//!       - {agent: reviewer, task: "Review the parser. Notes: {previous}"}
//!   - agent: shell
//!     task: "ls {chain_dir}"
//! ```
//!
//! A step is `{agent, task?, model?, thinking?, cwd?, outputSchema?, machine?, worktree?,
//! reads?, output?, as?, label?, phase?, usageBudget?, toolBudget?, retry?, extensions?,
//! requiredExtensions?, skills?, permissions?, sandbox?, acceptance?, gate?}` or a group
//! `{parallel: [steps…], concurrency?, failFast?, worktree?, phase?, usageBudget?, toolBudget?, retry?,
//! extensions?, requiredExtensions?, skills?, permissions?, sandbox?, acceptance?, gate?}` (`permissions: {tools?, excludeTools?, allow?, deny?, mode?,
//! nested?}`; a group's is a layer of its own beside each task's)
//! (`retry: {rateLimit: N}`: how many times, 0 to 20, a step runs again after a provider's rate
//! limit refused it before it did any work)
//! (a group's budgets, retry, extensions and skills are each task's unless it has its own). `{outputs.NAME}` in a later step's task stands for the
//! answer of the step named `as: NAME` (the planner checks the names and references). A step's `worktree` is
//! `true`, `false` or `"previous"` (run in the worktree of the step before it, which must be
//! one step that has one); a group's is `true` or `false` and gives each task its own. A step without `task` gets `{task}` when
//! no step runs before it and `{previous}` otherwise. Task texts keep their placeholders —
//! `{task}` (the run's `--task`), `{previous}` (the output of the step before, a group's
//! outputs in order) and `{chain_dir}` (a directory shared by the steps) are replaced by the
//! runner when the step starts; any other `{name}` is an error here.

use crate::inputs::agents::Catalog;
use crate::inputs::config_files::FileError;
use serde::Deserialize;
use serde_json::Value;
use std::path::{Path, PathBuf};
use sublaunch_contract::{
    LooseString, Mode, Permissions, PlanError, RetryPolicy, Step, Task, ThinkingSetting, UsageBudget,
};

/// The placeholders a chain step's task text may use.
pub const CHAIN_PLACEHOLDERS: [&str; 3] = ["{task}", "{previous}", "{chain_dir}"];

/// One step (or task of a group) of a chain file.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase", rename = "step")]
pub struct ChainTask {
    /// The agent.
    pub agent: String,
    /// The task text (with placeholders); see the module documentation for the default.
    pub task: Option<String>,
    /// Model override (checked by the planner).
    pub model: Option<Value>,
    /// Thinking override: a level or `false` (checked by the planner).
    pub thinking: Option<Value>,
    /// Working directory.
    pub cwd: Option<Value>,
    /// Output schema: a JSON Schema object, or `false` to drop the agent's.
    pub output_schema: Option<Value>,
    /// Machine to run on.
    pub machine: Option<Value>,
    /// `true`, `false` or `"previous"` (see the module documentation); checked when parsed.
    pub worktree: Option<Value>,
    /// Files the agent reads before the task (`false`: none, not the agent's `defaultReads`).
    pub reads: Option<Value>,
    /// A file the step's answer is also written to.
    pub output: Option<String>,
    /// The name later steps give this step's answer: `{outputs.NAME}`.
    #[serde(rename = "as")]
    pub output_name: Option<String>,
    /// A short name shown in progress and status.
    pub label: Option<String>,
    /// The workflow phase it belongs to.
    pub phase: Option<String>,
    /// Limits on the tokens and money the step may use.
    pub usage_budget: Option<UsageBudget>,
    /// The most tool calls the step may make: N or `{maxCalls: N}`.
    #[serde(default, deserialize_with = "sublaunch_contract::budget::tool_budget")]
    pub tool_budget: Option<u32>,
    /// How the step is run again: `{rateLimit: N}`, the times after a rate limit refused it
    /// before it did any work (rule U6; checked by the planner).
    pub retry: Option<RetryPolicy>,
    /// pi extensions loaded instead of the discovered ones (`[]`: none).
    pub extensions: Option<Vec<String>>,
    /// pi extensions the step must load.
    pub required_extensions: Option<Vec<String>>,
    /// pi skills loaded instead of the discovered ones (`[]`: none).
    pub skills: Option<Vec<String>>,
    /// What the step may do: `{tools, excludeTools, allow, deny, mode, nested}` (rule G1).
    pub permissions: Option<Permissions>,
    /// The OS sandbox: a profile name or `{profile, ports, bestEffort}`.
    #[serde(default, deserialize_with = "sublaunch_contract::sandbox::setting")]
    pub sandbox: Option<sublaunch_contract::SandboxSetting>,
    /// The acceptance contract: a level, `{level, criteria, evidence, verify}` or `false`
    /// (checked by the planner, rule G70).
    pub acceptance: Option<Value>,
    /// One verification command that is the whole contract (rule G70).
    pub gate: Option<Value>,
}

/// A parallel group.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase", rename = "parallel group")]
pub struct ChainGroup {
    /// The tasks run side by side.
    pub parallel: Vec<ChainTask>,
    /// How many of them run at once.
    pub concurrency: Option<u32>,
    /// A failed task stops the others.
    pub fail_fast: Option<bool>,
    /// Each task in its own managed git worktree.
    pub worktree: Option<bool>,
    /// The workflow phase of its tasks (a task's own wins).
    pub phase: Option<String>,
    /// Limits on the tokens and money each task (a task's own wins) may use (boxed: a group
    /// is small).
    pub usage_budget: Option<Box<UsageBudget>>,
    /// The most tool calls each task (a task's own wins) may make: N or `{maxCalls: N}`.
    #[serde(default, deserialize_with = "sublaunch_contract::budget::tool_budget")]
    pub tool_budget: Option<u32>,
    /// How each task (a task's own number wins) is run again: `{rateLimit: N}` (rule U6).
    pub retry: Option<RetryPolicy>,
    /// pi extensions loaded instead of the discovered ones (`[]`: none).
    pub extensions: Option<Vec<String>>,
    /// pi extensions each task (a task's own wins) must load.
    pub required_extensions: Option<Vec<String>>,
    /// pi skills loaded instead of the discovered ones (`[]`: none).
    pub skills: Option<Vec<String>>,
    /// What each task may do, a layer of its own beside the task's (rule G1; boxed: a group
    /// is otherwise small).
    pub permissions: Option<Box<Permissions>>,
    /// The OS sandbox of each task: a profile name or `{profile, ports, bestEffort}` (boxed:
    /// a group is small).
    #[serde(default, deserialize_with = "boxed_sandbox")]
    pub sandbox: Option<Box<sublaunch_contract::SandboxSetting>>,
    /// The acceptance contract of each task (a task's own wins; rule G70; boxed: a group is
    /// small).
    pub acceptance: Option<Box<Value>>,
    /// One verification command each task's work must pass (rule G70).
    pub gate: Option<Box<Value>>,
}

/// A step of a chain file.
#[derive(Clone, Debug, PartialEq)]
pub enum ChainStep {
    /// One agent (boxed: a task has many optional fields, a group few).
    Task(Box<ChainTask>),
    /// Tasks run side by side.
    Group(ChainGroup),
}

/// A parsed chain file.
#[derive(Clone, Debug, PartialEq)]
pub struct ChainFile {
    /// The file it was read from.
    pub path: PathBuf,
    /// [`Mode::Chain`] or [`Mode::Parallel`].
    pub mode: Mode,
    /// Run-level concurrency.
    pub concurrency: Option<u32>,
    /// Run-level fail-fast.
    pub fail_fast: Option<bool>,
    /// Run-level working directory.
    pub cwd: Option<String>,
    /// Every step in its own managed git worktree.
    pub worktree: Option<bool>,
    /// The revision the worktrees start at.
    pub worktree_base: Option<String>,
    /// When the run must end (wall ms since the epoch).
    pub deadline_at: Option<u64>,
    /// Limits on the tokens and money the whole run may use.
    pub usage_budget: Option<UsageBudget>,
    /// How long before the deadline the agents are asked to wrap up.
    pub checkpoint_before_deadline_ms: Option<u64>,
    /// The steps.
    pub steps: Vec<ChainStep>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase", rename = "chain file")]
struct RawFile {
    mode: Option<RawMode>,
    concurrency: Option<u32>,
    fail_fast: Option<bool>,
    cwd: Option<String>,
    worktree: Option<bool>,
    worktree_base: Option<String>,
    deadline_at: Option<Value>,
    usage_budget: Option<UsageBudget>,
    checkpoint_before_deadline_ms: Option<u64>,
    steps: Vec<Value>,
}

#[derive(Deserialize)]
#[serde(rename_all = "lowercase")]
enum RawMode {
    Chain,
    Parallel,
}

/// The execution options a chain file asks for, after its groups were merged.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ChainWorkflow {
    /// Tasks of a group running at once.
    pub concurrency: Option<u32>,
    /// A failed task stops the rest of its group.
    pub fail_fast: Option<bool>,
}

impl ChainFile {
    /// The planner's refusal of this file's run, naming the file first (`so.yaml: Agent
    /// 'shell' (step 1, …) does not support: structured output (steps[0].outputSchema). …`):
    /// the planner knows the JSON paths, not the file they are in.
    pub fn locate(&self, mut error: PlanError) -> PlanError {
        error.message = format!("{}: {}", self.path.display(), error.message);
        error
    }
}

/// Reads and parses the chain file at `path`.
pub fn read_chain_file(path: &Path) -> Result<ChainFile, FileError> {
    let text = crate::inputs::config_files::read_text(path)
        .map_err(|problem| FileError::new(path, None, format!("the chain file {}", problem.problem)))?;
    parse_chain_file(path, &text)
}

/// Parses a chain file: JSON when the name ends in `.json` (or, for other names, the text
/// starts with `{`), YAML otherwise.
pub fn parse_chain_file(path: &Path, text: &str) -> Result<ChainFile, FileError> {
    let fail = |at: Option<String>, message: String| FileError::new(path, at, message);
    let extension = path.extension().and_then(|e| e.to_str()).unwrap_or("");
    let json = match extension {
        "json" => true,
        "yaml" | "yml" => false,
        _ => text.trim_start().starts_with('{'),
    };
    if text.trim().is_empty() {
        return Err(fail(None, "the file is empty: a chain file needs `steps:`".to_owned()));
    }
    let value: Value = if json {
        serde_json::from_str(text).map_err(|e| fail(None, format!("broken JSON: {e}")))?
    } else {
        crate::inputs::config_files::check_yaml_depth(text).map_err(|e| fail(None, format!("refused YAML: {e}")))?;
        serde_norway::from_str(text).map_err(|e| fail(None, format!("broken YAML: {e}")))?
    };
    if value.is_null() {
        // YAML of comments alone, or `~`.
        return Err(fail(
            None,
            "the file holds nothing: a chain file needs `steps:`".to_owned(),
        ));
    }
    let raw: RawFile = from_value(value, "", &fail)?;
    let mut steps = Vec::with_capacity(raw.steps.len());
    for (index, step) in raw.steps.into_iter().enumerate() {
        let at = format!("steps[{index}]");
        let group = step.as_object().is_some_and(|o| o.contains_key("parallel"));
        steps.push(if group {
            ChainStep::Group(from_value(step, &at, &fail)?)
        } else {
            ChainStep::Task(Box::new(from_value(step, &at, &fail)?))
        });
    }
    let file = ChainFile {
        path: path.to_owned(),
        mode: match raw.mode {
            None | Some(RawMode::Chain) => Mode::Chain,
            Some(RawMode::Parallel) => Mode::Parallel,
        },
        concurrency: raw.concurrency,
        fail_fast: raw.fail_fast,
        cwd: raw.cwd,
        worktree: raw.worktree,
        worktree_base: raw.worktree_base,
        deadline_at: match &raw.deadline_at {
            None | Some(Value::Null) => None,
            Some(Value::String(text)) => Some(
                crate::inputs::deadline::parse_deadline(text)
                    .map_err(|e| fail(Some("deadlineAt".into()), e.to_string()))?,
            ),
            Some(Value::Number(n)) => Some(n.as_u64().ok_or_else(|| {
                fail(
                    Some("deadlineAt".into()),
                    format!("{n} is not a time in milliseconds since 1970"),
                )
            })?),
            Some(other) => {
                return Err(fail(
                    Some("deadlineAt".into()),
                    format!("expected a time such as 2026-12-01T23:00:00Z, got {other}"),
                ));
            }
        },
        usage_budget: raw.usage_budget,
        checkpoint_before_deadline_ms: raw.checkpoint_before_deadline_ms,
        steps,
    };
    file.check_shape()?;
    Ok(file)
}

/// Deserializes `value` into `T`, naming the JSON path (below `prefix`) of a mismatch.
fn from_value<T: serde::de::DeserializeOwned>(
    value: Value,
    prefix: &str,
    fail: &impl Fn(Option<String>, String) -> FileError,
) -> Result<T, FileError> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let inner = e.path().to_string();
        let at = match (prefix.is_empty(), inner == ".") {
            (true, true) => None,
            (true, false) => Some(inner),
            (false, true) => Some(prefix.to_owned()),
            (false, false) if inner.starts_with('[') => Some(format!("{prefix}{inner}")),
            (false, false) => Some(format!("{prefix}.{inner}")),
        };
        fail(at, e.into_inner().to_string())
    })
}

impl ChainFile {
    fn error(&self, at: impl Into<String>, message: impl Into<String>) -> FileError {
        FileError::new(&self.path, Some(at.into()), message)
    }

    /// Checks what needs no agents: steps present, groups not empty, concurrency ≥ 1.
    fn check_shape(&self) -> Result<(), FileError> {
        if self.steps.is_empty() {
            return Err(self.error("steps", "a chain file needs at least one step"));
        }
        if self.concurrency == Some(0) {
            return Err(self.error("concurrency", "must be at least 1"));
        }
        self.check_worktrees()?;
        self.check_reads()?;
        // No program can be given a NUL byte (argv and environment are C strings): refused
        // here, naming where, rather than when the step starts.
        for (at, task, _) in self.tasks() {
            if task.task.as_deref().is_some_and(|text| text.contains('\0')) {
                return Err(self.error(
                    format!("{at}.task"),
                    "contains a NUL byte, which no program can be given",
                ));
            }
        }
        for (index, step) in self.steps.iter().enumerate() {
            let ChainStep::Group(group) = step else { continue };
            if group.parallel.is_empty() {
                return Err(self.error(
                    format!("steps[{index}].parallel"),
                    "a parallel group needs at least one task",
                ));
            }
            if group.concurrency == Some(0) {
                return Err(self.error(format!("steps[{index}].concurrency"), "must be at least 1"));
            }
        }
        Ok(())
    }

    /// A step's `worktree` is a flag or `"previous"` after a step of its own, in a chain; a
    /// group's tasks take their group's.
    fn check_reads(&self) -> Result<(), FileError> {
        for (at, task, _) in self.tasks() {
            let Some(value) = &task.reads else { continue };
            let ok = match value {
                Value::Bool(false) => true,
                Value::Array(items) => items.iter().all(Value::is_string),
                _ => false,
            };
            if !ok {
                return Err(self.error(
                    format!("{at}.reads"),
                    format!("expected a list of file paths or false, got {value}"),
                ));
            }
        }
        Ok(())
    }

    fn check_worktrees(&self) -> Result<(), FileError> {
        for (index, step) in self.steps.iter().enumerate() {
            let at = format!("steps[{index}].worktree");
            match step {
                ChainStep::Task(task) => match &task.worktree {
                    None | Some(Value::Bool(_)) if self.mode == Mode::Chain => {}
                    None => {}
                    Some(Value::Bool(_)) => {
                        return Err(self.error(
                            at,
                            "in parallel mode every step is a task of one group: set `worktree: true` at the top of the file to give each its own worktree",
                        ));
                    }
                    Some(Value::String(s)) if s == "previous" => {
                        if self.mode != Mode::Chain || index == 0 {
                            return Err(self.error(at, "\"previous\" needs a step before it in a chain"));
                        }
                        if matches!(self.steps[index - 1], ChainStep::Group(_)) {
                            return Err(self.error(
                                at,
                                format!(
                                    "\"previous\" shares the worktree of the step before, but steps[{}] is a parallel group whose tasks each have their own",
                                    index - 1
                                ),
                            ));
                        }
                    }
                    Some(other) => {
                        return Err(self.error(at, format!("expected true, false or \"previous\", got {other}")));
                    }
                },
                ChainStep::Group(group) => {
                    for (t, task) in group.parallel.iter().enumerate() {
                        if task.worktree.is_some() {
                            return Err(self.error(
                                format!("steps[{index}].parallel[{t}].worktree"),
                                "a task of a parallel group runs in its group's worktree setting: set `worktree` on the group",
                            ));
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// The indexes of the steps that run in the worktree of the step before them.
    pub fn shares_previous(&self) -> std::collections::BTreeSet<u32> {
        self.steps
            .iter()
            .enumerate()
            .filter(|(_, step)| {
                matches!(step, ChainStep::Task(task) if task.worktree.as_ref().and_then(Value::as_str) == Some("previous"))
            })
            .filter_map(|(index, _)| u32::try_from(index).ok())
            .collect()
    }

    /// Every task with its JSON path and whether a step ran before it (so `{previous}` has
    /// something to refer to), in order.
    fn tasks(&self) -> Vec<(String, &ChainTask, bool)> {
        let chain = self.mode == Mode::Chain;
        let mut out = Vec::new();
        for (index, step) in self.steps.iter().enumerate() {
            let after_previous = chain && index > 0;
            match step {
                ChainStep::Task(task) => out.push((format!("steps[{index}]"), &**task, after_previous)),
                ChainStep::Group(group) => out.extend(
                    group
                        .parallel
                        .iter()
                        .enumerate()
                        .map(|(t, task)| (format!("steps[{index}].parallel[{t}]"), task, after_previous)),
                ),
            }
        }
        out
    }

    /// Checks the file against the agents and the run's task: every agent is known and
    /// loadable, every task text uses only [`CHAIN_PLACEHOLDERS`], `{previous}` only where a
    /// step ran before, `{task}` only when the run has a task.
    pub fn check(&self, catalog: &Catalog, run_task: Option<&str>) -> Result<(), FileError> {
        for (at, task, after_previous) in self.tasks() {
            catalog
                .require(&task.agent)
                .map_err(|e| self.error(format!("{at}.agent"), e.to_string()))?;
            let text = effective_task(task, after_previous);
            for placeholder in placeholders(text) {
                let at = format!("{at}.task");
                if !CHAIN_PLACEHOLDERS.contains(&placeholder) {
                    return Err(self.error(
                        at,
                        format!(
                            "unknown placeholder {placeholder}; known: {}",
                            CHAIN_PLACEHOLDERS.join(", ")
                        ),
                    ));
                }
                if placeholder == "{previous}" && !after_previous {
                    return Err(self.error(at, "{previous} is used where no step ran before"));
                }
                if placeholder == "{task}" && run_task.is_none() {
                    let why = if task.task.is_none() {
                        "the step has no task (it defaults to {task}) and the run has no --task"
                    } else {
                        "{task} is used but the run has no --task"
                    };
                    return Err(self.error(at, why));
                }
            }
        }
        Ok(())
    }

    /// The PlanRequest steps: one per step, a group as a step with `parallel`; task texts
    /// verbatim (defaults filled in).
    pub fn request_steps(&self) -> Vec<Step> {
        let chain = self.mode == Mode::Chain;
        self.steps
            .iter()
            .enumerate()
            .map(|(index, step)| {
                let after_previous = chain && index > 0;
                match step {
                    ChainStep::Task(task) => step_of(task, after_previous),
                    ChainStep::Group(group) => Step {
                        parallel: Some(group.parallel.iter().map(|t| task_of(t, after_previous)).collect()),
                        worktree: group.worktree,
                        phase: group.phase.clone(),
                        usage_budget: group.usage_budget.as_deref().cloned(),
                        tool_budget: group.tool_budget,
                        retry: group.retry.clone(),
                        extensions: group.extensions.clone(),
                        required_extensions: group.required_extensions.clone(),
                        skills: group.skills.clone(),
                        permissions: group.permissions.as_deref().cloned(),
                        sandbox: group.sandbox.as_deref().cloned(),
                        acceptance: group.acceptance.as_deref().map(Value::to_string),
                        gate: group.gate.as_deref().map(Value::to_string),
                        ..Step::default()
                    },
                }
            })
            .collect()
    }

    /// The run's concurrency and fail-fast: the file's top-level values, else the values its
    /// groups set (the launcher applies one value to every group, so groups that set
    /// different values are an error unless a top-level value overrides them).
    pub fn workflow(&self) -> Result<ChainWorkflow, FileError> {
        Ok(ChainWorkflow {
            concurrency: match self.concurrency {
                Some(value) => Some(value),
                None => self.group_value("concurrency", |g| g.concurrency)?,
            },
            fail_fast: match self.fail_fast {
                Some(value) => Some(value),
                None => self.group_value("failFast", |g| g.fail_fast)?,
            },
        })
    }

    fn group_value<T: PartialEq + Copy + std::fmt::Display>(
        &self,
        key: &str,
        get: impl Fn(&ChainGroup) -> Option<T>,
    ) -> Result<Option<T>, FileError> {
        let mut found: Option<(usize, T)> = None;
        for (index, step) in self.steps.iter().enumerate() {
            let ChainStep::Group(group) = step else { continue };
            let Some(value) = get(group) else { continue };
            match found {
                Some((first, seen)) if seen != value => {
                    return Err(self.error(
                        format!("steps[{index}].{key}"),
                        format!(
                            "{value} differs from steps[{first}].{key} = {seen}; one value applies to every group of a run: set `{key}` at the top of the file (or on the command line) instead"
                        ),
                    ));
                }
                Some(_) => {}
                None => found = Some((index, value)),
            }
        }
        Ok(found.map(|(_, value)| value))
    }
}

/// The task text of `task`, or its default.
fn effective_task(task: &ChainTask, after_previous: bool) -> &str {
    match &task.task {
        Some(text) => text,
        None if after_previous => "{previous}",
        None => "{task}",
    }
}

fn step_of(chain_task: &ChainTask, after_previous: bool) -> Step {
    let task = task_of(chain_task, after_previous);
    Step {
        // `"previous"` is a worktree too; which one is the launch's business.
        worktree: chain_task
            .worktree
            .as_ref()
            .map(|w| w.as_bool().unwrap_or(w.as_str() == Some("previous"))),
        agent: Some(task.agent),
        task: task.task,
        model: task.model,
        thinking: task.thinking,
        machine: task.machine,
        cwd: task.cwd,
        output_schema: task.output_schema,
        reads: task.reads,
        output: task.output,
        output_name: task.output_name,
        label: task.label,
        phase: task.phase,
        usage_budget: task.usage_budget,
        tool_budget: task.tool_budget,
        retry: task.retry,
        extensions: task.extensions,
        required_extensions: task.required_extensions,
        skills: task.skills,
        permissions: task.permissions,
        sandbox: task.sandbox,
        acceptance: task.acceptance,
        gate: task.gate,
        ..Step::default()
    }
}

fn task_of(task: &ChainTask, after_previous: bool) -> Task {
    Task {
        agent: task.agent.clone(),
        task: Some(effective_task(task, after_previous).to_owned()),
        model: task.model.as_ref().map(loose),
        thinking: task.thinking.as_ref().map(thinking),
        machine: task.machine.as_ref().map(loose),
        cwd: task.cwd.as_ref().map(loose),
        output_schema: task.output_schema.as_ref().map(Value::to_string),
        worktree: None,
        reads: task.reads.as_ref().map(reads),
        output: task.output.clone(),
        output_name: task.output_name.clone(),
        label: task.label.clone(),
        phase: task.phase.clone(),
        usage_budget: task.usage_budget.clone(),
        tool_budget: task.tool_budget,
        retry: task.retry.clone(),
        extensions: task.extensions.clone(),
        required_extensions: task.required_extensions.clone(),
        skills: task.skills.clone(),
        permissions: task.permissions.clone(),
        sandbox: task.sandbox.clone(),
        acceptance: task.acceptance.as_ref().map(Value::to_string),
        gate: task.gate.as_ref().map(Value::to_string),
    }
}

/// A group's `sandbox`, boxed.
fn boxed_sandbox<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<Box<sublaunch_contract::SandboxSetting>>, D::Error> {
    sublaunch_contract::sandbox::setting(deserializer).map(|s| s.map(Box::new))
}

/// `reads`: a list of paths, `false` for none; anything else was refused when parsed.
fn reads(value: &Value) -> Vec<String> {
    match value {
        Value::Array(items) => items.iter().filter_map(Value::as_str).map(str::to_owned).collect(),
        _ => Vec::new(),
    }
}

fn loose(value: &Value) -> LooseString {
    match value {
        Value::String(text) => LooseString::Text(text.clone()),
        other => LooseString::NotText(other.to_string()),
    }
}

fn thinking(value: &Value) -> ThinkingSetting {
    match value {
        Value::String(text) => ThinkingSetting::Text(text.clone()),
        Value::Bool(false) => ThinkingSetting::Disabled,
        other => ThinkingSetting::Invalid(other.to_string()),
    }
}

/// The `{name}` placeholders of `text`: a name of letters, digits and `_` between braces,
/// not preceded by `$` (so shell `${HOME}`, JSON and brace expansions are left alone).
pub fn placeholders(text: &str) -> Vec<&str> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut start = 0;
    while let Some(open) = text[start..].find('{').map(|i| start + i) {
        start = open + 1;
        if open > 0 && bytes[open - 1] == b'$' {
            continue;
        }
        let Some(close) = text[open + 1..].find('}').map(|i| open + 1 + i) else {
            break;
        };
        let name = &text[open + 1..close];
        let word = name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if word {
            out.push(&text[open..=close]);
            start = close + 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(name: &str, text: &str) -> Result<ChainFile, FileError> {
        parse_chain_file(Path::new(name), text)
    }

    const YAML: &str = "concurrency: 2\nsteps:\n  - agent: shell\n    task: echo {task}\n  - parallel:\n      - agent: shell\n        task: echo a {previous}\n      - agent: shell\n        thinking: false\n        outputSchema: {type: object}\n";

    #[test]
    fn yaml_and_json_files_parse_to_the_same_steps() {
        let yaml = parse("c.yaml", YAML).unwrap();
        let json = parse(
            "c.json",
            r#"{"concurrency": 2, "steps": [{"agent": "shell", "task": "echo {task}"},
               {"parallel": [{"agent": "shell", "task": "echo a {previous}"},
                             {"agent": "shell", "thinking": false, "outputSchema": {"type": "object"}}]}]}"#,
        )
        .unwrap();
        assert_eq!(yaml.steps, json.steps);
        assert_eq!(yaml.mode, Mode::Chain);
        let steps = yaml.request_steps();
        assert_eq!(steps[0].task.as_deref(), Some("echo {task}"));
        let group = steps[1].parallel.as_ref().unwrap();
        assert_eq!(group[1].task.as_deref(), Some("{previous}"), "the default after a step");
        assert_eq!(group[1].thinking, Some(ThinkingSetting::Disabled));
        assert_eq!(group[1].output_schema.as_deref(), Some(r#"{"type":"object"}"#));
        assert_eq!(yaml.workflow().unwrap().concurrency, Some(2));
        // Without an extension the content decides.
        assert_eq!(parse("chain", YAML).unwrap().steps, yaml.steps);
    }

    /// G1: a step's, a group's and a task's permissions reach the request as layers of their
    /// own; a field the contract does not have is an error at its path.
    #[test]
    fn permissions_of_steps_groups_and_tasks_reach_the_request() {
        let chain = parse(
            "c.yaml",
            "steps:\n  - {agent: shell, task: x, permissions: {mode: plan}}\n  - parallel:\n      - {agent: shell, task: y, permissions: {deny: [\"Bash(rm *)\"]}}\n    permissions: {nested: false}\n",
        )
        .unwrap();
        let steps = chain.request_steps();
        assert_eq!(
            steps[0].permissions.as_ref().unwrap().mode,
            Some(sublaunch_contract::PermissionMode::Plan)
        );
        assert_eq!(steps[1].permissions.as_ref().unwrap().nested, Some(false));
        let task = &steps[1].parallel.as_ref().unwrap()[0];
        assert_eq!(
            task.permissions.as_ref().unwrap().deny.as_deref(),
            Some(&["Bash(rm *)".to_owned()][..])
        );
        let error = parse(
            "c.json",
            r#"{"steps": [{"agent": "a", "permissions": {"tool": ["Read"]}}]}"#,
        )
        .unwrap_err()
        .to_string();
        assert!(
            error.contains("steps[0].permissions") && error.contains("unknown field `tool`"),
            "{error}"
        );
    }

    /// U6: `retry: {rateLimit: N}` on a step, a group and a task reaches the request (the
    /// planner checks the number and gives a group's to its tasks); a key other than
    /// `rateLimit` is an error at its path.
    #[test]
    fn u6_retry_of_steps_groups_and_tasks_reaches_the_request() {
        let chain = parse(
            "c.yaml",
            "steps:\n  - {agent: shell, task: x, retry: {rateLimit: 0}}\n  - parallel:\n      - {agent: shell, task: y}\n      - {agent: shell, task: z, retry: {rateLimit: 4}}\n    retry: {rateLimit: 3}\n",
        )
        .unwrap();
        let steps = chain.request_steps();
        let rate_limit = |retry: &Option<RetryPolicy>| retry.as_ref().and_then(|r| r.rate_limit);
        assert_eq!(rate_limit(&steps[0].retry), Some(0));
        assert_eq!(rate_limit(&steps[1].retry), Some(3));
        let tasks = steps[1].parallel.as_ref().unwrap();
        assert_eq!(
            (rate_limit(&tasks[0].retry), rate_limit(&tasks[1].retry)),
            (None, Some(4))
        );
        for (text, at) in [
            (
                "steps:\n  - {agent: shell, task: x, retry: {rateLimits: 1}}\n",
                "steps[0].retry",
            ),
            (
                "steps:\n  - parallel: [{agent: shell, task: x}]\n    retry: {rateLimits: 1}\n",
                "steps[0].retry",
            ),
            (
                "steps:\n  - parallel: [{agent: shell, task: x, retry: {rateLimits: 1}}]\n",
                "steps[0].parallel[0].retry",
            ),
        ] {
            let error = parse("c.yaml", text).unwrap_err().to_string();
            assert!(
                error.contains(&format!("c.yaml: {at}"))
                    && error.contains("unknown field `rateLimits`, expected `rateLimit`"),
                "{text}: {error}"
            );
        }
        let error = parse("c.yaml", "steps: [{agent: shell, task: x, retry: {rateLimit: -1}}]\n")
            .unwrap_err()
            .to_string();
        assert!(error.contains("steps[0].retry.rateLimit"), "{error}");
    }

    #[test]
    fn errors_name_the_file_and_the_json_path() {
        let cases = [
            (
                "c.json",
                r#"{"steps": [{"agent": "a", "task": 1}]}"#,
                "c.json: steps[0].task: invalid type",
            ),
            (
                "c.json",
                r#"{"steps": [{"parallel": [{"task": "x"}]}]}"#,
                "c.json: steps[0].parallel[0]: missing field `agent`",
            ),
            (
                "c.yaml",
                "steps:\n  - agent: a\n    tsak: x\n",
                "c.yaml: steps[0].tsak: unknown field `tsak`",
            ),
            (
                "c.yaml",
                "mode: serial\nsteps: []\n",
                "c.yaml: mode: unknown variant `serial`",
            ),
            (
                "c.yaml",
                "steps: []\n",
                "c.yaml: steps: a chain file needs at least one step",
            ),
            (
                "c.yaml",
                "steps:\n  - parallel: []\n",
                "steps[0].parallel: a parallel group needs",
            ),
            (
                "c.yaml",
                "concurrency: 0\nsteps: [{agent: a}]\n",
                "c.yaml: concurrency: must be at least 1",
            ),
            ("c.yaml", "steps: [\n", "c.yaml: broken YAML"),
            ("c.json", "{\"steps\": ", "c.json: broken JSON: EOF while parsing"),
            ("c.json", "{}", "c.json: missing field `steps`"),
        ];
        for (name, text, expected) in cases {
            let error = parse(name, text).unwrap_err().to_string();
            assert!(error.contains(expected), "{text}: {error}");
        }
    }

    #[test]
    fn placeholders_agents_and_tasks_are_checked() {
        let catalog = crate::inputs::agents::discover_in(&[]);
        let check = |text: &str, run_task: Option<&str>| {
            parse("c.yaml", text)
                .unwrap()
                .check(&catalog, run_task)
                .map_err(|e| e.to_string())
        };
        assert!(check(YAML, Some("t")).is_ok());
        let error = check(YAML, None).unwrap_err();
        assert!(
            error.contains("steps[0].task: {task} is used but the run has no --task"),
            "{error}"
        );
        let error = check("steps: [{agent: shell}]", None).unwrap_err();
        assert!(error.contains("steps[0].task: the step has no task"), "{error}");
        let error = check("steps: [{agent: shell, task: 'a'}, {agent: ghost}]", None).unwrap_err();
        assert!(
            error.contains("steps[1].agent: unknown agent 'ghost'; known agents: shell"),
            "{error}"
        );
        let error = check("steps: [{agent: shell, task: 'echo {prev}'}]", None).unwrap_err();
        assert!(
            error.contains("steps[0].task: unknown placeholder {prev}; known: {task}"),
            "{error}"
        );
        let error = check("steps: [{agent: shell, task: 'x {previous}'}]", None).unwrap_err();
        assert!(error.contains("no step ran before"), "{error}");
        let error = check("mode: parallel\nsteps: [{agent: shell, task: '{previous}'}]", None).unwrap_err();
        assert!(error.contains("no step ran before"), "{error}");
        assert!(
            check(
                "steps: [{agent: shell, task: 'echo ${HOME} {a,b} {\"k\": 1} {chain_dir}'}]",
                None
            )
            .is_ok()
        );
    }

    #[test]
    fn group_options_must_agree_unless_overridden() {
        let text = "steps:\n  - {parallel: [{agent: a, task: x}], concurrency: 2, failFast: true}\n  - {parallel: [{agent: a}], concurrency: 3}\n";
        let error = parse("c.yaml", text).unwrap().workflow().unwrap_err().to_string();
        assert!(
            error.contains("steps[1].concurrency: 3 differs from steps[0].concurrency = 2"),
            "{error}"
        );
        let top = format!("concurrency: 1\n{text}");
        let workflow = parse("c.yaml", &top).unwrap().workflow().unwrap();
        assert_eq!(
            workflow,
            ChainWorkflow {
                concurrency: Some(1),
                fail_fast: Some(true)
            }
        );
    }

    #[test]
    fn placeholder_scanning() {
        assert_eq!(placeholders("{task} ${HOME} {x y} {Task2} {"), ["{task}", "{Task2}"]);
        assert_eq!(placeholders("{{previous}}"), ["{previous}"]);
    }
}
