//! A launch that fails before the runner proceeded (K8, S5, X1, H18, X12): persist the failure,
//! withdraw the run from the index, terminate the shim, roll back capacity — in that order, so
//! the exit watcher's finalization (which waits for the launch to settle, H19) sees the
//! persisted failure.

use super::blocking::blocking;
use super::context::{RunContext, warn};
use super::exit_watcher::ProcessControl;
use super::terminate::terminate_runner;
use std::sync::Arc;
use sublaunch_protocol::os::faults::HostPoint;
use sublaunch_protocol::records::capacity::CapacityQueue;
use sublaunch_protocol::records::status::{RunState, StartupFailure, StartupFailureOutcome, persist_startup_failure};
use sublaunch_protocol::records::unfinalized::UnfinalizedRuns;

/// S5 under the status lock. Errors are reported, never returned: they must not replace the
/// launch error (F10).
pub(crate) async fn persist(ctx: &Arc<RunContext>, error: &str, keep_terminal_status: bool) -> StartupFailureOutcome {
    ctx.fault_sleep(HostPoint::StartupFailure).await;
    let context = ctx.clone();
    let failure = StartupFailure {
        run_id: ctx.run_id.clone(),
        runner_process_instance_id: ctx.runner_process_instance_id.clone(),
        session_id: ctx.caller().session_id.clone(),
        completion_owner_id: ctx.caller().completion_owner_id.clone(),
        error: error.to_owned(),
        step_count: ctx.launch.plan.steps.len(),
        // The initial candidate (H14) names no session: a shim that dies before committing
        // never ran a writer, so its proof does not wait for a lease it may have left (F26).
        session_file: None,
        revival_lease_token: None,
        now: ctx.os.clock.wall_ms(),
        keep_terminal_status,
    };
    let outcome = blocking(move || {
        let run = context.faults.dir(&context.run, &[HostPoint::StartupFailure])?;
        Ok(persist_startup_failure(&run, &failure, context.policy))
    })
    .await;
    match outcome {
        Ok(outcome) => outcome,
        Err(e) => StartupFailureOutcome::Failed(e),
    }
}

/// X12/H5: removes the run's active-run marker (with its terminal entry when the status is
/// `failed`), its unfinalized-run entry once the persisted failure made its proof final (I9),
/// and the cfg file the shim may not have read. Best effort.
pub(crate) async fn withdraw(ctx: &Arc<RunContext>) {
    let context = ctx.clone();
    let result = blocking(move || {
        let release = context.index()?.release(
            &context.run_id,
            &RunState::Failed,
            context.caller().tool_call_id.as_deref(),
            Some(&context.run),
        );
        let _ = std::fs::remove_file(&context.cfg_path);
        let settled = UnfinalizedRuns::new(context.root.runs()).settle_if_final(
            &context.run_id,
            Some(&context.run),
            context.policy,
        );
        release.map(|_| ()).and(settled.map(|_| ()))
    })
    .await;
    if let Err(e) = result {
        warn(&format!(
            "could not release the active-run marker of '{}': {e}",
            ctx.run_id
        ));
    }
}

/// H18: the embedder's capacity rollback, and the run's capacity ticket removed.
pub(crate) fn rollback_capacity(ctx: &RunContext) {
    let released = CapacityQueue::open_existing(ctx.root.runs())
        .and_then(|queue| queue.map_or(Ok(false), |q| q.release(&ctx.run_id)));
    if let Err(e) = released {
        warn(&format!(
            "could not remove the capacity ticket of '{}': {e}",
            ctx.run_id
        ));
    }
    if !ctx
        .hooks
        .rollback_before_runner_proceed(&ctx.runner_process_instance_id)
    {
        ctx.hooks.rollback();
    }
}

/// FAIL_PRE_PROCEED: persist (S5), withdraw, terminate (X1), roll back capacity. Returns
/// `terminationObserved`.
pub(crate) async fn fail_pre_proceed(ctx: &Arc<RunContext>, control: &dyn ProcessControl, error: &str) -> bool {
    if let StartupFailureOutcome::Failed(e) = persist(ctx, error, false).await {
        warn(&format!(
            "could not persist the startup failure of '{}': {e}",
            ctx.run_id
        ));
    }
    withdraw(ctx).await;
    let termination = terminate_runner(control, ctx.terminate_grace).await;
    rollback_capacity(ctx);
    termination.observed
}
