//! `sublaunch-shim`, the detached runner of sublaunch runs (host-and-shim.md §1.2, R1–R16,
//! K9–K15, X4–X9, S3/S4/S10–S12).
//!
//! The host spawns the shim, which finishes the startup handshake, runs and supervises the
//! agent of each step, and records how the run ended. One thread, one `ppoll(2)` loop per
//! phase, no async runtime: the shim stays small (a few MiB of RSS) and starts in well under
//! a millisecond.
//!
//! Map of the crate:
//! * start — `start::hygiene` (doorbell fd, session, signals, umask, CLOEXEC, subreaper),
//!   `start::signals` (counted, blocked outside `ppoll`), `start::invocation` (R1/R2), `start::context`,
//!   `start::parent` (R4), `start::faults` (§T fault points and the simulated full disk);
//! * handshake — `handshake::doorbell` (K14), `handshake` (K9–K11, K15, R6a, R7, R8), `handshake::commit` (K12);
//! * supervision — `supervise::run` (R9, R16), `workflow` (chains, parallel groups, concurrency,
//!   failFast, `{task}`/`{previous}`/`{chain_dir}`), `supervise` (the event loop over the
//!   running agents), `supervise::child` (one agent), `end::step_end` (its outcome), `adapter` (argv and
//!   output parsing per agent kind), `end::verdict`, `end::structured` and `end::model_check` (judging
//!   the output), `supervise::spawn` (R10), `start::env` (H10), `supervise::output` and `supervise::streams` (R11),
//!   `supervise::control` (R12 inbox), `supervise::reaper` (waitid, X8 enumeration), `supervise::tree` (X4/X6/X8/X9),
//!   `supervise::book` (status and marker writes, A9/I7);
//! * end — `end::record` (R13, S11, S12, X11), `end::hook` (the completion hook, after
//!   the end records; also `sublaunch-shim --on-end`, which hosts start for a shim that died), `end::exit` (R14).

#![warn(missing_docs)]

pub(crate) mod adapter;
pub mod end;
pub(crate) mod handshake;
pub(crate) mod remote;
pub mod start;
pub(crate) mod supervise;
pub(crate) mod workflow;

use start::context::{Ctx, Paths};
use std::sync::Arc;
use sublaunch_protocol::durability::DurabilityPolicy;
use sublaunch_protocol::os::Os;
use sublaunch_protocol::os::clock::{ShiftedClock, SystemClock};
use sublaunch_protocol::os::faults::ShimPoint;

/// Runs the shim and returns its exit code (R14).
pub fn main() -> i32 {
    if std::env::args_os()
        .nth(1)
        .is_some_and(|arg| arg == end::hook::HELPER_ARG)
    {
        return end::hook::helper_main();
    }
    let prepared = start::hygiene::prepare();
    for note in &prepared.notes {
        eprintln!("sublaunch-shim: {note}");
    }
    let pid = std::process::id();
    let mut faults = match start::faults::Faults::from_env() {
        Ok(faults) => faults,
        Err(e) => {
            end::exit::report(&e);
            return end::exit::INVALID_CONFIG;
        }
    };
    let mut doorbell = handshake::doorbell::Doorbell::new(prepared.doorbell);
    let clock = Arc::new(ShiftedClock::new(Arc::new(SystemClock), 0));
    let mut parent = start::parent::ParentMonitor::from_env(pid);
    let mut lease = None;
    let fired = start::faults::fire(
        start::faults::Parts {
            faults: &mut faults,
            doorbell: &mut doorbell,
            clock: &clock,
            parent: &mut parent,
            lease: &mut lease,
        },
        ShimPoint::Start,
    );
    if let start::faults::Fired::Stopped(signal) = fired {
        end::exit::report(&handshake::PreCommitError::Signal(signal).message());
        return end::exit::HANDSHAKE_FAILED;
    }
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let source = start::invocation::source(&args, std::env::var_os(start::invocation::RUNNER_CONFIG_ENV));
    let cfg = match start::invocation::read(&source) {
        Ok(cfg) => cfg,
        Err(e) => {
            end::exit::report(&e.to_string());
            return end::exit::INVALID_CONFIG;
        }
    };
    let os = match Os::from_env() {
        Ok(os) => os.with_clock(clock.clone()),
        Err(e) => {
            end::exit::report(&e.to_string());
            return end::exit::INVALID_CONFIG;
        }
    };
    #[cfg(feature = "test-hooks")]
    let os = match start::faults::disk_full_files(&cfg.id) {
        Some(files) => os.with_files(files),
        None => os,
    };
    let mut ctx = Ctx {
        paths: Paths::of(&cfg),
        cfg,
        os: os.shared(),
        clock,
        policy: DurabilityPolicy::from_env(),
        faults,
        doorbell,
        parent,
        lease,
        pid,
    };
    if let start::faults::Fired::Stopped(signal) = ctx.fire(ShimPoint::AfterConfig) {
        return handshake::fail(&mut ctx, &handshake::PreCommitError::Signal(signal));
    }
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run_committed(&mut ctx)));
    match outcome {
        Ok(code) => code,
        Err(_) => {
            ctx.release_lease();
            end::exit::report("the runner panicked.");
            end::exit::RECORDING_FAILED
        }
    }
}

/// The handshake, the commit and everything after it.
fn run_committed(ctx: &mut Ctx) -> i32 {
    if let Err(error) = handshake::run(ctx) {
        return handshake::fail(ctx, &error);
    }
    handshake::commit::commit(ctx);
    let stop = match ctx.fire(ShimPoint::AfterCommit) {
        start::faults::Fired::Stopped(signal) => Some(signal),
        start::faults::Fired::Continue => None,
    };
    supervise::run::after_commit(ctx, stop)
}
