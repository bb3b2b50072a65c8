//! The process-terminal proof (S6), the candidate (S8), finalization (S7), the overlay into
//! `status.json` (S9), orphaned proofs (S13), and what an ended run sheds once its proof is final.
//!
//! Types preserve unknown fields (`extra`), so a rewrite never drops another writer's fields.

mod finalize;
mod orphan;
mod overlay;
mod shed;
mod validate;

pub use finalize::{ExistingProof, FinalizeContext, FinalizeOutcome, LeaseProbe, decide, finalize, judge_existing};
pub use orphan::{
    DeadRunRepair, OrphanDecision, OrphanOutcome, OrphanRequest, decide_orphan, end_leftover_agents, fail_dead_run,
    leftover_agents, repair_orphan, runner_death_message, stale_repair_message, stderr_tail,
};
pub use overlay::{overlay, step_proof};
pub use shed::{shed_after_end, shed_scratch};
pub use validate::validate_stored_proof;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// The proof format version.
pub const PROOF_VERSION: u32 = 1;

/// `processTerminal.state`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ProofState {
    /// The host has not observed the runner's exit yet.
    #[default]
    Pending,
    /// The run never started (startup failure, as written into status only).
    NotStarted,
    /// The exit and every writer's close were observed.
    Observed,
    /// The exit happened but something could not be verified (`reason`).
    Unknown,
}

impl ProofState {
    /// Whether the proof is final (`observed` or `unknown`; never downgraded, §1.3).
    pub fn is_final(self) -> bool {
        matches!(self, Self::Observed | Self::Unknown)
    }
}

/// `reason` of an `unknown` proof (S6).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum UnknownReason {
    /// Nobody observed the runner's exit (S13).
    ObserverUnavailable,
    /// No candidate file (S7 step 2).
    RunnerCandidateMissing,
    /// The candidate belongs to another run or runner (step 3).
    RunnerInstanceMismatch,
    /// Writer records do not match the expected writers (step 6).
    WriterCloseUnverified,
    /// A writer's process tree was not verified (step 7).
    ProcessTreeUnverified,
    /// The session lease could not be read (step 4).
    CanonicalSessionUnavailable,
    /// The session lease is still owned (step 4).
    CanonicalSessionLeaseActive,
    /// The lease release was not acknowledged (step 5).
    CanonicalSessionReleaseUnverified,
    /// The proof could not be persisted or a stored proof is invalid.
    ProofWriteFailed,
    /// Stale-run reconciliation repaired the status (S13).
    StaleRepair,
}

/// `resumeDisposition` (S7 step 8).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ResumeDisposition {
    /// A session file exists to resume from.
    Resumable,
    /// The run was stopped.
    NonResumable,
    /// Nothing to resume.
    Unavailable,
}

/// The runner instance record: exactly one per observed proof, no `attempt`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunnerInstance {
    /// `= runnerProcessInstanceId`.
    pub process_instance_id: String,
    /// Wall ms when the host observed the close.
    pub close_observed_at: u64,
    /// Exit code, `null` when killed by a signal.
    pub exit_code: Option<i32>,
    /// Signal name (`SIGKILL`), `null` when it exited.
    pub signal: Option<String>,
}

/// How the agent's process tree ended (X4, X8).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "kebab-case")]
pub enum ProcessTree {
    /// The group was verified empty.
    #[serde(rename_all = "camelCase")]
    Observed {
        /// `posix-process-group`.
        mechanism: String,
        /// The agent's pgid (> 0).
        process_group_id: u32,
        /// Wall ms of the verification.
        verified_at: u64,
        /// ⊕ Escaped descendants killed by the subreaper shim (X8).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        adopted_descendants_killed: Option<u32>,
    },
    /// Not verified.
    Unknown {
        /// `unsupported-platform` | `signal-failed` | `verification-failed`.
        reason: String,
        /// Details (e.g. surviving pids).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        diagnostic: Option<String>,
    },
}

impl ProcessTree {
    /// An observed POSIX process-group proof.
    pub fn observed(process_group_id: u32, verified_at: u64, adopted_descendants_killed: Option<u32>) -> Self {
        Self::Observed {
            mechanism: "posix-process-group".into(),
            process_group_id,
            verified_at,
            adopted_descendants_killed,
        }
    }

    /// Whether the tree was observed.
    pub fn is_observed(&self) -> bool {
        matches!(self, Self::Observed { .. })
    }
}

/// A writer record (`kind: "pi-writer"`, R13).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WriterRecord {
    /// A UUID per attempt.
    pub process_instance_id: String,
    /// Attempt number, ≥ 0.
    pub attempt: u32,
    /// Wall ms when the shim observed the agent's close.
    pub close_observed_at: u64,
    /// Exit code or `null`.
    pub exit_code: Option<i32>,
    /// Signal name or `null`.
    pub signal: Option<String>,
    /// The tree verification.
    pub process_tree: ProcessTree,
    /// Fields of other writers.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// An element of `instances[]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind")]
pub enum Instance {
    /// The runner (shim) process.
    #[serde(rename = "runner")]
    Runner(RunnerInstance),
    /// An agent attempt.
    #[serde(rename = "pi-writer")]
    Writer(WriterRecord),
}

/// `canonicalSession` of an observed revival proof.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CanonicalSession {
    /// sha256 of the canonical session path (the lease directory name).
    pub canonical_session_id: String,
    /// `released` | `not-held`.
    pub lease_disposition: String,
    /// Always true when observed.
    pub free_at_observation: bool,
    /// True when the shim released the lease.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub canonical_session_lease_released: Option<bool>,
}

/// `ProcessTerminalV1` (S6): `process-terminal.json`, `status.processTerminal` and the step
/// proofs of S9.
#[serde_with_macros::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProcessTerminal {
    /// Always 1.
    pub version: u32,
    /// The state.
    pub state: ProofState,
    /// The run.
    pub run_id: String,
    /// The runner instance (H4).
    pub runner_process_instance_id: String,
    /// Step proofs only.
    pub child_index: Option<u32>,
    /// Observed proofs: the runner's close time.
    pub observed_at: Option<u64>,
    /// Observed (and finalized unknown) proofs: runner record then writer records.
    pub instances: Option<Vec<Instance>>,
    /// Unknown proofs: why.
    pub reason: Option<UnknownReason>,
    /// Unknown proofs: details.
    pub diagnostic: Option<String>,
    /// Resume disposition.
    pub resume_disposition: Option<ResumeDisposition>,
    /// Revival runs: the canonical session outcome.
    pub canonical_session: Option<CanonicalSession>,
    /// J8: a cluster run's end as the engine reported it.
    pub cluster: Option<Box<crate::records::cluster::ClusterEvidence>>,
    /// Fields of other writers.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ProcessTerminal {
    fn bare(state: ProofState, run_id: &str, runner_process_instance_id: &str) -> Self {
        Self {
            version: PROOF_VERSION,
            state,
            run_id: run_id.to_owned(),
            runner_process_instance_id: runner_process_instance_id.to_owned(),
            ..Self::default()
        }
    }

    /// `{version:1, state:"pending", runId, runnerProcessInstanceId}` (H13, H14).
    pub fn pending(run_id: &str, runner_process_instance_id: &str) -> Self {
        Self::bare(ProofState::Pending, run_id, runner_process_instance_id)
    }

    /// `{version:1, state:"not-started", …}` (S5).
    pub fn not_started(run_id: &str, runner_process_instance_id: &str) -> Self {
        Self::bare(ProofState::NotStarted, run_id, runner_process_instance_id)
    }

    /// An `unknown` proof with `reason` and optional diagnostic (no instances).
    pub fn unknown(
        run_id: &str,
        runner_process_instance_id: &str,
        reason: UnknownReason,
        diagnostic: Option<String>,
    ) -> Self {
        Self {
            reason: Some(reason),
            diagnostic,
            ..Self::bare(ProofState::Unknown, run_id, runner_process_instance_id)
        }
    }

    /// The runner record in `instances`, if any.
    pub fn runner_instance(&self) -> Option<&RunnerInstance> {
        self.instances.as_ref()?.iter().find_map(|i| match i {
            Instance::Runner(r) => Some(r),
            Instance::Writer(_) => None,
        })
    }

    /// As a JSON value (for embedding into status and events).
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

/// `process-terminal-candidate.json` (S8).
#[serde_with_macros::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Candidate {
    /// Always 1.
    pub version: u32,
    /// The run.
    pub run_id: String,
    /// The runner instance.
    pub runner_process_instance_id: String,
    /// Writer records per step index (raw, validated by S7 step 6).
    #[serde(default)]
    pub writers: BTreeMap<String, Vec<Value>>,
    /// Expected number of writer attempts per step index.
    pub expected_writers: Option<BTreeMap<String, u32>>,
    /// Revival: the canonical session file.
    pub session_file: Option<String>,
    /// Revival: the lease token.
    pub revival_lease_token: Option<String>,
    /// Revival: true only if the lease release succeeded (X11).
    pub revival_lease_release_acknowledged: Option<bool>,
    /// Fields of other writers.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Candidate {
    /// The host's initial candidate `{version:1, runId, runnerProcessInstanceId, writers:{}}` (H14).
    pub fn initial(run_id: &str, runner_process_instance_id: &str) -> Self {
        Self {
            version: PROOF_VERSION,
            run_id: run_id.to_owned(),
            runner_process_instance_id: runner_process_instance_id.to_owned(),
            ..Self::default()
        }
    }

    /// The S5 / R16 / R8 candidate: the existing one (if any) with `writers:{}` and zero
    /// expected writers for each of `max(1, steps)` steps, keeping `sessionFile` and
    /// `revivalLeaseToken`.
    pub fn zero_writers(existing: Option<Self>, run_id: &str, runner_process_instance_id: &str, steps: usize) -> Self {
        let mut c = existing.unwrap_or_else(|| Self::initial(run_id, runner_process_instance_id));
        c.version = PROOF_VERSION;
        c.run_id = run_id.to_owned();
        c.runner_process_instance_id = runner_process_instance_id.to_owned();
        c.writers = BTreeMap::new();
        c.expected_writers = Some((0..steps.max(1)).map(|i| (i.to_string(), 0)).collect());
        c
    }

    /// Records the writer records of step `step` and expects exactly that many (R13, S8).
    pub fn set_step_writers(&mut self, step: usize, records: &[WriterRecord]) {
        let values = records
            .iter()
            .map(|r| serde_json::to_value(r).unwrap_or(Value::Null))
            .collect();
        self.writers.insert(step.to_string(), values);
        let count = u32::try_from(records.len()).unwrap_or(u32::MAX);
        self.expected_writers
            .get_or_insert_with(BTreeMap::new)
            .insert(step.to_string(), count);
    }

    /// Expected writer attempts of `step` (`None` when the candidate says nothing).
    pub fn expected(&self, step: usize) -> Option<u32> {
        self.expected_writers.as_ref()?.get(&step.to_string()).copied()
    }

    /// The parsed writer records of `step` (empty when absent).
    pub fn writer_records(&self, step: usize) -> Result<Vec<WriterRecord>, String> {
        self.writers
            .get(&step.to_string())
            .map(|list| {
                list.iter()
                    .map(|v| serde_json::from_value(v.clone()).map_err(|e| e.to_string()))
                    .collect()
            })
            .unwrap_or_else(|| Ok(Vec::new()))
    }
}

#[cfg(test)]
mod tests;
