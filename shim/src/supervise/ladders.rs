//! Ending an agent (X4–X9): which ladder it is asked for, the ladder against its process
//! group and its remote side, the X7 guard on its pipes after it exited, the X8 sweep once its
//! group is gone, and the hard abort when the test parent vanished (R4).

use super::{Ending, Escalation, GUARD_IDLE, GUARD_TOTAL, Supervisor};
use crate::context::Ctx;
use crate::process::pipe::Stream;
use crate::process::tree::{Ladder, TreeKiller, sweep};
use crate::step::child::ChildRun;
use std::time::{Duration, Instant};

/// If the agent cannot be reaped after its ladder failed, give up after this long.
const REAP_GIVE_UP: Duration = Duration::from_secs(10);

impl Supervisor {
    /// Moves one agent on: exit, ladders (X4, X6, X9), the X7 guard, the X8 sweep.
    pub(super) fn advance(&mut self, ctx: &Ctx, child: &mut ChildRun, now: Instant, escalation: Escalation) {
        let pid = child.pid;
        if child.exit_seen.is_none() && self.reaper.exit_of(pid).is_some() {
            child.exit_seen = Some(now);
            child.io.last_data = now;
        }
        let wanted = self.wanted_ladder(child);
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
        if escalation == Escalation::SkipGrace
            && let Some(k) = &mut child.killer
        {
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
                // (or its namespace's init: an unreaped child of ours either way, so the pid
                // cannot have been reused).
                self.reaper.kill_hard(pid);
                if now >= done_at + REAP_GIVE_UP {
                    eprintln!("sublaunch-shim: agent {pid} could not be reaped; giving up");
                    child.exit_seen = Some(now);
                }
            } else if child.swept.is_none() {
                child.swept = Some(sweep(&mut self.reaper, Some(pid), Some(pid)));
            }
        }
    }

    /// The ladder this agent is asked for, the strongest reason first: a stop (the run's stop
    /// or timeout, a failFast cancellation, a crossed budget), its own protocol failure, the
    /// run's interrupt, the final drain of an agent that settled without exiting.
    fn wanted_ladder(&self, child: &ChildRun) -> Option<Ladder> {
        let ending = self.requests.ending();
        if matches!(ending, Some(Ending::Stopped(_) | Ending::TimedOut))
            || child.cancel.is_some()
            || child.budget.is_some()
            || child.rate_limit_stop
            || child.gate.as_ref().is_some_and(|gate| gate.timed_out)
        {
            Some(Ladder::Stop)
        } else if child.protocol.is_some() {
            Some(Ladder::Protocol)
        } else if ending == Some(Ending::Interrupted) {
            Some(Ladder::Interrupt)
        } else if child.exit_seen.is_none() && child.io.parser.settled() {
            Some(Ladder::Drain)
        } else {
            None
        }
    }

    /// R4 after commit: kill the agents' trees hard, release the lease, exit 1.
    pub(super) fn abort_parent_gone(&mut self, ctx: &mut Ctx, pids: &[u32]) -> ! {
        for pid in pids {
            if let Some(p) = i32::try_from(*pid).ok().and_then(rustix::process::Pid::from_raw) {
                let _ = rustix::process::kill_process_group(p, rustix::process::Signal::KILL);
            }
        }
        let _ = sweep(&mut self.reaper, None, pids.first().copied());
        ctx.release_lease();
        crate::process::exit::report("the test parent process exited.");
        std::process::exit(crate::process::exit::RECORDING_FAILED);
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
