//! `sublaunch-shim`, the detached runner of sublaunch runs (host-and-shim.md §1.2, R1–R16,
//! K9–K15, X4–X9, S3/S4/S10–S12).
//!
//! The host spawns the shim, which finishes the startup handshake, runs and supervises the
//! agent of each step, and records how the run ended. One thread, one `ppoll(2)` loop per
//! phase, no async runtime: the shim stays small (a few MiB of RSS) and starts in well under
//! a millisecond.
//!
//! Map of the crate:
//! * start — [`hygiene`] (doorbell fd, session, signals, umask, CLOEXEC, subreaper),
//!   [`signals`] (counted, blocked outside `ppoll`), [`invocation`] (R1/R2), [`context`],
//!   [`clock`], [`parent`] (R4), [`faults`] (§T hooks), [`testfs`] (simulated full disk,
//!   test-hooks only);
//! * handshake — [`doorbell`] (K14), [`handshake`] (K9–K11, K15, R6a, R7, R8), [`commit`] (K12);
//! * supervision — [`run`] (R9, R16), [`workflow`] (chains, parallel groups, concurrency,
//!   failFast, `{task}`/`{previous}`/`{chain_dir}`), [`supervise`] (the event loop over the
//!   running agents), [`child`] (one agent), [`step_end`] (its outcome), [`adapter`] (argv and
//!   output parsing per agent kind), [`verdict`], [`structured`] and [`model_check`] (judging
//!   the output), [`spawn`] (R10), [`env`] (H10), [`output`] and [`streams`] (R11),
//!   [`control`] (R12 inbox), [`reaper`] (waitid, X8 enumeration), [`tree`] (X4/X6/X8/X9),
//!   [`book`] (status and marker writes, A9/I7);
//! * end — [`record`] (R13, S11, S12, X11), [`exit`] (R14).

#![warn(missing_docs)]

pub mod adapter;
pub mod book;
pub mod bounded;
pub mod child;
pub mod clock;
pub mod commit;
pub mod context;
pub mod control;
pub mod doorbell;
pub mod env;
pub mod exit;
pub mod faults;
pub mod handshake;
pub mod hygiene;
pub mod invocation;
pub mod model_check;
pub mod output;
pub mod parent;
pub mod reaper;
pub mod record;
pub mod remote;
pub mod run;
pub mod signals;
pub mod spawn;
pub mod step_end;
pub mod streams;
pub mod structured;
pub mod supervise;
#[cfg(feature = "test-hooks")]
pub mod testfs;
pub mod tree;
pub mod validator;
pub mod verdict;
pub mod workflow;

use context::{Ctx, Paths};
use std::sync::Arc;
use sublaunch_protocol::durability::DurabilityPolicy;
use sublaunch_protocol::hooks::ShimPoint;
use sublaunch_protocol::seams::Seams;

/// Runs the shim and returns its exit code (R14).
pub fn main() -> i32 {
    let prepared = hygiene::prepare();
    for note in &prepared.notes {
        eprintln!("sublaunch-shim: {note}");
    }
    let pid = std::process::id();
    let mut faults = match faults::Faults::from_env() {
        Ok(faults) => faults,
        Err(e) => {
            exit::report(&e);
            return exit::INVALID_CONFIG;
        }
    };
    let mut doorbell = doorbell::Doorbell::new(prepared.doorbell);
    let clock = Arc::new(clock::ShimClock::default());
    let mut parent = parent::ParentMonitor::from_env(pid);
    let mut lease = None;
    let fired = faults::fire(
        faults::Parts {
            faults: &mut faults,
            doorbell: &mut doorbell,
            clock: &clock,
            parent: &mut parent,
            lease: &mut lease,
        },
        ShimPoint::Start,
    );
    if let faults::Fired::Stopped(signal) = fired {
        exit::report(&handshake::PreCommitError::Signal(signal).message());
        return exit::HANDSHAKE_FAILED;
    }
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let source = invocation::source(&args, std::env::var_os(invocation::RUNNER_CONFIG_ENV));
    let cfg = match invocation::read(&source) {
        Ok(cfg) => cfg,
        Err(e) => {
            exit::report(&e.to_string());
            return exit::INVALID_CONFIG;
        }
    };
    let seams = match Seams::from_env() {
        Ok(seams) => seams.with_clock(clock.clone()),
        Err(e) => {
            exit::report(&e.to_string());
            return exit::INVALID_CONFIG;
        }
    };
    #[cfg(feature = "test-hooks")]
    let seams = match testfs::from_env(&cfg.id) {
        Some(fs) => seams.with_fs(fs),
        None => seams,
    };
    let mut ctx = Ctx {
        paths: Paths::of(&cfg),
        cfg,
        seams: seams.shared(),
        clock,
        policy: DurabilityPolicy::from_env(),
        faults,
        doorbell,
        parent,
        lease,
        pid,
    };
    if let faults::Fired::Stopped(signal) = ctx.fire(ShimPoint::AfterConfig) {
        return handshake::fail(&mut ctx, &handshake::PreCommitError::Signal(signal));
    }
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run_committed(&mut ctx)));
    match outcome {
        Ok(code) => code,
        Err(_) => {
            ctx.release_lease();
            exit::report("the runner panicked.");
            exit::RECORDING_FAILED
        }
    }
}

/// The handshake, the commit and everything after it.
fn run_committed(ctx: &mut Ctx) -> i32 {
    if let Err(error) = handshake::run(ctx) {
        return handshake::fail(ctx, &error);
    }
    if let faults::Fired::Stopped(signal) = ctx.fire(ShimPoint::BeforeCommit) {
        return handshake::fail(ctx, &handshake::PreCommitError::Signal(signal));
    }
    commit::commit(ctx);
    let stop = match ctx.fire(ShimPoint::AfterCommit) {
        faults::Fired::Stopped(signal) => Some(signal),
        faults::Fired::Continue => None,
    };
    run::after_commit(ctx, stop)
}
