//! A finished run's answer, read back from its result file: the text a person wants
//! (the last step's output, or each task of a final parallel group under a heading) and the
//! per-step record a program wants (text, structured value, exit, error, usage, the agent's
//! session).

use super::RunStore;
use crate::launch::tokio;
use serde_json::{Value, json};
use sublaunch_protocol::files::dir::Dir;
use sublaunch_protocol::files::doc::ReadDoc;
use sublaunch_protocol::os::processes::{Processes, RealProcesses};
use sublaunch_protocol::procinfo::Liveness;
use sublaunch_protocol::records::hook;
use sublaunch_protocol::records::results::{ResultPayload, StepResult};
use sublaunch_protocol::records::usage::Usage;

/// Why a run has no readable answer.
#[derive(Debug, thiserror::Error)]
pub enum AnswerError {
    /// The run has not written its result (it is still active, or it never started).
    #[error("run '{0}' has no result yet")]
    NotYet(String),
    /// The result file exists but cannot be used.
    #[error("{file} is not a valid result: {error}")]
    Corrupt {
        /// The result file.
        file: String,
        /// The parser's complaint.
        error: String,
    },
    /// Reading failed.
    #[error("cannot read the result of run '{run_id}': {error}")]
    Io {
        /// The run.
        run_id: String,
        /// The cause.
        error: std::io::Error,
    },
}

/// The result payload of `run_id` from `<results>/<run_id>.json`.
pub fn read_result(store: &RunStore, run_id: &str) -> Result<ResultPayload, AnswerError> {
    let name = format!("{run_id}.json");
    let results = store.root().results();
    match results.read_doc::<ResultPayload>(&name) {
        Ok(ReadDoc::Present(payload)) => Ok(payload),
        Ok(ReadDoc::Absent) => Err(AnswerError::NotYet(run_id.to_owned())),
        Ok(ReadDoc::Corrupt(corrupt)) => Err(AnswerError::Corrupt {
            file: results.join(&name).display().to_string(),
            error: corrupt.error,
        }),
        Err(error) => Err(AnswerError::Io {
            run_id: run_id.to_owned(),
            error,
        }),
    }
}

/// The run's result, or for a run that ended without one — its runner died before publishing
/// it — the result made from its status and what its agents had said (D2), as the completion
/// hook's payload is.
pub fn result_or_status(store: &RunStore, run_id: &str, run: &Dir) -> Result<ResultPayload, AnswerError> {
    read_result(store, run_id).or_else(|e| match (e, super::status_of(run)) {
        (AnswerError::NotYet(_), Some(status)) if status.is_terminal() => {
            serde_json::from_value(hook::payload_from_status(&status, &run.path().to_string_lossy()))
                .map_err(|_| AnswerError::NotYet(run_id.to_owned()))
        }
        (e, _) => Err(e),
    })
}

/// How long [`settled_result`] waits for a shim that is still writing the result.
const RESULT_SETTLE_LIMIT: std::time::Duration = std::time::Duration::from_secs(10);

/// The result of `run_id` once it is written: the shim publishes it just after the terminal
/// status (S5 order), so a caller that saw the status end may come too early. While the
/// status is terminal and the run's shim is still alive, this waits (on the run directory and
/// the shim's exit, at most 10 s) for the result instead of answering [`AnswerError::NotYet`].
pub async fn settled_result(store: &RunStore, run_id: &str, run: &Dir) -> Result<ResultPayload, AnswerError> {
    let deadline = tokio::time::Instant::now() + RESULT_SETTLE_LIMIT;
    let mut watcher: Option<super::RunWatcher> = None;
    loop {
        match read_result(store, run_id) {
            Err(AnswerError::NotYet(_)) => {}
            done => return done,
        }
        let status = super::status_of(run);
        let writer = status
            .as_ref()
            .filter(|s| s.is_terminal())
            .and_then(super::shim_of)
            .filter(|(pid, identity)| RealProcesses.liveness(*pid, identity.as_deref()) != Liveness::Dead);
        let Some((pid, identity)) = writer else {
            // A last look: the shim may have published and exited since the first.
            return result_or_status(store, run_id, run);
        };
        if tokio::time::Instant::now() >= deadline {
            return Err(AnswerError::NotYet(run_id.to_owned()));
        }
        let watcher = watcher.get_or_insert_with(|| super::RunWatcher::new(run.path()));
        watcher.watch_pid(pid, identity.as_deref());
        let _ = tokio::time::timeout_at(deadline, watcher.changed()).await;
    }
}

/// The run's answer as a person reads it: the output of its last step, or for a last step
/// that is a parallel group each task's output under a `=== <step>.<task> <agent> ===`
/// heading. A step with an output schema answers with the JSON value that was validated (not
/// the text around it), so `run --wait | jq` reads it. Not neutralised for a terminal.
pub fn answer_text(payload: &ResultPayload) -> String {
    let Some(last) = payload.results.last() else {
        return String::new();
    };
    let group: Vec<&StepResult> = match (last.facts.step_index, last.facts.task_index) {
        (step, Some(_)) => payload.results.iter().filter(|r| r.facts.step_index == step).collect(),
        _ => vec![last],
    };
    if let [only] = group.as_slice() {
        return step_answer(only);
    }
    group
        .iter()
        .map(|r| {
            let at = |index: Option<u32>| index.map_or(0, |n| u64::from(n) + 1);
            // Named as progress, `status` and `logs` name the task: `2.1 reviewer (lexer)`.
            let agent = match (&r.facts.phase, &r.facts.label) {
                (Some(phase), Some(label)) => format!("{} ({phase}: {label})", r.agent),
                (Some(tag), None) | (None, Some(tag)) => format!("{} ({tag})", r.agent),
                (None, None) => r.agent.clone(),
            };
            format!(
                "=== {}.{} {agent} ===\n{}",
                at(r.facts.step_index),
                at(r.facts.task_index),
                step_answer(r).trim_end()
            )
        })
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// A step's answer: its validated structured value as JSON (a line of its own), else its
/// output.
fn step_answer(step: &StepResult) -> String {
    match &step.structured {
        Some(value) => format!("{}\n", serde_json::to_string_pretty(value).unwrap_or_default()),
        None => step.output.clone(),
    }
}

/// The usage of the run: the result's sum, else the sum of its steps'.
pub fn run_usage(payload: &ResultPayload) -> Option<Usage> {
    payload
        .usage
        .clone()
        .or_else(|| Usage::sum(payload.results.iter().filter_map(|r| r.facts.usage.as_ref())))
}

/// One line per step that ran in an OS sandbox, for a person: the profile, what the kernel
/// enforced and what it did not (rule G28).
pub fn sandbox_summaries(payload: &ResultPayload) -> Vec<String> {
    payload
        .results
        .iter()
        .filter_map(|r| {
            let sandbox = r.facts.sandbox.as_ref()?;
            let step = r.facts.step_index.map_or(String::new(), |n| format!("step {} ", n + 1));
            let mut line = format!("{step}('{}') sandbox: {}", r.agent, sandbox.summary());
            for note in &sandbox.notes {
                line.push_str(&format!("\n  note: {note}"));
            }
            Some(line)
        })
        .collect()
}

/// One line per step whose acceptance contract was kept (G79), for a person: how far its
/// evidence went, what is short, each verification command's end, and its review's findings
/// (G81).
pub fn acceptance_summaries(payload: &ResultPayload) -> Vec<String> {
    payload
        .results
        .iter()
        .filter_map(|r| {
            let record = r.facts.acceptance.as_ref()?;
            let step = r.facts.step_index.map_or(String::new(), |n| format!("step {} ", n + 1));
            let mut line = format!("{step}('{}') acceptance: {}", r.agent, record.summary());
            for verify in &record.verify {
                let memo = if verify.memoized {
                    ", unchanged tree: not run again"
                } else {
                    ""
                };
                line.push_str(&format!(
                    "\n  {} {}: {} ({} ms{memo})",
                    verify.id,
                    verify.command,
                    serde_json::to_value(verify.status)
                        .ok()
                        .and_then(|v| v.as_str().map(str::to_owned))
                        .unwrap_or_default(),
                    verify.duration_ms
                ));
            }
            // G81: the review, and each thing it found.
            if let Some(review) = &record.review {
                // The step's line already says it when the review decided nothing or passed.
                let headline = review.summary();
                let indent = if line.contains(&headline) {
                    "  "
                } else {
                    line.push_str(&format!("\n  {headline}"));
                    "    "
                };
                for finding in &review.findings {
                    let severity = serde_json::to_value(finding.severity)
                        .ok()
                        .and_then(|v| v.as_str().map(str::to_owned))
                        .unwrap_or_default();
                    let file = finding.file.as_deref().map(|f| format!(" {f}:")).unwrap_or_default();
                    line.push_str(&format!("\n{indent}{severity}{file} {}", finding.message));
                }
                if let Some(output) = &review.output_file {
                    line.push_str(&format!("\n{indent}reviewer output: {output}"));
                }
            }
            Some(line)
        })
        .collect()
}

/// One line per step that ran in a managed worktree, for a person: where, on which branch,
/// what it committed and what it left uncommitted (nothing is merged for them).
pub fn worktree_summaries(payload: &ResultPayload) -> Vec<String> {
    payload
        .results
        .iter()
        .filter_map(|r| {
            let worktree = r.facts.worktree.as_ref()?;
            let text = |value: &str| if value.is_empty() { "?" } else { value }.to_owned();
            let at = |index: Option<u32>| index.map(|n| u64::from(n) + 1);
            let step = match (at(r.facts.step_index), at(r.facts.task_index)) {
                (Some(step), Some(task)) => format!("step {step}, task {task}"),
                (Some(step), None) => format!("step {step}"),
                _ => "the step".to_owned(),
            };
            let plural = |n: u64, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
            Some(format!(
                "{step} ('{}'): worktree {} on {}: {}, {} with uncommitted changes, {} untracked",
                r.agent,
                text(&worktree.path),
                text(&worktree.branch),
                plural(worktree.commit_count, "commit", "commits"),
                plural(worktree.uncommitted.changed_files, "file", "files"),
                worktree.uncommitted.untracked_files,
            ))
        })
        .collect()
}

/// The answer as one JSON object: `{runId, state, success, error, answer, usage, steps: [{agent,
/// step, task, success, output, structured, exitCode, error, usage, agentSession, worktree, outputFile, budgetExceeded, as, label, phase, rateLimits?}]}`.
pub fn answer_json(payload: &ResultPayload) -> Value {
    let steps: Vec<Value> = payload
        .results
        .iter()
        .map(|r| {
            let mut step = json!({
                "agent": r.agent,
                "stepIndex": r.facts.step_index,
                "taskIndex": r.facts.task_index,
                "success": r.success,
                "skipped": r.skipped,
                "output": r.output,
                "structured": r.structured,
                "exitCode": r.exit_code,
                "error": r.error,
                "failureKind": r.facts.failure_kind,
                "outputPartial": r.facts.output_partial.unwrap_or(false),
                "usage": r.facts.usage,
                "agentSession": r.facts.agent_session,
                "worktree": r.facts.worktree,
                "outputFile": r.output_file,
                "budgetExceeded": r.facts.budget_exceeded,
                "as": r.facts.output_name,
                "label": r.facts.label,
                "phase": r.facts.phase,
                "permissions": r.facts.permissions,
            });
            // Only sandboxed steps have the key: other answers keep their shape.
            if let (Some(sandbox), Some(step)) = (&r.facts.sandbox, step.as_object_mut()) {
                step.insert("sandbox".into(), json!(sandbox));
            }
            // Only steps with an acceptance contract have the key (G79).
            if let (Some(acceptance), Some(step)) = (&r.facts.acceptance, step.as_object_mut()) {
                step.insert("acceptance".into(), json!(acceptance));
            }
            // Only steps a rate limit met have the key (U6).
            if let (Some(attempts), Some(step)) = (&r.facts.rate_limits, step.as_object_mut()) {
                step.insert("rateLimits".into(), json!(attempts));
            }
            step
        })
        .collect();
    json!({
        "runId": payload.id,
        "state": payload.state,
        "success": payload.success,
        "error": payload.error,
        "failureKind": payload.failure_kind,
        "answer": answer_text(payload),
        "usage": run_usage(payload),
        "steps": steps,
    })
}
