//! The shim's run context: the validated configuration, the resolved directories, the os
//! (filesystem, clock, random source), the durability policy, the fault hooks, the doorbell,
//! the test-parent monitor and the revival lease.
//!
//! Below the supervisor and the phases of a run, above the processes: the fault points of
//! test builds ([`faults`]), the test-parent monitor ([`parent`], R4) and the startup doorbell
//! ([`doorbell`], K14) are parts of it, shared by every phase.

pub mod doorbell;
pub mod faults;
pub mod parent;

use crate::context::doorbell::Doorbell;
use crate::context::faults::Faults;
use crate::context::parent::ParentMonitor;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use sublaunch_protocol::files::dir::Dir;
use sublaunch_protocol::files::doc::ReadDoc;
use sublaunch_protocol::files::durability::{DocKind, DurabilityPolicy};
use sublaunch_protocol::files::layout::{Layout, names};
use sublaunch_protocol::os::Os;
use sublaunch_protocol::os::clock::ShiftedClock;
use sublaunch_protocol::records::config::RunnerConfig;
use sublaunch_protocol::records::index::ActiveRunIndex;
use sublaunch_protocol::records::lease::{Lease, WriterState};
use sublaunch_protocol::records::proof::ProcessTerminal;
use sublaunch_protocol::records::status::{
    RunState, StartupFailure, StartupFailureOutcome, persist_startup_failure, read_status,
};

/// The directories of one run.
#[derive(Clone, Debug)]
pub struct Paths {
    /// `<run>` (`asyncDir`).
    pub run: PathBuf,
    /// `<runs>`: the run directory's parent.
    pub runs: PathBuf,
    /// `<root>`: the parent of `<runs>` when it is named `runs`, else the environment's root.
    pub root: PathBuf,
    /// The result file (`resultPath`).
    pub result: PathBuf,
    /// `<results>`: the result file's directory.
    pub results: PathBuf,
}

impl Paths {
    /// Resolves the paths of `cfg`.
    pub fn of(cfg: &RunnerConfig) -> Self {
        let run = PathBuf::from(&cfg.async_dir);
        let runs = run.parent().map_or_else(|| run.clone(), Path::to_path_buf);
        let root = if runs.file_name().is_some_and(|n| n == names::RUNS_DIR) {
            runs.parent().map_or_else(|| runs.clone(), Path::to_path_buf)
        } else {
            Layout::from_env().map_or_else(|_| runs.clone(), |l| l.root().to_path_buf())
        };
        let result = PathBuf::from(&cfg.result_path);
        let results = result.parent().map_or_else(|| runs.clone(), Path::to_path_buf);
        Self {
            run,
            runs,
            root,
            result,
            results,
        }
    }
}

/// A held revival lease (R6a) and the canonical session file it guards.
#[derive(Debug)]
pub struct HeldLease {
    /// The lease.
    pub lease: Lease,
    /// The canonical session file (the candidate's `sessionFile`).
    pub session_file: String,
}

/// Everything the phases of the shim share.
#[derive(Debug)]
pub struct Ctx {
    /// The validated configuration.
    pub cfg: RunnerConfig,
    /// The run's directories.
    pub paths: Paths,
    /// The os every directory handle uses.
    pub os: Arc<Os>,
    /// The clock inside `os` (for the `wallclock` hook).
    pub clock: Arc<ShiftedClock>,
    /// A4 durability policy.
    pub policy: DurabilityPolicy,
    /// Test hooks (empty in production builds).
    pub faults: Faults,
    /// The startup doorbell.
    pub doorbell: Doorbell,
    /// R4.
    pub parent: ParentMonitor,
    /// The revival lease while held.
    pub lease: Option<HeldLease>,
    /// The shim's pid.
    pub pid: u32,
}

impl Ctx {
    /// S5 from the shim's side: `status.json` failed with `message` (a terminal status is kept),
    /// not-started proof, zero-writer candidate; naming the held lease when `with_lease`.
    /// Problems are reported on stderr: nothing else can record them.
    pub fn persist_startup_failure(&self, run: &Dir, message: &str, with_lease: bool) {
        let lease = self.lease.as_ref().filter(|_| with_lease);
        let failure = StartupFailure {
            run_id: self.cfg.id.clone(),
            runner_process_instance_id: self.cfg.runner_process_instance_id.clone(),
            session_id: self.cfg.session_id.clone(),
            completion_owner_id: self.cfg.completion_owner_id.clone(),
            error: message.to_owned(),
            step_count: self.cfg.steps.len(),
            session_file: lease.map(|l| l.session_file.clone()),
            revival_lease_token: lease.map(|l| l.lease.token().to_owned()),
            now: self.now_wall(),
            keep_terminal_status: true,
        };
        match persist_startup_failure(run, &failure, self.policy) {
            StartupFailureOutcome::Persisted | StartupFailureOutcome::StatusAlreadyTerminal => {}
            StartupFailureOutcome::StatusUnusable { cause, .. } => {
                eprintln!("sublaunch-shim: status.json unusable ({cause}); wrote runner-startup-failure.json");
            }
            StartupFailureOutcome::Failed(e) => eprintln!("sublaunch-shim: cannot persist the startup failure: {e}"),
        }
    }

    /// Writes the `not-started` proof when the host vanished before writing any (before H14):
    /// no observer will ever finalize this run, and its proof must not be missing.
    pub fn record_not_started(&self, run: &Dir) {
        if !matches!(run.stat(names::PROCESS_TERMINAL), Ok(None)) {
            return;
        }
        let proof = ProcessTerminal::not_started(&self.cfg.id, &self.cfg.runner_process_instance_id);
        if let Err(e) = run.write_doc(
            names::PROCESS_TERMINAL,
            &proof,
            self.policy.for_kind(DocKind::FinalProof),
        ) {
            eprintln!("sublaunch-shim: cannot write the not-started proof: {e}");
        }
    }

    /// Removes the run's active-run marker (I4) once its status is terminal; problems are
    /// reported on stderr.
    pub fn release_marker(&self, run: &Dir) {
        let released = Dir::open_with(&self.paths.runs, self.os.clone())
            .and_then(|runs| ActiveRunIndex::new(&runs, self.policy))
            .and_then(|index| {
                let state = read_status(run).ok().and_then(ReadDoc::present).and_then(|s| s.state);
                let state = state.filter(RunState::is_terminal).unwrap_or(RunState::Failed);
                index.release(&self.cfg.id, &state, self.cfg.tool_call_id.as_deref(), Some(run))
            });
        match released {
            Ok(outcome) => outcome.warnings.iter().for_each(|w| eprintln!("sublaunch-shim: {w}")),
            Err(e) => eprintln!("sublaunch-shim: cannot release the active-run marker: {e}"),
        }
    }

    /// Opens `<run>` (a fresh handle: before commit the shim keeps no descriptor open between
    /// checks, H9).
    pub fn open_run(&self) -> io::Result<Dir> {
        Dir::open_with(&self.paths.run, self.os.clone())
    }

    /// Wall-clock epoch ms (possibly shifted by the `wallclock` hook).
    pub fn now_wall(&self) -> u64 {
        use sublaunch_protocol::os::clock::Clock;
        self.clock.wall_ms()
    }

    /// Appends `what` about this run to the state root's event stream (D4). Best effort, like
    /// every event (A10): a stream that cannot be written costs the run nothing.
    pub fn publish(&self, what: sublaunch_protocol::records::stream::What) {
        let stream = sublaunch_protocol::records::stream::Stream::under(&self.paths.root);
        if let Err(e) = stream.append(&self.cfg.id, self.now_wall(), what) {
            eprintln!("sublaunch-shim: cannot append to the event stream: {e}");
        }
    }

    /// The name of step `index`'s agent.
    pub fn agent_name(&self, index: usize) -> String {
        self.cfg
            .steps
            .get(index)
            .and_then(|s| s.agent.clone())
            .unwrap_or_else(|| "shell".into())
    }

    /// The run mode: `parallel` when a step is a task of a parallel group, else `single` /
    /// `chain` by step count.
    pub fn mode(&self) -> String {
        let mode = if self.cfg.steps.iter().any(|s| s.task_index.is_some()) {
            "parallel"
        } else if self.cfg.steps.len() > 1 {
            "chain"
        } else {
            "single"
        };
        mode.to_owned()
    }

    /// Records the lease writer state (R10, revival only); failures are logged.
    pub fn set_writer(&mut self, state: WriterState, pid: Option<u32>) {
        let now = self.now_wall();
        let identity = pid.and_then(|p| sublaunch_protocol::procinfo::start_identity(p).ok().flatten());
        if let Some(held) = &mut self.lease
            && let Err(e) = held.lease.set_writer(state, pid, identity, now)
        {
            eprintln!("sublaunch-shim: cannot update the session lease writer state: {e}");
        }
    }

    /// X11: releases the lease if held. `Some(true)` only when the release succeeded.
    pub fn release_lease(&mut self) -> Option<bool> {
        let held = self.lease.take()?;
        match held.lease.release() {
            Ok(released) => Some(released),
            Err(e) => {
                eprintln!("sublaunch-shim: cannot release the session lease: {e}");
                Some(false)
            }
        }
    }
}
