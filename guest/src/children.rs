//! The launched children of a request, in flat order (rule L1), and what each inherits from
//! its group and the launch options (rules L2–L6).

use sublaunch_contract::{
    LooseString, Mode, Permissions, PlanError, PlanRequest, RetryPolicy, Step, Task, ThinkingSetting, UsageBudget,
};

/// Where a child sits in the request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Position {
    /// A step of `single` or `chain` mode that is not a group.
    Sequential { step: usize },
    /// Task `task` of the group at request step `step` (`chain` mode).
    ChainTask { step: usize, task: usize },
    /// Task `task` of the one group of `parallel` mode (explicit or implicit).
    ParallelTask { step: usize, task: usize },
}

impl Position {
    /// Index of the request step the child comes from (the plan's `stepIndex`).
    pub fn step_index(self) -> usize {
        match self {
            Self::Sequential { step } | Self::ChainTask { step, .. } | Self::ParallelTask { step, .. } => step,
        }
    }

    /// Index within its group (the plan's `taskIndex`).
    pub fn task_index(self) -> Option<usize> {
        match self {
            Self::Sequential { .. } => None,
            Self::ChainTask { task, .. } | Self::ParallelTask { task, .. } => Some(task),
        }
    }

    /// How messages locate the child: `step N`, `step N, task M` or `task M` (1-based, L10).
    pub fn describe(self) -> String {
        match self {
            Self::Sequential { step } => format!("step {}", step + 1),
            Self::ChainTask { step, task } => format!("step {}, task {}", step + 1, task + 1),
            Self::ParallelTask { task, .. } => format!("task {}", task + 1),
        }
    }
}

/// The fields one child reads from its step or task.
#[derive(Clone, Copy, Debug, Default)]
pub struct ChildFields<'r> {
    /// Agent name.
    pub agent: &'r str,
    /// Task text.
    pub task: &'r str,
    /// Model override.
    pub model: Option<&'r LooseString>,
    /// Thinking override.
    pub thinking: Option<&'r ThinkingSetting>,
    /// Own machine.
    pub machine: Option<&'r LooseString>,
    /// Own working directory.
    pub cwd: Option<&'r LooseString>,
    /// Output-schema override (JSON text).
    pub output_schema: Option<&'r str>,
    /// Files to read first (`Some` of an empty list: none, not the agent's defaults).
    pub reads: Option<&'r [String]>,
    /// The file the answer is also written to.
    pub output: Option<&'r str>,
    /// The name of the answer for later steps (`as`).
    pub output_name: Option<&'r str>,
    /// Label.
    pub label: Option<&'r str>,
    /// Phase: its own, else its group's.
    pub phase: Option<&'r str>,
    /// Usage limits: its own, else its group's.
    pub usage_budget: Option<Inherited<&'r UsageBudget>>,
    /// Tool-call limit: its own, else its group's.
    pub tool_budget: Option<Inherited<u32>>,
    /// How many times it runs again after a rate limit (`retry.rateLimit`): its own, else its
    /// group's.
    pub rate_limit_retries: Option<Inherited<u32>>,
    /// pi extensions: its own, else its group's.
    pub extensions: Option<Inherited<&'r [String]>>,
    /// Required pi extensions: its own, else its group's.
    pub required_extensions: Option<Inherited<&'r [String]>>,
    /// pi skills: its own, else its group's.
    pub skills: Option<Inherited<&'r [String]>>,
    /// Its own layer of the permission contract (a group's is [`Child::group_permissions`]).
    pub permissions: Option<&'r Permissions>,
    /// Its own sandbox setting.
    pub sandbox: Option<&'r sublaunch_contract::SandboxSetting>,
    /// Its group's sandbox setting (the tightest of both applies).
    pub group_sandbox: Option<&'r sublaunch_contract::SandboxSetting>,
    /// Its own `acceptance` and `gate` (JSON text): the most specific source decides.
    pub acceptance: Option<&'r str>,
    /// Its own `gate`.
    pub gate: Option<&'r str>,
    /// Its group's `acceptance`, when it is a task of an explicit group.
    pub group_acceptance: Option<&'r str>,
    /// Its group's `gate`.
    pub group_gate: Option<&'r str>,
}

/// A value a task has of its own or from its group, with the JSON path it was given at.
#[derive(Clone, Copy, Debug)]
pub struct Inherited<T> {
    /// The value.
    pub value: T,
    /// Whether it is the group's (messages then name the group's field).
    pub from_group: bool,
}

/// The task's own value, else its group's.
fn own_or_group<T>(own: Option<T>, group: Option<T>) -> Option<Inherited<T>> {
    match (own, group) {
        (Some(value), _) => Some(Inherited {
            value,
            from_group: false,
        }),
        (None, Some(value)) => Some(Inherited {
            value,
            from_group: true,
        }),
        (None, None) => None,
    }
}

/// The `rateLimit` of a `retry` setting: each part of it is inherited on its own, so a task's
/// `retry: {}` keeps its group's number.
fn rate_limit(retry: Option<&RetryPolicy>) -> Option<u32> {
    retry.and_then(|r| r.rate_limit)
}

/// One launched child.
#[derive(Clone, Debug)]
pub struct Child<'r> {
    /// Where the child sits.
    pub position: Position,
    /// JSON path of its step or task, for messages (`steps[0]`, `steps[1].parallel[0]`).
    pub path: String,
    /// Its own fields.
    pub fields: ChildFields<'r>,
    /// The machine of its group, when it is a task of an explicit group (rule L3).
    pub group_machine: Option<&'r LooseString>,
    /// Whether it runs in a managed worktree (rule L4; only `true` counts).
    pub worktree: bool,
    /// The permission layer of its group, when it is a task of an explicit group: a layer of
    /// its own (rule G1), not replaced by the task's.
    pub group_permissions: Option<&'r Permissions>,
}

impl<'r> Child<'r> {
    /// The reviewer of this child (G81): agent `agent` in the child's place (its directory,
    /// worktree and sandbox), with no task (the runner writes its prompt), no reads, answer
    /// file, budgets, permissions layer or contract of its own; `path` names its review gate.
    pub fn reviewer(&self, agent: &'r str, path: String) -> Self {
        Self {
            position: self.position,
            path,
            fields: ChildFields {
                agent,
                task: "",
                cwd: self.fields.cwd,
                reads: Some(&[]),
                sandbox: self.fields.sandbox,
                group_sandbox: self.fields.group_sandbox,
                ..ChildFields::default()
            },
            group_machine: None,
            worktree: self.worktree,
            group_permissions: None,
        }
    }

    /// The JSON path of one of the child's fields, e.g. `steps[0].thinking`.
    pub fn field_path(&self, field: &str) -> String {
        format!("{}.{field}", self.path)
    }

    /// The JSON path of a field the child may have from its group: the group's when it did.
    pub fn inherited_path<T>(&self, field: &str, value: &Inherited<T>) -> String {
        if value.from_group {
            format!("steps[{}].{field}", self.position.step_index())
        } else {
            self.field_path(field)
        }
    }
}

/// Flattens the request into its children (rule L1), refusing a malformed mode shape with
/// `invalid-request`.
pub fn flatten(request: &PlanRequest) -> Result<Vec<Child<'_>>, PlanError> {
    let launch_worktree = request.launch.as_ref().and_then(|l| l.worktree) == Some(true);
    let steps = &request.steps;
    let mut children = Vec::new();
    match request.mode {
        Mode::Single => {
            if steps.len() != 1 {
                return Err(PlanError::invalid_request(format!(
                    "Invalid request at steps: single mode needs exactly one step, got {}.",
                    steps.len()
                )));
            }
            let step = &steps[0];
            if step.parallel.is_some() {
                return Err(PlanError::invalid_request(
                    "Invalid request at steps[0].parallel: single mode cannot run a parallel group; use mode \"parallel\" or \"chain\".",
                ));
            }
            let worktree = step.worktree == Some(true) || launch_worktree;
            children.push(sequential(0, step, worktree)?);
        }
        Mode::Chain => {
            if steps.is_empty() {
                return Err(PlanError::invalid_request(
                    "Invalid request at steps: chain mode needs at least one step.",
                ));
            }
            for (index, step) in steps.iter().enumerate() {
                match &step.parallel {
                    None => children.push(sequential(index, step, step.worktree == Some(true))?),
                    Some(tasks) => {
                        let group_worktree = step.worktree == Some(true);
                        only_task_fields(index, step)?;
                        for (task_index, task) in group_tasks(index, tasks)? {
                            let position = Position::ChainTask {
                                step: index,
                                task: task_index,
                            };
                            children.push(grouped(position, step, task, group_worktree)?);
                        }
                    }
                }
            }
        }
        Mode::Parallel => {
            if steps.is_empty() {
                return Err(PlanError::invalid_request(
                    "Invalid request at steps: parallel mode needs at least one task.",
                ));
            }
            match steps.as_slice() {
                [
                    group @ Step {
                        parallel: Some(tasks), ..
                    },
                ] => {
                    let group_worktree = group.worktree == Some(true);
                    only_task_fields(0, group)?;
                    for (task_index, task) in group_tasks(0, tasks)? {
                        let position = Position::ParallelTask {
                            step: 0,
                            task: task_index,
                        };
                        children.push(grouped(position, group, task, group_worktree)?);
                    }
                }
                _ => {
                    for (index, step) in steps.iter().enumerate() {
                        if step.parallel.is_some() {
                            return Err(PlanError::invalid_request(format!(
                                "Invalid request at steps[{index}].parallel: in parallel mode every step is a task and a task cannot be a group; give one group step or only plain steps."
                            )));
                        }
                        let mut child = sequential(index, step, launch_worktree)?;
                        child.position = Position::ParallelTask { step: 0, task: index };
                        children.push(child);
                    }
                }
            }
        }
    }
    Ok(children)
}

/// A group has no answer, output file or label of its own, and reads nothing itself: those
/// belong on its tasks (its `phase` is theirs by default).
fn only_task_fields(index: usize, group: &Step) -> Result<(), PlanError> {
    let own = [
        ("reads", group.reads.is_some()),
        ("output", group.output.is_some()),
        ("as", group.output_name.is_some()),
        ("label", group.label.is_some()),
    ];
    match own.iter().find(|(_, set)| *set) {
        Some((field, _)) => Err(PlanError::invalid_request(format!(
            "Invalid request at steps[{index}].{field}: a parallel group has no {} of its own; set it on its tasks.",
            match *field {
                "reads" => "files to read",
                "output" => "output file",
                "as" => "answer to name",
                _ => "label",
            }
        ))),
        None => Ok(()),
    }
}

fn group_tasks(step: usize, tasks: &[Task]) -> Result<impl Iterator<Item = (usize, &Task)>, PlanError> {
    if tasks.is_empty() {
        return Err(PlanError::invalid_request(format!(
            "Invalid request at steps[{step}].parallel: a parallel group needs at least one task."
        )));
    }
    Ok(tasks.iter().enumerate())
}

fn sequential(index: usize, step: &Step, worktree: bool) -> Result<Child<'_>, PlanError> {
    let path = format!("steps[{index}]");
    let agent = step.agent.as_deref().ok_or_else(|| {
        PlanError::invalid_request(format!("Invalid request at {path}.agent: a step needs an agent name."))
    })?;
    let task = required_task(&path, step.task.as_deref())?;
    Ok(Child {
        position: Position::Sequential { step: index },
        path,
        fields: ChildFields {
            agent,
            task,
            model: step.model.as_ref(),
            thinking: step.thinking.as_ref(),
            machine: step.machine.as_ref(),
            cwd: step.cwd.as_ref(),
            output_schema: step.output_schema.as_deref(),
            reads: step.reads.as_deref(),
            output: step.output.as_deref(),
            output_name: step.output_name.as_deref(),
            label: step.label.as_deref(),
            phase: step.phase.as_deref(),
            usage_budget: own_or_group(step.usage_budget.as_ref(), None),
            tool_budget: own_or_group(step.tool_budget, None),
            rate_limit_retries: own_or_group(rate_limit(step.retry.as_ref()), None),
            extensions: own_or_group(step.extensions.as_deref(), None),
            required_extensions: own_or_group(step.required_extensions.as_deref(), None),
            skills: own_or_group(step.skills.as_deref(), None),
            permissions: step.permissions.as_ref(),
            sandbox: step.sandbox.as_ref(),
            group_sandbox: None,
            acceptance: step.acceptance.as_deref(),
            gate: step.gate.as_deref(),
            group_acceptance: None,
            group_gate: None,
        },
        group_machine: None,
        worktree,
        group_permissions: None,
    })
}

fn grouped<'r>(position: Position, group: &'r Step, task: &'r Task, worktree: bool) -> Result<Child<'r>, PlanError> {
    let group_machine = group.machine.as_ref();
    let (step, index) = (position.step_index(), position.task_index().unwrap_or_default());
    let path = format!("steps[{step}].parallel[{index}]");
    let text = required_task(&path, task.task.as_deref())?;
    Ok(Child {
        position,
        path,
        fields: ChildFields {
            agent: &task.agent,
            task: text,
            model: task.model.as_ref(),
            thinking: task.thinking.as_ref(),
            machine: task.machine.as_ref(),
            cwd: task.cwd.as_ref(),
            output_schema: task.output_schema.as_deref(),
            reads: task.reads.as_deref(),
            output: task.output.as_deref(),
            output_name: task.output_name.as_deref(),
            label: task.label.as_deref(),
            phase: task.phase.as_deref().or(group.phase.as_deref()),
            usage_budget: own_or_group(task.usage_budget.as_ref(), group.usage_budget.as_ref()),
            tool_budget: own_or_group(task.tool_budget, group.tool_budget),
            rate_limit_retries: own_or_group(rate_limit(task.retry.as_ref()), rate_limit(group.retry.as_ref())),
            extensions: own_or_group(task.extensions.as_deref(), group.extensions.as_deref()),
            required_extensions: own_or_group(
                task.required_extensions.as_deref(),
                group.required_extensions.as_deref(),
            ),
            skills: own_or_group(task.skills.as_deref(), group.skills.as_deref()),
            permissions: task.permissions.as_ref(),
            sandbox: task.sandbox.as_ref(),
            group_sandbox: group.sandbox.as_ref(),
            acceptance: task.acceptance.as_deref(),
            gate: task.gate.as_deref(),
            group_acceptance: group.acceptance.as_deref(),
            group_gate: group.gate.as_deref(),
        },
        group_machine,
        worktree,
        group_permissions: group.permissions.as_ref(),
    })
}

fn required_task<'r>(path: &str, task: Option<&'r str>) -> Result<&'r str, PlanError> {
    task.ok_or_else(|| PlanError::invalid_request(format!("Invalid request at {path}.task: a step needs a task text.")))
}

/// The machine a child asks for (rules L2, L3): its own, else its group's, else the launch's,
/// else its agent's. Present means placed (rule P1), even when it is an empty string.
pub fn requested_machine<'r>(
    child: &Child<'r>,
    launch_machine: Option<&'r LooseString>,
    agent_machine: Option<&'r LooseString>,
) -> Option<&'r LooseString> {
    child
        .fields
        .machine
        .or(child.group_machine)
        .or(launch_machine)
        .or(agent_machine)
}
