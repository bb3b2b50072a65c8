//! Supervising agents (R10–R13, X4–X9): spawn an agent, drain its output, honour the
//! deadline, the control inbox and signals, the budgets ([`budget`]) and the checkpoint before
//! the deadline (written to the input of agents that take messages, [`input`]), terminate and
//! verify its process tree, and report how it ended. Any number of agents run at once (the tasks of a parallel group); every
//! request of the run (stop, timeout, interrupt, a second stop signal) applies to all of them,
//! and a failFast cancellation to the ones it names.
//!
//! An agent is over when it was reaped, both pipes are closed (EOF, or the X7 guard:
//! 2 000 ms without data or 8 000 ms in total after the exit), a ladder verified its process
//! group (a requested one, or the cleanup ladder run after a natural exit), and the X8 sweep
//! killed and reaped any escaped descendant.

pub mod book;
pub mod bounded;
pub mod budget;
pub mod child;
pub mod control;
pub mod input;
pub mod output;
pub mod queue;
pub mod reaper;
pub mod run;
pub mod spawn;
pub mod streams;
pub mod tree;

use crate::adapter::{self, ParsedLine, ScriptValues, StepInput, TEXT_LINE_RETAIN};
use crate::end::step_end::{RemoteEnd, STOP_BY_USER_MESSAGE, StepEnd, process_tree};
use crate::start::context::Ctx;
use crate::start::faults::Fired;
use crate::start::signals;
use crate::supervise::book::StatusBook;
use crate::supervise::child::{ChildIo, ChildRun};
use crate::supervise::control::{ControlInbox, ControlRequest};
use crate::supervise::output::{Pipe, Stream};
use crate::supervise::reaper::ExitInfo;
use crate::supervise::reaper::Reaper;
use crate::supervise::streams::{OutputLog, PROTOCOL_LINE_LIMIT, protocol_limit_message};
use crate::supervise::tree::{Ladder, TreeKiller, sweep};
use serde_json::json;
use std::time::{Duration, Instant};
use sublaunch_protocol::config::InputFormat;
use sublaunch_protocol::dir::Dir;
use sublaunch_protocol::events::{self, EventLog};
use sublaunch_protocol::lease::WriterState;
use sublaunch_protocol::os::faults::ShimPoint;
use sublaunch_protocol::os::random::uuid_v4;
use sublaunch_protocol::proof::WriterRecord;

/// X7: pipes are closed after this long without data once the agent exited …
pub const GUARD_IDLE: Duration = Duration::from_millis(2_000);
/// … or after this long in total.
pub const GUARD_TOTAL: Duration = Duration::from_millis(8_000);
/// If the agent cannot be reaped after its ladder failed, give up after this long.
const REAP_GIVE_UP: Duration = Duration::from_secs(10);

/// What has been asked of the run (signals X9, control inbox R12, deadline R12).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Requests {
    /// A stop request, with its message (the first one wins).
    pub stop: Option<String>,
    /// The deadline passed or a timeout control arrived.
    pub timed_out: bool,
    /// An interrupt (SIGUSR2, interrupt control).
    pub interrupted: bool,
}

impl Requests {
    /// Whether no further step may start.
    pub fn ends_run(&self) -> bool {
        self.stop.is_some() || self.timed_out || self.interrupted
    }
}

/// The post-commit state shared by the steps and the recorder.
#[derive(Debug)]
pub struct Supervisor {
    /// `status.json` and the active-run marker.
    pub book: StatusBook,
    /// `events.jsonl`.
    pub events: EventLog,
    /// R12 control inbox.
    pub control: ControlInbox,
    /// The reaper of every child.
    pub reaper: Reaper,
    /// Pending requests.
    pub requests: Requests,
    /// The run deadline (monotonic) and the `<ms>` of its message.
    pub deadline: Option<(Instant, u64)>,
    /// When the run started.
    pub started: Instant,
    /// `SUBLAUNCH_OUTPUT_LOG_MAX_BYTES`.
    pub log_cap: u64,
    /// The control inbox's inotify descriptor woke the last wait.
    pub control_woken: bool,
    /// Where each managed worktree stands (its path → the commit the last step there left),
    /// so a step sharing the worktree of the one before counts only its own commits.
    pub worktree_heads: std::collections::BTreeMap<String, String>,
    /// The usage of the run's finished agents (the run's budget counts it with the running
    /// ones').
    pub run_spent: sublaunch_protocol::usage::Usage,
    /// How long before the deadline the agents are asked to wrap up (only with a deadline).
    pub checkpoint: Option<u64>,
}

impl Supervisor {
    /// The `<run>` handle.
    pub fn run_dir(&self) -> &Dir {
        self.book.run()
    }

    /// Handles a stop signal (X9): the first stop message wins; returns whether the run was
    /// already stopping (a second signal skips the grace).
    pub fn stop_signal(&mut self, signal: i32) -> bool {
        let already = self.requests.stop.is_some() || self.requests.timed_out;
        if self.requests.stop.is_none() {
            self.requests.stop = Some(format!("Subagent stopped: runner received {}.", signals::name(signal)));
        }
        already
    }

    /// `Subagent timed out after <ms>ms.`
    pub fn timeout_message(&self) -> String {
        let ms = self.deadline.map_or_else(
            || sublaunch_protocol::os::clock::elapsed_ms(self.started, Instant::now()),
            |(_, ms)| ms,
        );
        format!("Subagent timed out after {ms}ms.")
    }

    /// Records the signals received so far; returns whether a stop signal should skip the
    /// grace of running ladders (X9).
    fn take_signals(&mut self) -> bool {
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
                ControlRequest::Stop => {
                    self.requests
                        .stop
                        .get_or_insert_with(|| STOP_BY_USER_MESSAGE.to_owned());
                }
                ControlRequest::Timeout => self.requests.timed_out = true,
                ControlRequest::Interrupt => self.requests.interrupted = true,
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

    /// Checks the run's requests before a step starts (signals, control inbox, deadline);
    /// returns whether the run is ending.
    pub fn run_is_ending(&mut self) -> bool {
        // Let pending (blocked) signals in and record them, without waiting.
        signals::wait(&mut [], Some(Duration::ZERO));
        self.take_signals();
        self.absorb_control(Instant::now(), true);
        self.requests.ends_run()
    }

    /// The end of step `index` when it never runs (`reason`: `Not run: …`).
    pub fn not_run(ctx: &Ctx, index: usize, reason: &str) -> StepEnd {
        StepEnd {
            not_run: Some(reason.to_owned()),
            closed: true,
            ended_wall: ctx.now_wall(),
            ..step_end(ctx, index, ctx.now_wall())
        }
    }

    /// Starts step `index` with its substituted `task`. A step that cannot start (the run is
    /// ending, the command cannot be built, the spawn fails) returns its end at once.
    pub fn start_child(
        &mut self,
        ctx: &mut Ctx,
        index: usize,
        task: &str,
        script_values: Option<&ScriptValues>,
    ) -> Result<ChildRun, Box<StepEnd>> {
        let adapter = adapter::for_step(&ctx.cfg, index);
        let started = Instant::now();
        let step = ctx.cfg.steps[index].clone();
        let mut end = step_end(ctx, index, ctx.now_wall());
        if let Fired::Stopped(signal) = ctx.fire(ShimPoint::BeforeAgentSpawn) {
            self.stop_signal(signal);
        }
        if self.run_is_ending() {
            self.apply_requests_to(&mut end);
            end.ended_wall = ctx.now_wall();
            return Err(Box::new(end));
        }
        self.step_running(ctx, index, end.started_wall);
        let event = events::step_started(ctx.now_wall(), &ctx.cfg.id, end.index, &end.agent);
        self.events.append(&end.with_position(event));
        ctx.set_writer(WriterState::Spawning, None);
        let spec = step.adapter.clone();
        let cwd = ctx.cfg.step_cwd(index).to_owned();
        let live = adapter::LiveOptions {
            cost_cap_usd: self.cost_cap(ctx, &step),
            streamed_input: self.checkpoint.is_some() && step.placement.is_none() && adapter.takes_input(),
            project_config: ctx.cfg.project_config,
        };
        // pi reads its files as arguments (outside its RPC mode); every other agent is told
        // which to read.
        let task = if adapter.takes_file_arguments() && !live.streamed_input {
            task.to_owned()
        } else {
            crate::adapter::reads::with_preamble(task, &step.reads)
        };
        let input = StepInput {
            index,
            step: &step,
            spec: spec.as_ref(),
            task: &task,
            script_values,
            cwd: &cwd,
            run: self.book.run(),
            live,
        };
        let parser = adapter::parser(adapter, &input);
        let built =
            adapter::command(adapter, &input).and_then(|command| adapter::check_argv(&command.argv).map(|()| command));
        let (built, parser, remote) = match (built, step.placement.clone()) {
            (Ok(command), Some(placement)) => match crate::remote::place(command, placement, adapter, parser) {
                Ok((command, parser, remote)) => (Ok(command), parser, Some(remote)),
                Err(error) => (Err(error), adapter::parser(adapter, &input), None),
            },
            (built, _) => (built, parser, None),
        };
        let spawned = built.and_then(|command| {
            crate::supervise::spawn::spawn(&command, ctx.cfg.agent_umask)
                .map(|spawned| (spawned, command.stdin))
                .map_err(|e| spawn_error(&command.argv, &e))
        });
        let (spawned, first_input) = match spawned {
            Ok(spawned) => spawned,
            Err(error) => {
                ctx.set_writer(WriterState::None, None);
                end.spawn_error = Some(error);
                end.ended_wall = ctx.now_wall();
                end.duration_ms = sublaunch_protocol::os::clock::elapsed_ms(started, Instant::now());
                return Err(Box::new(end));
            }
        };
        let pid = spawned.pid;
        ctx.set_writer(WriterState::Running, Some(pid));
        self.reaper.watch(pid);
        self.note_pid(ctx, index, pid);
        let mut io = ChildIo::new(
            Pipe::new(spawned.stdout, parser.line_retain_limit()),
            Pipe::new(spawned.stderr, TEXT_LINE_RETAIN),
            parser,
            OutputLog::open(self.run_dir(), index, self.log_cap),
        );
        io.input = spawned
            .stdin
            .map(|fd| crate::supervise::input::AgentInput::new(fd, first_input.unwrap_or_default()));
        Ok(ChildRun {
            index,
            agent: end.agent,
            pid,
            started,
            started_wall: end.started_wall,
            io,
            exit_seen: None,
            killer: None,
            killer_done_at: None,
            swept: None,
            protocol: None,
            cancel: None,
            budget: None,
            remote,
        })
    }

    /// One pass of the event loop over `running`: reacts to signals, the control inbox, the
    /// deadline, agent exits and ladders; when no agent is done, waits for the next event and
    /// drains what arrived.
    pub fn turn(&mut self, ctx: &mut Ctx, running: &mut [ChildRun]) {
        let now = Instant::now();
        let escalate = self.take_signals();
        self.reaper.reap();
        self.absorb_control(now, self.control_woken);
        for child in running.iter_mut() {
            self.advance(ctx, child, now, escalate);
        }
        self.checkpoint_due(ctx, running, now);
        self.book.tick(now);
        if ctx.parent.gone(now) {
            let pids: Vec<u32> = running.iter().map(|c| c.pid).collect();
            self.abort_parent_gone(ctx, &pids);
        }
        if running.iter().any(ChildRun::is_done) {
            return;
        }

        // Wait.
        let mut fds: Vec<libc::pollfd> = Vec::with_capacity(2 * running.len() + 1);
        for child in running.iter() {
            fds.extend(child.io.stdout.pollfd());
            fds.extend(child.io.stderr.pollfd());
            fds.extend(
                child
                    .io
                    .input
                    .as_ref()
                    .and_then(crate::supervise::input::AgentInput::pollfd),
            );
        }
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
        if running.iter().any(|c| c.io.input.is_some() && !c.io.checkpointed) {
            at(self.checkpoint_at());
        }
        for child in running.iter() {
            at(child.killer.as_ref().and_then(|k| k.next_wake(now)));
            if let Some(exited) = child.exit_seen.filter(|_| child.io.any_open()) {
                at(Some((child.io.last_data + GUARD_IDLE).min(exited + GUARD_TOTAL)));
            }
            if child.killer_done_at.is_some() && child.exit_seen.is_none() {
                at(Some(now + Duration::from_millis(50)));
            }
        }
        at(self.book.next_due());
        at(self.control.due());
        at(ctx.parent.due());
        let timeout = wake.map(|w| w.saturating_duration_since(Instant::now()));
        signals::wait(&mut fds, timeout);
        self.control_woken = control_slot.is_some_and(|i| fds[i].revents != 0);
        let ready = |fd: Option<i32>| fds.iter().any(|p| Some(p.fd) == fd && p.revents != 0);
        for child in running.iter_mut() {
            let (out_ready, err_ready) = (ready(child.io.stdout.raw_fd()), ready(child.io.stderr.raw_fd()));
            if out_ready {
                self.drain(ctx, child, Stream::Stdout);
            }
            if err_ready {
                self.drain(ctx, child, Stream::Stderr);
            }
            if let Some(input) = &mut child.io.input {
                input.flush();
            }
        }
        self.check_budgets(ctx, running);
    }

    /// Marks every agent that crossed its step's budget, and every running agent when the
    /// run's agents together crossed the run's; [`Self::advance`] then stops them.
    fn check_budgets(&self, ctx: &Ctx, running: &mut [ChildRun]) {
        let run_budget = ctx.cfg.usage_budget.as_ref();
        let limited = |c: &ChildRun| {
            let step = &ctx.cfg.steps[c.index];
            step.usage_budget.is_some() || step.tool_budget.is_some()
        };
        // Most runs have no budget: their agents' counters are not even read.
        if run_budget.is_none() && !running.iter().any(limited) {
            return;
        }
        let mut run_usage = run_budget.map(|_| self.run_spent.clone());
        for child in running.iter_mut() {
            let spent = child.io.parser.spent();
            if let (Some(total), Some(usage)) = (run_usage.as_mut(), &spent.usage) {
                total.add(usage);
            }
            if child.budget.is_none() {
                let step = &ctx.cfg.steps[child.index];
                child.budget = budget::crossed(
                    budget::Scope::Step,
                    step.usage_budget.as_ref(),
                    step.tool_budget,
                    &spent,
                );
            }
        }
        let run_spent = adapter::Spent {
            usage: run_usage,
            tool_calls: 0,
        };
        if let Some(exceeded) = budget::crossed(budget::Scope::Run, run_budget, None, &run_spent) {
            for child in running
                .iter_mut()
                .filter(|c| c.budget.is_none() && c.exit_seen.is_none())
            {
                child.budget = Some(exceeded.clone());
            }
        }
    }

    /// Moves one agent on: exit, ladders (X4, X6, X9), the X7 guard, the X8 sweep.
    fn advance(&mut self, ctx: &Ctx, child: &mut ChildRun, now: Instant, escalate: bool) {
        let pid = child.pid;
        if child.exit_seen.is_none() && self.reaper.exit_of(pid).is_some() {
            child.exit_seen = Some(now);
            child.io.last_data = now;
        }
        let wanted = if self.requests.stop.is_some()
            || self.requests.timed_out
            || child.cancel.is_some()
            || child.budget.is_some()
        {
            Some(Ladder::Stop)
        } else if child.protocol.is_some() {
            Some(Ladder::Protocol)
        } else if self.requests.interrupted {
            Some(Ladder::Interrupt)
        } else if child.exit_seen.is_none() && child.io.parser.settled() {
            Some(Ladder::Drain)
        } else {
            None
        };
        if wanted.is_some() && child.exit_seen.is_none() {
            stop_remote_side(child);
        }
        // An agent that takes messages ends when its input does: once it answered, or when it
        // is being stopped anyway.
        if (wanted.is_some() || child.exit_seen.is_some() || child.io.parser.answered())
            && let Some(input) = child.io.input.as_mut().filter(|i| !i.closing())
        {
            input.close();
        }
        match (&child.killer, wanted) {
            (None, Some(ladder)) => child.killer = Some(TreeKiller::start(pid, ladder, now)),
            // A request outranks the milder ladders: interrupt, and the drain of an agent that
            // already answered.
            (Some(k), Some(ladder))
                if matches!(k.ladder(), Ladder::Interrupt | Ladder::Drain)
                    && ladder != k.ladder()
                    && ladder != Ladder::Drain
                    && k.outcome().is_none() =>
            {
                child.killer = Some(TreeKiller::start(pid, ladder, now));
            }
            _ => {}
        }
        if escalate && let Some(k) = &mut child.killer {
            k.escalate(now);
        }

        // X7: the post-exit stdio guard.
        if let Some(exited) = child.exit_seen
            && child.io.any_open()
            && (now >= child.io.last_data + GUARD_IDLE || now >= exited + GUARD_TOTAL)
        {
            self.close_pipe(ctx, child, Stream::Stdout);
            self.close_pipe(ctx, child, Stream::Stderr);
        }
        // X4 after a natural exit, once the writer's stdio closed.
        if child.exit_seen.is_some() && !child.io.any_open() && child.killer.is_none() {
            child.killer = Some(TreeKiller::start(pid, Ladder::Cleanup, now));
        }
        if let Some(k) = &mut child.killer
            && k.tick(now, ctx.now_wall()).is_some()
        {
            let done_at = *child.killer_done_at.get_or_insert(now);
            if child.exit_seen.is_none() {
                // The group is gone (or unkillable) but the agent left it: kill it directly
                // (an unreaped child of ours, so the pid cannot have been reused).
                if let Some(p) = i32::try_from(pid).ok().and_then(rustix::process::Pid::from_raw) {
                    let _ = rustix::process::kill_process(p, rustix::process::Signal::KILL);
                }
                if now >= done_at + REAP_GIVE_UP {
                    eprintln!("sublaunch-shim: agent {pid} could not be reaped; giving up");
                    child.exit_seen = Some(now);
                }
            } else if child.swept.is_none() {
                child.swept = Some(sweep(&mut self.reaper, Some(pid), Some(pid)));
            }
        }
    }

    /// The end of an agent that [`ChildRun::is_done`]: exit, requests, output, writer record.
    pub fn finish_child(&mut self, ctx: &mut Ctx, mut child: ChildRun) -> StepEnd {
        let step = ctx.cfg.steps[child.index].clone();
        let ended_wall = ctx.now_wall();
        let mut end = StepEnd {
            pid: Some(child.pid),
            exit: self.reaper.exit_of(child.pid).cloned(),
            ..step_end(ctx, child.index, child.started_wall)
        };
        self.apply_requests_to(&mut end);
        end.drained = child
            .killer
            .as_ref()
            .is_some_and(|k| k.ladder() == Ladder::Drain && k.signalled());
        end.cancel = child.cancel.take();
        end.protocol = child.protocol.take();
        let tail = child.io.stdout_tail.bytes();
        let tail_cut = child.io.stdout.total() > tail.len() as u64;
        let spent = child.io.parser.spent();
        let mut extracted = child.io.parser.finish(&tail, tail_cut);
        // An agent stopped before its final event still reported what it spent so far.
        if extracted.usage.is_none() {
            extracted.usage.clone_from(&spent.usage);
        }
        end.budget = child
            .budget
            .take()
            .or_else(|| self.final_budget_check(ctx, child.index, &extracted, &spent));
        if let Some(usage) = &extracted.usage {
            self.run_spent.add(usage);
        }
        end.remote = child.remote.as_ref().map(|r| RemoteEnd {
            placement: r.placement.clone(),
            state: r.state.borrow().clone(),
        });
        crate::end::verdict::judge(&mut end, &step, extracted);
        if let Some(path) = &step.output_file
            && end.state() == sublaunch_protocol::status::RunState::Complete
        {
            let answer = crate::workflow::placeholders::handoff(&end);
            match crate::end::output_file::write(path, &answer, ctx.cfg.agent_umask) {
                Ok(()) => end.output_file = Some(path.clone()),
                Err(problem) => end.validation = Some(format!("The step completed, but its answer {problem}.")),
            }
        }
        if let Some(worktree) = &step.worktree {
            let start = self
                .worktree_heads
                .get(&worktree.path)
                .unwrap_or(&worktree.base_commit)
                .clone();
            let left = crate::end::worktree::capture(worktree, ctx.cfg.step_cwd(child.index), &start);
            if let Some(head) = &left.head {
                self.worktree_heads.insert(worktree.path.clone(), head.clone());
            }
            end.worktree = Some(left);
        }
        end.stderr_tail = child.io.stderr_tail.bytes();
        end.stdout_bytes = child.io.stdout.total();
        end.stderr_bytes = child.io.stderr.total();
        end.ended_wall = ended_wall;
        end.duration_ms = sublaunch_protocol::os::clock::elapsed_ms(child.started, Instant::now());
        let outcome = child.killer.as_ref().and_then(|k| k.outcome().cloned());
        end.writer = Some(WriterRecord {
            process_instance_id: uuid_v4(ctx.os.random.as_ref()),
            attempt: 0,
            close_observed_at: ended_wall,
            exit_code: end.exit.as_ref().and_then(|e| e.code),
            signal: end.exit.as_ref().and_then(ExitInfo::signal_name),
            process_tree: process_tree(child.pid, outcome, &child.swept.take().unwrap_or_default()),
            extra: serde_json::Map::new(),
        });
        self.reaper.forget(child.pid);
        if let Fired::Stopped(signal) = ctx.fire(ShimPoint::AfterAgentExit) {
            self.stop_signal(signal);
        }
        end
    }

    /// When the agents are asked to wrap up: the checkpoint's time before the deadline.
    fn checkpoint_at(&self) -> Option<Instant> {
        let (deadline, _) = self.deadline?;
        let before = Duration::from_millis(self.checkpoint?);
        Some(deadline.checked_sub(before).unwrap_or(self.started))
    }

    /// Writes the checkpoint to every running agent that takes messages, once, when it is
    /// due and the agent has not answered yet.
    fn checkpoint_due(&mut self, ctx: &Ctx, running: &mut [ChildRun], now: Instant) {
        let (Some(at), Some(ms)) = (self.checkpoint_at(), self.checkpoint) else {
            return;
        };
        if now < at {
            return;
        }
        for child in running.iter_mut() {
            let io = &mut child.io;
            if io.checkpointed || io.parser.answered() || child.exit_seen.is_some() {
                continue;
            }
            let Some(input) = io.input.as_mut().filter(|i| i.is_open() && !i.closing()) else {
                continue;
            };
            io.checkpointed = true;
            io.parser.input_sent();
            let text = checkpoint_message(ms);
            input.send(&match adapter::for_step(&ctx.cfg, child.index).input_format() {
                Some(InputFormat::PiRpc) => crate::adapter::pi_rpc_line("steer", &text),
                _ => crate::adapter::claude_user_line(&text),
            });
            let event = events::step_checkpoint(ctx.now_wall(), &ctx.cfg.id, child.index, &child.agent, ms);
            self.events.append(&event);
        }
    }

    /// The dollars a Claude Code step may still spend: its own budget, or what is left of the
    /// run's, whichever is less.
    fn cost_cap(&self, ctx: &Ctx, step: &sublaunch_protocol::config::StepConfig) -> Option<f64> {
        let own = step.usage_budget.as_ref().and_then(|b| b.max_cost_usd);
        let left = ctx
            .cfg
            .usage_budget
            .as_ref()
            .and_then(|b| b.max_cost_usd)
            .map(|max| (max - self.run_spent.cost_usd.unwrap_or(0.0)).max(0.0));
        match (own, left) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The budgets against the agent's last word (Claude Code's result has the exact
    /// figures; Codex reports its usage only as its turn ends).
    fn final_budget_check(
        &self,
        ctx: &Ctx,
        index: usize,
        extracted: &adapter::Extracted,
        spent: &adapter::Spent,
    ) -> Option<budget::Exceeded> {
        let step = &ctx.cfg.steps[index];
        let last = adapter::Spent {
            usage: extracted.usage.clone(),
            tool_calls: spent.tool_calls,
        };
        budget::crossed(budget::Scope::Step, step.usage_budget.as_ref(), step.tool_budget, &last).or_else(|| {
            let mut total = self.run_spent.clone();
            total.add(extracted.usage.as_ref()?);
            let run = adapter::Spent {
                usage: Some(total),
                tool_calls: 0,
            };
            budget::crossed(budget::Scope::Run, ctx.cfg.usage_budget.as_ref(), None, &run)
        })
    }

    fn step_running(&mut self, ctx: &Ctx, index: usize, wall: u64) {
        let output_file = ctx.paths.run.join(sublaunch_protocol::layout::names::output_log(index));
        let status = &mut self.book.status;
        status.current_step = u32::try_from(index).ok();
        status.last_update = Some(wall);
        status.output_file = Some(output_file.to_string_lossy().into_owned());
        if let Some(step) = status.steps.as_mut().and_then(|s| s.get_mut(index)) {
            step.status = Some("running".into());
            step.started_at = Some(wall);
            step.agent.get_or_insert_with(|| ctx.agent_name(index));
        }
        // Written with the agent's pid right after the spawn (`note_pid`), or with the step's
        // end when it cannot start: one status write per step start instead of two.
        self.book.changed();
    }

    fn note_pid(&mut self, ctx: &Ctx, index: usize, pid: u32) {
        let wall = ctx.now_wall();
        if let Some(step) = self.book.status.steps.as_mut().and_then(|s| s.get_mut(index)) {
            // The start identity lets whoever finds this runner dead end the agent's group
            // without ever signalling a process that reused the pid (X8).
            let identity = sublaunch_protocol::procinfo::start_identity(pid).ok().flatten();
            step.extra.insert(
                "externalProcess".into(),
                json!({"pid": pid, "startedAt": wall, "startIdentity": identity}),
            );
        }
        self.book.update();
    }

    /// Reads what `stream` has (bounded per wake so signals and timers stay responsive).
    fn drain(&mut self, ctx: &Ctx, child: &mut ChildRun, stream: Stream) {
        let mut buf = [0u8; 64 * 1024];
        for _ in 0..16 {
            match child.io.pipe_and_parser(stream).0.read(&mut buf) {
                crate::supervise::output::Read::Data(n) => {
                    let failed_before = child.io.protocol_failed;
                    self.on_data(ctx, child, stream, &buf[..n]);
                    if child.io.protocol_failed && !failed_before {
                        // Start the X6 ladder before reading on: the agent is still blocked
                        // on its full pipe and gets the SIGTERM (R11).
                        return;
                    }
                }
                crate::supervise::output::Read::Eof => {
                    self.close_pipe(ctx, child, stream);
                    return;
                }
                crate::supervise::output::Read::Empty => return,
            }
        }
    }

    fn on_data(&mut self, ctx: &Ctx, child: &mut ChildRun, stream: Stream, data: &[u8]) {
        let io = &mut child.io;
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
        let origin = Origin {
            run_id: &ctx.cfg.id,
            index: child.index,
            agent: &child.agent,
            wall,
        };
        let events = &mut self.events;
        let (pipe, parser) = io.pipe_and_parser(stream);
        if wants_lines {
            pipe.lines.push(data, |line, full| {
                emit_line(events, parser, stream, line, full, &origin);
            });
        } else {
            pipe.lines.skip(data);
        }
        if stream == Stream::Stdout && pipe.lines.pending() > PROTOCOL_LINE_LIMIT {
            let message = protocol_limit_message(pipe.lines.pending());
            pipe.lines.abandon();
            io.protocol_failed = true;
            eprintln!("sublaunch-shim: {message}");
            child.protocol.get_or_insert(message);
        }
    }

    fn close_pipe(&mut self, ctx: &Ctx, child: &mut ChildRun, stream: Stream) {
        let io = &mut child.io;
        let origin = Origin {
            run_id: &ctx.cfg.id,
            index: child.index,
            agent: &child.agent,
            wall: ctx.now_wall(),
        };
        let skip = stream == Stream::Stdout && io.protocol_failed;
        let events = &mut self.events;
        let (pipe, parser) = io.pipe_and_parser(stream);
        if !pipe.is_open() {
            return;
        }
        if skip {
            pipe.lines.abandon();
        } else {
            pipe.lines.finish(|line, full| {
                emit_line(events, parser, stream, line, full, &origin);
            });
        }
        pipe.close();
    }

    /// R4 after commit: kill the agents' trees hard, release the lease, exit 1.
    fn abort_parent_gone(&mut self, ctx: &mut Ctx, pids: &[u32]) -> ! {
        for pid in pids {
            if let Some(p) = i32::try_from(*pid).ok().and_then(rustix::process::Pid::from_raw) {
                let _ = rustix::process::kill_process_group(p, rustix::process::Signal::KILL);
            }
        }
        let _ = sweep(&mut self.reaper, None, pids.first().copied());
        ctx.release_lease();
        crate::end::exit::report("the test parent process exited.");
        std::process::exit(crate::end::exit::RECORDING_FAILED);
    }
}

/// The end of step `index`, started at `started_wall`, as far as it is known before it runs.
fn step_end(ctx: &Ctx, index: usize, started_wall: u64) -> StepEnd {
    StepEnd {
        index,
        agent: ctx.agent_name(index),
        position: ctx
            .cfg
            .steps
            .get(index)
            .map_or((None, None), |s| (s.step_index, s.task_index)),
        adapter: adapter::for_step(&ctx.cfg, index).to_string(),
        started_wall,
        ..StepEnd::default()
    }
}

/// What an agent is told when the deadline nears.
fn checkpoint_message(ms: u64) -> String {
    let seconds = ms.div_ceil(1000);
    format!(
        "[sublaunch] This run ends in {seconds} s. Wrap up now: stop starting new work, finish or \
         abandon what is in progress, and give your final answer with what you have, saying \
         what is left undone."
    )
}

/// An OS spawn error, saying which program and, when it was not found, where it was looked for.
fn spawn_error(argv: &[String], error: &std::io::Error) -> String {
    let program = argv.first().map_or("", String::as_str);
    if error.kind() == std::io::ErrorKind::NotFound && !program.contains('/') {
        format!("Cannot start '{program}': {error}. Is it installed and on PATH?")
    } else {
        format!("Cannot start '{program}': {error}")
    }
}

/// Where a line came from.
struct Origin<'a> {
    run_id: &'a str,
    index: usize,
    agent: &'a str,
    wall: u64,
}

fn emit_line(
    events: &mut events::EventLog,
    parser: &mut dyn adapter::OutputParser,
    stream: Stream,
    line: &[u8],
    full: usize,
    origin: &Origin<'_>,
) {
    let parsed = match stream {
        Stream::Stdout => parser.stdout_line(line, full),
        Stream::Stderr => ParsedLine::Text,
    };
    match parsed {
        ParsedLine::Ignore => {}
        ParsedLine::Event(value) => {
            let mut event = events::Event::from_value(value);
            if event.get("ts").is_none() {
                event = event.with("ts", origin.wall);
            }
            let event = event
                .with("subagentSource", "child")
                .with("subagentRunId", origin.run_id)
                .with("subagentStepIndex", origin.index)
                .with("subagentAgent", origin.agent)
                .with("observedAt", origin.wall);
            events.append_diagnostic(&event);
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
            let mut event = events::child_line(kind, origin.wall, &text, origin.run_id, origin.index, origin.agent);
            if full > line.len() {
                event = event.with("lineBytes", full);
            }
            events.append_diagnostic(&event);
        }
    }
}

/// A stop, timeout or interrupt of a placed child ends its remote process group first (once):
/// the local ssh then ends when the remote command does. Without a known group (the remote
/// shell never announced it) only the local ladder runs.
fn stop_remote_side(child: &mut ChildRun) {
    let Some(remote) = child.remote.as_mut().filter(|r| !r.stop_sent) else {
        return;
    };
    remote.stop_sent = true;
    let Some(pgid) = remote.state.borrow().pgid else {
        return;
    };
    if let Err(message) = crate::remote::stop::stop_remote(&remote.placement, pgid) {
        eprintln!("sublaunch-shim: {message}");
    }
}
