//! Pre-commit bookkeeping (H13–H15): the initial status and the active-run marker, the
//! lifecycle sidecars, the capacity claim. Each failure is the launch error of its rule.

use super::blocking::blocking;
use super::context::{RunContext, warn};
use super::error::{LaunchError, cause};
use super::run_dir;
use super::setup::Setup;
use std::sync::Arc;
use sublaunch_protocol::files::atomic::Durability;
use sublaunch_protocol::files::doc::to_pretty_bytes;
use sublaunch_protocol::files::durability::DocKind;
use sublaunch_protocol::files::layout::names;
use sublaunch_protocol::os::faults::HostPoint;
use sublaunch_protocol::os::processes::RealProcesses;
use sublaunch_protocol::procinfo;
use sublaunch_protocol::records::capacity::{CapacityQueue, TicketRequest};
use sublaunch_protocol::records::config::RunnerConfig;
use sublaunch_protocol::records::cooldown::{Cooldown, Cooldowns, first_providers};
use sublaunch_protocol::records::proof::{Candidate, ProcessTerminal};
use sublaunch_protocol::records::status::InitialStatus;
use sublaunch_protocol::records::status::Status;
use sublaunch_protocol::records::stream::{Stream, What};
use sublaunch_protocol::records::unfinalized::UnfinalizedRuns;

/// The S2 status of the spawned shim.
pub(crate) fn initial_status_document(
    ctx: &RunContext,
    setup: &Setup,
    pid: u32,
    start_identity: Option<String>,
) -> Status {
    let mut status = Status::initial(&InitialStatus {
        run_id: ctx.run_id.clone(),
        runner_process_instance_id: ctx.runner_process_instance_id.clone(),
        session_id: ctx.caller().session_id.clone(),
        completion_owner_id: ctx.caller().completion_owner_id.clone(),
        tool_call_id: ctx.caller().tool_call_id.clone(),
        mode: setup.mode.to_owned(),
        steps: setup.agents.clone(),
        pid,
        pid_namespace_scope: procinfo::host_pid_namespace_scope(),
        pid_start_identity: start_identity,
        now: ctx.os.clock.wall_ms(),
    });
    status.cwd = Some(setup.cwd.clone());
    status.boot_id = procinfo::boot_id();
    run_dir::add_host_identity(&mut status);
    status
}

/// The spawned shim, as its capacity ticket names it.
pub(crate) struct Runner {
    /// Its pid.
    pub pid: u32,
    /// Its start identity.
    pub identity: Option<String>,
}

/// Takes the run's capacity ticket (before H13, so the initial status can say `queued`);
/// returns whether the run holds a slot. A capped run waits behind earlier waiting runs.
pub(crate) async fn take_ticket(ctx: &Arc<RunContext>, runner: Runner) -> Result<bool, LaunchError> {
    let context = ctx.clone();
    blocking(move || {
        let queue = CapacityQueue::open(context.root.runs())?;
        let request = TicketRequest {
            run_id: &context.run_id,
            pid: runner.pid,
            pid_start_identity: runner.identity.as_deref(),
            max_active: context.launch.limits.max_active,
        };
        let admission = queue.lock()?.take(&request, &RealProcesses)?;
        Ok(admission.ticket.claimed)
    })
    .await
    .map_err(|e| LaunchError::Ticket(Arc::new(e)))
}

/// The longest rate-limit cooldown running for a provider of the steps the run starts first
/// (U7); cooldowns that cannot be read do not hold a launch back.
pub(crate) async fn provider_cooling(ctx: &Arc<RunContext>, config: &RunnerConfig) -> Option<Cooldown> {
    let providers = first_providers(config);
    if providers.is_empty() {
        return None;
    }
    let context = ctx.clone();
    blocking(move || {
        let now = context.os.clock.wall_ms();
        Ok(Cooldowns::open_existing(context.root.root())?
            .map(|cooldowns| cooldowns.longest(&providers, now))
            .transpose()?
            .flatten())
    })
    .await
    .unwrap_or(None)
}

/// H13: writes the initial status (S2), then records the run as unfinalized (I9) and creates
/// the active-run marker (I2, I3).
pub(crate) async fn initial_status(ctx: &Arc<RunContext>, status: Status) -> Result<(), LaunchError> {
    ctx.fault_sleep(HostPoint::StatusInitial).await;
    let launched = What::Launched {
        agent: status
            .steps
            .as_ref()
            .and_then(|steps| steps.first())
            .and_then(|step| step.agent.clone())
            .unwrap_or_default(),
        mode: status.mode.clone().unwrap_or_default(),
        cwd: status.cwd.clone().unwrap_or_default(),
        parent: ctx.launch.launched_from.as_ref().map(|from| from.run_id.clone()),
    };
    let queued = status.state == Some(sublaunch_protocol::records::status::RunState::Queued);
    let fail = |e: std::io::Error| LaunchError::InitialStatus(Arc::new(e));
    let context = ctx.clone();
    blocking(move || {
        // Staged: the proceed file, written durably in the same directory before anyone is
        // told the run started, fsyncs the directory for both (A4, K7).
        let durability = context.policy.for_kind(DocKind::InitialStatus);
        let bytes = to_pretty_bytes(&status);
        (context.faults).write(
            &context.run,
            HostPoint::StatusInitial,
            names::STATUS,
            &bytes,
            durability.staged(),
        )?;
        // The run's own name in <runs>, created with its directory (`run_dir::create`), made
        // durable here rather than there so that the shim is spawned one fsync sooner and
        // starts while the host writes. On a journaling filesystem the status's fsync has
        // usually committed the directory's creation already, and this one finds little to do.
        if durability == Durability::Durable {
            context.root.runs().sync()?;
        }
        Ok(())
    })
    .await
    .map_err(fail)?;
    ctx.fault_sleep(HostPoint::Index).await;
    let context = ctx.clone();
    blocking(move || {
        if let Some(error) = context.faults.step_error(HostPoint::Index) {
            return Err(error);
        }
        // I9: from here on the run's proof is pending until someone makes it final; a lister
        // finds it through this entry after the shim released its marker (S13). Durable with
        // the launch commit, as the status is.
        let durable = context.policy.for_kind(DocKind::InitialStatus) == Durability::Durable;
        UnfinalizedRuns::new(context.root.runs()).record(&context.run_id, durable)?;
        let outcome =
            context
                .index()?
                .mark_checked(&context.run_id, context.caller().tool_call_id.as_deref(), &context.run)?;
        if let Some(alias) = outcome.alias_error {
            warn(&format!(
                "could not create the tool-call alias of run '{}': {alias}",
                context.run_id
            ));
        }
        // D4: the run is in the stream once a lister can find it.
        let stream = Stream::under(context.root.root().path());
        let now = context.os.clock.wall_ms();
        let mut events = vec![launched];
        if queued {
            events.push(What::Queued {
                reason: "waiting for a free slot (maxActive)".to_owned(),
            });
        }
        for what in events {
            if let Err(e) = stream.append(&context.run_id, now, what) {
                warn(&format!("could not append to the event stream: {e}"));
            }
        }
        Ok(())
    })
    .await
    .map_err(fail)
}

/// H14: the initial candidate and the pending proof.
pub(crate) async fn sidecars(ctx: &Arc<RunContext>) -> Result<(), LaunchError> {
    ctx.fault_sleep(HostPoint::Sidecar).await;
    let context = ctx.clone();
    blocking(move || {
        let id = &context.run_id;
        let instance = &context.runner_process_instance_id;
        let write = |name: &str, bytes: Vec<u8>, kind: DocKind| {
            let options = context.policy.for_kind(kind);
            (context.faults).write(&context.run, HostPoint::Sidecar, name, &bytes, options)
        };
        write(
            names::PROCESS_TERMINAL_CANDIDATE,
            to_pretty_bytes(&Candidate::initial(id, instance)),
            DocKind::InitialCandidate,
        )?;
        write(
            names::PROCESS_TERMINAL,
            to_pretty_bytes(&ProcessTerminal::pending(id, instance)),
            DocKind::PendingProof,
        )
    })
    .await
    .map_err(|e| LaunchError::Sidecars(Arc::new(e)))
}

/// H15: the embedder's capacity claim for this runner instance.
pub(crate) async fn capacity(ctx: &RunContext) -> Result<(), LaunchError> {
    ctx.fault_sleep(HostPoint::Capacity).await;
    if let Some(error) = ctx.faults.step_error(HostPoint::Capacity) {
        return Err(LaunchError::Capacity(cause(error)));
    }
    ctx.hooks
        .mark_started(&ctx.runner_process_instance_id)
        .map_err(|e| LaunchError::Capacity(cause(e)))
}
