//! Supervising agents (R10–R13, X4–X9): spawn an agent ([`launch`]), drain its output
//! ([`lines`]), honour the deadline, the control inbox ([`control`]) and signals — each a
//! typed [`Request`] ([`requests`]) — the budgets ([`budgets`]) and the checkpoint before the
//! deadline (written to the input of agents that take messages, [`checkpoint`]), terminate and
//! verify its process tree ([`ladders`]), and report how it ended ([`finish`]). One pass of
//! the event loop is [`Supervisor::turn`] ([`turn`]). Any number of agents run at once (the
//! tasks of a parallel group); every request of the run (stop, timeout, interrupt, a second
//! stop signal) applies to all of them, and a failFast cancellation to the ones it names.
//!
//! An agent is over when it was reaped, both pipes are closed (EOF, or the X7 guard:
//! 2 000 ms without data or 8 000 ms in total after the exit), a ladder verified its process
//! group (a requested one, or the cleanup ladder run after a natural exit), and the X8 sweep
//! killed and reaped any escaped descendant.
//!
//! Also here, beside the loop: the status and marker writes ([`book`]), the wait for a
//! capacity slot before the first step ([`queue`]), what the agents spent in the usage ledger
//! ([`ledger`]), providers' rate limits ([`rate_limits`]) and the spend limits ([`spend`]). A step's acceptance contract is kept once
//! its agent ended: its checks, and its verification commands run as children of the same
//! loop ([`verify`]).

pub mod book;
pub mod budgets;
pub mod checkpoint;
pub mod control;
pub mod finish;
pub mod ladders;
pub mod launch;
pub mod ledger;
pub mod lines;
pub mod partial;
pub mod queue;
pub mod rate_limits;
pub mod requests;
pub mod spend;
pub mod turn;
pub mod verify;

pub use requests::{Ending, Escalation, Request, Requests, StopBy};

use crate::process::reaper::Reaper;
use crate::process::signals;
use crate::step::end::StepEnd;
use book::StatusBook;
use control::ControlInbox;
use std::time::{Duration, Instant};
use sublaunch_protocol::files::dir::Dir;
use sublaunch_protocol::records::events::EventLog;

/// X7: pipes are closed after this long without data once the agent exited …
pub const GUARD_IDLE: Duration = Duration::from_millis(2_000);
/// … or after this long in total.
pub const GUARD_TOTAL: Duration = Duration::from_millis(8_000);

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
    /// The requests received so far (signals, control inbox, deadline).
    pub requests: Requests,
    /// The run deadline (monotonic) and the `<ms>` of its message.
    pub deadline: Option<(Instant, u64)>,
    /// Whether that deadline is the run's wall-clock one (`--deadline`), before its timeout.
    pub deadline_is_wall: bool,
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
    pub run_spent: sublaunch_protocol::records::usage::Usage,
    /// How long before the deadline the agents are asked to wrap up (only with a deadline).
    pub checkpoint: Option<u64>,
    /// Where git starts counting each checked step's work (G77), by step.
    pub tree_starts: std::collections::BTreeMap<
        usize,
        Result<crate::acceptance::tree::StartPoint, crate::acceptance::tree::TreeError>,
    >,
    /// Verification commands that ended, by directory, command and tree state (G78).
    pub verified: std::collections::BTreeMap<String, sublaunch_protocol::records::acceptance::VerifyResult>,
    /// J10: the cluster job's time limit in minutes, when the run is one.
    pub job_time_limit: Option<u32>,
    /// The attempts of each step a rate limit ended to be run again, and their writer records.
    pub rate_limit_retries: std::collections::BTreeMap<usize, rate_limits::Retried>,
    /// When a step waiting for its provider's cooldown may start (the event loop wakes then).
    pub cooldown_wake: Option<Instant>,
    /// The spend limits the run is held to, once its reservation was taken (U9).
    pub spend: Option<spend::SpendWatch>,
}

impl Supervisor {
    /// The `<run>` handle.
    pub fn run_dir(&self) -> &Dir {
        self.book.run()
    }

    /// `Subagent timed out after <ms>ms.`
    pub fn timeout_message(&self) -> String {
        let ms = self.deadline.map_or_else(
            || sublaunch_protocol::os::clock::elapsed_ms(self.started, Instant::now()),
            |(_, ms)| ms,
        );
        match self.job_time_limit.filter(|_| self.requests.at_job_time_limit()) {
            // J10: the job's limit, not the run's own, ended it.
            Some(minutes) => {
                format!("Subagent timed out after {ms}ms: the cluster job's time limit of {minutes} min was reached.")
            }
            None => format!("Subagent timed out after {ms}ms."),
        }
    }

    /// Whether the time that passed was the run's wall-clock deadline (`--deadline`), not its
    /// own or its cluster job's time limit.
    pub fn deadline_passed(&self) -> bool {
        self.requests.timed_out() && !self.requests.at_job_time_limit() && self.deadline_is_wall
    }

    /// Takes what the control inbox holds (when `woken`, or on its safety poll) and the
    /// deadline, as requests.
    pub(super) fn absorb_control(&mut self, now: Instant, woken: bool) {
        for request in self.control.check(now, woken) {
            self.requests.receive(request);
        }
        if self.deadline.is_some_and(|(at, _)| now >= at) {
            self.requests.receive(Request::Timeout);
        }
    }

    /// Writes the run's requests into a step's end: each is recorded, whichever decides.
    pub(super) fn apply_requests_to(&self, end: &mut StepEnd) {
        end.stop = self.requests.stop_message().map(str::to_owned);
        end.stopped_by_limit = self.requests.stopped_by_limit();
        end.timeout = self.requests.timed_out().then(|| self.timeout_message());
        end.deadline_passed = self.deadline_passed();
        end.interrupted = self.requests.interrupted();
    }

    /// Checks the run's requests before a step starts (signals, control inbox, deadline, a
    /// crossed spend limit);
    /// returns whether the run is ending.
    pub fn run_is_ending(&mut self) -> bool {
        // Let pending (blocked) signals in and record them, without waiting.
        signals::wait(&mut [], Some(Duration::ZERO));
        self.requests.take_signals();
        self.absorb_control(Instant::now(), true);
        self.stop_if_over_limit();
        self.requests.ends_run()
    }
}
