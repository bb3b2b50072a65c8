//! How one step ended (R13, S4): the facts the terminal state is derived from, the failure
//! texts, and the writer record's `processTree`.

use crate::process::reaper::ExitInfo;
use crate::process::tree::{GroupOutcome, SweepOutcome, pid_list};
use crate::remote::parser::RemoteState;
use serde_json::Value;
use sublaunch_protocol::records::config::Placement;
use sublaunch_protocol::records::events::Event;
use sublaunch_protocol::records::failure::FailureKind;
use sublaunch_protocol::records::proof::{ProcessTree, WriterRecord};
use sublaunch_protocol::records::status::{EndFacts, RunState, derive_terminal_state};
use sublaunch_protocol::records::usage::Usage;

/// `Interrupted. Waiting for explicit next action.` (R12).
pub const INTERRUPT_MESSAGE: &str = "Interrupted. Waiting for explicit next action.";
/// `Subagent stopped by user.` (R12).
pub const STOP_BY_USER_MESSAGE: &str = "Subagent stopped by user.";

/// How one step ended.
#[derive(Clone, Debug, Default)]
pub struct StepEnd {
    /// Step index.
    pub index: usize,
    /// Agent name.
    pub agent: String,
    /// The agent's pid, if spawned.
    pub pid: Option<u32>,
    /// What ended its process tree with the runner, if spawned (G43).
    pub containment: Option<&'static str>,
    /// The spawn error (R10).
    pub spawn_error: Option<String>,
    /// How the agent exited.
    pub exit: Option<ExitInfo>,
    /// Stop message, if stopped (X9, R12).
    pub stop: Option<String>,
    /// Timed out (R12), with the message.
    pub timeout: Option<String>,
    /// Interrupted (R12).
    pub interrupted: bool,
    /// Signalled by the final drain after its terminal event (X5): not a failure by itself.
    pub drained: bool,
    /// The failure the agent reported in its own output (an API error, a failed turn), kept
    /// to explain a non-zero exit.
    pub agent_failure: Option<String>,
    /// Protocol failure message (R11).
    pub protocol: Option<String>,
    /// The writer record (R13); `None` when no agent ran.
    pub writer: Option<WriterRecord>,
    /// The step's output text.
    pub output: String,
    /// `output` is what the agent produced before it ended without its final answer (D2).
    pub output_partial: bool,
    /// The last bytes of stderr.
    pub stderr_tail: Vec<u8>,
    /// Wall ms at start / end.
    pub started_wall: u64,
    /// Wall ms at the end.
    pub ended_wall: u64,
    /// Monotonic duration.
    pub duration_ms: u64,
    /// Bytes of stdout / stderr seen.
    pub stdout_bytes: u64,
    /// Bytes of stderr seen.
    pub stderr_bytes: u64,
    /// The plan's `stepIndex` / `taskIndex` of this child.
    pub position: (Option<u32>, Option<u32>),
    /// The step's `label` in the chain file.
    pub tag: Option<String>,
    /// The workflow phase it belongs to.
    pub phase: Option<String>,
    /// The adapter that ran it.
    pub adapter: String,
    /// Whether `output` is only the end of a longer text.
    pub output_truncated: bool,
    /// Why a finished agent's result is refused: its own reported failure, output that is not
    /// JSON or does not match the schema, or a model mismatch.
    pub validation: Option<String>,
    /// What kind of failure `validation` is (D1): the agent's own, or its answer's.
    pub validation_kind: Option<FailureKind>,
    /// The time that passed was the run's wall-clock deadline, not its timeout (D1).
    pub deadline_passed: bool,
    /// The stop was the runner's own, for a crossed spend limit (D1).
    pub stopped_by_limit: bool,
    /// The parsed structured output (structured steps that validated).
    pub structured: Option<Value>,
    /// Every schema violation (`{path, message}`), when the structured output did not validate.
    pub structured_errors: Vec<Value>,
    /// The model the agent reported.
    pub reported_model: Option<String>,
    /// Tokens and cost the agent reported.
    pub usage: Option<Usage>,
    /// The agent's conversation handle, which a resume continues.
    pub agent_session: Option<String>,
    /// The conversation's running usage as the agent counts it (Codex's thread total).
    pub agent_session_usage: Option<Usage>,
    /// Stopped because a failFast sibling failed, with the message.
    pub cancel: Option<String>,
    /// The budget it (or the run) crossed: it was stopped and its step fails.
    pub budget: Option<crate::step::budget::Exceeded>,
    /// Never started, and why (an earlier step failed, the run was stopped …).
    pub not_run: Option<String>,
    /// Its end was already written into the status and its event appended.
    pub closed: bool,
    /// Where it ran, when the plan placed it on a machine.
    pub remote: Option<RemoteEnd>,
    /// What it left in its managed git worktree.
    pub worktree: Option<crate::step::worktree::WorktreeEnd>,
    /// The file its answer was written to (`output`).
    pub output_file: Option<String>,
    /// The OS sandbox it ran in.
    pub sandbox: Option<sublaunch_protocol::records::sandbox::AppliedSandbox>,
    /// What keeping its acceptance contract found (G79); a contract asked for and not met
    /// fails the step (G75).
    pub acceptance: Option<sublaunch_protocol::records::acceptance::AcceptanceRecord>,
    /// What of its usage the ledger held before it ended (appended while it ran, U1).
    pub ledgered: Usage,
    /// The last rate limit or overload the agent's CLI reported (U5).
    pub rate_limited: Option<crate::adapter::RateLimited>,
    /// Whether the agent did any work (answered, called a tool).
    pub worked: bool,
    /// Stopped by the runner to be run again after its provider's cooldown (U6).
    pub rate_limit_stopped: bool,
    /// Every attempt of the step a rate limit met, this one included when it did (U6).
    pub rate_limits: Vec<sublaunch_protocol::records::step_record::RateLimitAttempt>,
    /// The writer records of the attempts before this one (each rate-limited and run again).
    pub earlier_writers: Vec<WriterRecord>,
}

/// What the end of a placed step records and its failure text uses (P-H10, P-H12).
#[derive(Clone, Debug)]
pub struct RemoteEnd {
    /// The machine, its ssh target and directory.
    pub placement: Placement,
    /// Whether the remote shell reached READY, and `remoteGit` when its directory is a work tree.
    pub state: RemoteState,
}

impl StepEnd {
    /// Whether the agent's end was caused by a request of ours.
    fn requested(&self) -> bool {
        self.drained
            || self.stop.is_some()
            || self.cancel.is_some()
            || self.budget.is_some()
            || self.timeout.is_some()
            || self.interrupted
            || self.protocol.is_some()
            || self.rate_limit_stopped
    }

    /// Whether the step was started at all (see [`StepEnd::not_run`]).
    pub fn ran(&self) -> bool {
        self.not_run.is_none()
    }

    /// The step's status word: the state, or `skipped` for a step that never ran.
    pub fn status_word(&self) -> String {
        if self.ran() {
            self.state().as_str().to_owned()
        } else {
            "skipped".to_owned()
        }
    }

    /// `step 2 reviewer` or `step 2.1 reviewer (lexer)`: 1-based plan position (flat position
    /// when the configuration has none), agent and `(label)` — as progress, `status` and
    /// `logs` name the step.
    pub fn label(&self) -> String {
        format!("step {} {}", self.position_label(), self.shown_agent())
    }

    /// `2` or `2.1` (task 1 of the parallel group that is step 2).
    pub fn position_label(&self) -> String {
        let step = self.position.0.map_or(self.index, |s| s as usize) + 1;
        match self.position.1 {
            Some(task) => format!("{step}.{}", task + 1),
            None => step.to_string(),
        }
    }

    /// `reviewer (review: lexer)`, `reviewer (lexer)` or `reviewer`.
    pub fn shown_agent(&self) -> String {
        match (&self.phase, &self.tag) {
            (Some(phase), Some(tag)) => format!("{} ({phase}: {tag})", self.agent),
            (Some(tag), None) | (None, Some(tag)) => format!("{} ({tag})", self.agent),
            (None, None) => self.agent.clone(),
        }
    }

    /// `event` with the plan position of a child of a chain or group.
    pub fn with_position(&self, mut event: Event) -> Event {
        if let Some(step) = self.position.0 {
            event = event.with("planStepIndex", step);
        }
        if let Some(task) = self.position.1 {
            event = event.with("taskIndex", task);
        }
        event
    }

    /// The S4 facts.
    pub fn facts(&self) -> EndFacts {
        let requested = self.requested();
        EndFacts {
            stop_requested: self.stop.is_some() || self.cancel.is_some(),
            unexplained_signal: !requested && self.exit.as_ref().is_some_and(|e| e.signal.is_some()),
            timed_out: self.timeout.is_some(),
            protocol_failure: self.protocol.is_some(),
            spawn_failed: self.spawn_error.is_some(),
            nonzero_exit: !requested
                && (self.exit.as_ref().is_some_and(|e| e.code.is_some_and(|c| c != 0))
                    || (self.pid.is_some() && self.exit.is_none())),
            interrupted: self.interrupted,
        }
    }

    /// The step's state (S4); a finished agent whose result is refused (see
    /// [`StepEnd::validation`]) has failed.
    pub fn state(&self) -> RunState {
        match derive_terminal_state(&self.facts()) {
            RunState::Complete if self.validation.is_some() || self.budget.is_some() || self.not_accepted() => {
                RunState::Failed
            }
            state => state,
        }
    }

    /// Whether its acceptance contract was asked for and not met (G75).
    pub fn not_accepted(&self) -> bool {
        self.acceptance
            .as_ref()
            .is_some_and(sublaunch_protocol::records::acceptance::AcceptanceRecord::fails_step)
    }

    /// Why the step did not complete, in one word of the vocabulary (D1); `None` when it
    /// completed or was paused.
    pub fn failure_kind(&self) -> Option<FailureKind> {
        if !self.ran() || self.spawn_error.is_some() {
            return Some(FailureKind::NotStarted);
        }
        Some(match self.state() {
            RunState::Stopped if self.stopped_by_limit => FailureKind::Budget,
            RunState::Stopped if self.stop.is_some() || self.cancel.is_some() => FailureKind::Stopped,
            RunState::Stopped => FailureKind::Killed,
            RunState::Failed => self.failed_kind(),
            _ => return None,
        })
    }

    /// The kind of a failed step: what the runner decided first, then what it found.
    fn failed_kind(&self) -> FailureKind {
        let lost = self
            .remote
            .as_ref()
            .is_some_and(|r| !r.state.ready || self.exit.as_ref().is_some_and(|e| e.code == Some(255)));
        if self.timeout.is_some() {
            if self.deadline_passed {
                FailureKind::Deadline
            } else {
                FailureKind::Timeout
            }
        } else if self.budget.is_some() {
            FailureKind::Budget
        } else if self.rate_limited.is_some() && !self.worked {
            FailureKind::RateLimited
        } else if lost {
            FailureKind::ConnectionLost
        } else if self.not_accepted() {
            FailureKind::GateFailed
        } else if let Some(kind) = self.validation.as_ref().and(self.validation_kind) {
            kind
        } else if self.protocol.is_some() {
            FailureKind::OutputInvalid
        } else {
            FailureKind::AgentError
        }
    }

    /// The exit code recorded for the step (a spawn error counts as 1, R10).
    pub fn exit_code(&self) -> Option<i64> {
        if self.spawn_error.is_some() {
            return Some(1);
        }
        self.exit.as_ref().and_then(|e| e.code).map(i64::from)
    }

    /// The failure text for the state, if any; a step a rate limit kept from doing any work
    /// says so first.
    pub fn error(&self) -> Option<String> {
        let error = self.state_error()?;
        match &self.rate_limited {
            Some(limited) if !self.worked && self.ran() && self.state() == RunState::Failed => {
                Some(format!("{}\n\n{error}", self.rate_limit_message(limited)))
            }
            _ => Some(error),
        }
    }

    /// `Rate limited: the provider refused the agent's calls (HTTP 429) on all 3 attempts.`
    fn rate_limit_message(&self, limited: &crate::adapter::RateLimited) -> String {
        let what = match limited.status {
            Some(529) => "was overloaded".to_owned(),
            Some(status) => format!("refused the agent's calls (HTTP {status})"),
            None => "refused the agent's calls for too many requests".to_owned(),
        };
        let attempts = self.rate_limits.len().max(1);
        let when = if attempts == 1 {
            String::new()
        } else {
            format!(" on all {attempts} attempts")
        };
        format!(
            "Rate limited: the provider {what}{when}; it said: {}",
            limited.message.trim()
        )
    }

    /// The failure text of the state alone.
    fn state_error(&self) -> Option<String> {
        if let Some(reason) = &self.not_run {
            return Some(reason.clone());
        }
        if derive_terminal_state(&self.facts()) == RunState::Complete {
            return self
                .budget
                .as_ref()
                .map(crate::step::budget::Exceeded::message)
                .or_else(|| self.validation.clone())
                .or_else(|| {
                    self.acceptance
                        .as_ref()
                        .filter(|record| record.fails_step())
                        .map(|record| crate::step::acceptance::failure(record, &self.label()))
                });
        }
        match self.state() {
            RunState::Complete => None,
            RunState::Stopped => self.stop.clone().or_else(|| self.cancel.clone()).or_else(|| {
                self.exit
                    .as_ref()
                    .and_then(ExitInfo::signal_name)
                    .map(|s| format!("Subagent was terminated by signal {s}."))
            }),
            RunState::Paused => Some(INTERRUPT_MESSAGE.to_owned()),
            _ => self
                .timeout
                .clone()
                .or_else(|| self.protocol.clone())
                .or_else(|| self.spawn_error.clone())
                .or_else(|| Some(self.exit_failure())),
        }
    }

    fn exit_failure(&self) -> String {
        let mut text = match self.exit.as_ref() {
            Some(ExitInfo { code: Some(code), .. }) => format!("Subagent exited with code {code}."),
            Some(exit) => format!(
                "Subagent was terminated by signal {}.",
                exit.signal_name().unwrap_or_default()
            ),
            None => "Subagent exit could not be observed.".to_owned(),
        };
        if let Some(RemoteEnd { placement, state }) = &self.remote
            && !state.ready
        {
            let never_ready = crate::remote::parser::never_ready(&placement.machine, &placement.cwd);
            text = format!("{text} {never_ready}");
        }
        if let Some(reported) = &self.agent_failure {
            text = format!("{text}\n\n{reported}");
        }
        let tail = excerpt(&self.stderr_tail);
        if !tail.is_empty() {
            text = format!("{text}\n\n{tail}");
        }
        if let Some(hint) = self.remote_hint(&String::from_utf8_lossy(&self.stderr_tail)) {
            text = format!("{text}\n\n{hint}");
        }
        text
    }

    /// P-H12: the operator hint of a failed placed step.
    fn remote_hint(&self, stderr: &str) -> Option<String> {
        let RemoteEnd { placement, state } = self.remote.as_ref()?;
        crate::remote::hint::failure_hint(&crate::remote::hint::HintInput {
            machine: &placement.machine,
            target: &placement.target,
            cwd: &placement.cwd,
            adapter: &self.adapter,
            ready: state.ready,
            exit_code: self.exit.as_ref().and_then(|e| e.code),
            stderr,
        })
    }
}

/// The last ≤ 20 lines / 2 000 chars of a process's output, for a failure message.
pub fn excerpt(tail: &[u8]) -> String {
    let text = String::from_utf8_lossy(tail);
    let lines: Vec<&str> = text.trim_end().lines().collect();
    let mut excerpt = lines[lines.len().saturating_sub(20)..].join("\n");
    if excerpt.len() > 2_000 {
        let mut cut = excerpt.len() - 2_000;
        while !excerpt.is_char_boundary(cut) {
            cut += 1;
        }
        excerpt = excerpt[cut..].to_owned();
    }
    excerpt
}

/// R13 `processTree` from the ladder and the X8 sweep.
pub fn process_tree(pgid: u32, outcome: Option<GroupOutcome>, sweep: &SweepOutcome) -> ProcessTree {
    let (reason, diagnostic) = match outcome {
        Some(GroupOutcome::Empty { verified_at }) if sweep.survivors.is_empty() => {
            return ProcessTree::observed(pgid, verified_at, Some(sweep.killed));
        }
        Some(GroupOutcome::Empty { .. }) => (
            "verification-failed",
            format!("processes of the run survived SIGKILL: {}", pid_list(&sweep.survivors)),
        ),
        Some(GroupOutcome::SignalFailed(diagnostic)) => ("signal-failed", diagnostic),
        Some(GroupOutcome::VerificationFailed(diagnostic)) => ("verification-failed", diagnostic),
        None => (
            "verification-failed",
            format!("process group {pgid} was never verified"),
        ),
    };
    ProcessTree::Unknown {
        reason: reason.into(),
        diagnostic: Some(diagnostic),
    }
}
