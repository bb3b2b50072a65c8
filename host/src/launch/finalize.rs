//! After the shim's exit was observed: the fresh-launch death check (H20), then S7 through
//! protocol library (proof, marker release, overlay, event line), then `subagent:process-terminal`.

use super::blocking::blocking;
use super::context::RunContext;
use super::exit_watcher::RunnerExit;
use super::options::HostEvent;
use super::startup_failure;
use std::path::Path;
use std::sync::Arc;
use sublaunch_protocol::files::doc::ReadDoc;
use sublaunch_protocol::files::layout::names;
use sublaunch_protocol::os::faults::HostPoint;
use sublaunch_protocol::records::events::has_run_started;
use sublaunch_protocol::records::handshake::exited_before_commit_message;
use sublaunch_protocol::records::hook::FiredBy;
use sublaunch_protocol::records::lease::SessionLeases;
use sublaunch_protocol::records::proof::{self, FinalizeContext, Instance, LeaseProbe, ProcessTerminal, UnknownReason};
use sublaunch_protocol::records::status::{Status, read_status};
use sublaunch_protocol::records::unfinalized::UnfinalizedRuns;

/// How a run ended, as the host finalized it.
#[derive(Clone, Debug)]
pub struct Finished {
    /// The shim's exit.
    pub exit: RunnerExit,
    /// The proof written (or projected, when writing failed).
    pub proof: ProcessTerminal,
    /// Whether `subagent:process-terminal` was emitted (the proof is new and persisted).
    pub emitted: bool,
    /// H20: the startup failure recorded because the shim died before committing.
    pub startup_failure: Option<String>,
    /// `status.json` after finalization, if readable.
    pub status: Option<Status>,
    /// Non-fatal problems.
    pub warnings: Vec<String>,
    /// J6: the runner handed the run to this cluster job and exited; the job records the
    /// run, and its end is observed through the engine (the proof stays pending here).
    pub handed_over: Option<sublaunch_protocol::records::cluster::ClusterJob>,
}

/// Whether the shim left commit evidence: its `subagent.run.started` line, or the proceed file
/// consumed (H20).
pub(crate) fn commit_evidence(run: &sublaunch_protocol::files::dir::Dir, run_id: &str) -> std::io::Result<bool> {
    Ok(run.stat(names::RUNNER_STARTUP_PROCEED)?.is_none() || has_run_started(run, run_id)?)
}

/// H20 then S7.
pub(crate) async fn finalize_after_exit(ctx: &Arc<RunContext>, exit: &RunnerExit) -> Finished {
    let mut warnings = Vec::new();
    if let Some(handed) = handed_over(ctx, exit).await {
        return handed;
    }
    let startup_failure = died_before_commit(ctx, exit).await;
    if let Some(error) = &startup_failure
        && let sublaunch_protocol::records::status::StartupFailureOutcome::Failed(e) =
            startup_failure::persist(ctx, error, true).await
    {
        warnings.push(format!("Failed to persist the startup failure: {e}"));
    }
    ctx.fault_sleep(HostPoint::Proof).await;
    ctx.fault_sleep(HostPoint::Overlay).await;
    let context = ctx.clone();
    let runner = exit.instance(&ctx.runner_process_instance_id);
    let (runner_exit_code, runner_signal) = (exit.exit_code, exit.signal.clone());
    let outcome = blocking(move || {
        let run = (context.faults).dir(&context.run, &[HostPoint::Proof, HostPoint::Overlay])?;
        let leases = SessionLeases::open(context.root.root(), context.policy);
        let lease_probe = |file: &str| match &leases {
            Ok(leases) => leases.probe(file),
            Err(e) => LeaseProbe::Unreadable(e.to_string()),
        };
        let session_file_exists = |file: &str| Path::new(file).exists();
        let finalize_context = FinalizeContext {
            run_id: &context.run_id,
            runner_process_instance_id: &context.runner_process_instance_id,
            exit: runner,
            lease_probe: &lease_probe,
            session_file_exists: &session_file_exists,
            cluster: None,
        };
        let index = context.index().ok();
        let mut outcome = proof::finalize(&run, &finalize_context, index.as_ref(), context.policy)?;
        let mut status = read_status(&context.run).ok().and_then(ReadDoc::present);
        // The runner died after committing and before it ended the run: this host saw it, so
        // it says so, ends the agents it left and releases the marker (X8, I4).
        if let Some(pid) = status.as_ref().filter(|s| s.is_active()).and_then(|s| s.pid) {
            let tail = proof::stderr_tail(&context.run);
            let message = proof::runner_death_message(pid, runner_exit_code, runner_signal.as_deref(), tail.as_deref());
            match proof::fail_dead_run(
                &context.run,
                message,
                sublaunch_protocol::records::failure::FailureKind::RunnerLost,
                index.as_ref(),
                context.policy,
            ) {
                Ok(Some(repair)) => {
                    outcome.warnings.extend(repair.warnings);
                    if repair.agents_ended > 0 {
                        log::info!("ended {} agent process(es) the runner left behind", repair.agents_ended);
                    }
                }
                Ok(None) => {}
                Err(e) => outcome.warnings.push(format!("Failed to mark the run failed: {e}")),
            }
            status = read_status(&context.run).ok().and_then(ReadDoc::present);
        }
        // The shim is gone: an end it did not record is recorded now (D6), and an end its
        // hook did not get is delivered (D7).
        if let Err(e) =
            sublaunch_protocol::records::stream::record_end_if_ended(context.root.root().path(), &context.run)
        {
            outcome
                .warnings
                .push(format!("Failed to record the run's end in the event stream: {e}"));
        }
        if let Some(runner) = &context.on_end {
            let sweep = super::completion_hook::Sweep {
                fired_by: FiredBy::Launcher,
                only_run: Some(&context.run_id),
                forced: false,
            };
            match super::completion_hook::sweep(context.root.runs(), context.root.results(), sweep, |_| false, runner) {
                Ok(swept) => outcome
                    .warnings
                    .extend(swept.into_iter().filter_map(|s| match s.action {
                        super::completion_hook::SweepAction::Failed(why) => Some(format!(
                            "the completion hook of {} was not delivered: {why}",
                            context.run_id
                        )),
                        _ => None,
                    })),
                Err(e) => outcome.warnings.push(format!("Failed to read the outbox: {e}")),
            }
        }
        // The end is final: the run sheds its empty and scratch files (after the hook, whose
        // helper may write beside it).
        if outcome.proof.state.is_final() && status.as_ref().is_some_and(Status::is_terminal) {
            proof::shed_after_end(&context.run, &mut outcome.warnings);
        }
        // I9: the proof is final now (and the status terminal, the hook fired or claimed).
        if let Err(e) = UnfinalizedRuns::new(context.root.runs()).settle_if_final(
            &context.run_id,
            Some(&context.run),
            context.policy,
        ) {
            outcome
                .warnings
                .push(format!("Failed to remove the unfinalized-run entry: {e}"));
        }
        Ok((outcome, status))
    })
    .await;
    match outcome {
        Ok((outcome, status)) => {
            warnings.extend(outcome.warnings.iter().cloned());
            let emitted = outcome.should_emit();
            if emitted {
                ctx.hooks.event(&HostEvent::ProcessTerminal {
                    run_id: ctx.run_id.clone(),
                    proof: outcome.proof.clone(),
                });
            }
            Finished {
                exit: exit.clone(),
                proof: outcome.proof,
                emitted,
                startup_failure,
                status,
                warnings,
                handed_over: None,
            }
        }
        Err(e) => {
            let mut proof = ProcessTerminal::unknown(
                &ctx.run_id,
                &ctx.runner_process_instance_id,
                UnknownReason::ProofWriteFailed,
                Some(format!("Failed to persist process-terminal proof. ({e})")),
            );
            proof.instances = Some(vec![Instance::Runner(exit.instance(&ctx.runner_process_instance_id))]);
            warnings.push(e.to_string());
            Finished {
                exit: exit.clone(),
                proof,
                emitted: false,
                startup_failure,
                status: None,
                warnings,
                handed_over: None,
            }
        }
    }
}

/// J6, J8: a runner that handed its run to a cluster job exited 0 leaving the run to the job:
/// nothing is finalized from this exit (the job may be running, or writing its end records).
async fn handed_over(ctx: &Arc<RunContext>, exit: &RunnerExit) -> Option<Finished> {
    let context = ctx.clone();
    let status = blocking(move || Ok(read_status(&context.run).ok().and_then(ReadDoc::present)))
        .await
        .ok()
        .flatten()?;
    let job = status.cluster.clone().filter(|job| !job.job_id.is_empty())?;
    let context = ctx.clone();
    let proof = blocking(move || {
        Ok(context
            .run
            .read_doc::<ProcessTerminal>(names::PROCESS_TERMINAL)?
            .present())
    })
    .await
    .ok()
    .flatten()
    .unwrap_or_else(|| ProcessTerminal::pending(&ctx.run_id, &ctx.runner_process_instance_id));
    Some(Finished {
        exit: exit.clone(),
        proof,
        emitted: false,
        startup_failure: None,
        status: Some(status),
        warnings: Vec::new(),
        handed_over: Some(job),
    })
}

/// H20: the proceed file is still there and no `subagent.run.started` line exists → the shim
/// died before committing; returns the startup error to persist.
async fn died_before_commit(ctx: &Arc<RunContext>, exit: &RunnerExit) -> Option<String> {
    let context = ctx.clone();
    let proceed_present = blocking(move || Ok(context.run.stat(names::RUNNER_STARTUP_PROCEED)?.is_some()))
        .await
        .unwrap_or(false);
    if !proceed_present {
        return None;
    }
    let context = ctx.clone();
    let started = blocking(move || has_run_started(&context.run, &context.run_id))
        .await
        .unwrap_or(true);
    (!started).then(|| exited_before_commit_message(exit.exit_code, exit.signal.as_deref()))
}
