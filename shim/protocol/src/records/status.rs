//! `status.json` (S1–S5, R16): typed, preserving every field it does not know (W9), with the
//! locked read-modify-write helper and the startup-failure persistence.

use crate::files::atomic::Durability;
use crate::files::dir::Dir;
use crate::files::doc::{Corrupt, ReadDoc};
use crate::files::durability::{DocKind, DurabilityPolicy};
use crate::files::layout::names;
use crate::files::lock::StatusLock;
use crate::records::failure::FailureKind;
use crate::records::proof::{Candidate, ProcessTerminal, ProofState};
use crate::records::step_record::{ExternalProcess, ParallelGroup, StepFacts};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};
use std::fmt;
use std::io;

/// `lifecycleArtifactVersion` written by this crate.
pub const LIFECYCLE_ARTIFACT_VERSION: u32 = 3;

/// A run's state (§1.4). Unknown strings are kept as [`RunState::Other`].
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum RunState {
    /// Waiting to start (active).
    Queued,
    /// Running (active).
    Running,
    /// Ended successfully.
    Complete,
    /// Ended with a failure.
    Failed,
    /// Interrupted, waiting for an explicit next action.
    Paused,
    /// Stopped by request or signal.
    Stopped,
    /// Refused before start.
    Rejected,
    /// A state this crate does not know (kept verbatim).
    Other(String),
}

impl RunState {
    /// The JSON string.
    pub fn as_str(&self) -> &str {
        match self {
            Self::Queued => "queued",
            Self::Running => "running",
            Self::Complete => "complete",
            Self::Failed => "failed",
            Self::Paused => "paused",
            Self::Stopped => "stopped",
            Self::Rejected => "rejected",
            Self::Other(s) => s,
        }
    }

    /// Parses a state string.
    pub fn parse(s: &str) -> Self {
        match s {
            "queued" => Self::Queued,
            "running" => Self::Running,
            "complete" => Self::Complete,
            "failed" => Self::Failed,
            "paused" => Self::Paused,
            "stopped" => Self::Stopped,
            "rejected" => Self::Rejected,
            other => Self::Other(other.to_owned()),
        }
    }

    /// `queued` or `running`.
    pub fn is_active(&self) -> bool {
        matches!(self, Self::Queued | Self::Running)
    }

    /// `complete`, `failed`, `paused`, `stopped` or `rejected`.
    pub fn is_terminal(&self) -> bool {
        matches!(
            self,
            Self::Complete | Self::Failed | Self::Paused | Self::Stopped | Self::Rejected
        )
    }
}

impl fmt::Display for RunState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for RunState {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for RunState {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d).map(|s| Self::parse(&s))
    }
}

/// One element of `status.steps`.
#[serde_with_macros::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StepStatus {
    /// Agent name.
    pub agent: Option<String>,
    /// `pending` | `running` | `complete` | `failed` | `stopped` | `paused`.
    pub status: Option<String>,
    /// Model, when known.
    pub model: Option<String>,
    /// Wall ms.
    pub started_at: Option<u64>,
    /// Wall ms.
    pub ended_at: Option<u64>,
    /// Duration in ms (monotonic).
    pub duration_ms: Option<u64>,
    /// The agent's exit code.
    pub exit_code: Option<i64>,
    /// The step's error.
    pub error: Option<String>,
    /// The step proof (S9).
    pub process_terminal: Option<Value>,
    /// The agent's process: its pid from its start, how it ended from its end.
    #[serde(default, deserialize_with = "crate::records::step_record::lenient")]
    pub external_process: Option<ExternalProcess>,
    /// What the runner records about the step beside the spec's fields.
    #[serde(flatten)]
    pub facts: StepFacts,
    /// Fields of other writers.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl StepStatus {
    /// The entry of a step that has not started: its agent, `pending`, its model when known.
    pub fn pending(agent: &str, model: Option<&str>) -> Self {
        Self {
            agent: Some(agent.to_owned()),
            status: Some("pending".into()),
            model: model.map(str::to_owned),
            ..Self::default()
        }
    }
}

/// `status.json` (S2–S5). `None` fields are omitted; unknown fields live in `extra`.
#[serde_with_macros::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Status {
    /// Always 3 when written by this crate.
    pub lifecycle_artifact_version: Option<u32>,
    /// The run id.
    pub run_id: Option<String>,
    /// The caller's session.
    pub session_id: Option<String>,
    /// The completion owner.
    pub completion_owner_id: Option<String>,
    /// The caller's tool call.
    pub tool_call_id: Option<String>,
    /// `single` | `chain` | `parallel`.
    pub mode: Option<String>,
    /// The run state.
    pub state: Option<RunState>,
    /// Wall ms.
    pub started_at: Option<u64>,
    /// Wall ms of the last write.
    pub last_update: Option<u64>,
    /// Wall ms of the last agent activity.
    pub last_activity_at: Option<u64>,
    /// Wall ms of the end.
    pub ended_at: Option<u64>,
    /// The shim's pid.
    pub pid: Option<u32>,
    /// Target of `/proc/self/ns/pid` of the writer of `pid` (H13).
    pub pid_namespace_scope: Option<String>,
    /// ⊕ Start identity of `pid` (`linux:<ticks>`, X3), so S13 detects pid reuse.
    pub pid_start_identity: Option<String>,
    /// The run's cwd.
    pub cwd: Option<String>,
    /// Index of the current step.
    pub current_step: Option<u32>,
    /// Number of steps.
    pub chain_step_count: Option<u32>,
    /// Per-step status.
    pub steps: Option<Vec<StepStatus>>,
    /// `<run>/output-0.log`.
    pub output_file: Option<String>,
    /// The failure text.
    pub error: Option<String>,
    /// Why the run did not complete, in one word (D1).
    #[serde(default, deserialize_with = "crate::records::step_record::lenient")]
    pub failure_kind: Option<crate::records::failure::FailureKind>,
    /// The kernel's boot id when the run was launched: under another, the machine went down
    /// while it ran (D1).
    #[serde(default, deserialize_with = "crate::records::step_record::lenient")]
    pub boot_id: Option<String>,
    /// The run proof (S6), kept raw so an odd value never makes the status unreadable.
    pub process_terminal: Option<Value>,
    /// The parallel steps of a workflow run.
    #[serde(default, deserialize_with = "crate::records::step_record::lenient")]
    pub parallel_groups: Option<Vec<ParallelGroup>>,
    /// The pid of the host that launched the run.
    #[serde(default, deserialize_with = "crate::records::step_record::lenient")]
    pub launch_host_pid: Option<u32>,
    /// That host's start identity (X3).
    #[serde(default, deserialize_with = "crate::records::step_record::lenient")]
    pub launch_host_start_identity: Option<String>,
    /// J6: the cluster job the run was handed to; while it is set, the engine, not a pid,
    /// says whether the runner lives.
    #[serde(default, deserialize_with = "crate::records::step_record::lenient")]
    pub cluster: Option<crate::records::cluster::ClusterJob>,
    /// Fields of other writers.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The host's initial status (S2, H13).
#[derive(Clone, Debug, Default)]
pub struct InitialStatus {
    /// Run id.
    pub run_id: String,
    /// Runner instance id (H4).
    pub runner_process_instance_id: String,
    /// Session id.
    pub session_id: Option<String>,
    /// Completion owner.
    pub completion_owner_id: Option<String>,
    /// Tool call.
    pub tool_call_id: Option<String>,
    /// `single` / `chain` / `parallel`.
    pub mode: String,
    /// `(agent, model)` per step.
    pub steps: Vec<(String, Option<String>)>,
    /// The shim's pid.
    pub pid: u32,
    /// `/proc/self/ns/pid` target.
    pub pid_namespace_scope: Option<String>,
    /// The shim's start identity.
    pub pid_start_identity: Option<String>,
    /// Wall ms now.
    pub now: u64,
}

impl Status {
    /// Whether the machine restarted since the run was launched (its recorded boot id is not
    /// this boot's).
    pub fn host_restarted(&self) -> bool {
        self.boot_id
            .as_ref()
            .is_some_and(|then| crate::procinfo::boot_id().is_some_and(|now| now != *then))
    }

    /// The usage of every step that reported one, summed (`None`: none did).
    pub fn usage(&self) -> Option<crate::records::usage::Usage> {
        let steps: Vec<_> = self
            .steps
            .iter()
            .flatten()
            .filter_map(|step| step.facts.usage.clone())
            .collect();
        crate::records::usage::Usage::sum(&steps)
    }

    /// The S2 document.
    pub fn initial(init: &InitialStatus) -> Self {
        let steps = init
            .steps
            .iter()
            .map(|(agent, model)| StepStatus::pending(agent, model.as_deref()))
            .collect::<Vec<_>>();
        Self {
            lifecycle_artifact_version: Some(LIFECYCLE_ARTIFACT_VERSION),
            run_id: Some(init.run_id.clone()),
            session_id: init.session_id.clone(),
            completion_owner_id: init.completion_owner_id.clone(),
            tool_call_id: init.tool_call_id.clone(),
            mode: Some(init.mode.clone()),
            state: Some(RunState::Running),
            started_at: Some(init.now),
            last_update: Some(init.now),
            current_step: Some(0),
            chain_step_count: Some(u32::try_from(steps.len().max(1)).unwrap_or(u32::MAX)),
            steps: Some(steps),
            pid: Some(init.pid),
            pid_namespace_scope: init.pid_namespace_scope.clone(),
            pid_start_identity: init.pid_start_identity.clone(),
            process_terminal: Some(ProcessTerminal::pending(&init.run_id, &init.runner_process_instance_id).to_value()),
            ..Self::default()
        }
    }

    /// The S3 rewrite after commit, in place so host-only fields (`pidNamespaceScope` …) and
    /// unknown fields survive: state running, fresh timestamps, the shim's pid, cwd, output
    /// file, pending step proofs.
    pub fn mark_running(&mut self, update: &RunningUpdate<'_>) {
        self.lifecycle_artifact_version = Some(LIFECYCLE_ARTIFACT_VERSION);
        self.run_id = Some(update.run_id.to_owned());
        self.state = Some(RunState::Running);
        self.started_at = Some(update.now);
        self.last_update = Some(update.now);
        self.last_activity_at = Some(update.now);
        self.pid = Some(update.pid);
        if update.pid_namespace_scope.is_some() {
            self.pid_namespace_scope = update.pid_namespace_scope.map(str::to_owned);
        }
        if update.pid_start_identity.is_some() {
            self.pid_start_identity = update.pid_start_identity.map(str::to_owned);
        }
        self.cwd = Some(update.cwd.to_owned());
        self.output_file = Some(update.output_file.to_owned());
        self.current_step.get_or_insert(0);
        let pending = ProcessTerminal::pending(update.run_id, update.runner_process_instance_id);
        if !self.proof_state().is_some_and(ProofState::is_final) {
            self.process_terminal = Some(pending.to_value());
        }
        for (i, step) in self.steps.get_or_insert_with(Vec::new).iter_mut().enumerate() {
            let mut proof = pending.clone();
            proof.child_index = u32::try_from(i).ok();
            step.process_terminal = Some(proof.to_value());
        }
    }

    /// The S4 terminal fields: state, `endedAt`, `lastUpdate`, `error` (for `failed` without a
    /// message: `Step failed: <agent>`) and `failureKind` (D1: `kind`, else what the state
    /// implies — an agent's error for `failed`, a stop for `stopped`).
    pub fn mark_terminal(&mut self, state: RunState, ended_at: u64, error: Option<String>, kind: Option<FailureKind>) {
        let error = match (&state, error) {
            (_, Some(e)) => Some(e),
            (RunState::Failed, None) => Some(format!("Step failed: {}", self.current_agent().unwrap_or("unknown"))),
            _ => None,
        };
        self.failure_kind = match state {
            RunState::Failed => Some(kind.unwrap_or(FailureKind::AgentError)),
            RunState::Stopped => Some(kind.unwrap_or(FailureKind::Stopped)),
            _ => None,
        };
        self.state = Some(state);
        self.ended_at = Some(ended_at);
        self.last_update = Some(ended_at);
        self.error = error;
    }

    /// The agent of the current step.
    fn current_agent(&self) -> Option<&str> {
        let steps = self.steps.as_ref()?;
        let index = usize::try_from(self.current_step.unwrap_or(0)).ok()?;
        steps.get(index).or_else(|| steps.first())?.agent.as_deref()
    }

    /// `processTerminal.state`, if readable.
    pub fn proof_state(&self) -> Option<ProofState> {
        self.process_terminal
            .as_ref()?
            .get("state")
            .and_then(|s| serde_json::from_value(s.clone()).ok())
    }

    /// Whether the state is active.
    pub fn is_active(&self) -> bool {
        self.state.as_ref().is_some_and(RunState::is_active)
    }

    /// The host that launched the run: its pid and start identity (`launchHostPid`,
    /// `launchHostStartIdentity`), when recorded.
    pub fn launch_host(&self) -> Option<(u32, Option<&str>)> {
        Some((self.launch_host_pid?, self.launch_host_start_identity.as_deref()))
    }

    /// Whether the state is terminal.
    pub fn is_terminal(&self) -> bool {
        self.state.as_ref().is_some_and(RunState::is_terminal)
    }

    /// Number of steps (at least 1).
    pub fn step_count(&self) -> usize {
        let listed = self.steps.as_ref().map_or(0, Vec::len);
        let declared = self.chain_step_count.map_or(0, |n| usize::try_from(n).unwrap_or(0));
        listed.max(declared).max(1)
    }
}

/// Inputs of [`Status::mark_running`].
#[derive(Clone, Copy, Debug)]
pub struct RunningUpdate<'a> {
    /// Run id.
    pub run_id: &'a str,
    /// Runner instance id.
    pub runner_process_instance_id: &'a str,
    /// The shim's pid.
    pub pid: u32,
    /// The shim's pid namespace, if known (otherwise the host's value is kept).
    pub pid_namespace_scope: Option<&'a str>,
    /// The shim's start identity, if known.
    pub pid_start_identity: Option<&'a str>,
    /// The run's cwd.
    pub cwd: &'a str,
    /// `<run>/output-0.log`.
    pub output_file: &'a str,
    /// Wall ms now.
    pub now: u64,
}

/// What ended the agent, for the S4 derivation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EndFacts {
    /// A stop request (control file, X9 signal to the shim).
    pub stop_requested: bool,
    /// Killed by a signal nobody requested (R13).
    pub unexplained_signal: bool,
    /// Deadline or timeout control.
    pub timed_out: bool,
    /// Protocol limit (R11).
    pub protocol_failure: bool,
    /// The agent could not be spawned.
    pub spawn_failed: bool,
    /// Non-zero exit code.
    pub nonzero_exit: bool,
    /// Interrupt request.
    pub interrupted: bool,
}

/// S4: stopped › failed › paused › complete.
pub fn derive_terminal_state(facts: &EndFacts) -> RunState {
    if facts.stop_requested || facts.unexplained_signal {
        RunState::Stopped
    } else if facts.timed_out || facts.protocol_failure || facts.spawn_failed || facts.nonzero_exit {
        RunState::Failed
    } else if facts.interrupted {
        RunState::Paused
    } else {
        RunState::Complete
    }
}

/// Reads `status.json` (A11).
pub fn read_status(run: &Dir) -> io::Result<ReadDoc<Status>> {
    run.read_doc(names::STATUS)
}

/// Writes `status.json` (no lock: for the owner of the current single-writer window, S1).
pub fn write_status(run: &Dir, status: &Status, durability: Durability) -> io::Result<()> {
    run.write_doc(names::STATUS, status, durability)
}

/// Why a locked modification did not happen.
#[derive(Debug, thiserror::Error)]
pub enum ModifyError {
    /// `status.json` does not exist.
    #[error("status.json does not exist")]
    Absent,
    /// `status.json` is corrupt; it was left byte-identical.
    #[error("status.json is corrupt: {}", .0.error)]
    Corrupt(Corrupt),
    /// Reading, locking or writing failed.
    #[error(transparent)]
    Io(io::Error),
}

/// What the closure of [`modify_status`] decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Change {
    /// Write the modified document with these options.
    Write(Durability),
    /// Leave the file alone.
    Keep,
}

/// Read-modify-write of `status.json` under the S1 lock. A corrupt document is never treated
/// as `{}` (A11); an absent one starts from `{}` only with `absent_ok`.
pub fn modify_status<T>(
    run: &Dir,
    absent_ok: bool,
    f: impl FnOnce(&mut Status) -> (Change, T),
) -> Result<T, ModifyError> {
    let _lock = StatusLock::acquire(run).map_err(ModifyError::Io)?;
    modify_status_locked(run, absent_ok, f)
}

/// [`modify_status`] for a caller that already holds the lock.
pub fn modify_status_locked<T>(
    run: &Dir,
    absent_ok: bool,
    f: impl FnOnce(&mut Status) -> (Change, T),
) -> Result<T, ModifyError> {
    let mut status = match read_status(run).map_err(ModifyError::Io)? {
        ReadDoc::Present(s) => s,
        ReadDoc::Absent if absent_ok => Status::default(),
        ReadDoc::Absent => return Err(ModifyError::Absent),
        ReadDoc::Corrupt(c) => return Err(ModifyError::Corrupt(c)),
    };
    let (change, value) = f(&mut status);
    if let Change::Write(options) = change {
        write_status(run, &status, options).map_err(ModifyError::Io)?;
    }
    Ok(value)
}

/// A pre-commit (S5) or committed-before-spawn (R16, R8) startup failure to persist.
#[derive(Clone, Debug, Default)]
pub struct StartupFailure {
    /// Run id.
    pub run_id: String,
    /// Runner instance id.
    pub runner_process_instance_id: String,
    /// Session id.
    pub session_id: Option<String>,
    /// Completion owner.
    pub completion_owner_id: Option<String>,
    /// The launch error text.
    pub error: String,
    /// Number of steps (zero-writer candidate size).
    pub step_count: usize,
    /// Revival session file, kept in the candidate.
    pub session_file: Option<String>,
    /// Revival lease token, kept in the candidate.
    pub revival_lease_token: Option<String>,
    /// Wall ms now.
    pub now: u64,
    /// R16: never overwrite a status that is already terminal.
    pub keep_terminal_status: bool,
}

/// `runner-startup-failure.json` (S5 ⊕): `version` 1, `observedAt` in wall ms.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct StartupFailureRecord<'a> {
    version: u32,
    run_id: &'a str,
    runner_process_instance_id: &'a str,
    error: &'a str,
    observed_at: u64,
}

/// What [`persist_startup_failure`] did. Errors are reported, never returned: they must not
/// replace the launch error.
#[derive(Debug)]
pub enum StartupFailureOutcome {
    /// Status `failed` and the zero-writer candidate were written.
    Persisted,
    /// R16: the status was already terminal and kept; the candidate was written.
    StatusAlreadyTerminal,
    /// `status.json` was corrupt or unreadable: left byte-identical, no candidate, and
    /// `runner-startup-failure.json` written (`record_error` if even that failed).
    StatusUnusable {
        /// Why the status could not be used.
        cause: String,
        /// Error writing the record, if any.
        record_error: Option<io::Error>,
    },
    /// Writing the status or the candidate failed.
    Failed(io::Error),
}

/// S5 (and R16/R8 with `keep_terminal_status`): persists a startup failure under the status
/// lock.
pub fn persist_startup_failure(run: &Dir, failure: &StartupFailure, policy: DurabilityPolicy) -> StartupFailureOutcome {
    match StatusLock::acquire(run) {
        Ok(_lock) => persist_locked(run, failure, policy),
        Err(e) => StartupFailureOutcome::Failed(e),
    }
}

fn persist_locked(run: &Dir, failure: &StartupFailure, policy: DurabilityPolicy) -> StartupFailureOutcome {
    let status = match read_status(run) {
        Ok(ReadDoc::Present(s)) => s,
        Ok(ReadDoc::Absent) => Status::default(),
        Ok(ReadDoc::Corrupt(c)) => return unusable(run, failure, policy, format!("corrupt: {}", c.error)),
        Err(e) => return unusable(run, failure, policy, e.to_string()),
    };
    let already_terminal = failure.keep_terminal_status && status.is_terminal();
    if !already_terminal {
        let mut status = status;
        status.run_id = Some(failure.run_id.clone());
        if failure.session_id.is_some() {
            status.session_id.clone_from(&failure.session_id);
        }
        if failure.completion_owner_id.is_some() {
            status.completion_owner_id.clone_from(&failure.completion_owner_id);
        }
        status.state = Some(RunState::Failed);
        status.last_update = Some(failure.now);
        status.ended_at.get_or_insert(failure.now);
        status.error = Some(failure.error.clone());
        status.failure_kind = Some(FailureKind::NotStarted);
        if !status.proof_state().is_some_and(ProofState::is_final) {
            status.process_terminal =
                Some(ProcessTerminal::not_started(&failure.run_id, &failure.runner_process_instance_id).to_value());
        }
        if let Err(e) = write_status(run, &status, policy.for_kind(DocKind::TerminalStatus)) {
            return StartupFailureOutcome::Failed(e);
        }
    }
    let existing = run
        .read_doc::<Candidate>(names::PROCESS_TERMINAL_CANDIDATE)
        .ok()
        .and_then(ReadDoc::present);
    let mut candidate = Candidate::zero_writers(
        existing,
        &failure.run_id,
        &failure.runner_process_instance_id,
        failure.step_count,
    );
    candidate.session_file = candidate.session_file.or_else(|| failure.session_file.clone());
    candidate.revival_lease_token = candidate
        .revival_lease_token
        .or_else(|| failure.revival_lease_token.clone());
    if let Err(e) = run.write_doc(
        names::PROCESS_TERMINAL_CANDIDATE,
        &candidate,
        policy.for_kind(DocKind::FinalCandidate),
    ) {
        return StartupFailureOutcome::Failed(e);
    }
    if already_terminal {
        StartupFailureOutcome::StatusAlreadyTerminal
    } else {
        StartupFailureOutcome::Persisted
    }
}

fn unusable(run: &Dir, failure: &StartupFailure, policy: DurabilityPolicy, cause: String) -> StartupFailureOutcome {
    let record = StartupFailureRecord {
        version: 1,
        run_id: &failure.run_id,
        runner_process_instance_id: &failure.runner_process_instance_id,
        error: &failure.error,
        observed_at: failure.now,
    };
    let record_error = run
        .write_doc(
            names::RUNNER_STARTUP_FAILURE,
            &record,
            policy.for_kind(DocKind::StartupFailureRecord),
        )
        .err();
    StartupFailureOutcome::StatusUnusable { cause, record_error }
}

#[cfg(test)]
mod tests;
