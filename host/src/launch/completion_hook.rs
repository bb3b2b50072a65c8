//! The host's part of completion hooks ([`sublaunch_protocol::records::hook`]): the shim fires a run's
//! hook itself after its end records, but a shim that died (SIGKILL, a crash) fires nothing.
//! Then whoever finds the run ended and its shim gone fires it instead — the launching host
//! after it observed the exit and finalized the run, or a lister or waiter after S13 — by
//! claiming the once-marker and starting `sublaunch-shim --on-end` detached, which runs the
//! hook under the same rules (time limit, process group, recorded outcome) and outlives the
//! short-lived CLI that started it.
//!
//! A hook fires for a run that started (its `subagent.run.started` line exists) and is
//! terminal; a launch that failed before its run started was reported to its caller and fires
//! nothing.

use crate::Environment;
use serde_json::Value;
use std::ffi::OsString;
use std::io;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use sublaunch_protocol::files::dir::Dir;
use sublaunch_protocol::files::doc::ReadDoc;
use sublaunch_protocol::files::durability::DurabilityPolicy;
use sublaunch_protocol::files::layout::{ROOT_ENV, names};
use sublaunch_protocol::records::events::has_run_started;
use sublaunch_protocol::records::hook::{self, FiredBy, HookJob, HookOutcome, HookSpec};
use sublaunch_protocol::records::status::{Status, read_status};

/// Test builds: milliseconds a host waits between finding a hook due and claiming it.
#[cfg(feature = "test-hooks")]
pub const CLAIM_DELAY_ENV: &str = "SUBLAUNCH_TEST_HOOK_CLAIM_DELAY_MS";

/// The argument that makes `sublaunch-shim` run a hook job.
pub const HELPER_ARG: &str = "--on-end";

/// How a host starts the hook runner: the runner binary and the environment it gets (the
/// caller's, without what must not reach a detached runner, H10).
#[derive(Clone, Debug)]
pub struct HookRunner {
    shim: Option<PathBuf>,
    environment: Environment,
    extra: Vec<(OsString, OsString)>,
    root: PathBuf,
}

impl HookRunner {
    /// A runner for runs under `root`, started from `shim` (default: [`super::default_shim_path`]
    /// of `environment`) with `environment` plus `extra`.
    pub fn new(root: &Path, shim: Option<PathBuf>, environment: Environment, extra: Vec<(OsString, OsString)>) -> Self {
        Self {
            shim,
            environment,
            extra,
            root: root.to_owned(),
        }
    }

    fn shim(&self) -> Result<PathBuf, super::RunnerError> {
        match &self.shim {
            Some(shim) => Ok(shim.clone()),
            None => super::default_shim_path(&self.environment),
        }
    }

    fn vars(&self) -> Vec<(OsString, OsString)> {
        let mut vars: Vec<(OsString, OsString)> = self
            .environment
            .vars()
            .filter(|(k, _)| !super::environment::is_removed(k))
            .collect();
        for (key, value) in self
            .extra
            .iter()
            .chain([&(ROOT_ENV.into(), self.root.clone().into_os_string())])
        {
            vars.retain(|(k, _)| k != key);
            vars.push((key.clone(), value.clone()));
        }
        vars
    }
}

/// Fires the hook of `run` when it is due and nobody claimed it: the run has a hook, started,
/// is terminal, and `runner_gone` says its shim cannot fire it any more. `results` is
/// `<results>` (the payload is the run's result file when the shim published one, else the
/// status in its shape). Returns the problems worth a warning.
pub fn fire_if_due(
    run: &Dir,
    results: &Dir,
    fired_by: FiredBy,
    runner_gone: impl FnOnce(&Status) -> bool,
    runner: &HookRunner,
    policy: DurabilityPolicy,
) -> Vec<String> {
    let spec = match hook::read_spec(run) {
        Ok(Some(spec)) => spec,
        Ok(None) => return Vec::new(),
        Err(e) => return vec![e.to_string()],
    };
    if hook::claimed(run).unwrap_or(true) {
        return Vec::new();
    }
    let Some(status) = read_status(run).ok().and_then(ReadDoc::present) else {
        return Vec::new();
    };
    if !status.is_terminal() || !has_run_started(run, &spec.run_id).unwrap_or(false) || !runner_gone(&status) {
        return Vec::new();
    }
    #[cfg(feature = "test-hooks")]
    if let Some(ms) = runner.environment.text(CLAIM_DELAY_ENV).and_then(|v| v.parse().ok()) {
        // Test builds: hold every racing claimant here, past the check above, so the
        // once-marker alone decides.
        std::thread::sleep(std::time::Duration::from_millis(ms));
    }
    match hook::claim(run) {
        Ok(true) => {}
        Ok(false) => return Vec::new(),
        Err(e) => {
            return vec![format!(
                "cannot claim the completion hook of {}: {e}",
                run.path().display()
            )];
        }
    }
    let state = status.state.as_ref().map_or("failed", |s| s.as_str()).to_owned();
    let run_dir = std::path::absolute(run.path()).unwrap_or_else(|_| run.path().to_owned());
    let job = HookJob {
        version: 1,
        run_dir: run_dir.to_string_lossy().into_owned(),
        run_id: spec.run_id.clone(),
        state,
        payload: payload(&run_dir, results, &spec.run_id, &status),
        spec,
        fired_by,
    };
    match start(run, &job, runner) {
        Ok(()) => Vec::new(),
        Err(error) => {
            let now = run.os().clock.wall_ms();
            let outcome = HookOutcome {
                ended_at: now,
                spawn_error: Some(format!("cannot start the hook runner: {error}")),
                ..HookOutcome::starting(&job.spec, fired_by, &job.state, now)
            };
            let mut problems = hook::record_outcome(run, &outcome, policy);
            problems.push(format!("the completion hook of {} did not start: {error}", job.run_id));
            problems
        }
    }
}

/// The run's published result, else its status in the result's shape.
fn payload(run_dir: &Path, results: &Dir, run_id: &str, status: &Status) -> Value {
    let published = results
        .read_doc::<Value>(&names::result_file(run_id))
        .ok()
        .and_then(ReadDoc::present)
        .filter(|v| v.get("id").and_then(Value::as_str) == Some(run_id));
    published.unwrap_or_else(|| hook::payload_from_status(status, &run_dir.to_string_lossy()))
}

/// Why the hook runner did not start.
#[derive(Debug, thiserror::Error)]
enum HookStartError {
    /// There is no runner to start.
    #[error(transparent)]
    Runner(#[from] super::RunnerError),
    /// The job could not be encoded.
    #[error("{0}")]
    Job(#[source] serde_json::Error),
    /// The job could not be put in a file for the runner's stdin.
    #[error("cannot hand over the job: {0}")]
    Handover(#[source] io::Error),
    /// The run's `runner.stderr.log` could not be opened for the runner.
    #[error("{0}")]
    Log(#[source] io::Error),
    /// The runner could not be spawned.
    #[error("{}: {source}", shim.display())]
    Spawn {
        /// The runner.
        shim: PathBuf,
        /// Why.
        source: io::Error,
    },
}

/// Starts `sublaunch-shim --on-end` in a session of its own, the job on its stdin, its own
/// messages appended to the run's `runner.stderr.log`; it is reaped by a thread of this
/// process (or, once this process exits, by init).
fn start(run: &Dir, job: &HookJob, runner: &HookRunner) -> Result<(), HookStartError> {
    let shim = runner.shim()?;
    let bytes = serde_json::to_vec(job).map_err(HookStartError::Job)?;
    let stdin = job_file(&bytes).map_err(HookStartError::Handover)?;
    let log = run.open_append(names::RUNNER_STDERR_LOG).map_err(HookStartError::Log)?;
    let log_err = log.try_clone().map_err(HookStartError::Log)?;
    let mut command = Command::new(&shim);
    command
        .arg(HELPER_ARG)
        .current_dir("/")
        .env_clear()
        .envs(runner.vars())
        .stdin(Stdio::from(stdin))
        .stdout(Stdio::from(log))
        .stderr(Stdio::from(log_err));
    // SAFETY: runs in the forked child before exec and calls only setsid(2), which is
    // async-signal-safe: the runner leaves this process's session (and terminal) at once.
    unsafe {
        command.pre_exec(|| rustix::process::setsid().map(drop).map_err(io::Error::from));
    }
    let mut child = command.spawn().map_err(|source| HookStartError::Spawn {
        shim: shim.clone(),
        source,
    })?;
    let _ = std::thread::Builder::new()
        .name("sublaunch-hook-reaper".into())
        .spawn(move || child.wait());
    Ok(())
}

/// An in-memory file holding `bytes`, at its start.
fn job_file(bytes: &[u8]) -> io::Result<std::os::fd::OwnedFd> {
    sublaunch_protocol::os::memfd::with_bytes("sublaunch-hook-job", bytes)
}

/// Reads the hook a run was launched with (for `resume`, which carries it to the new run).
pub fn hook_of(run: &Dir) -> io::Result<Option<HookSpec>> {
    hook::read_spec(run)
}
