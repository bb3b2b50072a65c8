//! Asking a run to stop: the request file the shim watches (`<run>/control/stop.json`, R12).
//! The shim ends the run's whole process tree and records `stopped`; [`stop_and_wait`] waits
//! for that. A run handed to a cluster (J9) is stopped through its engine as well: a job still
//! queued is cancelled and the run recorded `stopped` here (its runner never started); a
//! running job's runner that has not recorded its end after a grace is sent SIGTERM through
//! the engine (its own ladder then ends its agents), and after a second grace the job is
//! cancelled, which ends every process of it.

use super::RunStore;
use super::wait::{WaitEnd, wait_terminal};
use crate::Environment;
use crate::cluster::engine::{Cancel, JobLook};
use crate::launch::tokio;
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;
use sublaunch_protocol::files::dir::Dir;
use sublaunch_protocol::files::durability::DocKind;
use sublaunch_protocol::files::layout::names;
use sublaunch_protocol::os::clock::{Clock, SystemClock};
use sublaunch_protocol::records::cluster::ClusterJob;
use sublaunch_protocol::records::failure::FailureKind;
use sublaunch_protocol::records::status::{Change, RunState, modify_status};

/// How long a cluster job's runner has to record its end after the stop request before the
/// engine sends it SIGTERM.
const RUNNER_GRACE: Duration = Duration::from_secs(3);
/// How long after that SIGTERM before the engine cancels the whole job.
const JOB_GRACE: Duration = Duration::from_secs(8);

/// Writes the stop request of `run_id` (`requested_by` names who asks, e.g. `sublaunch-cli`).
pub fn request_stop(run: &Dir, run_id: &str, requested_by: &str, env: &Environment) -> std::io::Result<()> {
    let request = json!({
        "version": 1,
        "action": "stop",
        "runId": run_id,
        "requestedAt": SystemClock.wall_ms(),
        "requestedBy": requested_by,
    });
    let control = run.ensure_child(names::CONTROL_DIR)?;
    control.write_doc(
        names::CONTROL_STOP,
        &request,
        env.durability().for_kind(DocKind::ControlFile),
    )
}

/// Requests the stop of `run_id` and waits at most `limit` for the run to record its end;
/// a run on a cluster is stopped through its engine as well (see the module documentation).
pub async fn stop_and_wait(
    store: &Arc<RunStore>,
    run: &Arc<Dir>,
    run_id: &str,
    requested_by: &str,
    env: &Environment,
    limit: Duration,
) -> std::io::Result<WaitEnd> {
    request_stop(run, run_id, requested_by, env)?;
    let job = super::status_of(run)
        .and_then(|s| s.cluster)
        .filter(|j| !j.job_id.is_empty());
    let Some(job) = job else {
        return Ok(wait_terminal(store, run, Some(limit)).await);
    };
    let started = tokio::time::Instant::now();
    let left = |limit: Duration| limit.saturating_sub(started.elapsed());
    let (s, r, j) = (store.clone(), run.clone(), job.clone());
    let queued = tokio::task::spawn_blocking(move || stop_if_queued(&s, &r, &j))
        .await
        .unwrap_or(Ok(false))?;
    if !queued {
        for (grace, how) in [(RUNNER_GRACE, Cancel::AskRunner), (JOB_GRACE, Cancel::Job)] {
            if let WaitEnd::Terminal(status) = wait_terminal(store, run, Some(grace.min(left(limit)))).await {
                return Ok(WaitEnd::Terminal(status));
            }
            if left(limit).is_zero() {
                return Ok(WaitEnd::TimedOut);
            }
            let (s, j) = (store.clone(), job.clone());
            let cancelled = tokio::task::spawn_blocking(move || s.engine().cancel(&j, how)).await;
            if let Ok(Err(e)) = cancelled {
                log::warn!("cannot cancel Slurm job {}: {e}", job.job_id);
            }
        }
    }
    Ok(wait_terminal(store, run, Some(left(limit))).await)
}

/// A job still waiting in the queue is cancelled and its run recorded `stopped`, unless its
/// runner started meanwhile (it then claimed the run, and records the stop itself). Whether
/// the job was queued.
fn stop_if_queued(store: &RunStore, run: &Dir, job: &ClusterJob) -> std::io::Result<bool> {
    if !matches!(store.look_at_job(job), JobLook::Queued { .. }) {
        return Ok(false);
    }
    if let Err(e) = store.engine().cancel(job, Cancel::Job) {
        log::warn!("cannot cancel Slurm job {}: {e}", job.job_id);
        return Ok(false);
    }
    let now = run.os().clock.wall_ms();
    let durability = store.policy().for_kind(DocKind::TerminalStatus);
    let message = format!(
        "Stopped while queued: Slurm job {} was cancelled before it started.",
        job.job_id
    );
    let stopped = modify_status(run, false, |status| {
        let claimed = status.cluster.as_ref().is_some_and(|j| j.node.is_some());
        if status.is_terminal() || claimed {
            return (Change::Keep, None);
        }
        status.mark_terminal(RunState::Stopped, now, Some(message), Some(FailureKind::Stopped));
        (Change::Write(durability), status.run_id.clone())
    })
    .map_err(|e| std::io::Error::other(e.to_string()))?;
    if let Some(run_id) = stopped {
        let tool_call = super::status_of(run).and_then(|s| s.tool_call_id);
        if let Err(e) = store
            .index()
            .release(&run_id, &RunState::Stopped, tool_call.as_deref(), Some(run))
        {
            log::warn!("cannot release the active-run marker of '{run_id}': {e}");
        }
    }
    Ok(true)
}
