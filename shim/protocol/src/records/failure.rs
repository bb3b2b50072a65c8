//! One vocabulary of failure (D1): why a step or a run did not complete, in a word a program
//! can branch on. The same word is on every failed step and run — the status, the result,
//! `--json`, MCP answers and the completion hook's payload — and picks the exit code of the
//! commands that wait for a run. The messages written for people stay as they are.

use serde::{Deserialize, Serialize};
use std::fmt;

/// Why a step or run did not complete (`failureKind`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FailureKind {
    /// Refused before launch: the request, an agent or settings file, the planner or a limit
    /// refused it. Nothing ran.
    Refused,
    /// The step never started: an earlier step failed, the run was stopped first, or its
    /// agent's program could not be started.
    NotStarted,
    /// The agent failed on its own: it exited non-zero or reported an error (the API's
    /// message first).
    AgentError,
    /// The provider refused the agent's calls for too many requests or was overloaded, on
    /// every attempt allowed.
    RateLimited,
    /// The run's or step's time limit (`--timeout`, the cluster job's limit) passed.
    Timeout,
    /// The run's wall-clock deadline (`--deadline`) passed.
    Deadline,
    /// A token, cost or tool-call budget, or a spend limit, was reached.
    Budget,
    /// Stopped on request (`sublaunch stop`, a signal to the runner, a failFast sibling).
    Stopped,
    /// The agent was killed by a signal nobody asked for (the OOM killer, another user).
    Killed,
    /// The answer did not meet its contract: not JSON, not matching the schema, the wrong
    /// model, or too long.
    OutputInvalid,
    /// A verification command or the acceptance contract rejected the work.
    GateFailed,
    /// The runner died before recording the end.
    RunnerLost,
    /// The machine went down (or every process was killed) while the run ran.
    HostLost,
    /// The machine or cluster node the step ran on, or the connection to it, was lost.
    ConnectionLost,
}

impl FailureKind {
    /// Every kind, in the documented order.
    pub const ALL: [FailureKind; 14] = [
        FailureKind::Refused,
        FailureKind::NotStarted,
        FailureKind::AgentError,
        FailureKind::RateLimited,
        FailureKind::Timeout,
        FailureKind::Deadline,
        FailureKind::Budget,
        FailureKind::Stopped,
        FailureKind::Killed,
        FailureKind::OutputInvalid,
        FailureKind::GateFailed,
        FailureKind::RunnerLost,
        FailureKind::HostLost,
        FailureKind::ConnectionLost,
    ];

    /// The word (`agent-error`).
    pub fn as_str(self) -> &'static str {
        match self {
            FailureKind::Refused => "refused",
            FailureKind::NotStarted => "not-started",
            FailureKind::AgentError => "agent-error",
            FailureKind::RateLimited => "rate-limited",
            FailureKind::Timeout => "timeout",
            FailureKind::Deadline => "deadline",
            FailureKind::Budget => "budget",
            FailureKind::Stopped => "stopped",
            FailureKind::Killed => "killed",
            FailureKind::OutputInvalid => "output-invalid",
            FailureKind::GateFailed => "gate-failed",
            FailureKind::RunnerLost => "runner-lost",
            FailureKind::HostLost => "host-lost",
            FailureKind::ConnectionLost => "connection-lost",
        }
    }

    /// The exit code of `run --wait`, `wait`, `resume --wait` and `result` for a run that
    /// failed this way. 1 stays the code of an agent's own failure (and of anything a script
    /// written before the vocabulary expects); 2 is the refusal before launch it always was.
    pub fn exit_code(self) -> i32 {
        match self {
            FailureKind::AgentError => 1,
            FailureKind::Refused => 2,
            FailureKind::NotStarted => 10,
            FailureKind::RateLimited => 11,
            FailureKind::Timeout => 12,
            FailureKind::Deadline => 13,
            FailureKind::Budget => 14,
            FailureKind::Stopped => 15,
            FailureKind::Killed => 16,
            FailureKind::OutputInvalid => 17,
            FailureKind::GateFailed => 18,
            FailureKind::RunnerLost => 19,
            FailureKind::HostLost => 20,
            FailureKind::ConnectionLost => 21,
        }
    }
}

impl fmt::Display for FailureKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_and_exit_codes_are_distinct_and_round_trip() {
        let mut codes = std::collections::HashSet::new();
        for kind in FailureKind::ALL {
            let word = serde_json::to_value(kind).unwrap();
            assert_eq!(word, kind.as_str());
            assert_eq!(serde_json::from_value::<FailureKind>(word).unwrap(), kind);
            assert!(codes.insert(kind.exit_code()), "{kind} shares its exit code");
            assert!(![0, 3, 124].contains(&kind.exit_code()));
        }
    }
}
