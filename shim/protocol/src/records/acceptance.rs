//! What the runner found when it kept a step's acceptance contract (rules G76–G79): the
//! agent's report, the checks against git, every verification command's end, and the
//! evidence status they add up to. A step's status entry and its result carry it as
//! `acceptance`.

use crate::acceptance::report::{AcceptanceReport, Diagnostic};
use crate::acceptance::review::{Finding, Verdict};
use serde::{Deserialize, Serialize};
use sublaunch_contract::AcceptanceLevel;

/// How far the evidence went (G79), in the order it is gathered.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EvidenceStatus {
    /// The agent finished without a usable report.
    Claimed,
    /// The agent's report is whole and claims every criterion.
    Attested,
    /// The runner's checks passed.
    Checked,
    /// Every verification command passed when the runner ran it.
    Verified,
    /// The level was reached, and the review asked for has not passed or not run (G81).
    ReviewRequired,
    /// The level was reached and the reviewer accepted the work (G81).
    Reviewed,
    /// Something asked for is missing or false, a check or a command failed, or a required
    /// review rejected the work or could not run.
    Rejected,
}

impl EvidenceStatus {
    /// The status as records write it.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Claimed => "claimed",
            Self::Attested => "attested",
            Self::Checked => "checked",
            Self::Verified => "verified",
            Self::ReviewRequired => "review-required",
            Self::Reviewed => "reviewed",
            Self::Rejected => "rejected",
        }
    }
}

/// How one runtime check ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CheckStatus {
    /// It holds.
    Passed,
    /// It does not.
    Failed,
    /// Nothing to check (no git repository, nothing asked).
    NotApplicable,
}

/// One check of the agent's claims against what the runner sees (G77).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RuntimeCheck {
    /// What is checked (`report`, `criteria`, `changed-files`, `no-staged-files`, …).
    pub id: String,
    /// How it ended.
    pub status: CheckStatus,
    /// What was found.
    pub message: String,
}

/// How one verification command ended (G78).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum VerifyStatus {
    /// It exited 0.
    Passed,
    /// It exited otherwise, or was killed by a signal nobody sent.
    Failed,
    /// It ran past its time limit and was stopped.
    TimedOut,
    /// The run was stopped (or timed out, or interrupted) while it ran.
    Stopped,
    /// It could not be started.
    NotStarted,
}

/// One verification command's end, with where its output is kept.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VerifyResult {
    /// Its id (`gate` for a gate).
    pub id: String,
    /// The shell command.
    pub command: String,
    /// The directory it ran in.
    pub cwd: String,
    /// How it ended.
    pub status: VerifyStatus,
    /// Its exit code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// The signal that ended it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal: Option<String>,
    /// How long it ran.
    pub duration_ms: u64,
    /// The file its output (stdout and stderr) is kept in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_file: Option<String>,
    /// The last lines of its output, for messages.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub output_tail: String,
    /// Why it could not start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Taken from an earlier run of the same command on the same tree (G78).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub memoized: bool,
    /// The tree state it ran on (see the acceptance tree facts), when the step is in git.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tree_state: Option<String>,
}

/// What git showed of the step's work (G77).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct TreeEvidence {
    /// Files changed since the step started (committed, uncommitted and untracked).
    pub changed_files: Vec<String>,
    /// Files staged in the index.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub staged_files: Vec<String>,
    /// Changed files that look like tests.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tests_touched: Vec<String>,
    /// Lines added since the step started.
    pub insertions: u64,
    /// Lines removed.
    pub deletions: u64,
}

/// How the review of a step ended (G81).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ReviewStatus {
    /// The reviewer accepted the work and found nothing blocking.
    Passed,
    /// It rejected the work, or found something blocking.
    Rejected,
    /// It ended without a usable verdict: it failed, was killed, ran out of time, or gave no
    /// well-formed `review-findings` block.
    Failed,
    /// The run was stopped while it ran.
    Stopped,
    /// It could not be started.
    NotStarted,
}

/// What the reviewer of a step said, and how its process ended (G81).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReviewRecord {
    /// The reviewer agent.
    pub agent: String,
    /// Whether its verdict decides the step (otherwise it is only shown).
    pub required: bool,
    /// How it ended.
    pub status: ReviewStatus,
    /// Its verdict, when its block parsed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<Verdict>,
    /// What it found.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub findings: Vec<Finding>,
    /// What is wrong with its block, field by field.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub findings_problems: Vec<Diagnostic>,
    /// Why it has no usable verdict, in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The file its output is kept in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_file: Option<String>,
    /// Its exit code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// The signal that ended it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal: Option<String>,
    /// How long it ran.
    pub duration_ms: u64,
    /// The diff it was shown was cut to fit its prompt.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub diff_cut: bool,
}

impl ReviewRecord {
    /// One line for people: `review by critic: 1 blocking finding (src/a.rs: broken)`.
    pub fn summary(&self) -> String {
        let blocking: Vec<&Finding> = self
            .findings
            .iter()
            .filter(|f| f.severity == crate::acceptance::review::Severity::Blocking)
            .collect();
        let how = match self.status {
            ReviewStatus::Passed => format!("accepted ({} finding(s), none blocking)", self.findings.len()),
            ReviewStatus::Rejected => match blocking.first() {
                Some(first) => format!(
                    "{} blocking finding(s), first: {}{}",
                    blocking.len(),
                    first.file.as_deref().map(|f| format!("{f}: ")).unwrap_or_default(),
                    first.message
                ),
                None => "rejected the work".to_owned(),
            },
            ReviewStatus::Failed | ReviewStatus::Stopped | ReviewStatus::NotStarted => self
                .error
                .clone()
                .unwrap_or_else(|| "did not end with a verdict".to_owned()),
        };
        let shown = if self.required { "" } else { " (not required)" };
        format!("review by {}{shown}: {how}", self.agent)
    }
}

/// `acceptance` of a step: the contract kept, what was found, and the verdict.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AcceptanceRecord {
    /// The level asked for.
    pub level: AcceptanceLevel,
    /// Whether somebody asked for it (a rejected explicit contract fails the step).
    pub explicit: bool,
    /// Where the contract came from.
    pub origin: String,
    /// How far the evidence went.
    pub status: EvidenceStatus,
    /// Why it is rejected, or what is missing, in words.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub problems: Vec<String>,
    /// The agent's report, as parsed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub report: Option<AcceptanceReport>,
    /// What is wrong with the report, field by field.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub report_problems: Vec<Diagnostic>,
    /// The runner's checks.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<RuntimeCheck>,
    /// What git showed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tree: Option<TreeEvidence>,
    /// The verification commands, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub verify: Vec<VerifyResult>,
    /// The review (G81), once its reviewer ran or could not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub review: Option<ReviewRecord>,
}

impl AcceptanceRecord {
    /// Whether the evidence reached the level asked for.
    pub fn reached(&self) -> bool {
        let rank = match self.status {
            EvidenceStatus::Rejected | EvidenceStatus::ReviewRequired => return false,
            // A reviewer runs only once the level was reached.
            EvidenceStatus::Reviewed => return true,
            EvidenceStatus::Claimed => AcceptanceLevel::None,
            EvidenceStatus::Attested => AcceptanceLevel::Attested,
            EvidenceStatus::Checked => AcceptanceLevel::Checked,
            EvidenceStatus::Verified => AcceptanceLevel::Verified,
        };
        rank >= self.level
    }

    /// Whether the step fails for it: somebody asked, and the evidence fell short (G75).
    pub fn fails_step(&self) -> bool {
        self.explicit && !self.reached()
    }

    /// One line for people: `verified (gate passed)`, `rejected: gate failed (exit 1)`,
    /// `checked; review by critic (not required): 1 blocking finding(s), first: …`.
    pub fn summary(&self) -> String {
        let mut line = self.status.as_str().to_owned();
        if !self.explicit {
            line.push_str(" (inferred, not enforced)");
        }
        if let Some(first) = self.problems.first() {
            line = format!("{line}: {first}");
            if self.problems.len() > 1 {
                line = format!("{line} (+{} more)", self.problems.len() - 1);
            }
        }
        // A review that decided nothing (not required, or it passed) is still shown.
        if let Some(review) = self
            .review
            .as_ref()
            .filter(|r| !r.required || r.status == ReviewStatus::Passed)
        {
            line = format!("{line}; {}", review.summary());
        }
        line
    }
}
