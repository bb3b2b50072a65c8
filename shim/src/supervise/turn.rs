//! One pass of the event loop over the running agents: the run's requests, exits and ladders
//! first; then, when no agent is done, one `ppoll` until the next event or timer (output,
//! input room, the control inbox, the deadline, the checkpoint, ladders, the X7 guard, status
//! retries, the test parent), and the output that arrived.

use super::{GUARD_IDLE, GUARD_TOTAL, Supervisor};
use crate::context::Ctx;
use crate::process::input::AgentInput;
use crate::process::pipe::Stream;
use crate::process::signals;
use crate::step::child::ChildRun;
use std::time::{Duration, Instant};

impl Supervisor {
    /// One pass of the event loop over `running`: reacts to signals, the control inbox, the
    /// deadline, agent exits and ladders; when no agent is done, waits for the next event and
    /// drains what arrived.
    pub fn turn(&mut self, ctx: &mut Ctx, running: &mut [ChildRun]) {
        let now = Instant::now();
        let escalation = self.requests.take_signals();
        self.reaper.reap();
        self.absorb_control(now, self.control_woken);
        for child in running.iter_mut() {
            crate::step::gate::gate_timed_out(child, now);
            self.advance(ctx, child, now, escalation);
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
            fds.extend(child.io.input.as_ref().and_then(AgentInput::pollfd));
        }
        // A contained agent's end arrives on its namespace init's status pipe.
        fds.extend(self.reaper.pollfds());
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
        at(self.deadline.filter(|_| !self.requests.timed_out()).map(|(d, _)| d));
        if running.iter().any(|c| c.io.input.is_some() && !c.io.checkpointed) {
            at(self.checkpoint_at());
        }
        for child in running.iter() {
            at(child.gate.as_ref().filter(|g| !g.timed_out).map(|g| g.deadline));
            at(child.killer.as_ref().and_then(|k| k.next_wake(now)));
            if let Some(exited) = child.exit_seen.filter(|_| child.io.any_open()) {
                at(Some((child.io.last_data + GUARD_IDLE).min(exited + GUARD_TOTAL)));
            }
            if child.killer_done_at.is_some() && child.exit_seen.is_none() {
                at(Some(now + Duration::from_millis(50)));
            }
        }
        at(self.book.next_due());
        at(self.cooldown_wake);
        // U1: usage the ledger does not hold yet is appended when it is due, output or not.
        for child in running.iter().filter(|c| c.gate.is_none()) {
            if child.spent.usage.as_ref().is_some_and(|u| *u != child.ledgered) {
                at(Some(
                    child.ledgered_at.unwrap_or(child.started) + super::ledger::LIVE_EVERY,
                ));
            }
        }
        at(self.spend_stop_at());
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
            if out_ready || err_ready {
                child.spent = child.io.parser.spent();
            }
            if let Some(input) = &mut child.io.input {
                input.flush();
            }
        }
        self.check_budgets(ctx, running);
        self.check_rate_limits(ctx, running);
        self.check_spend(ctx, running);
        let now = Instant::now();
        for child in running.iter_mut().filter(|c| c.gate.is_none()) {
            super::ledger::record_progress(ctx, child, now);
            self.save_partial(child, now);
        }
    }
}
