//! `sublaunch status RUN_ID [--json]`: the run's status, after reconciling a run whose shim
//! died unobserved (S13): the run's state and times, then a line per step (`2.1  shell
//! (lexer)  running  1.60s  <last line>`, labelled as progress and `logs` label it), the
//! completion hook's outcome, its usage and directory. `--json` prints the status.json
//! object, with the answer of an ended run under `result` (see `sublaunch result`); a run
//! waiting for capacity says its place in the queue (`queuePosition`).

use super::colour::Paint;
use super::runs::say;
use super::runs::{agents, duration, elapsed, fail, now_ms, open_run, raw_status, state_name, status_of, usage_line};
use serde_json::Value;
use std::process::ExitCode;
use sublaunch::runs::{AnswerError, RunStore, read_result, settled_result};
use sublaunch_protocol::files::dir::Dir;
use sublaunch_protocol::files::doc::ReadDoc;
use sublaunch_protocol::os::clock::iso8601_utc;
use sublaunch_protocol::records::hook::{HookOutcome, LOG_FILE, OUTCOME_FILE};
use sublaunch_protocol::records::results::ResultPayload;
use sublaunch_protocol::records::status::RunState;
use sublaunch_protocol::records::status::Status;

/// Arguments of `sublaunch status`.
#[derive(clap::Args)]
pub struct Args {
    /// The run id.
    run_id: String,
    /// Print the status.json object (an ended run's answer under `result`).
    #[arg(short, long)]
    json: bool,
}

/// Runs `sublaunch status`.
pub fn run(args: Args) -> ExitCode {
    let (store, run, run_id) = match open_run(&args.run_id, "status") {
        Ok(opened) => opened,
        Err(code) => return code,
    };
    for warning in store.reconcile_run(&run) {
        eprintln!("sublaunch status: warning: {warning}");
    }
    let queued = status_of(&run).is_some_and(|s| s.state == Some(RunState::Queued));
    // J7: a run queued on a cluster waits for the engine's reason.
    let reason = status_of(&run)
        .filter(|_| queued)
        .and_then(|s| s.cluster)
        .filter(|job| !job.job_id.is_empty())
        .and_then(|job| match store.look_at_job(&job) {
            sublaunch::cluster::engine::JobLook::Queued { reason } => reason,
            _ => None,
        });
    let place = queued
        .then(|| store.queue_positions().ok()?.get(&run_id).copied())
        .flatten();
    let waiting = status_of(&run).and_then(|s| sublaunch::runs::view::active_wait(&run, &s));
    if args.json {
        return match raw_status(&run) {
            Ok(mut value) => {
                // An ended run's answer, so one call tells a script both.
                if let (Some(object), Some(payload)) = (value.as_object_mut(), ended_result(&store, &run_id, &run)) {
                    object.insert("result".into(), sublaunch::runs::answer_json(&payload));
                }
                if let (Some(object), Some(place)) = (value.as_object_mut(), place) {
                    object.insert("queuePosition".into(), place.into());
                }
                if let (Some(object), Some(reason)) = (value.as_object_mut(), &reason) {
                    object.insert("queueReason".into(), reason.clone().into());
                }
                if let (Some(object), Some(waiting)) = (value.as_object_mut(), &waiting) {
                    object.insert("waiting".into(), serde_json::to_value(waiting).unwrap_or_default());
                }
                say!("{}", serde_json::to_string_pretty(&value).unwrap_or_default());
                ExitCode::SUCCESS
            }
            Err(e) => fail("status", format_args!("run '{run_id}': {e}")),
        };
    }
    match status_of(&run) {
        Some(status) => {
            say!("{}", describe(&run_id, &run, &status, now_ms(), Paint::stdout()));
            if let Some(place) = place {
                say!("queue    {} in line for a capacity slot", super::runs::ordinal(place));
            }
            if let (Some(reason), Some(job)) = (&reason, &status.cluster) {
                say!("queue    waiting in {} as job {}: {reason}", job.name, job.job_id);
            }
            if let Some(waiting) = &waiting {
                say!("{}", wait_line(waiting, now_ms()));
            }
            ExitCode::SUCCESS
        }
        None => {
            let why = super::runs::status_problem(&run);
            fail("status", format_args!("run '{run_id}': {why}"))
        }
    }
}

/// `waiting  step 2 for rate limit: anthropic (HTTP 429) until 12:03:04 (12.00s left): <detail>`.
fn wait_line(waiting: &sublaunch_protocol::records::waiting::Waiting, now: u64) -> String {
    let who = waiting
        .step
        .map_or_else(String::new, |step| format!("step {} ", step + 1));
    let until = waiting.until.map_or_else(String::new, |until| {
        format!(
            " until {} ({} left)",
            iso8601_utc(until),
            duration(until.saturating_sub(now))
        )
    });
    let detail = waiting
        .detail
        .as_deref()
        .map_or_else(String::new, |detail| format!(": {detail}"));
    format!("waiting  {who}for {}{until}{detail}", waiting.reason)
}

/// The result of an ended run. The shim publishes it just after the terminal status, so a run
/// seen in between is given the moment it takes (an async runtime only then).
fn ended_result(store: &RunStore, run_id: &str, run: &Dir) -> Option<ResultPayload> {
    match read_result(store, run_id) {
        Err(AnswerError::NotYet(_)) if status_of(run).is_some_and(|s| s.is_terminal()) => {
            let runtime = super::runs::async_runtime("status").ok()?;
            runtime.block_on(settled_result(store, run_id, run)).ok()
        }
        read => read.ok(),
    }
}

/// A step's mark in `status` for a running step (no spinner turns on a printed page).
const RUNNING_MARK: char = '⠿';
/// Lines are not cut when stdout is not a terminal.
const UNCUT_WIDTH: usize = 100_000;

/// The human description of `status`: the run, then its steps, its hook and its usage.
fn describe(run_id: &str, run: &Dir, status: &Status, now: u64, paint: Paint) -> String {
    let state = state_name(status);
    let mut lines = vec![format!("run      {run_id}"), format!("state    {state}")];
    if let Some(pid) = status.pid {
        lines.push(format!("pid      {pid}"));
    }
    if let Some(started) = status.started_at {
        lines.push(format!("started  {}", iso8601_utc(started)));
    }
    if let Some(ended) = status.ended_at {
        lines.push(format!("ended    {}", iso8601_utc(ended)));
    }
    if let Some(ms) = elapsed(status, now) {
        lines.push(format!("duration {}", duration(ms)));
    }
    if let Some(proof) = proof_line(status) {
        lines.push(format!("proof    {proof}"));
    }
    if let Some(contained) = containment_line(status) {
        lines.push(format!("contain  {contained}"));
    }
    if let Some(hook) = hook_line(run) {
        lines.push(format!("hook     {hook}"));
    }
    if let Some(usage) = status.usage() {
        lines.push(format!("usage    {}", usage_line(&usage)));
    }
    if let Some(parent) = launched_from(run) {
        lines.push(format!("inside   {}", parent.source));
    }
    lines.extend(permission_lines(status));
    for step in status.steps.iter().flatten() {
        // G79: how far each contracted step's evidence went.
        if let Some(record) = &step.facts.acceptance {
            let agent = step.agent.as_deref().unwrap_or("?");
            lines.push(format!("accept   {agent}: {}", record.summary()));
        }
        if let Some(sandbox) = &step.facts.sandbox {
            let agent = step.agent.as_deref().unwrap_or("?");
            lines.push(format!("sandbox  {agent}: {}", sandbox.summary()));
            lines.extend(sandbox.notes.iter().map(|note| format!("         note: {note}")));
        }
    }
    lines.push(format!("dir      {}", run.path().display()));
    // G66: where the runs its sandboxed agents launched are.
    if run
        .path()
        .join(sublaunch_protocol::files::layout::names::NESTED_DIR)
        .is_dir()
    {
        lines.push(format!(
            "nested   runs its sandboxed agents launched: SUBLAUNCH_ROOT={} sublaunch list",
            run.path()
                .join(sublaunch_protocol::files::layout::names::NESTED_DIR)
                .display()
        ));
    }
    if let Some(kind) = status.failure_kind {
        lines.push(format!("failure  {kind}"));
    }
    if let Some(error) = &status.error {
        lines.push(format!("error    {}", error.replace('\n', "\n         ")));
    }
    // Made safe before the step lines are coloured (those are made safe as they are drawn).
    let mut lines: Vec<String> = lines.iter().map(|l| super::terminal_text::for_terminal(l)).collect();
    lines[1] = format!("state    {}", paint.state(state, state));
    let snapshot = super::progress::look(run, now);
    if snapshot.steps.is_empty() {
        lines.insert(
            2,
            super::terminal_text::for_terminal(&format!("agents   {}", agents(status))),
        );
    } else {
        let width = super::progress::stdout_width().map_or(UNCUT_WIDTH, |w| w.saturating_sub(2));
        let steps = super::progress::step_lines(&snapshot, RUNNING_MARK, width, paint);
        let count = steps.len();
        let mut block = vec![format!("steps    {count}")];
        block.extend(steps.into_iter().map(|line| format!("  {line}")));
        // After the state: which step runs is what a person asks first.
        lines.splice(2..2, block);
    }
    lines.join("\n")
}

/// The run (and step) whose agent launched this run, from its plan record (G61).
fn launched_from(run: &Dir) -> Option<sublaunch::launch::plan_record::LaunchedFrom> {
    match sublaunch::launch::plan_record::read_plan_record(run) {
        Ok(sublaunch_protocol::files::doc::ReadDoc::Present(record)) => record.launched_from,
        _ => None,
    }
}

/// What each step runs with (rule G6), from its status entry (the runner copied it from the
/// configuration the plan became): `perms    step 1 claude: mode read-only; …`.
fn permission_lines(status: &Status) -> Vec<String> {
    status
        .steps
        .iter()
        .flatten()
        .filter_map(|step| {
            let permissions = step.facts.permissions.as_ref()?;
            let index = step.facts.step_index.unwrap_or_default();
            let name = sublaunch_protocol::records::step_record::step_label(
                index,
                step.facts.task_index,
                step.agent.as_deref().unwrap_or("?"),
            );
            Some(format!("perms    {name}: {}", permissions.summary()))
        })
        .collect()
}

/// How the run's end was proven, or why it was not, in words: a run launched without
/// `--wait` has no process waiting for its runner, so no exit was observed, which is how it
/// is meant to be.
fn proof_line(status: &Status) -> Option<String> {
    let proof = status.process_terminal.as_ref()?;
    let state = proof.get("state").and_then(Value::as_str)?;
    let reason = proof.get("reason").and_then(Value::as_str);
    Some(match (state, reason) {
        ("unknown", Some("observer-unavailable")) => {
            "not observed (launched detached; nothing waited for it)".to_owned()
        }
        (state, Some(reason)) => format!("{state} ({reason})"),
        (state, None) => state.to_owned(),
    })
}

/// What ends the agents' process trees with the runner (G43): `pid-namespace` when every
/// started agent had a PID namespace of its own, else each containment that occurred, with
/// the kernel's refusal; nothing before an agent started (or from an older runner).
fn containment_line(status: &Status) -> Option<String> {
    let mut kinds: Vec<String> = Vec::new();
    for process in status
        .steps
        .iter()
        .flatten()
        .filter_map(|s| s.external_process.as_ref())
    {
        let Some(kind) = &process.containment else { continue };
        let text = match &process.containment_note {
            Some(note) => format!("{kind} ({note})"),
            None => kind.clone(),
        };
        if !kinds.contains(&text) {
            kinds.push(text);
        }
    }
    (!kinds.is_empty()).then(|| kinds.join("; "))
}

/// The completion hook's outcome when it failed (`exit 7 (see <run>/hook-end.log)`), or
/// `ok` when it succeeded; nothing before it ran or without one.
fn hook_line(run: &Dir) -> Option<String> {
    let ReadDoc::Present(outcome) = run.read_doc::<HookOutcome>(OUTCOME_FILE).ok()? else {
        return None;
    };
    let log = run.join(LOG_FILE);
    let why = if let Some(error) = &outcome.spawn_error {
        format!("could not start: {error}")
    } else if outcome.timed_out {
        format!("timed out after {}", duration(outcome.timeout_ms))
    } else if let Some(signal) = &outcome.signal {
        format!("killed by {signal}")
    } else {
        match outcome.exit_code {
            Some(0) => return Some(format!("ok ({})", outcome.command)),
            Some(code) => format!("exit {code}"),
            None => "ended without an exit code".to_owned(),
        }
    };
    Some(format!("{why} (see {})", log.display()))
}
