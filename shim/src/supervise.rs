//! One step (R10–R13, X4–X9): spawn the agent, drain its output, honour the deadline, the
//! control inbox and signals, terminate and verify its process tree, and report how it ended.
//!
//! A step is over when the agent was reaped, both pipes are closed (EOF, or the X7 guard:
//! 2 000 ms without data or 8 000 ms in total after the exit), a ladder verified its process
//! group (a requested one, or the cleanup ladder run after a natural exit), and the X8 sweep
//! killed and reaped any escaped descendant.

use crate::adapter::{self, OutputParser, ParsedLine};
use crate::context::Ctx;
use crate::faults::Fired;
use crate::output::{Pipe, Stream};
use crate::reaper::ExitInfo;
use crate::run::Supervisor;
use crate::signals;
use crate::step_end::{STOP_BY_USER_MESSAGE, StepEnd, process_tree};
use crate::streams::{
    OutputLog, PROTOCOL_LINE_LIMIT, STDERR_TAIL_BYTES, STDOUT_TAIL_BYTES, Tail, protocol_limit_message,
};
use crate::tree::{GroupOutcome, Ladder, SweepOutcome, TreeKiller, sweep};
use serde_json::json;
use std::time::{Duration, Instant};
use sublaunch_runfiles::clock::Clock;
use sublaunch_runfiles::durability::DocKind;
use sublaunch_runfiles::events;
use sublaunch_runfiles::hooks::ShimPoint;
use sublaunch_runfiles::lease::WriterState;
use sublaunch_runfiles::proof::WriterRecord;
use sublaunch_runfiles::random::uuid_v4;

/// X7: pipes are closed after this long without data once the agent exited …
pub const GUARD_IDLE: Duration = Duration::from_millis(2_000);
/// … or after this long in total.
pub const GUARD_TOTAL: Duration = Duration::from_millis(8_000);
/// If the agent cannot be reaped after its ladder failed, give up after this long.
const REAP_GIVE_UP: Duration = Duration::from_secs(10);

/// The per-step output machinery.
struct StepIo {
    stdout: Pipe,
    stderr: Pipe,
    parser: Box<dyn OutputParser>,
    stdout_tail: Tail,
    stderr_tail: Tail,
    log: OutputLog,
    protocol_failed: bool,
    last_data: Instant,
}

impl StepIo {
    fn pipe(&mut self, stream: Stream) -> &mut crate::output::Pipe {
        match stream {
            Stream::Stdout => &mut self.stdout,
            Stream::Stderr => &mut self.stderr,
        }
    }
}

impl Supervisor {
    /// Lets pending (blocked) signals in and records them, without waiting.
    fn absorb_signals(&mut self) -> bool {
        signals::wait(&mut [], Some(Duration::ZERO));
        let received = signals::take();
        let mut escalate = false;
        for signal in received.stops() {
            escalate |= self.stop_signal(signal);
        }
        if received.count(libc::SIGUSR2) > 0 {
            self.requests.interrupted = true;
        }
        escalate
    }

    fn absorb_control(&mut self, now: Instant, woken: bool) {
        for request in self.control.check(now, woken) {
            match request {
                crate::control::ControlRequest::Stop => {
                    self.requests
                        .stop
                        .get_or_insert_with(|| STOP_BY_USER_MESSAGE.to_owned());
                }
                crate::control::ControlRequest::Timeout => self.requests.timed_out = true,
                crate::control::ControlRequest::Interrupt => self.requests.interrupted = true,
            }
        }
        if self.deadline.is_some_and(|(at, _)| now >= at) {
            self.requests.timed_out = true;
        }
    }

    fn apply_requests_to(&self, end: &mut StepEnd) {
        end.stop.clone_from(&self.requests.stop);
        end.timeout = self.requests.timed_out.then(|| self.timeout_message());
        end.interrupted = self.requests.interrupted;
    }

    /// Runs step `index` to its end.
    pub fn run_step(&mut self, ctx: &mut Ctx, index: usize) -> StepEnd {
        let agent = ctx.agent_name(index);
        let adapter = adapter::for_step(&ctx.cfg, index);
        let started = Instant::now();
        let mut end = StepEnd {
            index,
            agent: agent.clone(),
            started_wall: ctx.now_wall(),
            ..StepEnd::default()
        };
        if let Fired::Stopped(signal) = ctx.fire(ShimPoint::BeforeAgentSpawn) {
            self.stop_signal(signal);
        }
        self.absorb_signals();
        self.absorb_control(Instant::now(), true);
        if self.requests.ends_run() {
            self.apply_requests_to(&mut end);
            end.ended_wall = ctx.now_wall();
            return end;
        }
        self.step_running(ctx, index, end.started_wall);
        self.events
            .append(&events::step_started(ctx.now_wall(), &ctx.cfg.id, index, &agent));
        ctx.set_writer(WriterState::Spawning, None);
        let spawned = adapter
            .command(&ctx.cfg, index)
            .and_then(|command| crate::spawn::spawn(&command).map_err(|e| e.to_string()));
        let spawned = match spawned {
            Ok(spawned) => spawned,
            Err(error) => {
                ctx.set_writer(WriterState::None, None);
                end.spawn_error = Some(error);
                end.ended_wall = ctx.now_wall();
                end.duration_ms = crate::clock::elapsed_ms(started, Instant::now());
                return end;
            }
        };
        let pid = spawned.pid;
        end.pid = Some(pid);
        ctx.set_writer(WriterState::Running, Some(pid));
        self.reaper.watch(pid);
        self.note_pid(ctx, index, pid);
        let parser = adapter.parser();
        let mut io = StepIo {
            stdout: Pipe::new(spawned.stdout, Stream::Stdout, parser.line_retain_limit()),
            stderr: Pipe::new(spawned.stderr, Stream::Stderr, adapter::TEXT_LINE_RETAIN),
            parser,
            stdout_tail: Tail::new(STDOUT_TAIL_BYTES),
            stderr_tail: Tail::new(STDERR_TAIL_BYTES),
            log: OutputLog::open(self.run_dir(), index, self.log_cap),
            protocol_failed: false,
            last_data: Instant::now(),
        };
        let (tree, sweep_outcome, protocol) = self.supervise(ctx, index, &agent, pid, &mut io);
        ctx.set_writer(WriterState::None, None);
        let ended_wall = ctx.now_wall();
        end.exit = self.reaper.agent_exit().cloned();
        self.apply_requests_to(&mut end);
        end.protocol = protocol;
        end.output = io.parser.finish(&io.stdout_tail.bytes());
        end.stderr_tail = io.stderr_tail.bytes();
        end.stdout_bytes = io.stdout.total();
        end.stderr_bytes = io.stderr.total();
        end.ended_wall = ended_wall;
        end.duration_ms = crate::clock::elapsed_ms(started, Instant::now());
        end.writer = Some(WriterRecord {
            process_instance_id: uuid_v4(ctx.seams.random.as_ref()),
            attempt: 0,
            close_observed_at: ended_wall,
            exit_code: end.exit.as_ref().and_then(|e| e.code),
            signal: end.exit.as_ref().and_then(ExitInfo::signal_name),
            process_tree: process_tree(pid, tree, &sweep_outcome),
            extra: serde_json::Map::new(),
        });
        if let Fired::Stopped(signal) = ctx.fire(ShimPoint::AfterAgentExit) {
            self.stop_signal(signal);
        }
        end
    }

    fn step_running(&mut self, ctx: &Ctx, index: usize, wall: u64) {
        let output_file = ctx.paths.run.join(sublaunch_runfiles::layout::names::output_log(index));
        let status = &mut self.book.status;
        status.current_step = u32::try_from(index).ok();
        status.last_update = Some(wall);
        status.output_file = Some(output_file.to_string_lossy().into_owned());
        if let Some(step) = status.steps.as_mut().and_then(|s| s.get_mut(index)) {
            step.status = Some("running".into());
            step.started_at = Some(wall);
            step.agent.get_or_insert_with(|| ctx.agent_name(index));
        }
        if let Err(e) = self.book.write(DocKind::RunningStatus) {
            eprintln!("sublaunch-shim: cannot update status.json: {e}");
        }
    }

    fn note_pid(&mut self, ctx: &Ctx, index: usize, pid: u32) {
        let wall = ctx.now_wall();
        if let Some(step) = self.book.status.steps.as_mut().and_then(|s| s.get_mut(index)) {
            step.extra
                .insert("externalProcess".into(), json!({"pid": pid, "startedAt": wall}));
        }
        if let Err(e) = self.book.write(DocKind::RunningStatus) {
            eprintln!("sublaunch-shim: cannot update status.json: {e}");
        }
    }

    /// The event loop of one agent. Returns the group outcome, the X8 sweep and the protocol
    /// failure message.
    #[allow(clippy::too_many_lines)]
    fn supervise(
        &mut self,
        ctx: &mut Ctx,
        index: usize,
        agent: &str,
        pid: u32,
        io: &mut StepIo,
    ) -> (Option<GroupOutcome>, SweepOutcome, Option<String>) {
        let clock = ctx.clock.clone();
        let wall = move || clock.wall_ms();
        let mut exit_seen: Option<Instant> = None;
        let mut killer: Option<TreeKiller> = None;
        let mut swept: Option<SweepOutcome> = None;
        let mut protocol: Option<String> = None;
        let mut inotify_woken = false;
        let mut killer_done_at: Option<Instant> = None;
        loop {
            let now = Instant::now();
            let received = signals::take();
            let mut escalate = false;
            for signal in received.stops() {
                escalate |= self.stop_signal(signal);
            }
            if received.count(libc::SIGUSR2) > 0 {
                self.requests.interrupted = true;
            }
            self.reaper.reap(&wall);
            if exit_seen.is_none() && self.reaper.agent_exit().is_some() {
                exit_seen = Some(now);
                io.last_data = now;
            }
            self.absorb_control(now, inotify_woken);

            // Requests → ladder (X4, X6, X9).
            let wanted = if self.requests.stop.is_some() || self.requests.timed_out {
                Some(Ladder::Stop)
            } else if protocol.is_some() {
                Some(Ladder::Protocol)
            } else if self.requests.interrupted {
                Some(Ladder::Interrupt)
            } else {
                None
            };
            match (&killer, wanted) {
                (None, Some(ladder)) => killer = Some(TreeKiller::start(pid, ladder, now)),
                (Some(k), Some(ladder))
                    if k.ladder() == Ladder::Interrupt && ladder != Ladder::Interrupt && k.outcome().is_none() =>
                {
                    killer = Some(TreeKiller::start(pid, ladder, now));
                }
                _ => {}
            }
            if escalate && let Some(k) = &mut killer {
                k.escalate(now);
            }

            // X7: the post-exit stdio guard.
            if let Some(exited) = exit_seen
                && (io.stdout.is_open() || io.stderr.is_open())
                && (now >= io.last_data + GUARD_IDLE || now >= exited + GUARD_TOTAL)
            {
                self.close_pipe(ctx, index, agent, io, Stream::Stdout);
                self.close_pipe(ctx, index, agent, io, Stream::Stderr);
            }
            // X4 after a natural exit, once the writer's stdio closed.
            if exit_seen.is_some() && !io.stdout.is_open() && !io.stderr.is_open() && killer.is_none() {
                killer = Some(TreeKiller::start(pid, Ladder::Cleanup, now));
            }
            if let Some(k) = &mut killer
                && k.tick(now, wall()).is_some()
            {
                let done_at = *killer_done_at.get_or_insert(now);
                if exit_seen.is_none() {
                    // The group is gone (or unkillable) but the agent left it: kill it directly
                    // (an unreaped child of ours, so the pid cannot have been reused).
                    if let Some(p) = i32::try_from(pid).ok().and_then(rustix::process::Pid::from_raw) {
                        let _ = rustix::process::kill_process(p, rustix::process::Signal::KILL);
                    }
                    if now >= done_at + REAP_GIVE_UP {
                        eprintln!("sublaunch-shim: agent {pid} could not be reaped; giving up");
                        exit_seen = Some(now);
                    }
                } else if swept.is_none() {
                    swept = Some(sweep(&mut self.reaper, Some(pid), Some(pid), &wall));
                }
            }
            self.book.tick(now);
            if ctx.parent.gone(now) {
                self.abort_parent_gone(ctx, pid);
            }
            if exit_seen.is_some() && !io.stdout.is_open() && !io.stderr.is_open() && swept.is_some() {
                break;
            }

            // Wait.
            let mut fds: Vec<libc::pollfd> = Vec::with_capacity(3);
            fds.extend(io.stdout.pollfd());
            fds.extend(io.stderr.pollfd());
            let control_slot = self.control.pollfd().map(|p| {
                fds.push(p);
                fds.len() - 1
            });
            let mut wake: Option<Instant> = None;
            let mut at = |t: Option<Instant>| {
                if let Some(t) = t {
                    wake = Some(wake.map_or(t, |w: Instant| w.min(t)));
                }
            };
            at(self.deadline.filter(|_| !self.requests.timed_out).map(|(d, _)| d));
            at(killer.as_ref().and_then(|k| k.next_wake(now)));
            if let Some(exited) = exit_seen.filter(|_| io.stdout.is_open() || io.stderr.is_open()) {
                at(Some((io.last_data + GUARD_IDLE).min(exited + GUARD_TOTAL)));
            }
            if killer_done_at.is_some() && exit_seen.is_none() {
                at(Some(now + Duration::from_millis(50)));
            }
            at(self.book.next_due());
            at(self.control.due());
            at(ctx.parent.due());
            let timeout = wake.map(|w| w.saturating_duration_since(Instant::now()));
            signals::wait(&mut fds, timeout);
            inotify_woken = control_slot.is_some_and(|i| fds[i].revents != 0);
            let ready = |fd: Option<i32>| fds.iter().any(|p| Some(p.fd) == fd && p.revents != 0);
            let (out_ready, err_ready) = (ready(io.stdout.raw_fd()), ready(io.stderr.raw_fd()));
            if out_ready {
                self.drain(ctx, index, agent, io, Stream::Stdout, &mut protocol);
            }
            if err_ready {
                self.drain(ctx, index, agent, io, Stream::Stderr, &mut protocol);
            }
        }
        let outcome = killer.and_then(|k| k.outcome().cloned());
        (outcome, swept.unwrap_or_default(), protocol)
    }

    /// Reads what `stream` has (bounded per wake so signals and timers stay responsive).
    fn drain(
        &mut self,
        ctx: &Ctx,
        index: usize,
        agent: &str,
        io: &mut StepIo,
        stream: Stream,
        protocol: &mut Option<String>,
    ) {
        let mut buf = [0u8; 64 * 1024];
        for _ in 0..16 {
            match io.pipe(stream).read(&mut buf) {
                crate::output::Read::Data(n) => {
                    let failed_before = io.protocol_failed;
                    self.on_data(ctx, index, agent, io, stream, &buf[..n], protocol);
                    if io.protocol_failed && !failed_before {
                        // Start the X6 ladder before reading on: the agent is still blocked
                        // on its full pipe and gets the SIGTERM (R11).
                        return;
                    }
                }
                crate::output::Read::Eof => {
                    self.close_pipe(ctx, index, agent, io, stream);
                    return;
                }
                crate::output::Read::Empty => return,
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn on_data(
        &mut self,
        ctx: &Ctx,
        index: usize,
        agent: &str,
        io: &mut StepIo,
        stream: Stream,
        data: &[u8],
        protocol: &mut Option<String>,
    ) {
        io.last_data = Instant::now();
        io.log.write(data);
        let wall = ctx.now_wall();
        self.book.touch_activity(wall);
        match stream {
            Stream::Stdout => io.stdout_tail.push(data),
            Stream::Stderr => io.stderr_tail.push(data),
        }
        if stream == Stream::Stdout && io.protocol_failed {
            // Drained and counted (in `Pipe::read`), no longer split (R11).
            return;
        }
        let wants_lines = !self.events.is_truncated() || (stream == Stream::Stdout && io.parser.needs_lines());
        let run_id = ctx.cfg.id.as_str();
        let events = &mut self.events;
        let parser = &mut io.parser;
        let pipe = match stream {
            Stream::Stdout => &mut io.stdout,
            Stream::Stderr => &mut io.stderr,
        };
        if wants_lines {
            pipe.split(data, |line, full| {
                emit_line(events, parser.as_mut(), stream, line, full, wall, run_id, index, agent);
            });
        } else {
            pipe.skip(data);
        }
        if stream == Stream::Stdout && pipe.pending() > PROTOCOL_LINE_LIMIT {
            let message = protocol_limit_message(pipe.pending());
            pipe.abandon();
            io.protocol_failed = true;
            eprintln!("sublaunch-shim: {message}");
            protocol.get_or_insert(message);
        }
    }

    fn close_pipe(&mut self, ctx: &Ctx, index: usize, agent: &str, io: &mut StepIo, stream: Stream) {
        let wall = ctx.now_wall();
        let run_id = ctx.cfg.id.as_str();
        let skip = stream == Stream::Stdout && io.protocol_failed;
        let events = &mut self.events;
        let parser = &mut io.parser;
        let pipe = match stream {
            Stream::Stdout => &mut io.stdout,
            Stream::Stderr => &mut io.stderr,
        };
        if !pipe.is_open() {
            return;
        }
        if skip {
            pipe.abandon();
        } else {
            pipe.finish(|line, full| {
                emit_line(events, parser.as_mut(), stream, line, full, wall, run_id, index, agent);
            });
        }
        pipe.close();
    }

    /// R4 after commit: kill the agent's tree hard, release the lease, exit 1.
    fn abort_parent_gone(&mut self, ctx: &mut Ctx, pid: u32) -> ! {
        if let Some(p) = i32::try_from(pid).ok().and_then(rustix::process::Pid::from_raw) {
            let _ = rustix::process::kill_process_group(p, rustix::process::Signal::KILL);
        }
        let clock = ctx.clock.clone();
        let _ = sweep(&mut self.reaper, None, Some(pid), &move || clock.wall_ms());
        ctx.release_lease();
        crate::exit::report("the test parent process exited.");
        std::process::exit(crate::exit::RECORDING_FAILED);
    }
}

#[allow(clippy::too_many_arguments)]
fn emit_line(
    events: &mut events::EventLog,
    parser: &mut dyn OutputParser,
    stream: Stream,
    line: &[u8],
    full: usize,
    wall: u64,
    run_id: &str,
    index: usize,
    agent: &str,
) {
    let parsed = match stream {
        Stream::Stdout => parser.stdout_line(line, full),
        Stream::Stderr => ParsedLine::Text,
    };
    match parsed {
        ParsedLine::Ignore => {}
        ParsedLine::Event(value) => {
            events.append_diagnostic(&events::Event::from_value(value));
        }
        ParsedLine::Text => {
            if events.is_truncated() {
                return;
            }
            let kind = match stream {
                Stream::Stdout => events::Stream::Stdout,
                Stream::Stderr => events::Stream::Stderr,
            };
            let text = String::from_utf8_lossy(line);
            let mut event = events::child_line(kind, wall, &text, run_id, index, agent);
            if full > line.len() {
                event = event.with("lineBytes", full);
            }
            events.append_diagnostic(&event);
        }
    }
}
