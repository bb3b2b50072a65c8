//! What an integration did (G82): per branch whether it landed and why not, the gates run on
//! each merged tree, where the integration branch ended, and the fast-forward of the user's
//! branch when one was asked for. `--json` and the MCP tool print [`Integration`] as it
//! serialises; the CLI's lines come from [`Integration::lines`].

use super::candidates::Candidate;
use serde::Serialize;

/// The whole integration.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Integration {
    /// The run.
    pub run_id: String,
    /// The repository's main working tree.
    pub repository: String,
    /// The integration branch.
    pub branch: String,
    /// The commit it was built on.
    pub onto: String,
    /// Where the integration branch is now (`None`: it does not exist, nothing landed).
    pub head: Option<String>,
    /// One entry per branch of the run, in step order.
    pub entries: Vec<Entry>,
    /// The fast-forward of the checked-out branch, when asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fast_forward: Option<FastForward>,
}

impl Integration {
    /// Whether every branch with work on it is in the integration branch (and the
    /// fast-forward, when asked for, was made).
    pub fn complete(&self) -> bool {
        self.entries.iter().all(|e| {
            matches!(
                e.outcome,
                Outcome::Landed { .. } | Outcome::AlreadyLanded | Outcome::NothingToLand { .. }
            )
        }) && self.fast_forward.as_ref().is_none_or(|f| f.done)
    }

    /// How many branches landed in this integration.
    pub fn landed(&self) -> usize {
        self.entries
            .iter()
            .filter(|e| matches!(e.outcome, Outcome::Landed { .. }))
            .count()
    }

    /// The report for people: a line per branch, then where the integration branch is.
    pub fn lines(&self) -> Vec<String> {
        let mut lines = Vec::new();
        for entry in &self.entries {
            let what = match &entry.outcome {
                Outcome::Landed {
                    commit,
                    fast_forward,
                    gates,
                } => {
                    let how = if *fast_forward { "fast-forward" } else { "merged" };
                    let passed = match gates.len() {
                        0 => String::new(),
                        1 => ", gate passed".to_owned(),
                        n => format!(", {n} gates passed"),
                    };
                    format!("landed ({how} as {}{passed})", short(commit))
                }
                Outcome::AlreadyLanded => "already in the integration branch".to_owned(),
                Outcome::Conflict { files, with } => {
                    let with = if with.is_empty() {
                        String::new()
                    } else {
                        format!(" (also changed by {})", with.join(", "))
                    };
                    format!("not landed: conflicts in {}{with}", files.join(", "))
                }
                Outcome::GateFailed { gate } => {
                    let log = gate
                        .log
                        .as_deref()
                        .map(|l| format!("; output in {l}"))
                        .unwrap_or_default();
                    format!("not landed: the gate `{}` {}{log}", gate.command, gate.describe())
                }
                Outcome::NotAccepted { reason } => format!("not landed: {reason}"),
                Outcome::NothingToLand { reason } => format!("nothing to land: {reason}"),
                Outcome::NotTried => "not tried: the integration stopped before it".to_owned(),
            };
            lines.push(format!("{} ({}): {what}", entry.step, entry.branch));
        }
        lines.push(match &self.head {
            Some(head) => format!("{} is at {} (built on {})", self.branch, short(head), short(&self.onto)),
            None => format!("{} was not created: nothing landed", self.branch),
        });
        if let Some(ff) = &self.fast_forward {
            lines.push(match (ff.done, &ff.branch) {
                (true, Some(branch)) => format!("fast-forwarded {branch} to {}", self.branch),
                (true, None) => format!("fast-forwarded the checkout to {}", self.branch),
                (false, _) => format!("not fast-forwarded: {}", ff.reason.as_deref().unwrap_or("")),
            });
        }
        // What a person does next with a conflict: integrate never resolves one for them.
        if let (Some(first), Some(_)) = (
            self.entries
                .iter()
                .find(|e| matches!(e.outcome, Outcome::Conflict { .. })),
            &self.head,
        ) {
            lines.push(format!(
                "to resolve a conflict by hand: git switch {} && git merge {}",
                self.branch, first.branch
            ));
        }
        lines
    }
}

/// One branch of the run.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Entry {
    /// The step, as messages name it (`step 1.2 writer`).
    pub step: String,
    /// The request step (0-based).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub step_index: Option<u32>,
    /// The task of a parallel group (0-based).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task_index: Option<u32>,
    /// Its agent.
    pub agent: String,
    /// Its branch.
    pub branch: String,
    /// The commit its step ended at.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    /// What happened to it.
    #[serde(flatten)]
    pub outcome: Outcome,
}

impl Entry {
    /// The entry of `candidate`, not tried yet.
    pub fn of(candidate: &Candidate) -> Self {
        Self {
            step: candidate.label.clone(),
            step_index: candidate.step_index,
            task_index: candidate.task_index,
            agent: candidate.agent.clone(),
            branch: candidate.branch.clone(),
            commit: candidate.commit.clone(),
            outcome: Outcome::NotTried,
        }
    }
}

/// What happened to one branch.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "outcome", rename_all = "kebab-case", rename_all_fields = "camelCase")]
pub enum Outcome {
    /// It is in the integration branch now.
    Landed {
        /// The integration branch's commit that holds it (a merge, or the branch's own commit).
        commit: String,
        /// Whether the branch's commit itself became the tip (nothing to merge).
        fast_forward: bool,
        /// The gates run on the merged tree, all passed.
        gates: Vec<GateRun>,
    },
    /// An earlier integration landed it.
    AlreadyLanded,
    /// It conflicts with what landed before it.
    Conflict {
        /// The files in conflict.
        files: Vec<String>,
        /// The landed steps that changed those files.
        with: Vec<String>,
    },
    /// The merged tree failed a gate.
    GateFailed {
        /// The gate that failed.
        gate: GateRun,
    },
    /// Its step did not end well, or its acceptance fell short.
    NotAccepted {
        /// Why.
        reason: String,
    },
    /// Its step committed nothing.
    NothingToLand {
        /// What was left.
        reason: String,
    },
    /// The integration stopped at an earlier branch.
    NotTried,
}

/// One gate command run on a merged tree.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GateRun {
    /// The shell command.
    pub command: String,
    /// Where it ran (in the scratch worktree).
    pub cwd: String,
    /// How it ended.
    pub status: GateStatus,
    /// Its exit code.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// The signal that ended it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signal: Option<i32>,
    /// How long it ran.
    pub duration_ms: u64,
    /// The file its output is kept in.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub log: Option<String>,
    /// The last lines of its output.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub output_tail: String,
    /// Why it could not start.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl GateRun {
    /// How it ended, in words: `exited with code 1`, `ran past its 30 s limit`.
    pub fn describe(&self) -> String {
        match self.status {
            GateStatus::Passed => "passed".to_owned(),
            GateStatus::Failed => match (self.exit_code, self.signal) {
                (Some(code), _) => format!("exited with code {code}"),
                (None, Some(signal)) => format!("was killed by signal {signal}"),
                _ => "failed".to_owned(),
            },
            GateStatus::TimedOut => format!("ran past its time limit and was stopped after {} ms", self.duration_ms),
            GateStatus::Interrupted => "was stopped: the integration was interrupted".to_owned(),
            GateStatus::NotStarted => format!("could not start: {}", self.error.as_deref().unwrap_or("")),
        }
    }
}

/// How a gate command ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum GateStatus {
    /// It exited 0.
    Passed,
    /// It exited otherwise, or a signal nobody sent ended it.
    Failed,
    /// It ran past its time limit and was stopped.
    TimedOut,
    /// The integration was interrupted (SIGINT, SIGTERM) while it ran.
    Interrupted,
    /// It could not be started.
    NotStarted,
}

/// The fast-forward of the repository's checked-out branch.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FastForward {
    /// Whether the checkout moved.
    pub done: bool,
    /// The checked-out branch (`None`: a detached checkout).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    /// Why it did not move.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

fn short(commit: &str) -> &str {
    commit.get(..12).unwrap_or(commit)
}
