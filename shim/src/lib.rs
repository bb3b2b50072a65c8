//! `sublaunch-shim`, the detached runner of sublaunch runs (host-and-shim.md §1.2, R1–R16,
//! K9–K15, X4–X9, S3/S4/S10–S12).
//!
//! The host spawns the shim, which finishes the startup handshake, runs and supervises the
//! agent of each step, and records how the run ended. One thread, one `ppoll(2)` loop per
//! phase, no async runtime: the shim stays small (a few MiB of RSS) and starts in well under
//! a millisecond.
//!
//! Map of the crate, in layers: each folder imports only the folders listed before it.
//! * process — the shim's own process and those it starts: `process::signals` (counted,
//!   blocked outside `ppoll`), `process::reaper` (waitid, X8 enumeration), `process::tree`
//!   (X4/X6/X8/X9, sparing `process::masters`), `process::env` (H10), `process::pipe`,
//!   `process::streams` and `process::input` (R11), `process::bounded` (short helper processes),
//!   `process::child_setup`, `process::exit` (R14);
//! * adapter — argv and output parsing per agent kind;
//! * remote — placed steps over ssh (P-H5–P-H12), built on the adapter's command and parser;
//! * step — one step's agent: `step::spawn` (R10), `step::child` (one running agent),
//!   `step::budget`, `step::placeholders` (`{task}`/`{previous}`/`{chain_dir}`/`{outputs.NAME}`),
//!   `step::end` (its outcome), `step::verdict`, `step::structured`, `step::validator` and
//!   `step::model_check` (judging the output), `step::output_file`, `step::worktree`;
//! * context — the run's context shared by the phases: `context` (configuration, paths, os,
//!   lease), `context::faults` (§T fault points and the simulated full disk), `context::parent`
//!   (R4), `context::doorbell` (K14);
//! * supervise — the event loop over the running agents (see its map): the requests of the run
//!   (signals, `supervise::control` R12 inbox, deadline), `supervise::book` (status and marker
//!   writes, A9/I7), `supervise::queue` (the capacity wait);
//! * run — one run's phases: `run::start::hygiene` (doorbell fd, session, signals, umask,
//!   CLOEXEC, subreaper), `run::start::invocation` (R1/R2), `run::handshake` (K9–K11, K15, R6a,
//!   R7, R8) and `run::handshake::commit` (K12), `run::after_commit` (R9, R16), `run::workflow`
//!   (chains, parallel groups, concurrency, failFast), `run::end::record` (R13, S11, S12, X11),
//!   `run::end::hook` (the completion hook, after the end records; also
//!   `sublaunch-shim --on-end`, which hosts start for a shim that died).

#![warn(missing_docs)]

pub mod acceptance;
pub(crate) mod adapter;
pub(crate) mod context;
pub mod process;
pub(crate) mod remote;
pub(crate) mod run;
pub mod sandbox;
pub mod step;
pub(crate) mod supervise;

use context::faults::{self, Fired};
use context::{Ctx, Paths};
use process::exit;
use run::end::hook;
use run::handshake::{self, PreCommitError};
use run::start::{hygiene, invocation};
use std::sync::Arc;
use sublaunch_protocol::files::durability::DurabilityPolicy;
use sublaunch_protocol::os::Os;
use sublaunch_protocol::os::clock::ShiftedClock;
use sublaunch_protocol::os::faults::ShimPoint;

/// Runs the shim and returns its exit code (R14).
pub fn main() -> i32 {
    if std::env::args_os().nth(1).is_some_and(|arg| arg == hook::HELPER_ARG) {
        return hook::helper_main();
    }
    let prepared = hygiene::prepare();
    for note in &prepared.notes {
        eprintln!("sublaunch-shim: {note}");
    }
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let source = invocation::source(&args, std::env::var_os(invocation::RUNNER_CONFIG_ENV));
    // J7: a cluster job starts with no environment of its own; it takes the runner's from its
    // configuration before anything reads the environment.
    let scheduled = match &source {
        invocation::Source::Scheduled(_) => match invocation::read(&source) {
            Ok(cfg) => {
                adopt_job_environment(&cfg);
                Some(cfg)
            }
            Err(e) => {
                exit::report(&e.to_string());
                return exit::INVALID_CONFIG;
            }
        },
        _ => None,
    };
    let pid = std::process::id();
    let mut faults = match faults::Faults::from_env() {
        Ok(faults) => faults,
        Err(e) => {
            exit::report(&e);
            return exit::INVALID_CONFIG;
        }
    };
    let mut doorbell = context::doorbell::Doorbell::new(prepared.doorbell);
    let clock = Arc::new(ShiftedClock::new(faults::test_clock(), 0));
    let mut parent = context::parent::ParentMonitor::from_env(pid);
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
    if let Fired::Stopped(signal) = fired {
        exit::report(&PreCommitError::Signal(signal).message());
        return exit::HANDSHAKE_FAILED;
    }
    let read = match scheduled {
        Some(cfg) => Ok(cfg),
        None => invocation::read(&source),
    };
    let cfg = match read {
        Ok(cfg) => cfg,
        Err(e) => {
            exit::report(&e.to_string());
            return exit::INVALID_CONFIG;
        }
    };
    let os = match Os::from_env() {
        Ok(os) => os.with_clock(clock.clone()),
        Err(e) => {
            exit::report(&e.to_string());
            return exit::INVALID_CONFIG;
        }
    };
    #[cfg(feature = "test-hooks")]
    let os = match faults::disk_full_files(&cfg.id) {
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
    if let Fired::Stopped(signal) = ctx.fire(ShimPoint::AfterConfig) {
        return handshake::fail(&mut ctx, &PreCommitError::Signal(signal));
    }
    let scheduled = source.is_scheduled();
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        if scheduled {
            run_scheduled(&mut ctx)
        } else {
            run_committed(&mut ctx)
        }
    }));
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
    handshake::commit::commit(ctx);
    let stop = match ctx.fire(ShimPoint::AfterCommit) {
        Fired::Stopped(signal) => Some(signal),
        Fired::Continue => None,
    };
    if stop.is_none()
        && let Some(cluster) = ctx.cfg.cluster.clone()
    {
        return run::cluster::hand_over(ctx, &cluster);
    }
    run::after_commit::after_commit(ctx, stop)
}

/// J7: a cluster job's runner: the run was committed by the runner that submitted the job;
/// this one claims it (unless it ended while queued), takes the revival lease again, and runs
/// it as any runner does after the commit.
fn run_scheduled(ctx: &mut Ctx) -> i32 {
    use run::cluster::ClaimRefused;
    match run::cluster::claim(ctx) {
        Ok(()) => {}
        Err(ClaimRefused::Ended(state)) => {
            eprintln!("sublaunch-shim: the run ended ({state}) before its job started; nothing to do");
            return exit::HANDED_OVER;
        }
        Err(ClaimRefused::Unwritable(why)) => {
            exit::report(&format!("cannot claim the run: {why}"));
            return exit::RECORDING_FAILED;
        }
    }
    if ctx.cfg.revival_lease.is_some()
        && let Err(error) = handshake::acquire_lease(ctx)
    {
        return run::after_commit::committed_startup_failure(ctx, &error.message());
    }
    run::after_commit::after_commit(ctx, None)
}

/// Replaces this process's environment with the one the runner that submitted the job had.
fn adopt_job_environment(cfg: &sublaunch_protocol::records::config::RunnerConfig) {
    let Some(environment) = cfg.cluster.as_ref().and_then(|c| c.environment.as_ref()) else {
        return;
    };
    let slurm: Vec<(std::ffi::OsString, std::ffi::OsString)> = std::env::vars_os()
        .filter(|(key, _)| key.to_string_lossy().starts_with("SLURM_"))
        .collect();
    // SAFETY: called at the start of `main`, before any thread exists; nothing reads the
    // environment concurrently.
    unsafe {
        for (key, _) in std::env::vars_os() {
            std::env::remove_var(key);
        }
        for (key, value) in environment {
            std::env::set_var(key, value);
        }
        // The job's own facts (its id, its node) stay.
        for (key, value) in slurm {
            std::env::set_var(key, value);
        }
    }
}
