//! A verification command (G78), or the step's reviewer (G81), running for a step whose agent
//! ended: the step's end waits
//! in it for its verdict while the supervisor drives the command like an agent
//! (`supervise::verify`).

use crate::step::child::ChildRun;
use crate::step::end::StepEnd;
use std::time::Instant;
use sublaunch_protocol::records::config::AcceptancePlan;

/// A verification command running for a step whose agent ended.
#[derive(Debug)]
pub struct Gate {
    /// The step's end, waiting for its verdict.
    pub end: Box<StepEnd>,
    /// The contract being kept.
    pub plan: AcceptancePlan,
    /// Which of its commands runs (its index in `plan.verify`).
    pub at: usize,
    /// When it runs out of time.
    pub deadline: Instant,
    /// It ran out of time and is being stopped.
    pub timed_out: bool,
    /// Where it runs.
    pub cwd: String,
    /// The state of the tree it runs on, for the memo.
    pub tree_state: Option<String>,
    /// Its output file, in the run directory.
    pub log: String,
    /// It is not a verification command but the step's reviewer (G81).
    pub review: Option<ReviewRun>,
}

/// The reviewer running for a step (G81).
#[derive(Debug)]
pub struct ReviewRun {
    /// The reviewer agent.
    pub agent: String,
    /// Whether its verdict decides the step.
    pub required: bool,
    /// The diff it was shown was cut.
    pub diff_cut: bool,
}

/// Whether the ladder of a verification command is due: it ran out of time (checked on each
/// pass of the loop, which wakes at its deadline).
pub fn gate_timed_out(child: &mut ChildRun, now: Instant) -> bool {
    let Some(gate) = child.gate.as_mut() else { return false };
    if !gate.timed_out && child.exit_seen.is_none() && now >= gate.deadline {
        gate.timed_out = true;
    }
    gate.timed_out
}
