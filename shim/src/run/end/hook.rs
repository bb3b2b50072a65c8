//! Running a completion hook ([`sublaunch_protocol::records::hook`]): `sh -c -- <command>` in the run's
//! cwd, in a process group of its own, with the run's result on stdin (a sealed in-memory
//! file, so nothing blocks on a pipe the hook does not read), `SUBLAUNCH_RUN_ID`,
//! `SUBLAUNCH_STATE` and `SUBLAUNCH_RUN_DIR` on top of the environment the agents get (H10),
//! and its stdout and stderr drained into `hook-end.log` (capped). At its time limit its whole
//! process group is killed (SIGKILL); when it exits, what is left of its group and any
//! descendant that escaped it (the runner is a subreaper) is killed too, so the runner never
//! lingers after it. Its outcome goes to `hook-end.json` and `events.jsonl`; the run's status
//! and result are never touched.
//!
//! Each run of the hook is one attempt to deliver an end from the outbox (D7, [`deliver`]).
//! Two callers: the shim itself, after its end records (S12, `after_end`), and
//! `sublaunch-shim --on-end` ([`helper_main`]), which a host starts — detached after a sweep
//! found an end undelivered (its runner died, or an attempt failed and the backoff passed), in
//! the foreground for `sublaunch deliver` — with the job on stdin.

use crate::process::reaper::Reaper;
use crate::process::signals;
use rustix::fd::{AsRawFd, OwnedFd};
use rustix::process::{Pid, Signal};
use serde_json::Value;
use std::io::{self, Read, Write};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use sublaunch_protocol::files::dir::Dir;
use sublaunch_protocol::files::durability::DurabilityPolicy;
use sublaunch_protocol::records::hook::{
    self, DELIVERY_ATTEMPT_ENV, DELIVERY_ID_ENV, FAILURE_KIND_ENV, FiredBy, HookJob, HookOutcome, HookSpec, LOG_CAP,
    LOG_FILE, RUN_DIR_ENV, RUN_ID_ENV, STATE_ENV,
};
use sublaunch_protocol::records::outbox::{self, DeliveryLock, Outbox};
use sublaunch_protocol::records::status::Status;
use sublaunch_protocol::records::stream::{self, Consumers, Stream, What};

/// The argument that makes `sublaunch-shim` run a hook job instead of a run.
pub const HELPER_ARG: &str = "--on-end";
/// How long the runner waits for a killed hook to be reaped, and for its output to end.
const KILL_WAIT: Duration = Duration::from_secs(2);
/// The largest hook job a helper reads (the payload holds every step's output).
const MAX_JOB_BYTES: u64 = 512 * 1024 * 1024;
/// Bytes read from the hook's output per turn of the loop (the deadline is checked between).
const DRAIN_TURN: usize = 1024 * 1024;

/// One hook to run.
pub(crate) struct Job<'a> {
    /// `<run>`.
    pub run: &'a Dir,
    /// Command, limit, cwd, umask.
    pub spec: &'a HookSpec,
    /// The run's terminal state.
    pub state: &'a str,
    /// Who claimed it.
    pub fired_by: FiredBy,
    /// The result payload (stdin).
    pub payload: &'a [u8],
    /// The payload's `failureKind` (D1), for the hook's environment.
    pub failure_kind: Option<&'a str>,
    /// The end's key and the attempt (D7), for the hook's environment.
    pub delivery: Option<(&'a str, u32)>,
    /// Durability of the outcome.
    pub policy: DurabilityPolicy,
}

/// The shim's part (S12, D6, D7): once the end records are written, puts the end into the
/// event stream and, when a hook is configured, the outbox; then delivers it. Nothing here
/// changes the run's records.
pub(crate) fn after_end(ctx: &crate::context::Ctx, run: &Dir, reaper: &mut Reaper, status: &Status, payload: &Value) {
    let consumers = Consumers {
        hook: ctx.cfg.on_end.is_some(),
    };
    let marker = match stream::record_end(&ctx.paths.root, run, status, consumers) {
        Ok(Some(marker)) => marker,
        Ok(None) => return,
        Err(e) => {
            // The next lister records it (the run stays in the unfinalized index until then).
            eprintln!("sublaunch-shim: cannot record the run's end in the event stream: {e}");
            return;
        }
    };
    let Some(on_end) = &ctx.cfg.on_end else { return };
    let spec = HookSpec {
        version: 1,
        run_id: ctx.cfg.id.clone(),
        on_end: on_end.clone(),
        cwd: ctx.cfg.cwd.clone(),
        umask: ctx.cfg.agent_umask,
    };
    // A stop signal counted while the run ended was already acted on; only new ones end the hook.
    let _ = signals::take();
    deliver(
        &Delivering {
            run,
            root: &ctx.paths.root,
            delivery_id: &marker.delivery_id,
            spec: &spec,
            payload,
            fired_by: FiredBy::Runner,
            forced: false,
            policy: ctx.policy,
        },
        reaper,
    );
}

/// One delivery to make.
pub(crate) struct Delivering<'a> {
    /// `<run>`.
    pub run: &'a Dir,
    /// The state root (its outbox and stream).
    pub root: &'a Path,
    /// The end's key.
    pub delivery_id: &'a str,
    /// The hook.
    pub spec: &'a HookSpec,
    /// The result payload (the delivery's key is added to it).
    pub payload: &'a Value,
    /// Who delivers.
    pub fired_by: FiredBy,
    /// `sublaunch deliver`: not held back by the backoff.
    pub forced: bool,
    /// Durability of the outcome.
    pub policy: DurabilityPolicy,
}

/// Delivers an end from the outbox (D7) when it is still undelivered, due, and nobody else is
/// delivering it: runs the hook, then removes the entry when it succeeded or records the
/// failed attempt and when to try again. Returns the attempt's outcome, if one was made.
pub(crate) fn deliver(delivering: &Delivering<'_>, reaper: &mut Reaper) -> Option<HookOutcome> {
    let run = delivering.run;
    let _lock = match DeliveryLock::try_take(run) {
        Ok(Some(lock)) => lock,
        Ok(None) => return None,
        Err(e) => {
            eprintln!("sublaunch-shim: cannot lock the completion hook: {e}");
            return None;
        }
    };
    let outbox = Outbox::under(delivering.root);
    let mut entry = match outbox.get(delivering.delivery_id) {
        Ok(Some(entry)) => entry,
        Ok(None) => return None,
        Err(e) => {
            eprintln!("sublaunch-shim: cannot read the outbox: {e}");
            return None;
        }
    };
    let clock = run.os().clock.clone();
    if outbox::delivered(run, delivering.delivery_id) {
        // Delivered by a deliverer that died before it removed the entry.
        let _ = outbox.remove(delivering.delivery_id);
        return None;
    }
    if !entry.due(clock.wall_ms(), delivering.forced) {
        return None;
    }
    let attempt = entry.attempts + 1;
    let mut payload = delivering.payload.clone();
    if let Value::Object(fields) = &mut payload {
        fields.insert("deliveryId".into(), Value::from(delivering.delivery_id));
        fields.insert("deliveryAttempt".into(), Value::from(attempt));
    }
    let failure_kind = payload.get("failureKind").and_then(Value::as_str);
    let bytes = serde_json::to_vec(&payload).unwrap_or_default();
    let outcome = run_hook(
        &Job {
            run,
            spec: delivering.spec,
            state: &entry.state,
            fired_by: delivering.fired_by,
            payload: &bytes,
            failure_kind,
            delivery: Some((delivering.delivery_id, attempt)),
            policy: delivering.policy,
        },
        reaper,
    );
    let stream = Stream::under(delivering.root);
    let now = clock.wall_ms();
    let consumer = entry.consumer.as_str().to_owned();
    if outcome.succeeded() {
        if let Err(e) = outbox.remove(delivering.delivery_id) {
            eprintln!("sublaunch-shim: cannot remove the delivered end from the outbox: {e}");
        }
        let delivered = What::Delivered {
            delivery_id: delivering.delivery_id.to_owned(),
            consumer,
            attempt,
        };
        if let Err(e) = stream.append(&entry.run_id, now, delivered) {
            eprintln!("sublaunch-shim: cannot append the delivery to the event stream: {e}");
        }
    } else {
        let error = outcome.failure();
        entry.failed(attempt, now, error.clone());
        if let Err(e) = outbox.put(&entry) {
            eprintln!("sublaunch-shim: cannot record the failed delivery in the outbox: {e}");
        }
        let failed = What::DeliveryFailed {
            delivery_id: delivering.delivery_id.to_owned(),
            consumer,
            attempt,
            error,
            next_attempt_at: (!entry.gave_up).then_some(entry.next_attempt_at),
        };
        if let Err(e) = stream.append(&entry.run_id, now, failed) {
            eprintln!("sublaunch-shim: cannot append the failed delivery to the event stream: {e}");
        }
    }
    Some(outcome)
}

/// Runs the hook, records its outcome and returns it.
pub(crate) fn run_hook(job: &Job<'_>, reaper: &mut Reaper) -> HookOutcome {
    let clock = job.run.os().clock.clone();
    let started = Instant::now();
    let mut outcome = HookOutcome::starting(job.spec, job.fired_by, job.state, clock.wall_ms());
    if let Some((id, attempt)) = job.delivery {
        outcome.delivery_id = Some(id.to_owned());
        outcome.attempt = Some(attempt);
    }
    let log = match job.run.open_append(LOG_FILE) {
        Ok(file) => Some(file),
        Err(e) => {
            eprintln!("sublaunch-shim: the completion hook's output is discarded: {e}");
            None
        }
    };
    let mut output = Output {
        log,
        outcome: &mut outcome,
    };
    match spawn(job) {
        Ok((pid, pipe)) => supervise(job, reaper, pid, pipe, &mut output),
        Err(e) => output.outcome.spawn_error = Some(format!("cannot start 'sh -c' in {}: {e}", job.spec.cwd)),
    }
    outcome.ended_at = clock.wall_ms();
    outcome.duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    for problem in hook::record_outcome(job.run, &outcome, job.policy) {
        eprintln!("sublaunch-shim: {problem}");
    }
    outcome
}

/// Starts `sh -c -- <command>`; returns its pid (= its process group) and the read end of its
/// output pipe (non-blocking).
fn spawn(job: &Job<'_>) -> io::Result<(u32, OwnedFd)> {
    let (read, write) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)?;
    let write_err = write.try_clone()?;
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg("--")
        .arg(&job.spec.on_end.command)
        .current_dir(&job.spec.cwd)
        .process_group(0)
        .stdin(Stdio::from(crate::process::child_setup::input_file(job.payload)?))
        .stdout(Stdio::from(write))
        .stderr(Stdio::from(write_err));
    for key in crate::process::env::removals() {
        cmd.env_remove(key);
    }
    cmd.env(RUN_ID_ENV, &job.spec.run_id)
        .env(STATE_ENV, job.state)
        .env(RUN_DIR_ENV, job.run.path());
    match job.failure_kind {
        Some(kind) => cmd.env(FAILURE_KIND_ENV, kind),
        None => cmd.env_remove(FAILURE_KIND_ENV),
    };
    match job.delivery {
        Some((id, attempt)) => cmd
            .env(DELIVERY_ID_ENV, id)
            .env(DELIVERY_ATTEMPT_ENV, attempt.to_string()),
        None => cmd.env_remove(DELIVERY_ID_ENV).env_remove(DELIVERY_ATTEMPT_ENV),
    };
    let runner = rustix::process::getpid();
    // SAFETY: the closure runs in the forked child before exec and calls only prctl(2),
    // getppid(2) and _exit(2), which are async-signal-safe.
    unsafe {
        cmd.pre_exec(move || {
            crate::process::child_setup::die_with(runner);
            Ok(())
        });
    }
    let umask = job.spec.umask;
    let child = signals::unblocked(|| crate::process::child_setup::with_umask(umask, || cmd.spawn()))?;
    // The write ends live in `cmd` until it is dropped: only the hook may hold them, so its
    // exit ends the output.
    drop(cmd);
    let pid = child.id();
    drop(child);
    rustix::io::ioctl_fionbio(&read, true)?;
    Ok((pid, read))
}

/// Where the hook's output goes.
struct Output<'a> {
    log: Option<std::fs::File>,
    outcome: &'a mut HookOutcome,
}

impl Output<'_> {
    /// Reads what the pipe holds (at most [`DRAIN_TURN`] bytes); closes it at its end.
    fn drain(&mut self, pipe: &mut Option<OwnedFd>) {
        let Some(fd) = pipe.as_ref() else { return };
        let mut buffer = [0u8; 64 * 1024];
        let mut read_now = 0;
        while read_now < DRAIN_TURN {
            match rustix::io::read(fd, &mut buffer) {
                Ok(0) => {
                    *pipe = None;
                    return;
                }
                Ok(n) => {
                    read_now += n;
                    self.keep(&buffer[..n]);
                }
                Err(rustix::io::Errno::INTR) => {}
                Err(rustix::io::Errno::AGAIN) => return,
                Err(_) => {
                    *pipe = None;
                    return;
                }
            }
        }
    }

    fn keep(&mut self, bytes: &[u8]) {
        let before = self.outcome.output_bytes;
        self.outcome.output_bytes = before.saturating_add(bytes.len() as u64);
        let room = usize::try_from(LOG_CAP.saturating_sub(before)).unwrap_or(usize::MAX);
        let kept = &bytes[..bytes.len().min(room)];
        let cut = kept.len() < bytes.len() && !self.outcome.output_truncated;
        if let Some(log) = &mut self.log {
            let mut written = log.write_all(kept);
            if cut {
                written = written.and_then(|()| write!(log, "\n[hook output truncated after {LOG_CAP} bytes]\n"));
            }
            if written.is_err() {
                self.log = None;
            }
        }
        if cut {
            self.outcome.output_truncated = true;
        }
    }
}

fn kill_group(pgid: u32) {
    if let Some(group) = i32::try_from(pgid).ok().and_then(Pid::from_raw) {
        let _ = rustix::process::kill_process_group(group, Signal::KILL);
    }
}

/// Waits for the hook's exit, its time limit or a stop signal to the runner, draining its
/// output; then ends what is left of it.
fn supervise(job: &Job<'_>, reaper: &mut Reaper, pid: u32, pipe: OwnedFd, output: &mut Output<'_>) {
    let deadline = Instant::now() + job.spec.on_end.timeout();
    let mut pipe = Some(pipe);
    let mut killed_at: Option<Instant> = None;
    reaper.watch(pid);
    loop {
        reaper.reap();
        if reaper.exit_of(pid).is_some() {
            break;
        }
        output.drain(&mut pipe);
        let now = Instant::now();
        match killed_at {
            None => {
                if let Some(signal) = signals::take().stops().first() {
                    output.outcome.stopped_by = Some(signals::name(*signal));
                    kill_group(pid);
                    killed_at = Some(now);
                } else if now >= deadline {
                    output.outcome.timed_out = true;
                    kill_group(pid);
                    killed_at = Some(now);
                }
            }
            Some(at) if now >= at + KILL_WAIT => break,
            Some(_) => {}
        }
        let wake = killed_at.map_or(deadline, |at| at + KILL_WAIT);
        let mut fds = readable(&pipe);
        signals::wait(&mut fds, Some(wake.saturating_duration_since(now)));
    }
    if let Some(exit) = reaper.exit_of(pid) {
        output.outcome.exit_code = exit.code;
        output.outcome.signal = exit.signal_name();
    }
    reaper.forget(pid);
    // Whatever the hook left running goes with it: its group, then escaped descendants.
    kill_group(pid);
    let swept = crate::process::tree::sweep(reaper, None, None);
    if swept.killed > 0 {
        eprintln!(
            "sublaunch-shim: killed {} process(es) the completion hook left behind",
            swept.killed
        );
    }
    let until = Instant::now() + KILL_WAIT;
    while pipe.is_some() && Instant::now() < until {
        output.drain(&mut pipe);
        let mut fds = readable(&pipe);
        if !fds.is_empty() {
            signals::wait(&mut fds, Some(until.saturating_duration_since(Instant::now())));
        }
    }
}

/// `sublaunch-shim --on-end`: makes the delivery a host wrote on stdin ([`deliver`]: only when
/// the end is still undelivered and nobody else is delivering it) and records its outcome;
/// exits 0 when the job was usable, 2 otherwise.
pub fn helper_main() -> i32 {
    let prepared = crate::run::start::hygiene::prepare();
    for note in &prepared.notes {
        eprintln!("sublaunch-shim: {note}");
    }
    let mut bytes = Vec::new();
    if let Err(e) = io::stdin().take(MAX_JOB_BYTES).read_to_end(&mut bytes) {
        crate::process::exit::report(&format!("cannot read the completion hook job: {e}"));
        return crate::process::exit::INVALID_CONFIG;
    }
    let job: HookJob = match serde_json::from_slice(&bytes) {
        Ok(job) => job,
        Err(e) => {
            crate::process::exit::report(&format!("invalid completion hook job: {e}"));
            return crate::process::exit::INVALID_CONFIG;
        }
    };
    let run = match Dir::open(std::path::Path::new(&job.run_dir)) {
        Ok(run) => run,
        Err(e) => {
            crate::process::exit::report(&format!("cannot open the run directory: {e}"));
            return crate::process::exit::INVALID_CONFIG;
        }
    };
    let root = job.delivery.run_dir.parent().and_then(Path::parent).map(Path::to_owned);
    let Some(root) = root else {
        crate::process::exit::report("the completion hook job names no run under a state root.");
        return crate::process::exit::INVALID_CONFIG;
    };
    deliver(
        &Delivering {
            run: &run,
            root: &root,
            delivery_id: &job.delivery.delivery_id,
            spec: &job.spec,
            payload: &job.payload,
            fired_by: job.fired_by,
            forced: job.fired_by == FiredBy::Command,
            policy: DurabilityPolicy::from_env(),
        },
        &mut Reaper::default(),
    );
    crate::process::exit::RECORDED
}

/// A `poll` set waiting for `pipe` to become readable (empty once it is closed).
fn readable(pipe: &Option<OwnedFd>) -> Vec<libc::pollfd> {
    pipe.iter()
        .map(|fd| libc::pollfd {
            fd: fd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        })
        .collect()
}
