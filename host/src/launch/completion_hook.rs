//! The host's part of completion hooks ([`sublaunch_protocol::records::hook`]) and their
//! outbox ([`sublaunch_protocol::records::outbox`], D7): the shim delivers a run's end to its
//! hook itself after its end records, but a shim that died (SIGKILL, a crash, a reboot)
//! delivers nothing, and an attempt that failed waits for its backoff. Then whoever looks next
//! — the launching host after it observed the exit, a lister or waiter after S13, `sublaunch
//! deliver` — sweeps the outbox and starts `sublaunch-shim --on-end` for each end that is due,
//! which runs the hook under the same rules (time limit, process group, recorded outcome) and
//! outlives the short-lived CLI that started it (`sublaunch deliver` waits for it instead).
//!
//! Which deliverer runs the hook is decided by the run's delivery lock, taken by the helper
//! itself; an attempt that succeeded for a key is never made again.

use crate::Environment;
use serde_json::Value;
use std::ffi::OsString;
use std::io;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use sublaunch_protocol::files::dir::Dir;
use sublaunch_protocol::files::doc::ReadDoc;
use sublaunch_protocol::files::layout::{ROOT_ENV, names, validate_run_id};
use sublaunch_protocol::records::hook::{self, FiredBy, HookJob, HookOutcome, HookSpec};
use sublaunch_protocol::records::outbox::{Delivery, DeliveryLock, Outbox};
use sublaunch_protocol::records::status::{Status, read_status};

/// Test builds: milliseconds a sweeper waits between finding an end due and starting its
/// deliverer.
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

/// One end in the outbox and what happened to it in a sweep.
#[derive(Debug)]
pub struct Swept {
    /// The end, as the outbox held it before the sweep.
    pub delivery: Delivery,
    /// What the sweep did.
    pub action: SweepAction,
}

/// What a sweep did with one end.
#[derive(Debug)]
pub enum SweepAction {
    /// Not due yet (its backoff), or given up (only `sublaunch deliver` tries it).
    NotDue,
    /// Someone is delivering it now, or its runner is about to.
    Busy,
    /// A deliverer was started in the background.
    Started,
    /// The attempt made in the foreground, as `hook-end.json` tells it.
    Attempted(Option<Box<HookOutcome>>),
    /// Its run is gone (pruned): the entry was dropped.
    RunGone,
    /// Could not be delivered: why.
    Failed(String),
}

/// How a sweep treats the outbox.
#[derive(Clone, Copy, Debug)]
pub struct Sweep<'a> {
    /// Who sweeps.
    pub fired_by: FiredBy,
    /// Only this run's ends.
    pub only_run: Option<&'a str>,
    /// `sublaunch deliver`: every end, whatever its backoff, each attempt waited for.
    pub forced: bool,
}

/// Sweeps the outbox of the root `runs` belongs to: starts a deliverer for each end that is
/// due and that nobody is delivering. `runner_alive` says whether a run's own runner may still
/// deliver its end (its first attempt is its runner's). `results` is `<results>` (the payload
/// is the run's result file when the shim published one, else the status in its shape).
pub fn sweep(
    runs: &Dir,
    results: &Dir,
    sweep: Sweep<'_>,
    runner_alive: impl Fn(&Status) -> bool,
    runner: &HookRunner,
) -> io::Result<Vec<Swept>> {
    let outbox = Outbox::under(&runner.root);
    let (pending, unreadable) = outbox.list()?;
    for name in unreadable {
        log::warn!("an outbox entry cannot be read ({name}); it is left alone");
    }
    let now = runs.os().clock.wall_ms();
    let mut swept = Vec::new();
    for delivery in pending {
        if sweep.only_run.is_some_and(|id| id != delivery.run_id) {
            continue;
        }
        let action = sweep_one(runs, results, &outbox, &delivery, now, sweep, &runner_alive, runner);
        swept.push(Swept { delivery, action });
    }
    Ok(swept)
}

#[allow(clippy::too_many_arguments)]
fn sweep_one(
    runs: &Dir,
    results: &Dir,
    outbox: &Outbox,
    delivery: &Delivery,
    now: u64,
    sweep: Sweep<'_>,
    runner_alive: &impl Fn(&Status) -> bool,
    runner: &HookRunner,
) -> SweepAction {
    if !delivery.due(now, sweep.forced) {
        return SweepAction::NotDue;
    }
    // The run is found by its id under this root, never by the path the entry names.
    let run = match validate_run_id(&delivery.run_id)
        .ok()
        .map(|()| runs.open_child(&delivery.run_id))
    {
        Some(Ok(Some(run))) => run,
        Some(Ok(None)) | None => {
            let _ = outbox.remove(&delivery.delivery_id);
            return SweepAction::RunGone;
        }
        Some(Err(e)) => return SweepAction::Failed(e.to_string()),
    };
    let spec = match hook::read_spec(&run) {
        Ok(Some(spec)) => spec,
        Ok(None) => {
            let _ = outbox.remove(&delivery.delivery_id);
            return SweepAction::RunGone;
        }
        Err(e) => return SweepAction::Failed(e.to_string()),
    };
    let Some(status) = read_status(&run).ok().and_then(ReadDoc::present) else {
        return SweepAction::Failed(format!("{} has no readable status", run.path().display()));
    };
    if delivery.attempts == 0 && !sweep.forced && runner_alive(&status) {
        return SweepAction::Busy;
    }
    match DeliveryLock::try_take(&run) {
        Ok(Some(_free)) => {}
        // `sublaunch deliver` waits for the deliverer at work, then looks again.
        Ok(None) if sweep.forced => match DeliveryLock::take(&run) {
            Ok(_free) if matches!(outbox.get(&delivery.delivery_id), Ok(None)) => {
                return SweepAction::Attempted(None);
            }
            Ok(_free) => {}
            Err(e) => return SweepAction::Failed(e.to_string()),
        },
        Ok(None) => return SweepAction::Busy,
        Err(e) => return SweepAction::Failed(e.to_string()),
    }
    #[cfg(feature = "test-hooks")]
    if let Some(ms) = runner.environment.text(CLAIM_DELAY_ENV).and_then(|v| v.parse().ok()) {
        // Test builds: hold every racing sweeper here, past the checks above, so the delivery
        // lock alone decides.
        std::thread::sleep(std::time::Duration::from_millis(ms));
    }
    let run_dir = std::path::absolute(run.path()).unwrap_or_else(|_| run.path().to_owned());
    let job = HookJob {
        version: 1,
        run_dir: run_dir.to_string_lossy().into_owned(),
        run_id: spec.run_id.clone(),
        state: delivery.state.clone(),
        payload: payload(&run_dir, results, &spec.run_id, &status),
        spec,
        fired_by: sweep.fired_by,
        delivery: Delivery {
            run_dir: run_dir.clone(),
            ..delivery.clone()
        },
    };
    match start(&run, &job, runner, sweep.forced) {
        Ok(()) if sweep.forced => SweepAction::Attempted(
            run.read_doc::<HookOutcome>(hook::OUTCOME_FILE)
                .ok()
                .and_then(ReadDoc::present)
                .filter(|o| o.delivery_id.as_deref() == Some(delivery.delivery_id.as_str()))
                .map(Box::new),
        ),
        Ok(()) => SweepAction::Started,
        Err(error) => SweepAction::Failed(format!("the hook runner did not start: {error}")),
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
/// messages appended to the run's `runner.stderr.log`; `wait` waits for it, else it is reaped
/// by a thread of this process (or, once this process exits, by init).
fn start(run: &Dir, job: &HookJob, runner: &HookRunner, wait: bool) -> Result<(), HookStartError> {
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
    if wait {
        child.wait().map_err(|source| HookStartError::Spawn { shim, source })?;
        return Ok(());
    }
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
