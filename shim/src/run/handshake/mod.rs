//! The runner half of the startup handshake (K9–K15, R5, R6, R6a): the waits for the host's
//! controls, the `runner-startup.json` states, and the pre-commit failure path (K10, R7, R8).
//!
//! Each wait re-reads the authoritative control file (K14) whenever the doorbell rings, on a
//! safety tick, or — without a doorbell — on the K13 poll backoff (50 ms doubling to 250 ms).
//! Doorbell EOF makes the shim check the file **once more** (the host may have written proceed
//! and exited right away, a valid commit) and then fail with
//! `Host closed the startup channel before proceed.` (R8, exit 4). A stop signal fails with
//! `Runner received <SIG> before startup commit.` (X9, R7, exit 3).

pub mod commit;

use crate::context::faults::Fired;
use crate::context::{Ctx, HeldLease};
use crate::process::signals;
use serde_json::Value;
use std::time::{Duration, Instant};
use sublaunch_protocol::files::doc::to_pretty_bytes;
use sublaunch_protocol::files::durability::DocKind;
use sublaunch_protocol::files::layout::names;
use sublaunch_protocol::os::clock::Deadline;
use sublaunch_protocol::os::faults::{CORRUPT_PAYLOAD, ShimPoint};
use sublaunch_protocol::procinfo::{hostname, own_start_identity};
use sublaunch_protocol::records::handshake::{
    ControlAction, HOST_CLOSED_MESSAGE, PollBackoff, ShimObservation, StartupReport, combine_shim, evaluate_shim,
    shim_control_timeout, shim_timeout_message,
};
use sublaunch_protocol::records::lease::{
    LeaseError, LeaseIdentity, LeaseRequest, SessionLeases, canonical_session_file,
};

/// How often the control file is re-read although the doorbell is silent.
const SAFETY_TICK: Duration = Duration::from_millis(1_000);

/// Why the handshake did not reach the commit point.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PreCommitError {
    /// A K9 failure, a lease conflict, an unwritable state … (exit 3).
    Failed(String),
    /// Doorbell EOF before proceed (R8, exit 4).
    HostVanished,
    /// A stop signal before commit (X9, exit 3).
    Signal(i32),
    /// The test parent is gone (R4, exit 1).
    ParentGone,
}

impl PreCommitError {
    /// The error text published in `runner-startup.json` and on stderr.
    pub fn message(&self) -> String {
        match self {
            Self::Failed(message) => message.clone(),
            Self::HostVanished => HOST_CLOSED_MESSAGE.to_owned(),
            Self::Signal(signal) => format!("Runner received {} before startup commit.", signals::name(*signal)),
            Self::ParentGone => "The test parent process exited before startup commit.".to_owned(),
        }
    }

    /// R14 exit code.
    pub fn exit_code(&self) -> i32 {
        match self {
            Self::HostVanished => crate::process::exit::HOST_VANISHED,
            Self::ParentGone => crate::process::exit::RECORDING_FAILED,
            Self::Failed(_) | Self::Signal(_) => crate::process::exit::HANDSHAKE_FAILED,
        }
    }
}

fn fired(outcome: Fired) -> Result<(), PreCommitError> {
    match outcome {
        Fired::Continue => Ok(()),
        Fired::Stopped(signal) => Err(PreCommitError::Signal(signal)),
    }
}

/// Runs the fresh (K11) or revival (K3, R6) handshake up to the commit point.
pub fn run(ctx: &mut Ctx) -> Result<(), PreCommitError> {
    if ctx.cfg.revival_lease.is_some() {
        revival(ctx)
    } else {
        let token = ctx.cfg.launch_barrier_token.clone().unwrap_or_default();
        proceed(ctx, &token)
    }
}

/// Waits for proceed and takes it: the commit point seen from the shim.
fn proceed(ctx: &mut Ctx, token: &str) -> Result<(), PreCommitError> {
    loop {
        wait_control(ctx, ControlAction::Proceed, token)?;
        fired(ctx.fire(ShimPoint::BeforeCommit))?;
        if claim_proceed(ctx) {
            return Ok(());
        }
    }
}

fn revival(ctx: &mut Ctx) -> Result<(), PreCommitError> {
    let token = acquire_lease(ctx)?;
    let owner = ctx.lease.as_ref().map_or(Value::Null, |held| {
        serde_json::to_value(held.lease.owner()).unwrap_or(Value::Null)
    });
    fired(ctx.fire(ShimPoint::BeforeReady))?;
    write_report(ctx, StartupReport::ready(&token, ctx.pid, owner))?;
    fired(ctx.fire(ShimPoint::AfterReady))?;
    wait_control(ctx, ControlAction::Ack, &token)?;
    write_report(ctx, StartupReport::acknowledged(&token, ctx.pid))?;
    fired(ctx.fire(ShimPoint::AfterAcknowledged))?;
    wait_control(ctx, ControlAction::Confirm, &token)?;
    write_report(ctx, StartupReport::confirmed(&token, ctx.pid))?;
    fired(ctx.fire(ShimPoint::AfterConfirmed))?;
    proceed(ctx, &token)
}

/// R6a: takes the session lease; its token is T of the revival handshake.
pub(crate) fn acquire_lease(ctx: &mut Ctx) -> Result<String, PreCommitError> {
    let Some(revival) = ctx.cfg.revival_lease.clone() else {
        return Err(PreCommitError::Failed("Runner revival lease is missing.".into()));
    };
    let session_file = canonical_session_file(std::path::Path::new(&revival.session_file))
        .map_or_else(|_| revival.session_file.clone(), |p| p.to_string_lossy().into_owned());
    let unopened =
        |e: std::io::Error| PreCommitError::Failed(format!("Failed to open the session lease directory: {e}"));
    let root =
        sublaunch_protocol::files::dir::Dir::create_private_with(&ctx.paths.root, ctx.os.clone()).map_err(unopened)?;
    let leases = SessionLeases::open(&root, ctx.policy).map_err(unopened)?;
    let request = LeaseRequest {
        canonical_session_file: session_file.clone(),
        run_id: revival.run_id.clone(),
        source_run_id: revival.source_run_id.clone(),
        parent_session_id: revival.parent_session_id.clone(),
    };
    let identity = LeaseIdentity {
        pid: ctx.pid,
        hostname: hostname(),
        process_start_identity: own_start_identity(),
        oracle: ctx.os.processes.as_ref(),
    };
    match leases.acquire(&request, &identity) {
        Ok(lease) => {
            let token = lease.token().to_owned();
            ctx.lease = Some(HeldLease { lease, session_file });
            Ok(token)
        }
        Err(LeaseError::Conflict(message)) => Err(PreCommitError::Failed(message)),
        Err(LeaseError::Io(e)) => Err(PreCommitError::Failed(format!(
            "Failed to acquire the session lease: {e}"
        ))),
    }
}

/// Writes a handshake state (with the pending test-hook modifier) and rings the doorbell.
fn write_report(ctx: &mut Ctx, mut report: StartupReport) -> Result<(), PreCommitError> {
    let modifier = ctx.faults.take_modifier();
    if let Some(state) = modifier.state {
        report.state = state;
    }
    if let Some(token) = modifier.token {
        report.token = Some(token.map_or(Value::Null, Value::String));
    }
    if modifier.skip {
        return Ok(());
    }
    if !modifier.doorbell_only {
        let bytes = if modifier.corrupt {
            CORRUPT_PAYLOAD.to_vec()
        } else {
            to_pretty_bytes(&report)
        };
        ctx.open_run()
            .and_then(|run| {
                run.write(
                    names::RUNNER_STARTUP,
                    &bytes,
                    ctx.policy.for_kind(DocKind::StartupReport),
                )
            })
            .map_err(|e| {
                PreCommitError::Failed(format!("Failed to write runner startup state '{}': {e}", report.state))
            })?;
    }
    ctx.doorbell.ring(&report.state);
    Ok(())
}

/// K9 (+K15) over the files of `action`.
fn observe(ctx: &Ctx, action: ControlAction, token: &str) -> ShimObservation {
    let run = match ctx.open_run() {
        Ok(run) => run,
        Err(e) => {
            return ShimObservation::Failed(format!(
                "Failed to read runner startup control '{}': {e}",
                ctx.paths.run.join(action.file_name()).display()
            ));
        }
    };
    combine_shim(action.files_to_watch().iter().map(|name| {
        let read = run.read_doc::<Value>(name);
        evaluate_shim(&read, action, token, &run.join(name))
    }))
}

/// Waits for the control `action` carrying `token` (K9, K13, K14).
fn wait_control(ctx: &mut Ctx, action: ControlAction, token: &str) -> Result<(), PreCommitError> {
    let timeout = shim_control_timeout();
    let deadline = Deadline::after(ctx.clock.as_ref(), timeout);
    let mut backoff = PollBackoff::default();
    loop {
        if let Some(signal) = signals::take().stops().first() {
            return Err(PreCommitError::Signal(*signal));
        }
        match observe(ctx, action, token) {
            ShimObservation::Reached => return Ok(()),
            ShimObservation::Failed(message) => return Err(PreCommitError::Failed(message)),
            ShimObservation::KeepWaiting => {}
        }
        if ctx.doorbell.host_closed() {
            return Err(PreCommitError::HostVanished);
        }
        let now = Instant::now();
        if ctx.parent.gone(now) {
            return Err(PreCommitError::ParentGone);
        }
        let left = deadline.instant().saturating_duration_since(now);
        if left.is_zero() {
            return Err(PreCommitError::Failed(shim_timeout_message(timeout, action)));
        }
        let tick = if ctx.doorbell.is_open() {
            SAFETY_TICK
        } else {
            backoff.next().unwrap_or(SAFETY_TICK)
        };
        let mut wake = left.min(tick);
        if let Some(due) = ctx.parent.due() {
            wake = wake.min(due.saturating_duration_since(now));
        }
        let mut fds: Vec<libc::pollfd> = ctx.doorbell.pollfd().into_iter().collect();
        if signals::wait(&mut fds, Some(wake)) > 0 {
            // Messages are wake-ups only: the file is re-read at the top of the loop.
            let _ = ctx.doorbell.drain();
        }
    }
}

/// Takes the proceed file away before acting on it (K8, K12); whether it was still there. A host whose proceed write
/// failed after the rename (its directory fsync, A4) withdraws the file by unlinking it; the
/// single unlink that succeeds decides: when the host's came first, the file is gone here
/// and the shim keeps waiting (to be terminated) instead of starting an agent the host
/// reported as not started. Any other removal error leaves the commit as it was (K7).
fn claim_proceed(ctx: &Ctx) -> bool {
    let Ok(run) = ctx.open_run() else { return true };
    match run.unlink_claim(names::RUNNER_STARTUP_PROCEED) {
        Ok(claimed) => claimed,
        Err(e) => {
            eprintln!("sublaunch-shim: cannot remove {}: {e}", names::RUNNER_STARTUP_PROCEED);
            true
        }
    }
}

/// K10 + R7/R8: publishes the pre-commit error, releases the lease, returns the exit code.
pub fn fail(ctx: &mut Ctx, error: &PreCommitError) -> i32 {
    let message = error.message();
    let report = StartupReport::error(ctx.pid, &message);
    match ctx.open_run().and_then(|run| {
        run.write_doc(
            names::RUNNER_STARTUP,
            &report,
            ctx.policy.for_kind(DocKind::StartupReport),
        )
    }) {
        Ok(()) => ctx.doorbell.ring("error"),
        Err(e) => eprintln!("sublaunch-shim: cannot publish the startup error: {e}"),
    }
    // R8: no observer will record this run, so the shim writes the S5 shape itself.
    // Nor release its active-run marker (X12): the shim does that too.
    if *error == PreCommitError::HostVanished
        && let Ok(run) = ctx.open_run()
    {
        ctx.persist_startup_failure(&run, &message, false);
        ctx.record_not_started(&run);
        ctx.release_marker(&run);
    }
    ctx.release_lease();
    eprintln!("Subagent runner error: {message}");
    error.exit_code()
}
