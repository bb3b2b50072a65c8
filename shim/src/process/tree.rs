//! Terminating the agent's process tree (X4, X6, X8, X9).
//!
//! [`TreeKiller`] drives one signal ladder against the agent's process group and decides when
//! the group is empty: `kill(-pgid, 0)` = `ESRCH` after the shim reaped its own children (an
//! unreaped zombie leader still counts, and keeps the pgid from being reused, so a signal can
//! never reach a stranger). Ladders:
//! * stop / timeout / cleanup after a natural exit (X4): SIGTERM, SIGKILL after 3 000 ms;
//! * protocol limit (X6): SIGTERM, SIGKILL after 3 000 ms;
//! * interrupt (X6): SIGINT, SIGTERM after 1 000 ms, SIGKILL 3 000 ms later;
//! * final drain (X5): an agent still running 1 000 ms after its terminal event gets SIGTERM,
//!   SIGKILL 3 000 ms later.
//!
//! After SIGKILL the group must be empty within 1 000 ms, else the tree is
//! `unknown/verification-failed`. A second stop signal skips the grace (X9).
//!
//! [`sweep`] is X8: it SIGKILLs and reaps every child of the shim that is not the agent —
//! descendants that left the group and were re-parented to the subreaper shim — repeating
//! while killing uncovers more, then checks that nothing of the shim's session survives.
//!
//! A contained agent's escaped descendants are not the shim's children but live on in its PID
//! namespace, re-parented to the namespace's init. Its sweep (G46) sends SIGTERM to what the
//! init adopted — so a nested run's detached shim can record its stop — waits up to
//! [`NS_SWEEP_GRACE`] for the namespace to empty, then SIGKILLs the init, which makes the
//! kernel end the rest. They count as adopted descendants killed, as before.

use crate::process::reaper::{Reaper, children_of_self, descendants_of, members, proc_stat};
use crate::process::signals;
use rustix::io::Errno;
use rustix::process::{Pid, Signal};
use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// Grace between SIGTERM and SIGKILL (X4).
pub const TERM_GRACE: Duration = Duration::from_millis(3_000);
/// Time allowed for the group to empty after SIGKILL (X4).
pub const KILL_WAIT: Duration = Duration::from_millis(1_000);
/// Final drain: how long an agent may linger after its terminal event before SIGTERM (X5).
pub const DRAIN_GRACE: Duration = Duration::from_millis(1_000);
/// Interrupt ladder: SIGINT, then SIGTERM after this (X6).
pub const INTERRUPT_GRACE: Duration = Duration::from_millis(1_000);
/// How often group emptiness is re-checked while a ladder runs (between SIGCHLDs).
pub const GROUP_POLL: Duration = Duration::from_millis(25);

/// Which ladder.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ladder {
    /// Stop request or timeout (X4).
    Stop,
    /// Protocol limit (X6).
    Protocol,
    /// Interrupt (X6).
    Interrupt,
    /// Lingering group members after a natural exit (X4 "finish after writer close").
    Cleanup,
    /// The agent printed its terminal event but has not exited (X5).
    Drain,
}

/// How the group ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GroupOutcome {
    /// Verified empty at this wall time.
    Empty {
        /// Wall ms of the verification.
        verified_at: u64,
    },
    /// A signal could not be delivered.
    SignalFailed(String),
    /// Members remained after SIGKILL.
    VerificationFailed(String),
}

/// One ladder against one process group.
#[derive(Debug)]
pub struct TreeKiller {
    pgid: u32,
    ladder: Ladder,
    schedule: VecDeque<(Instant, Signal)>,
    signalled: bool,
    kill_sent: Option<Instant>,
    outcome: Option<GroupOutcome>,
}

/// Whether no process of group `pgid` exists any more.
pub fn group_empty(pgid: u32) -> bool {
    let Some(pid) = i32::try_from(pgid).ok().and_then(Pid::from_raw) else {
        return true;
    };
    matches!(rustix::process::test_kill_process_group(pid), Err(Errno::SRCH))
}

impl TreeKiller {
    /// Starts `ladder` against `pgid` now.
    pub fn start(pgid: u32, ladder: Ladder, now: Instant) -> Self {
        let schedule = match ladder {
            Ladder::Stop | Ladder::Protocol | Ladder::Cleanup => {
                VecDeque::from([(now, Signal::TERM), (now + TERM_GRACE, Signal::KILL)])
            }
            Ladder::Drain => VecDeque::from([
                (now + DRAIN_GRACE, Signal::TERM),
                (now + DRAIN_GRACE + TERM_GRACE, Signal::KILL),
            ]),
            Ladder::Interrupt => VecDeque::from([
                (now, Signal::INT),
                (now + INTERRUPT_GRACE, Signal::TERM),
                (now + INTERRUPT_GRACE + TERM_GRACE, Signal::KILL),
            ]),
        };
        Self {
            pgid,
            ladder,
            schedule,
            signalled: false,
            kill_sent: None,
            outcome: None,
        }
    }

    /// The ladder in use.
    pub fn ladder(&self) -> Ladder {
        self.ladder
    }

    /// Whether a signal was sent to the group.
    pub fn signalled(&self) -> bool {
        self.signalled
    }

    /// The outcome, once decided.
    pub fn outcome(&self) -> Option<&GroupOutcome> {
        self.outcome.as_ref()
    }

    /// X9: skip the remaining grace — SIGKILL at the next tick.
    pub fn escalate(&mut self, now: Instant) {
        if self.outcome.is_none() && self.kill_sent.is_none() {
            self.schedule = VecDeque::from([(now, Signal::KILL)]);
        }
    }

    /// Advances the ladder; call after reaping. Returns the outcome once decided.
    pub fn tick(&mut self, now: Instant, wall_ms: u64) -> Option<&GroupOutcome> {
        if self.outcome.is_some() {
            return self.outcome.as_ref();
        }
        if group_empty(self.pgid) {
            self.outcome = Some(GroupOutcome::Empty { verified_at: wall_ms });
            return self.outcome.as_ref();
        }
        while self.schedule.front().is_some_and(|(at, _)| *at <= now) {
            let Some((_, signal)) = self.schedule.pop_front() else {
                break;
            };
            let Some(pid) = i32::try_from(self.pgid).ok().and_then(Pid::from_raw) else {
                break;
            };
            self.signalled = true;
            match rustix::process::kill_process_group(pid, signal) {
                Ok(()) | Err(Errno::SRCH) => {}
                Err(e) if signal == Signal::KILL => {
                    self.outcome = Some(GroupOutcome::SignalFailed(format!(
                        "kill(-{}, SIGKILL) failed: {e}",
                        self.pgid
                    )));
                    return self.outcome.as_ref();
                }
                Err(e) => eprintln!(
                    "sublaunch-shim: kill(-{}, {}) failed: {e}",
                    self.pgid,
                    signals::name(signal.as_raw())
                ),
            }
            if signal == Signal::KILL {
                self.kill_sent = Some(now);
            }
        }
        if self.kill_sent.is_some_and(|at| now >= at + KILL_WAIT) {
            let left = members(None, Some(self.pgid), std::process::id());
            self.outcome = Some(GroupOutcome::VerificationFailed(format!(
                "process group {} still has members after SIGKILL: {}",
                self.pgid,
                pid_list(&left)
            )));
        }
        self.outcome.as_ref()
    }

    /// When the ladder next needs a tick.
    pub fn next_wake(&self, now: Instant) -> Option<Instant> {
        if self.outcome.is_some() {
            return None;
        }
        let mut wake = now + GROUP_POLL;
        if let Some((at, _)) = self.schedule.front() {
            wake = wake.min(*at);
        }
        if let Some(at) = self.kill_sent {
            wake = wake.min(at + KILL_WAIT);
        }
        Some(wake)
    }
}

/// The result of an X8 sweep.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SweepOutcome {
    /// Adopted descendants SIGKILLed.
    pub killed: u32,
    /// Processes of the shim's session (or children) still alive afterwards.
    pub survivors: Vec<u32>,
}

/// How long a contained agent's leftovers get after the sweep's SIGTERM before SIGKILL: a
/// nested run's shim stops its own agent (SIGTERM, 3 000 ms, SIGKILL, 1 000 ms) and records
/// the stop within this.
pub const NS_SWEEP_GRACE: Duration = Duration::from_millis(5_000);

/// Rounds of kill-and-reap (killing a child can orphan its own children onto the shim).
const SWEEP_ROUNDS: usize = 8;
/// How long one round waits for its victims to be reaped.
const SWEEP_WAIT: Duration = Duration::from_millis(1_000);

/// X8: SIGKILLs and reaps every child of the shim except the live agents (`agent` and every
/// agent the reaper still watches, with the members of their process groups: the siblings of
/// a parallel group keep running) and the ssh ControlMasters of placed steps
/// ([`crate::process::masters`]), then verifies that nothing of `agent_pgid` — and, when no
/// agent runs any more, nothing of the shim's session — lives.
pub fn sweep(reaper: &mut Reaper, agent: Option<u32>, agent_pgid: Option<u32>) -> SweepOutcome {
    let me = std::process::id();
    let mut outcome = SweepOutcome::default();
    let mut killed: Vec<u32> = Vec::new();
    let mut ns_killed = 0_u32;
    if let Some(agent) = agent.filter(|a| reaper.exit_of(*a).is_some())
        && let Some(init) = reaper.init_of(agent)
    {
        ns_killed = sweep_namespace(reaper, agent, init);
    }
    let spared = |reaper: &Reaper| -> Vec<u32> {
        let mut live = reaper.live_agents();
        live.extend(agent.filter(|a| reaper.exit_of(*a).is_none()));
        live.extend(reaper.live_inits());
        live
    };
    let is_spared = |pid: u32, live: &[u32]| {
        live.contains(&pid)
            || proc_stat(pid).is_some_and(|st| live.contains(&st.pgrp) && Some(st.pgrp) != agent_pgid)
            || crate::process::masters::is_kept_master(pid)
    };
    for _ in 0..SWEEP_ROUNDS {
        reaper.reap();
        let live = spared(reaper);
        let victims: Vec<u32> = children_of_self()
            .into_iter()
            .filter(|pid| !is_spared(*pid, &live))
            .collect();
        if victims.is_empty() {
            break;
        }
        for pid in &victims {
            let zombie = proc_stat(*pid).is_none_or(|st| st.is_zombie());
            if zombie {
                continue;
            }
            if let Some(p) = i32::try_from(*pid).ok().and_then(Pid::from_raw)
                && rustix::process::kill_process(p, Signal::KILL).is_ok()
                && !killed.contains(pid)
            {
                killed.push(*pid);
            }
        }
        let until = Instant::now() + SWEEP_WAIT;
        loop {
            reaper.reap();
            let left = children_of_self();
            if victims.iter().all(|v| !left.contains(v)) || Instant::now() >= until {
                break;
            }
            signals::wait(&mut [], Some(Duration::from_millis(10)));
        }
    }
    reaper.reap();
    outcome.killed = u32::try_from(killed.len())
        .unwrap_or(u32::MAX)
        .saturating_add(ns_killed);
    let live = spared(reaper);
    let session = sublaunch_protocol::ids::own_session().filter(|sid| *sid == me && live.is_empty());
    let mut survivors: Vec<u32> = children_of_self()
        .into_iter()
        .filter(|pid| !is_spared(*pid, &live) && proc_stat(*pid).is_some_and(|st| !st.is_zombie()))
        .collect();
    survivors.extend(members(session, agent_pgid, me));
    survivors.sort_unstable();
    survivors.dedup();
    outcome.survivors = survivors;
    outcome
}

/// G46: ends what is left in the PID namespace of `agent` (which has exited) under `init`:
/// SIGTERM to each process the init adopted — re-sent to whatever it adopts next, as those end
/// — for up to [`NS_SWEEP_GRACE`], then SIGKILL to the init, and the init reaped (the kernel
/// empties a namespace before its init can be reaped). Returns how many processes were left.
///
/// Only the init's children get SIGTERM, not the whole namespace at once: a nested run's
/// runner is such a child, and it must stop its own agent itself and record that stop (its
/// agent, in a namespace below, would otherwise die of the same signal first).
fn sweep_namespace(reaper: &mut Reaper, agent: u32, init: u32) -> u32 {
    let Some(init_pid) = i32::try_from(init).ok().and_then(Pid::from_raw) else {
        return 0;
    };
    let left = descendants_of(init);
    // A pidfd on our own unreaped child: it becomes readable when the init has exited.
    let init_fd = rustix::process::pidfd_open(init_pid, rustix::process::PidfdFlags::empty()).ok();
    let mut signalled: Vec<u32> = Vec::new();
    let until = Instant::now() + NS_SWEEP_GRACE;
    let mut ended = false;
    while !left.is_empty() {
        reaper.reap();
        if reaper.init_of(agent).is_none() {
            ended = true;
            break;
        }
        for child in crate::process::reaper::children_of_pid(init) {
            if !signalled.contains(&child) {
                signalled.push(child);
                term_child_of(child, init);
            }
        }
        let now = Instant::now();
        if now >= until {
            break;
        }
        wait_for_exit(init_fd.as_ref(), (until - now).min(GROUP_POLL));
    }
    if !ended {
        let _ = rustix::process::kill_process(init_pid, Signal::KILL);
        let until = Instant::now() + KILL_WAIT;
        loop {
            reaper.reap();
            let now = Instant::now();
            if reaper.init_of(agent).is_none() || now >= until {
                break;
            }
            wait_for_exit(init_fd.as_ref(), until - now);
        }
    }
    u32::try_from(left.len()).unwrap_or(u32::MAX)
}

/// SIGTERM to `pid` through a pidfd, once it is known to be a child of `init` (so a pid that
/// was reaped and reused meanwhile is never signalled).
fn term_child_of(pid: u32, init: u32) {
    let Some(raw) = i32::try_from(pid).ok().and_then(Pid::from_raw) else {
        return;
    };
    let Ok(fd) = rustix::process::pidfd_open(raw, rustix::process::PidfdFlags::empty()) else {
        return;
    };
    let parent = crate::process::reaper::parent_of(pid);
    if parent == Some(init) {
        let _ = rustix::process::pidfd_send_signal(&fd, Signal::TERM);
    }
}

/// Waits until the pidfd `fd` is readable (its process exited), a signal arrives, or `within`.
fn wait_for_exit(fd: Option<&rustix::fd::OwnedFd>, within: Duration) {
    let mut fds: Vec<libc::pollfd> = fd
        .iter()
        .map(|fd| libc::pollfd {
            fd: rustix::fd::AsRawFd::as_raw_fd(*fd),
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    signals::wait(&mut fds, Some(within));
}

/// `1, 2, 3` (or `none`).
pub fn pid_list(pids: &[u32]) -> String {
    if pids.is_empty() {
        return "none".into();
    }
    pids.iter().map(u32::to_string).collect::<Vec<_>>().join(", ")
}
