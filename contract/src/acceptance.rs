//! The acceptance contract (rules G70–G79): what must be shown before a step's work counts as
//! done. Agents, steps, tasks and runs give it as `gate` (one verification command, the whole
//! contract) or `acceptance` (a level, criteria, the evidence the agent reports, verification
//! commands, a review); agents may name their role (`acceptanceRole`) for the inference when
//! nobody asks. The planner checks and resolves it per step into an [`AcceptancePlan`]; the
//! runner keeps it after the agent ends.

use serde::{Deserialize, Serialize};
use std::fmt;

/// How much must be shown, least to most (rule G71). Review is a separate gate, not a level.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[cfg_attr(
    feature = "wasmtime",
    derive(
        wasmtime::component::ComponentType,
        wasmtime::component::Lift,
        wasmtime::component::Lower
    ),
    component(enum)
)]
#[repr(u8)]
pub enum AcceptanceLevel {
    /// Nothing beyond the agent's answer.
    #[cfg_attr(feature = "wasmtime", component(name = "none"))]
    None,
    /// The agent's own acceptance report, whole and claiming every criterion.
    #[cfg_attr(feature = "wasmtime", component(name = "attested"))]
    Attested,
    /// The report, checked against what the runner sees (git, the evidence asked for).
    #[cfg_attr(feature = "wasmtime", component(name = "checked"))]
    Checked,
    /// Checked, and every verification command passed when the runner ran it.
    #[cfg_attr(feature = "wasmtime", component(name = "verified"))]
    Verified,
}

impl AcceptanceLevel {
    /// Every level, least first.
    pub const ALL: [Self; 4] = [Self::None, Self::Attested, Self::Checked, Self::Verified];

    /// The level as users write it.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::Attested => "attested",
            Self::Checked => "checked",
            Self::Verified => "verified",
        }
    }

    /// The level a user wrote, or `None`.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|l| l.as_str() == name)
    }
}

impl fmt::Display for AcceptanceLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One kind of evidence the agent's report must carry (rule G72).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[cfg_attr(
    feature = "wasmtime",
    derive(
        wasmtime::component::ComponentType,
        wasmtime::component::Lift,
        wasmtime::component::Lower
    ),
    component(enum)
)]
#[repr(u8)]
pub enum EvidenceKind {
    /// The files it changed (checked against git).
    #[cfg_attr(feature = "wasmtime", component(name = "changed-files"))]
    ChangedFiles,
    /// The tests it added or updated (checked against git).
    #[cfg_attr(feature = "wasmtime", component(name = "tests-added"))]
    TestsAdded,
    /// The commands it ran and how they ended.
    #[cfg_attr(feature = "wasmtime", component(name = "commands-run"))]
    CommandsRun,
    /// The output of its validation.
    #[cfg_attr(feature = "wasmtime", component(name = "validation-output"))]
    ValidationOutput,
    /// What may still be wrong.
    #[cfg_attr(feature = "wasmtime", component(name = "residual-risks"))]
    ResidualRisks,
    /// That it left nothing staged (checked against git).
    #[cfg_attr(feature = "wasmtime", component(name = "no-staged-files"))]
    NoStagedFiles,
    /// A summary of its diff.
    #[cfg_attr(feature = "wasmtime", component(name = "diff-summary"))]
    DiffSummary,
    /// What a review found.
    #[cfg_attr(feature = "wasmtime", component(name = "review-findings"))]
    ReviewFindings,
    /// Anything else the reader should know.
    #[cfg_attr(feature = "wasmtime", component(name = "manual-notes"))]
    ManualNotes,
}

impl EvidenceKind {
    /// Every kind, in the order reports list them.
    pub const ALL: [Self; 9] = [
        Self::ChangedFiles,
        Self::TestsAdded,
        Self::CommandsRun,
        Self::ValidationOutput,
        Self::ResidualRisks,
        Self::NoStagedFiles,
        Self::DiffSummary,
        Self::ReviewFindings,
        Self::ManualNotes,
    ];

    /// The kind as users write it.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::ChangedFiles => "changed-files",
            Self::TestsAdded => "tests-added",
            Self::CommandsRun => "commands-run",
            Self::ValidationOutput => "validation-output",
            Self::ResidualRisks => "residual-risks",
            Self::NoStagedFiles => "no-staged-files",
            Self::DiffSummary => "diff-summary",
            Self::ReviewFindings => "review-findings",
            Self::ManualNotes => "manual-notes",
        }
    }

    /// The kind a user wrote, or `None`.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.as_str() == name)
    }
}

impl fmt::Display for EvidenceKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One verification command, run by the runner in the step's directory once the agent ended.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(
    feature = "wasmtime",
    derive(
        wasmtime::component::ComponentType,
        wasmtime::component::Lift,
        wasmtime::component::Lower
    ),
    component(record)
)]
pub struct VerifyCommand {
    /// Its name in records and messages (`gate` for the `gate` shorthand).
    pub id: String,
    /// The shell command (`sh -c`).
    pub command: String,
    /// The longest it may run, in milliseconds (absent: the runner's default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "wasmtime", component(name = "timeout-ms"))]
    pub timeout_ms: Option<u64>,
    /// Its standard output is JSON that becomes the step's structured value (a typed gate).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub json: bool,
    /// The JSON Schema (as JSON text) a typed gate's output must match.
    #[serde(
        default,
        with = "crate::loose::json_text_opt",
        skip_serializing_if = "Option::is_none"
    )]
    pub schema: Option<String>,
}

/// One acceptance criterion: what must hold, under a name the report refers to.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(
    feature = "wasmtime",
    derive(
        wasmtime::component::ComponentType,
        wasmtime::component::Lift,
        wasmtime::component::Lower
    ),
    component(record)
)]
pub struct Criterion {
    /// Its name (`c1`, … when not given).
    pub id: String,
    /// What must hold.
    pub must: String,
}

/// The review gate: a reviewer agent reads the step's diff once its checks passed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(
    feature = "wasmtime",
    derive(
        wasmtime::component::ComponentType,
        wasmtime::component::Lift,
        wasmtime::component::Lower
    ),
    component(record)
)]
pub struct ReviewGate {
    /// The reviewer agent.
    pub agent: String,
    /// Whether its blocking findings reject the step (otherwise they are only shown).
    pub required: bool,
}

/// What a step's agent claims to be (`acceptanceRole` in frontmatter): used only to infer an
/// acceptance contract when nobody asked for one (rule G74).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AcceptanceRole {
    /// Reads and reports: nothing to accept.
    ReadOnly,
    /// Changes files: its work is checked.
    Writer,
}

impl AcceptanceRole {
    /// The role a user wrote, or `None`.
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "read-only" => Some(Self::ReadOnly),
            "writer" => Some(Self::Writer),
            _ => None,
        }
    }
}

/// The acceptance contract of one planned child, every source combined (rule G73): what the
/// runner keeps once the agent ended. Absent from the plan when the level is `none` and there
/// is nothing to run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(
    feature = "wasmtime",
    derive(
        wasmtime::component::ComponentType,
        wasmtime::component::Lift,
        wasmtime::component::Lower
    ),
    component(record)
)]
pub struct AcceptancePlan {
    /// The evidence level.
    pub level: AcceptanceLevel,
    /// Whether somebody asked for it (a failed explicit contract fails the step; an inferred
    /// one is only shown, rule G75).
    pub explicit: bool,
    /// Where it came from, for messages (`run --gate`, `steps[1].acceptance`, `agent role writer`).
    pub origin: String,
    /// Whether the agent is asked for an acceptance report (every level from `attested` up,
    /// except a bare `gate`, whose command is the whole contract).
    pub report: bool,
    /// The criteria the report must answer.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub criteria: Vec<Criterion>,
    /// The evidence the report must carry.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub evidence: Vec<EvidenceKind>,
    /// The verification commands, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub verify: Vec<VerifyCommand>,
    /// The review gate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub review: Option<ReviewGate>,
    /// Why a contract asks for nothing (`{level: none, reason}`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl AcceptancePlan {
    /// Whether the runner has nothing to do for it.
    pub fn is_inert(&self) -> bool {
        self.level == AcceptanceLevel::None && self.verify.is_empty() && self.review.is_none()
    }
}
