//! Recording the end (R13, S4, S11, S12, X11). Order:
//! terminal `status.json` → result file → step/run events → final candidate → lease release,
//! then `revivalLeaseReleaseAcknowledged` in the candidate → the completion hook, when one is
//! configured ([`crate::run::end::hook`]) → exit. The host's finalization (S7) starts only after
//! the shim exited, so it always sees the final candidate.

use crate::context::Ctx;
use crate::step::end::StepEnd;
use crate::supervise::{Ending, Supervisor};
use serde_json::{Map, Value};
use std::time::{Duration, Instant};
use sublaunch_protocol::deferred::Submitted;
use sublaunch_protocol::files::dir::Dir;
use sublaunch_protocol::files::doc::{ReadDoc, to_pretty_bytes};
use sublaunch_protocol::files::durability::DocKind;
use sublaunch_protocol::files::layout::names;
use sublaunch_protocol::os::faults::{CORRUPT_PAYLOAD, ShimPoint};
use sublaunch_protocol::records::events::{self, StepOutcome};
use sublaunch_protocol::records::failure::FailureKind;
use sublaunch_protocol::records::proof::{Candidate, WriterRecord};
use sublaunch_protocol::records::results::{
    OutputState, ProtocolError, Publish, ResultPayload, StepResult, publish_result, result_write_failure,
};
use sublaunch_protocol::records::status::{LIFECYCLE_ARTIFACT_VERSION, RunState};
use sublaunch_protocol::records::step_record::{ExternalProcess, MachineRecord, ProcessEnd, StepFacts};
use sublaunch_protocol::records::stream::What;
use sublaunch_protocol::records::usage::Usage;

/// How long the end records wait for storage capacity to return (A9) before giving up.
pub const FLUSH_LIMIT: Duration = Duration::from_secs(120);

fn outcome_of(state: &RunState) -> StepOutcome {
    match state {
        RunState::Complete => StepOutcome::Completed,
        RunState::Stopped => StepOutcome::Stopped,
        RunState::Paused => StepOutcome::Paused,
        _ => StepOutcome::Failed,
    }
}

/// Writes a step's end into the in-memory status.
fn apply_step(sup: &mut Supervisor, end: &StepEnd) {
    let Some(step) = sup.book.status.steps.as_mut().and_then(|s| s.get_mut(end.index)) else {
        return;
    };
    step.status = Some(end.status_word());
    step.error = end.error();
    step.facts.failure_kind = end.failure_kind();
    step.facts.output_partial = end.output_partial.then_some(true);
    step.facts.adapter = Some(end.adapter.clone());
    if !end.ran() {
        return;
    }
    step.started_at.get_or_insert(end.started_wall);
    step.ended_at = Some(end.ended_wall);
    step.duration_ms = Some(end.duration_ms);
    step.exit_code = end.exit_code();
    let facts = &mut step.facts;
    if end.reported_model.is_some() {
        facts.reported_model.clone_from(&end.reported_model);
    }
    if end.usage.is_some() {
        facts.usage.clone_from(&end.usage);
    }
    if end.agent_session.is_some() {
        facts.agent_session.clone_from(&end.agent_session);
    }
    if let Some(worktree) = &end.worktree {
        facts.worktree = Some(worktree.report());
    }
    if let Some(budget) = &end.budget {
        facts.budget_exceeded = Some(budget.record());
    }
    if end.acceptance.is_some() {
        facts.acceptance.clone_from(&end.acceptance);
    }
    if !end.rate_limits.is_empty() {
        facts.rate_limits = Some(end.rate_limits.clone());
    }
    if let Some(pid) = end.pid {
        // The end replaces what the start wrote (its start identity only mattered while the
        // agent could outlive the runner).
        let start = step.external_process.take().unwrap_or_default();
        step.external_process = Some(ExternalProcess {
            pid,
            started_at: Some(end.started_wall),
            start_identity: None,
            containment: start.containment,
            containment_note: start.containment_note,
            end: Some(ProcessEnd {
                ended_at: end.ended_wall,
                duration_ms: end.duration_ms,
                exit_code: end.exit.as_ref().and_then(|e| e.code),
                process_signal: end
                    .exit
                    .as_ref()
                    .and_then(crate::process::reaper::ExitInfo::signal_name),
                stdout_bytes: end.stdout_bytes,
                stderr_bytes: end.stderr_bytes,
            }),
            extra: start.extra,
        });
    }
}

/// The step's end in the state root's event stream (D4).
fn publish_step(ctx: &Ctx, end: &StepEnd) {
    ctx.publish(What::StepEnded {
        step: end.index,
        agent: end.agent.clone(),
        state: end.state().as_str().to_owned(),
        failure_kind: end.failure_kind(),
    });
}

fn step_event(ctx: &Ctx, end: &StepEnd) -> events::Event {
    let event = end.with_position(events::step_finished(
        outcome_of(&end.state()),
        ctx.now_wall(),
        &ctx.cfg.id,
        end.index,
        &end.agent,
        end.exit_code(),
        end.duration_ms,
    ));
    match end.error() {
        Some(error) => event.with("error", error),
        None => event,
    }
}

/// Closes a step whose end is not the run's last: status and `subagent.step.<outcome>`.
pub fn close_step(ctx: &Ctx, sup: &mut Supervisor, end: &mut StepEnd) {
    apply_step(sup, end);
    crate::supervise::ledger::record_step(ctx, end);
    crate::supervise::spend::settle(ctx, &sup.run_spent);
    sup.book.status.last_update = Some(ctx.now_wall());
    sup.book.update();
    if end.ran() {
        sup.events.append(&step_event(ctx, end));
        publish_step(ctx, end);
    }
    end.closed = true;
}

/// The run's state and error from its steps' ends: the first step (flat order) that did not
/// complete decides — one that failed on its own before one stopped by failFast. In a run
/// of several steps a failure names the step (`Step 2 reviewer failed: …`).
pub fn run_outcome(ends: &[StepEnd]) -> Outcome {
    let ran = || ends.iter().filter(|e| e.ran());
    let decisive = ran()
        .find(|e| e.state() != RunState::Complete && e.cancel.is_none())
        .or_else(|| ran().find(|e| e.state() != RunState::Complete));
    let Some(end) = decisive else {
        return Outcome {
            state: RunState::Complete,
            error: None,
            kind: None,
        };
    };
    let state = end.state();
    let mut error = end.error();
    if ends.len() > 1 && state == RunState::Failed && end.timeout.is_none() {
        let mut label = end.label();
        label[..1].make_ascii_uppercase();
        error = error.map(|e| format!("{label} failed: {e}"));
    }
    Outcome {
        state,
        error,
        kind: end.failure_kind(),
    }
}

/// How a run ended: its state, the failure text for people and the failure's kind (D1).
#[derive(Clone, Debug, PartialEq)]
pub struct Outcome {
    /// The terminal state.
    pub state: RunState,
    /// The failure text.
    pub error: Option<String>,
    /// The failure's kind.
    pub kind: Option<FailureKind>,
}

/// A run that a request ended before any of its steps started (stopped while it waited for
/// capacity): the request decides, as it would have decided for a running step.
fn ended_before_any_step(sup: &Supervisor, ends: &[StepEnd]) -> Option<Outcome> {
    if ends.iter().any(StepEnd::ran) {
        return None;
    }
    let (state, error, kind) = match sup.requests.ending()? {
        Ending::Stopped(message) => {
            let kind = if sup.requests.stopped_by_limit() {
                FailureKind::Budget
            } else {
                FailureKind::Stopped
            };
            (RunState::Stopped, Some(message.to_owned()), Some(kind))
        }
        Ending::TimedOut => {
            let kind = if sup.deadline_passed() {
                FailureKind::Deadline
            } else {
                FailureKind::Timeout
            };
            (RunState::Failed, Some(sup.timeout_message()), Some(kind))
        }
        Ending::Interrupted => (RunState::Paused, None, None),
    };
    Some(Outcome { state, error, kind })
}

/// S12; returns the exit code (R14).
pub fn record(ctx: &mut Ctx, sup: &mut Supervisor, ends: &[StepEnd]) -> i32 {
    if ends.is_empty() {
        return crate::process::exit::RECORDING_FAILED;
    }
    // No request can change the outcome from here on (R12): stop watching the inbox now.
    sup.control.stop_watching();
    // Every sandboxed step's temporary directory goes with the run, whether or not its
    // agent's end was seen (a step stopped before it ended, say) (G33).
    for index in 0..ctx.cfg.steps.len() {
        crate::sandbox::step::remove_tmpdir(&ctx.cfg, index);
    }
    let Outcome {
        mut state,
        mut error,
        kind,
    } = ended_before_any_step(sup, ends).unwrap_or_else(|| run_outcome(ends));
    let ended_wall = ctx.now_wall();
    let duration_ms = sublaunch_protocol::os::clock::elapsed_ms(sup.started, Instant::now());
    for end in ends {
        apply_step(sup, end);
        if !end.closed {
            crate::supervise::ledger::record_step(ctx, end);
        }
    }

    // U9: every step's spend is in the ledger now, so the reservation goes before anyone can
    // see the run ended.
    crate::supervise::spend::release(ctx);

    // 1. Terminal status (durable), then the index (I4, I7).
    let mut status_landed = write_terminal(sup, &state, ended_wall, error.as_deref(), kind);
    if let Err(e) = sup.book.release(&state) {
        eprintln!("sublaunch-shim: cannot release the active-run marker: {e}");
    }
    // The slot frees only now: a run it lets start never shares a moment of `running` with
    // this one.
    crate::supervise::queue::release(ctx);

    // 2. Result file (S11).
    let _ = ctx.fire(ShimPoint::BeforeResult);
    let payload = result_payload(ctx, ends, &state, error.as_deref(), kind, ended_wall, duration_ms);
    let result_ok = match publish(ctx, &serde_json::to_value(&payload).unwrap_or(Value::Null)) {
        Ok(()) => {
            // D2: the result holds what the steps' agents had said; the saved copies go.
            for index in 0..ctx.cfg.steps.len() {
                let _ = sublaunch_protocol::records::partial::discard(sup.run_dir(), index);
            }
            true
        }
        Err(message) => {
            eprintln!("sublaunch-shim: {message}");
            state = RunState::Failed;
            status_landed = write_terminal(sup, &state, ended_wall, Some(&message), None);
            error = Some(message);
            false
        }
    };

    // 3. Events: the steps that ended last, the run marker, run.completed.
    for end in ends.iter().filter(|e| e.ran() && !e.closed) {
        sup.events.append(&step_event(ctx, end));
        publish_step(ctx, end);
    }
    let marker = match state {
        RunState::Stopped => Some("stopped"),
        RunState::Paused => Some("paused"),
        _ if ends.iter().any(|e| e.timeout.is_some()) => Some("timed_out"),
        _ => None,
    };
    if let Some(kind) = marker {
        sup.events
            .append(&events::run_marker(kind, ctx.now_wall(), &ctx.cfg.id, error.as_deref()));
    }
    sup.events.append(&events::run_completed(
        ctx.now_wall(),
        &ctx.cfg.id,
        state.as_str(),
        duration_ms,
    ));

    // 4. Final candidate (S8, R13).
    let _ = ctx.fire(ShimPoint::BeforeCandidate);
    write_candidate(ctx, sup.run_dir(), ends);

    // 5. Lease release, then its acknowledgement (X11).
    if let Some(released) = ctx.release_lease() {
        acknowledge_release(ctx, sup.run_dir(), released);
    }

    // 6. Anything still deferred; stragglers adopted since the last step (X8).
    if !sup.book.flush(Instant::now() + FLUSH_LIMIT) {
        eprintln!("sublaunch-shim: some status writes never found storage capacity");
    }
    let stragglers = crate::process::tree::sweep(&mut sup.reaper, None, None);
    if stragglers.killed > 0 {
        eprintln!(
            "sublaunch-shim: killed {} adopted descendant(s) at the end of the run",
            stragglers.killed
        );
    }

    // 7. The end into the event stream and, with a completion hook, the outbox (D6, D7); then
    // the hook, delivered from it once everything that matters is durable. Its outcome is
    // recorded beside the run and changes nothing of it.
    let mut payload = payload;
    if !result_ok {
        // The hook is told how the run really ended: the result could not be published.
        payload.state = state.as_str().to_owned();
        payload.success = false;
        payload.exit_code = 1;
        payload.error.clone_from(&error);
    }
    let payload = if ctx.cfg.on_end.is_some() {
        serde_json::to_value(&payload).unwrap_or(Value::Null)
    } else {
        Value::Null
    };
    let status = sup.book.status.clone();
    match sup.run_dir().try_clone() {
        Ok(run) => crate::run::end::hook::after_end(ctx, &run, &mut sup.reaper, &status, &payload),
        Err(e) => eprintln!("sublaunch-shim: cannot record the run's end in the event stream: {e}"),
    }
    let _ = ctx.fire(ShimPoint::BeforeExit);
    if status_landed || result_ok {
        crate::process::exit::RECORDED
    } else {
        crate::process::exit::report("neither the terminal status nor the result could be written.");
        crate::process::exit::RECORDING_FAILED
    }
}

/// Marks the status terminal and writes it, waiting for capacity when the write was deferred
/// (A9); returns whether it landed. Pending marks are dropped from now on (I7).
fn write_terminal(
    sup: &mut Supervisor,
    state: &RunState,
    ended_wall: u64,
    error: Option<&str>,
    kind: Option<FailureKind>,
) -> bool {
    let book = &mut sup.book;
    book.status
        .mark_terminal(state.clone(), ended_wall, error.map(str::to_owned), kind);
    let landed = match book.write(DocKind::TerminalStatus) {
        Submitted::Done => true,
        Submitted::Deferred | Submitted::Dropped => false,
        Submitted::Failed(e) => {
            eprintln!("sublaunch-shim: cannot write the terminal status: {e}");
            false
        }
    };
    book.terminal_written();
    landed || (book.pending() && book.flush(Instant::now() + FLUSH_LIMIT))
}

fn publish(ctx: &mut Ctx, payload: &Value) -> Result<(), String> {
    let modifier = ctx.faults.take_modifier();
    if modifier.skip {
        return Ok(());
    }
    let path = ctx.paths.result.clone();
    let fail = |cause: &dyn std::fmt::Display| result_write_failure(&path, cause);
    let results = Dir::create_private_with(&ctx.paths.results, ctx.os.clone()).map_err(|e| fail(&e))?;
    if modifier.corrupt {
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("result.json");
        return results
            .write(name, CORRUPT_PAYLOAD, ctx.policy.for_kind(DocKind::ResultPayload))
            .map_err(|e| fail(&e));
    }
    let async_dir = ctx.cfg.async_dir.clone();
    publish_result(
        &Publish {
            results: &results,
            result_path: &path,
            run_id: &ctx.cfg.id,
            session_id: ctx.cfg.session_id.as_deref(),
            tool_call_id: ctx.cfg.tool_call_id.as_deref(),
            async_dir: Some(&async_dir),
            payload,
        },
        ctx.policy,
    )
    .map(|report| {
        for warning in report.warnings {
            eprintln!("sublaunch-shim: {warning}");
        }
    })
    .map_err(|e| fail(&e))
}

/// The S11 payload.
fn result_payload(
    ctx: &Ctx,
    ends: &[StepEnd],
    state: &RunState,
    error: Option<&str>,
    kind: Option<FailureKind>,
    ended_wall: u64,
    duration_ms: u64,
) -> ResultPayload {
    let stopped = *state == RunState::Stopped;
    let timed_out = ends.iter().any(|e| e.timeout.is_some());
    let results: Vec<StepResult> = ends
        .iter()
        .map(|end| step_result(end, ctx.cfg.steps.get(end.index)))
        .collect();
    let summary = results
        .iter()
        .zip(ends)
        .map(|(r, end)| {
            let output = if !end.ran() {
                "(not run)"
            } else if r.output.is_empty() {
                "(no output)"
            } else {
                r.output.as_str()
            };
            format!("{}:\n{output}", r.agent)
        })
        .collect::<Vec<_>>()
        .join("\n\n");
    let success = *state == RunState::Complete;
    ResultPayload {
        lifecycle_artifact_version: LIFECYCLE_ARTIFACT_VERSION,
        id: ctx.cfg.id.clone(),
        agent: ctx.agent_name(0),
        mode: ctx.mode(),
        success,
        state: state.as_str().to_owned(),
        summary,
        results,
        exit_code: i32::from(!success),
        timestamp: ended_wall,
        duration_ms,
        cwd: ctx.cfg.cwd.clone(),
        async_dir: ctx.cfg.async_dir.clone(),
        session_id: ctx.cfg.session_id.clone().unwrap_or_default(),
        completion_owner_id: ctx.cfg.completion_owner_id.clone(),
        error: error.map(str::to_owned),
        failure_kind: kind,
        timed_out: timed_out.then_some(true),
        stopped: stopped.then_some(true),
        usage: Usage::sum(ends.iter().filter_map(|end| end.usage.as_ref())),
        synthesized_from_status: None,
        extra: Map::new(),
    }
}

/// `results[i]` of one step (S11 plus the workflow fields: `stepIndex`, `taskIndex`,
/// `adapter`, `structured`, `structuredErrors`, `outputTruncated`, `reportedModel`, `skipped`).
fn step_result(end: &StepEnd, config: Option<&sublaunch_protocol::records::config::StepConfig>) -> StepResult {
    let remote = end.remote.as_ref();
    StepResult {
        agent: end.agent.clone(),
        output: end.output.clone(),
        output_state: if end.output.is_empty() {
            OutputState::Absent
        } else {
            OutputState::Present
        },
        error: end.error(),
        protocol_error: end.protocol.as_ref().map(|message| ProtocolError {
            code: "protocol_output_limit".into(),
            stream: "stdout".into(),
            message: Some(message.clone()),
            extra: Map::new(),
        }),
        success: end.ran() && end.state() == RunState::Complete,
        exit_code: end.exit_code(),
        process_signal: end
            .exit
            .as_ref()
            .and_then(crate::process::reaper::ExitInfo::signal_name),
        timed_out: end.timeout.is_some().then_some(true),
        stopped: (end.ran() && end.state() == RunState::Stopped).then_some(true),
        structured: end.structured.clone(),
        structured_errors: end.structured_errors.clone(),
        output_truncated: end.output_truncated.then_some(true),
        agent_session_usage: end.agent_session_usage.clone(),
        skipped: (!end.ran()).then_some(true),
        machine: remote.map(|r| MachineRecord {
            id: r.placement.machine.clone(),
            target: r.placement.target.clone(),
            cwd: r.placement.cwd.clone(),
        }),
        remote_git: remote.and_then(|r| r.state.git.clone()),
        output_file: end.output_file.clone(),
        containment: end.containment.map(str::to_owned),
        facts: StepFacts {
            step_index: end.position.0,
            task_index: end.position.1,
            adapter: Some(end.adapter.clone()),
            reported_model: end.reported_model.clone(),
            usage: end.usage.clone(),
            agent_session: end.agent_session.clone(),
            worktree: end.worktree.as_ref().map(crate::step::worktree::WorktreeEnd::report),
            budget_exceeded: end.budget.as_ref().map(crate::step::budget::Exceeded::record),
            output_name: config.and_then(|c| c.output_name.clone()),
            label: config.and_then(|c| c.label.clone()),
            phase: config.and_then(|c| c.phase.clone()),
            permissions: config
                .and_then(|c| c.adapter.as_ref())
                .map(sublaunch_protocol::records::config::AdapterSpec::resolved_permissions),
            sandbox: end.sandbox.clone(),
            acceptance: end.acceptance.clone(),
            rate_limits: Some(end.rate_limits.clone()).filter(|r| !r.is_empty()),
            failure_kind: end.failure_kind(),
            output_partial: end.output_partial.then_some(true),
        },
        extra: Map::new(),
    }
}

/// The run's final candidate as it stands, else a fresh one.
pub fn read_candidate(ctx: &Ctx, run: &Dir) -> Candidate {
    match run.read_doc::<Candidate>(names::PROCESS_TERMINAL_CANDIDATE) {
        Ok(ReadDoc::Present(candidate)) => candidate,
        _ => Candidate::initial(&ctx.cfg.id, &ctx.cfg.runner_process_instance_id),
    }
}

/// The final candidate: one writer record per agent attempt, zero for steps that never
/// spawned (S8), and the revival session (X11).
fn write_candidate(ctx: &mut Ctx, run: &Dir, ends: &[StepEnd]) {
    let modifier = ctx.faults.take_modifier();
    if modifier.skip {
        return;
    }
    let mut candidate = read_candidate(ctx, run);
    candidate.run_id.clone_from(&ctx.cfg.id);
    candidate
        .runner_process_instance_id
        .clone_from(&ctx.cfg.runner_process_instance_id);
    for index in 0..ctx.cfg.steps.len().max(1) {
        // Every agent attempt of the step: the ones a rate limit ended to run again first.
        let records: Vec<WriterRecord> = ends
            .get(index)
            .map(|e| e.earlier_writers.iter().cloned().chain(e.writer.clone()).collect())
            .unwrap_or_default();
        candidate.set_step_writers(index, &records);
    }
    if let Some(held) = &ctx.lease {
        candidate.session_file = Some(held.session_file.clone());
        candidate.revival_lease_token = Some(held.lease.token().to_owned());
    }
    let bytes = if modifier.corrupt {
        CORRUPT_PAYLOAD.to_vec()
    } else {
        to_pretty_bytes(&candidate)
    };
    if let Err(e) = run.write(
        names::PROCESS_TERMINAL_CANDIDATE,
        &bytes,
        ctx.policy.for_kind(DocKind::FinalCandidate),
    ) {
        eprintln!("sublaunch-shim: cannot write the final candidate: {e}");
    }
}

/// X11: `revivalLeaseReleaseAcknowledged` (true only if the release succeeded).
pub fn acknowledge_release(ctx: &Ctx, run: &Dir, released: bool) {
    let mut candidate = read_candidate(ctx, run);
    candidate.revival_lease_release_acknowledged = Some(released);
    if let Err(e) = run.write_doc(
        names::PROCESS_TERMINAL_CANDIDATE,
        &candidate,
        ctx.policy.for_kind(DocKind::FinalCandidate),
    ) {
        eprintln!("sublaunch-shim: cannot acknowledge the lease release: {e}");
    }
}
