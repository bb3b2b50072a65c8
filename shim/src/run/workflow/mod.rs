//! Executing the steps of a run: its groups
//! ([`sublaunch_protocol::records::config::groups`]) in order; a sequential step
//! alone, the tasks of a parallel group side by side — at most `workflow.concurrency` at once
//! (default: all), started in task order as slots free up.
//!
//! * A step that fails (or is stopped, paused or times out) stops the chain: every later step
//!   is recorded as not run (`skipped`, with `Not run: <step> failed.`).
//! * In a parallel group the other tasks go on when one fails, unless `workflow.failFast`:
//!   then the running ones are stopped (`stopped`, `Stopped: <step> failed and failFast is
//!   set.`) and the ones not yet started are not run. The run fails either way.
//! * Run-wide requests (stop, timeout, interrupt, signals) end every running agent and start
//!   nothing new.
//! * A step refused by its provider's rate limit before it did any work goes back to the front
//!   of the pending ones; a step whose provider cools down waits to start (U6, U7).
//!
//! Every child has its own `output-<n>.log`, `steps[n]` status entry, events and writer
//! record. A child's end is written into the status (and its step event appended) as soon as
//! it is known, except for the ends that finish the run: those are recorded by
//! [`crate::run::end::record`] after the terminal status and the result (S12).

use crate::context::Ctx;
use crate::step::child::ChildRun;
use crate::step::end::StepEnd;
use crate::step::placeholders::{Values, aggregate};
use crate::supervise::rate_limits::AfterLimit;
use crate::supervise::verify::AfterAgent;
use crate::supervise::{Ending, Supervisor};
use std::collections::VecDeque;
use sublaunch_protocol::records::config::WorkflowConfig;
use sublaunch_protocol::records::config::groups::{Group, groups};
use sublaunch_protocol::records::lease::WriterState;
use sublaunch_protocol::records::status::RunState;

/// The name of the default `{chain_dir}` inside `<run>`.
pub const CHAIN_DIR_NAME: &str = "chain";

/// Runs every step; returns their ends in flat order (one per configured step).
pub fn run_steps(ctx: &mut Ctx, sup: &mut Supervisor) -> Vec<StepEnd> {
    let workflow = ctx.cfg.workflow.clone();
    // A single run's task is used verbatim; chains and parallel runs get their placeholders.
    let substitute =
        ctx.cfg.steps.len() > 1 || workflow.task.is_some() || ctx.cfg.steps.iter().any(|s| s.task_index.is_some());
    let mut values = Values {
        task: workflow
            .task
            .clone()
            .or_else(|| ctx.cfg.steps.first().and_then(|s| s.task.clone()))
            .unwrap_or_default(),
        previous: String::new(),
        chain_dir: chain_dir(ctx, &workflow, substitute),
        outputs: Vec::new(),
    };
    let mut ends: Vec<StepEnd> = Vec::with_capacity(ctx.cfg.steps.len());
    let mut stopped_by: Option<String> = None;
    let all = groups(&ctx.cfg);
    let last = all.len().saturating_sub(1);
    for (n, group) in all.iter().enumerate() {
        if let Some(reason) = &stopped_by {
            ends.extend(group.indices().map(|i| Supervisor::not_run(ctx, i, reason)));
            continue;
        }
        let mut group_ends = run_group(ctx, sup, group, &workflow, substitute.then_some(&values));
        stopped_by = chain_stop(sup, &group_ends);
        let continues = stopped_by.is_none() && n < last;
        if continues {
            for end in group_ends.iter_mut().filter(|e| !e.closed) {
                crate::run::end::record::close_step(ctx, sup, end);
            }
        }
        let ran: Vec<&StepEnd> = group_ends.iter().filter(|e| e.ran()).collect();
        values.previous = aggregate(&ran, group.parallel);
        for end in &ran {
            if let Some(name) = ctx.cfg.steps[end.index].output_name.as_deref() {
                values.name_output(name, end);
            }
        }
        ends.extend(group_ends);
    }
    ends
}

/// Why the chain stops after a group (`Not run: …`), or `None` when it goes on.
fn chain_stop(sup: &Supervisor, ends: &[StepEnd]) -> Option<String> {
    if let Some(ending) = sup.requests.ending() {
        let why = match ending {
            Ending::Stopped(_) => "the run was stopped",
            Ending::TimedOut => "the run timed out",
            Ending::Interrupted => "the run was interrupted",
        };
        return Some(format!("Not run: {why}."));
    }
    ends.iter()
        .find(|e| e.ran() && e.state() != RunState::Complete && e.cancel.is_none())
        .map(|e| format!("Not run: {} failed.", e.label()))
}

/// `{chain_dir}`: the configured directory, else `<run>/chain`; created when a task of a run
/// that substitutes placeholders uses it.
fn chain_dir(ctx: &Ctx, workflow: &WorkflowConfig, substitute: bool) -> String {
    let path = workflow
        .chain_dir
        .clone()
        .unwrap_or_else(|| ctx.paths.run.join(CHAIN_DIR_NAME).to_string_lossy().into_owned());
    let used = substitute
        && ctx
            .cfg
            .steps
            .iter()
            .any(|s| s.task.as_deref().is_some_and(|t| t.contains("{chain_dir}")));
    if used {
        use std::os::unix::fs::DirBuilderExt;
        if let Err(e) = std::fs::DirBuilder::new().recursive(true).mode(0o700).create(&path) {
            eprintln!("sublaunch-shim: cannot create the chain directory {path}: {e}");
        }
    }
    path
}

/// Runs one group to its end; returns the ends of its steps in flat order.
fn run_group(
    ctx: &mut Ctx,
    sup: &mut Supervisor,
    group: &Group,
    workflow: &WorkflowConfig,
    values: Option<&Values>,
) -> Vec<StepEnd> {
    let limit = if group.parallel {
        workflow
            .concurrency
            .map_or(group.len, |c| usize::try_from(c).unwrap_or(usize::MAX))
            .clamp(1, group.len)
    } else {
        1
    };
    let mut run = GroupRun {
        pending: group.indices().collect(),
        running: Vec::new(),
        ends: Vec::with_capacity(group.len),
        cancelled_by: None,
        fail_fast: workflow.fail_fast && group.parallel,
    };
    loop {
        while run.running.len() < limit && run.cancelled_by.is_none() && !sup.requests.ends_run() {
            let Some(index) = run.pending.pop_front() else { break };
            // U7: a step waits while its provider cools down; the loop wakes when it may start.
            if !sup.may_start(ctx, index) {
                run.pending.push_front(index);
                break;
            }
            let raw = ctx.cfg.steps[index].task.clone().unwrap_or_default();
            let task = values.map_or_else(|| raw.clone(), |v| v.apply(&raw));
            let script_values = values.map(Values::script_values);
            match sup.start_child(ctx, index, &task, script_values.as_ref()) {
                Ok(child) => run.running.push(child),
                Err(end) => run.settle(ctx, sup, *end),
            }
        }
        let cooling = sup.cooldown_wake.is_some() && !run.pending.is_empty();
        if run.running.is_empty() && (!cooling || sup.requests.ends_run() || run.cancelled_by.is_some()) {
            break;
        }
        sup.turn(ctx, &mut run.running);
        while let Some(at) = run.running.iter().position(ChildRun::is_done) {
            let child = run.running.remove(at);
            // G78: an agent's end may start its verification commands, one after another,
            // before its step's end is known.
            let after = if child.gate.is_some() {
                sup.finish_gate(ctx, child)
            } else {
                let end = sup.finish_child(ctx, child);
                sup.start_acceptance(ctx, end)
            };
            match after {
                AfterAgent::Done(end) => match sup.after_rate_limit(ctx, *end) {
                    AfterLimit::Again(index) => run.pending.push_front(index),
                    AfterLimit::Ended(end) => run.settle(ctx, sup, *end),
                },
                AfterAgent::Verifying(gate) => run.running.push(*gate),
            }
        }
        if run.running.is_empty() {
            ctx.set_writer(WriterState::None, None);
        }
    }
    let mut ends = run.ends;
    let reason = match (&run.cancelled_by, chain_stop(sup, &ends)) {
        (Some(failed), _) => Some(format!("Not run: {failed} failed and failFast is set.")),
        (None, Some(reason)) if sup.requests.ends_run() => Some(reason),
        _ => None,
    };
    for index in run.pending {
        let why = reason.clone().unwrap_or_else(|| "Not run.".to_owned());
        ends.push(Supervisor::not_run(ctx, index, &why));
    }
    ends.sort_by_key(|e| e.index);
    ends
}

/// Where one group's execution stands.
struct GroupRun {
    /// Tasks not started yet, in order.
    pending: VecDeque<usize>,
    /// Agents running now.
    running: Vec<ChildRun>,
    /// Ends so far.
    ends: Vec<StepEnd>,
    /// The task whose failure stopped the group (failFast).
    cancelled_by: Option<String>,
    /// A failed task stops the others.
    fail_fast: bool,
}

impl GroupRun {
    /// Takes one child's end: failFast, and closing it at once unless it may be the run's
    /// last (no task runs or waits to start).
    fn settle(&mut self, ctx: &mut Ctx, sup: &mut Supervisor, mut end: StepEnd) {
        // J11: nothing of a cluster step outlives it, even when its `srun` was killed.
        if let Some(cluster) = ctx.cfg.steps.get(end.index).and_then(|s| s.cluster.as_ref()) {
            crate::remote::srun::end_job(cluster, &crate::remote::srun::job_name(&ctx.cfg.id, end.index));
        }
        let failed = end.state() == RunState::Failed && end.cancel.is_none();
        if failed && self.fail_fast && self.cancelled_by.is_none() {
            let label = end.label();
            let message = format!("Stopped: {label} failed and failFast is set.");
            for child in &mut self.running {
                child.cancel.get_or_insert_with(|| message.clone());
            }
            self.cancelled_by = Some(label);
        }
        let more = !self.pending.is_empty() && self.cancelled_by.is_none() && !sup.requests.ends_run();
        if more || !self.running.is_empty() {
            crate::run::end::record::close_step(ctx, sup, &mut end);
        }
        self.ends.push(end);
    }
}
