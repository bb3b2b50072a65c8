//! After commit (R9–R16): a run over the cap of active runs first waits for a capacity slot
//! ([`crate::supervise::queue`]); then the first status, the active-run mark and
//! `subagent.run.started` (R9), the steps one at a time (R10–R13), the end records (S12). A
//! failure to write the first status is a committed startup failure (R16). A run stopped while
//! queued goes the same way with the stop already requested: no step starts, and its status
//! says `queued` until the end records say `stopped`.

use crate::context::Ctx;
use crate::context::faults::Fired;
use crate::process::reaper::Reaper;
use crate::supervise::Supervisor;
use crate::supervise::book::StatusBook;
use crate::supervise::control::ControlInbox;
use crate::supervise::{Request, Requests, StopBy};
use std::time::{Duration, Instant};
use sublaunch_protocol::deferred::Submitted;
use sublaunch_protocol::files::dir::Dir;
use sublaunch_protocol::files::doc::to_pretty_bytes;
use sublaunch_protocol::files::durability::DocKind;
use sublaunch_protocol::files::layout::names;
use sublaunch_protocol::os::faults::{CORRUPT_PAYLOAD, ShimPoint};
use sublaunch_protocol::procinfo::{host_pid_namespace_scope, own_host_pid, own_start_identity};
use sublaunch_protocol::records::events::{self, EventLog};
use sublaunch_protocol::records::status::{RunningUpdate, StepStatus};
use sublaunch_protocol::records::step_record::ParallelGroup;

/// Runs everything after commit; returns the exit code. `stop` is a stop signal a test hook
/// consumed while hanging at `after-commit`.
pub fn after_commit(ctx: &mut Ctx, stop: Option<i32>) -> i32 {
    let stop_signal = match ctx.fire(ShimPoint::BeforeFirstStatus) {
        Fired::Stopped(signal) => Some(signal),
        Fired::Continue => stop,
    };
    let mut queued = crate::supervise::queue::wait_for_slot(ctx);
    if !queued.ends_run() {
        // U7: still queued while a provider of the first steps cools down.
        queued.merge(crate::supervise::rate_limits::wait_before_start(ctx));
    }
    // U9: still queued while the run does not fit under a spend limit.
    let mut spend = None;
    if !queued.ends_run() {
        let (requests, watch) = crate::supervise::spend::wait_for_allowance(ctx);
        queued.merge(requests);
        spend = watch;
    }
    let mut sup = match first_status(ctx, queued.ends_run()) {
        Ok(sup) => sup,
        Err(cause) => {
            crate::supervise::queue::release(ctx);
            crate::supervise::spend::release(ctx);
            return committed_startup_failure(ctx, &cause);
        }
    };
    if let Some(signal) = stop_signal {
        // A `hang` at before-first-status ended by a stop signal.
        sup.requests.receive(Request::Stop(StopBy::Signal(signal)));
    }
    sup.requests.merge(queued);
    sup.spend = spend;
    let ends = crate::run::workflow::run_steps(ctx, &mut sup);
    let code = crate::run::end::record::record(ctx, &mut sup, &ends);
    // Normally gone with the terminal status already; this covers a record that failed early.
    crate::supervise::queue::release(ctx);
    crate::supervise::spend::release(ctx);
    code
}

/// R9: S3 running status, I2/I7 mark, `subagent.run.started` (the first event line). A run
/// that ended while it waited for capacity (`ended_queued`) keeps the state `queued`.
fn first_status(ctx: &mut Ctx, ended_queued: bool) -> Result<Supervisor, String> {
    let run = ctx.open_run().map_err(|e| e.to_string())?;
    let runs = Dir::open_with(&ctx.paths.runs, ctx.os.clone()).ok();
    let (mut book, replaced) = StatusBook::open(
        run.try_clone().map_err(|e| e.to_string())?,
        runs.as_ref(),
        &ctx.cfg.id,
        ctx.cfg.tool_call_id.clone(),
        ctx.policy,
    );
    if let Some(why) = &replaced {
        eprintln!("sublaunch-shim: status.json was unusable ({why}); writing a fresh one");
    }
    let now = ctx.now_wall();
    let output_file = ctx.paths.run.join(names::output_log(0)).to_string_lossy().into_owned();
    // G45: the pid and scope the host's view gives, so a run launched from inside a
    // contained agent is judged by an outside `list` (the handshake keeps `getpid()`: the
    // launching host, in the same namespace, compares it with its child's pid).
    let scope = host_pid_namespace_scope();
    let identity = own_start_identity();
    let host_pid = own_host_pid();
    let status = &mut book.status;
    status.session_id = status.session_id.take().or_else(|| ctx.cfg.session_id.clone());
    status.completion_owner_id = status
        .completion_owner_id
        .take()
        .or_else(|| ctx.cfg.completion_owner_id.clone());
    status.tool_call_id = status.tool_call_id.take().or_else(|| ctx.cfg.tool_call_id.clone());
    status.mode = status.mode.take().or_else(|| Some(ctx.mode()));
    let steps = status.steps.get_or_insert_with(Vec::new);
    for (i, _) in ctx.cfg.steps.iter().enumerate().skip(steps.len()) {
        steps.push(StepStatus {
            agent: Some(ctx.agent_name(i)),
            status: Some("pending".into()),
            ..StepStatus::default()
        });
    }
    for (step, config) in steps.iter_mut().zip(&ctx.cfg.steps) {
        let facts = &mut step.facts;
        if config.step_index.is_some() {
            facts.step_index = config.step_index;
        }
        if config.task_index.is_some() {
            facts.task_index = config.task_index;
        }
        for (field, value) in [
            (&mut facts.label, &config.label),
            (&mut facts.phase, &config.phase),
            (&mut facts.output_name, &config.output_name),
        ] {
            if value.is_some() {
                field.clone_from(value);
            }
        }
        // What the step runs with, from the configuration the planner's plan became (G6).
        if let Some(spec) = &config.adapter {
            facts.permissions = Some(spec.resolved_permissions());
        }
    }
    let workflow = ctx.cfg.workflow.clone();
    let groups = sublaunch_protocol::records::config::groups::groups(&ctx.cfg)
        .iter()
        .filter(|g| g.parallel)
        .map(|g| ParallelGroup {
            step_index: ctx.cfg.steps[g.start].step_index,
            start: g.start,
            count: g.len,
            concurrency: workflow.concurrency.map_or(g.len, |c| (c as usize).min(g.len)),
            fail_fast: workflow.fail_fast,
        })
        .collect();
    status.parallel_groups = Some(groups);
    status.chain_step_count = u32::try_from(ctx.cfg.steps.len()).ok();
    status.error = None;
    status.ended_at = None;
    status.mark_running(&RunningUpdate {
        run_id: &ctx.cfg.id,
        runner_process_instance_id: &ctx.cfg.runner_process_instance_id,
        pid: host_pid,
        pid_namespace_scope: scope.as_deref(),
        pid_start_identity: identity.as_deref(),
        cwd: &ctx.cfg.cwd,
        output_file: &output_file,
        now,
    });
    if ended_queued {
        book.status.state = Some(sublaunch_protocol::records::status::RunState::Queued);
    }
    let modifier = ctx.faults.take_modifier();
    if !modifier.skip {
        let bytes = if modifier.corrupt {
            CORRUPT_PAYLOAD.to_vec()
        } else {
            to_pretty_bytes(&book.status)
        };
        match book.write_bytes(bytes, DocKind::RunningStatus) {
            Submitted::Done | Submitted::Dropped => {}
            Submitted::Deferred => eprintln!("sublaunch-shim: status.json write deferred (storage full)"),
            Submitted::Failed(e) => return Err(format!("cannot write status.json: {e}")),
        }
    }
    book.mark();
    // The shim's stderr is its log file (the host reports its tail when the shim dies).
    let mut events = EventLog::new(&run, events::max_bytes_from_env())
        .map_err(|e| e.to_string())?
        .with_logger(|line| eprintln!("{line}"));
    events.append(&events::run_started(
        now,
        &ctx.cfg.id,
        &ctx.mode(),
        &ctx.cfg.cwd,
        ctx.pid,
    ));
    ctx.publish(sublaunch_protocol::records::stream::What::Started { pid: ctx.pid });
    let started = Instant::now();
    let deadline = ctx.cfg.effective_timeout(now).map(|budget| {
        let ms = ctx
            .cfg
            .timeout_ms
            .unwrap_or_else(|| u64::try_from(budget.as_millis()).unwrap_or(u64::MAX));
        (started + budget.min(Duration::from_secs(10 * 365 * 86_400)), ms)
    });
    let deadline_is_wall = ctx.cfg.deadline_at.is_some_and(|at| {
        let left = at.saturating_sub(now);
        ctx.cfg.timeout_ms.is_none_or(|timeout| left < timeout)
    });
    Ok(Supervisor {
        control: ControlInbox::open(&run),
        book,
        events,
        reaper: Reaper::default(),
        requests: Requests::default(),
        deadline,
        deadline_is_wall,
        started,
        log_cap: crate::process::streams::OutputLog::cap_from_env(),
        control_woken: false,
        worktree_heads: std::collections::BTreeMap::new(),
        run_spent: sublaunch_protocol::records::usage::Usage::default(),
        checkpoint: ctx.cfg.checkpoint_before_deadline_ms.filter(|_| deadline.is_some()),
        tree_starts: std::collections::BTreeMap::new(),
        verified: std::collections::BTreeMap::new(),
        job_time_limit: ctx.cfg.cluster.as_ref().and_then(|c| c.place.time_limit_minutes),
        rate_limit_retries: std::collections::BTreeMap::new(),
        cooldown_wake: None,
        spend: None,
    })
}

/// R16: `status.json` failed with `Subagent runner startup failed: <cause>`, not-started proof,
/// zero-writer candidate (never overwriting a terminal status), lease released, the completion
/// hook, exit 1.
pub(crate) fn committed_startup_failure(ctx: &mut Ctx, cause: &str) -> i32 {
    let message = format!("Subagent runner startup failed: {cause}");
    if let Ok(run) = ctx.open_run() {
        ctx.persist_startup_failure(&run, &message, true);
        if let Some(released) = ctx.release_lease() {
            crate::run::end::record::acknowledge_release(ctx, &run, released);
        }
        // The run committed and ended: its end is recorded, and its completion hook gets it
        // with what the status says.
        if let Some(status) = sublaunch_protocol::records::status::read_status(&run)
            .ok()
            .and_then(sublaunch_protocol::files::doc::ReadDoc::present)
            .filter(sublaunch_protocol::records::status::Status::is_terminal)
        {
            let payload = sublaunch_protocol::records::hook::payload_from_status(&status, &ctx.cfg.async_dir);
            crate::run::end::hook::after_end(ctx, &run, &mut Reaper::default(), &status, &payload);
        }
    }
    ctx.release_lease();
    crate::process::exit::report(&message);
    crate::process::exit::RECORDING_FAILED
}
