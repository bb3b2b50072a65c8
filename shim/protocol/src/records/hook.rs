//! Completion hooks (a sublaunch addition): a shell command the user asked to run when a run
//! ends, with the run's result (the S11 payload) on its stdin and `SUBLAUNCH_RUN_ID` /
//! `SUBLAUNCH_STATE` / `SUBLAUNCH_DELIVERY_ID` in its environment. Its outcome is recorded
//! beside the run and never changes the run's state or result.
//!
//! Each end is delivered from the outbox ([`crate::records::outbox`], D7): written there with
//! the end, tried by the runner, tried again with backoff by the next `sublaunch` command or
//! `sublaunch deliver` while it fails or was cut off by a crash, and removed once an attempt
//! succeeded.
//!
//! The files, all in `<run>`:
//! * `hook.json` ([`HookSpec`]): the command, its time limit, the run's cwd and the agents'
//!   umask, written by the host before the shim is spawned, so whoever delivers the end of a
//!   runner that died can still find it (the runner configuration, which also carries it as
//!   `onEnd`, is gone by then). Its `flock` is the right to deliver
//!   ([`crate::records::outbox::DeliveryLock`]);
//! * `hook-end.json` ([`HookOutcome`]): how the last attempt ended (exit code, signal, timed
//!   out, duration, spawn error, which delivery and attempt), plus a
//!   `subagent.run.hook_finished` line in `events.jsonl` per attempt;
//! * `hook-end.log`: what the attempts printed (stdout and stderr, capped at [`LOG_CAP`]).

use crate::files::dir::Dir;
use crate::files::doc::ReadDoc;
use crate::files::durability::{DocKind, DurabilityPolicy};
use crate::records::events::{self, Event};
use crate::records::results::{OutputState, ResultPayload, StepResult};
use crate::records::status::{LIFECYCLE_ARTIFACT_VERSION, RunState, Status};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::io;
use std::time::Duration;

/// `<run>/hook.json`.
pub const SPEC_FILE: &str = "hook.json";
/// `<run>/hook-end.json`.
pub const OUTCOME_FILE: &str = "hook-end.json";
/// `<run>/hook-end.log`.
pub const LOG_FILE: &str = "hook-end.log";
/// The event appended when the hook ended.
pub const FINISHED_EVENT: &str = "subagent.run.hook_finished";

/// The run id, in the hook's environment.
pub const RUN_ID_ENV: &str = "SUBLAUNCH_RUN_ID";
/// The run's terminal state (`complete`, `failed`, `stopped`, `paused`), in the hook's
/// environment.
pub const STATE_ENV: &str = "SUBLAUNCH_STATE";
/// The run directory, in the hook's environment.
pub const RUN_DIR_ENV: &str = "SUBLAUNCH_RUN_DIR";
/// The end's idempotency key (`<runId>.<end seq>`, D7), in the hook's environment: the same
/// for every attempt to deliver one end.
pub const DELIVERY_ID_ENV: &str = "SUBLAUNCH_DELIVERY_ID";
/// Which attempt this is (from 1), in the hook's environment.
pub const DELIVERY_ATTEMPT_ENV: &str = "SUBLAUNCH_DELIVERY_ATTEMPT";
/// Why the run did not complete, in one word (D1), in the hook's environment (absent when it
/// completed).
pub const FAILURE_KIND_ENV: &str = "SUBLAUNCH_FAILURE_KIND";

/// How long a hook may run unless configured otherwise.
pub const DEFAULT_TIMEOUT_MS: u64 = 60_000;
/// The longest time limit a hook may have (a day).
pub const MAX_TIMEOUT_MS: u64 = 24 * 60 * 60 * 1000;
/// How much of the hook's output `hook-end.log` keeps.
pub const LOG_CAP: u64 = 1024 * 1024;

/// `onEnd` of the runner configuration: the command (run with `sh -c`) and its time limit.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OnEnd {
    /// The shell command.
    pub command: String,
    /// Its time limit in ms, after which its process group is killed.
    pub timeout_ms: u64,
}

impl OnEnd {
    /// `command` with `timeout_ms` (default [`DEFAULT_TIMEOUT_MS`], at most
    /// [`MAX_TIMEOUT_MS`], at least 1).
    pub fn new(command: impl Into<String>, timeout_ms: Option<u64>) -> Self {
        Self {
            command: command.into(),
            timeout_ms: timeout_ms.unwrap_or(DEFAULT_TIMEOUT_MS).clamp(1, MAX_TIMEOUT_MS),
        }
    }

    /// The time limit.
    pub fn timeout(&self) -> Duration {
        Duration::from_millis(self.timeout_ms.clamp(1, MAX_TIMEOUT_MS))
    }
}

/// `<run>/hook.json`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HookSpec {
    /// Always 1.
    pub version: u32,
    /// The run.
    pub run_id: String,
    /// The command and its time limit.
    #[serde(flatten)]
    pub on_end: OnEnd,
    /// The run's local cwd: where the hook runs.
    pub cwd: String,
    /// The umask the run's agents got (the hook gets it too).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub umask: Option<u32>,
}

/// Writes `<run>/hook.json` (atomic, private, durable: it must outlive a crash of the shim).
pub fn write_spec(run: &Dir, spec: &HookSpec, policy: DurabilityPolicy) -> io::Result<()> {
    run.write_doc(SPEC_FILE, spec, policy.for_kind(DocKind::InitialStatus))
}

/// Reads `<run>/hook.json`: `Ok(None)` when the run has no hook; a corrupt file is an error.
pub fn read_spec(run: &Dir) -> io::Result<Option<HookSpec>> {
    match run.read_doc::<HookSpec>(SPEC_FILE)? {
        ReadDoc::Present(spec) => Ok(Some(spec)),
        ReadDoc::Absent => Ok(None),
        ReadDoc::Corrupt(corrupt) => Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "{} is not a completion hook record: {}",
                run.join(SPEC_FILE).display(),
                corrupt.error
            ),
        )),
    }
}

/// Who fired a hook.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FiredBy {
    /// The run's shim, after its end records.
    Runner,
    /// The host that launched the run, after it saw the shim die.
    Launcher,
    /// A lister or waiter that found the shim dead (S13), or a failed delivery due again.
    Reconciler,
    /// `sublaunch deliver`.
    Command,
}

/// `<run>/hook-end.json`: how the hook ended.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HookOutcome {
    /// Always 1.
    pub version: u32,
    /// The run.
    pub run_id: String,
    /// The command.
    pub command: String,
    /// Who ran it.
    pub fired_by: FiredBy,
    /// The run's state it was told (`SUBLAUNCH_STATE`).
    pub run_state: String,
    /// Wall ms when it started (or failed to).
    pub started_at: u64,
    /// Wall ms when it ended.
    pub ended_at: u64,
    /// How long it ran (monotonic).
    pub duration_ms: u64,
    /// Its exit code, when it exited.
    pub exit_code: Option<i32>,
    /// The signal that ended it (`SIGKILL` after the time limit).
    pub signal: Option<String>,
    /// Whether it was killed at its time limit.
    pub timed_out: bool,
    /// Its time limit.
    pub timeout_ms: u64,
    /// The signal to its runner that ended it early (`SIGTERM`), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped_by: Option<String>,
    /// Why it could not be started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spawn_error: Option<String>,
    /// How many bytes it printed (`hook-end.log` keeps the first [`LOG_CAP`]).
    pub output_bytes: u64,
    /// Whether `hook-end.log` was cut at [`LOG_CAP`].
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub output_truncated: bool,
    /// The end delivered (`<runId>.<end seq>`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivery_id: Option<String>,
    /// Which attempt this was (from 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt: Option<u32>,
}

impl HookOutcome {
    /// The outcome of `spec`'s hook, fired by `fired_by` for a run that ended `run_state`,
    /// as it starts at `started_at` (wall ms): nothing has happened yet. The runner fills in
    /// how it ended; a launcher that cannot start it, why.
    pub fn starting(spec: &HookSpec, fired_by: FiredBy, run_state: &str, started_at: u64) -> Self {
        Self {
            version: 1,
            run_id: spec.run_id.clone(),
            command: spec.on_end.command.clone(),
            fired_by,
            run_state: run_state.to_owned(),
            started_at,
            ended_at: 0,
            duration_ms: 0,
            exit_code: None,
            signal: None,
            timed_out: false,
            timeout_ms: spec.on_end.timeout_ms,
            stopped_by: None,
            spawn_error: None,
            output_bytes: 0,
            output_truncated: false,
            delivery_id: None,
            attempt: None,
        }
    }

    /// Whether the hook exited 0.
    pub fn succeeded(&self) -> bool {
        self.exit_code == Some(0) && self.spawn_error.is_none()
    }

    /// Why the attempt failed, in words (for the outbox and the stream).
    pub fn failure(&self) -> String {
        if let Some(error) = &self.spawn_error {
            return error.clone();
        }
        if self.timed_out {
            return format!("the hook ran past its time limit of {} ms", self.timeout_ms);
        }
        if let Some(signal) = &self.stopped_by {
            return format!("the hook was stopped ({signal} to its runner)");
        }
        match (&self.exit_code, &self.signal) {
            (Some(code), _) => format!("the hook exited with code {code}"),
            (None, Some(signal)) => format!("the hook was killed by {signal}"),
            (None, None) => "the hook ended without an exit status".to_owned(),
        }
    }

    /// `subagent.run.hook_finished`.
    pub fn event(&self) -> Event {
        let mut event = Event::new(FINISHED_EVENT, self.ended_at)
            .with("runId", &self.run_id)
            .with("firedBy", self.fired_by)
            .with("exitCode", self.exit_code)
            .with("signal", &self.signal)
            .with("timedOut", self.timed_out)
            .with("durationMs", self.duration_ms)
            .with("deliveryId", &self.delivery_id)
            .with("attempt", self.attempt);
        if let Some(error) = &self.spawn_error {
            event = event.with("spawnError", error);
        }
        event
    }
}

/// Writes `hook-end.json`, then the `subagent.run.hook_finished` event; returns the problems
/// (nobody else can record them).
pub fn record_outcome(run: &Dir, outcome: &HookOutcome, policy: DurabilityPolicy) -> Vec<String> {
    let mut problems = Vec::new();
    if let Err(e) = run.write_doc(OUTCOME_FILE, outcome, policy.for_kind(DocKind::Other)) {
        problems.push(format!("cannot record the completion hook's outcome: {e}"));
    }
    if let Err(e) = events::append_once(run, &outcome.event()) {
        problems.push(format!("cannot append the completion hook's event: {e}"));
    }
    problems
}

/// The result payload of a run whose runner died before publishing one (the host fires the
/// hook then): the S11 shape filled from `status`, with `synthesizedFromStatus: true`.
pub fn payload_from_status(status: &Status, async_dir: &str) -> Value {
    let state = status.state.clone().unwrap_or(RunState::Failed);
    let success = state == RunState::Complete;
    let steps = status.steps.clone().unwrap_or_default();
    // D2: what the agents had said, as the runner saved it while they ran.
    let run = Dir::open(std::path::Path::new(async_dir)).ok();
    let results: Vec<StepResult> = steps
        .iter()
        .enumerate()
        .map(|(index, step)| {
            (
                step,
                run.as_ref().and_then(|run| crate::records::partial::read(run, index)),
            )
        })
        .map(|(step, partial)| StepResult {
            agent: step.agent.clone().unwrap_or_default(),
            output_state: if partial.is_some() {
                OutputState::Present
            } else {
                OutputState::Absent
            },
            error: step.error.clone(),
            protocol_error: None,
            success: step.status.as_deref() == Some("complete"),
            exit_code: step.exit_code,
            process_signal: None,
            facts: crate::records::step_record::StepFacts {
                failure_kind: step.facts.failure_kind,
                output_partial: partial.is_some().then_some(true),
                agent_session: step.facts.agent_session.clone(),
                ..Default::default()
            },
            output: partial.unwrap_or_default(),
            ..StepResult::default()
        })
        .collect();
    let ended = status.ended_at.or(status.last_update).unwrap_or(0);
    let payload = ResultPayload {
        lifecycle_artifact_version: LIFECYCLE_ARTIFACT_VERSION,
        id: status.run_id.clone().unwrap_or_default(),
        agent: steps.first().and_then(|s| s.agent.clone()).unwrap_or_default(),
        mode: status.mode.clone().unwrap_or_else(|| "single".into()),
        success,
        state: state.as_str().to_owned(),
        summary: status.error.clone().unwrap_or_default(),
        results,
        exit_code: i32::from(!success),
        timestamp: ended,
        duration_ms: ended.saturating_sub(status.started_at.unwrap_or(ended)),
        cwd: status.cwd.clone().unwrap_or_default(),
        async_dir: async_dir.to_owned(),
        session_id: status.session_id.clone().unwrap_or_default(),
        completion_owner_id: status.completion_owner_id.clone(),
        error: status.error.clone(),
        failure_kind: status.failure_kind,
        timed_out: None,
        stopped: (state == RunState::Stopped).then_some(true),
        usage: None,
        synthesized_from_status: Some(true),
        extra: Map::new(),
    };
    serde_json::to_value(payload).unwrap_or(Value::Null)
}

/// What a host hands `sublaunch-shim --on-end` on stdin: everything the hook needs, so the
/// helper reads nothing else but writes its outcome into `run_dir`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HookJob {
    /// Always 1.
    pub version: u32,
    /// `<run>`.
    pub run_dir: String,
    /// The run.
    pub run_id: String,
    /// Its terminal state.
    pub state: String,
    /// Where the hook runs, its command, limit and umask.
    pub spec: HookSpec,
    /// Who delivers it.
    pub fired_by: FiredBy,
    /// The end to deliver, as the outbox holds it.
    pub delivery: crate::records::outbox::Delivery,
    /// The result payload for its stdin.
    pub payload: Value,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_spec_round_trips() {
        let tmp = tempfile::tempdir().unwrap();
        let run = Dir::open(tmp.path()).unwrap();
        assert_eq!(read_spec(&run).unwrap(), None);
        let spec = HookSpec {
            version: 1,
            run_id: "r".into(),
            on_end: OnEnd::new("echo hi", None),
            cwd: "/".into(),
            umask: Some(0o022),
        };
        write_spec(&run, &spec, DurabilityPolicy::standard()).unwrap();
        assert_eq!(read_spec(&run).unwrap(), Some(spec));
        std::fs::write(tmp.path().join(SPEC_FILE), "{").unwrap();
        assert!(read_spec(&run).is_err());
    }

    #[test]
    fn limits_are_clamped_and_a_status_becomes_a_result_shape() {
        assert_eq!(OnEnd::new("x", Some(0)).timeout_ms, 1);
        assert_eq!(OnEnd::new("x", Some(u64::MAX)).timeout_ms, MAX_TIMEOUT_MS);
        let status: Status = serde_json::from_value(serde_json::json!({
            "runId": "r", "state": "failed", "error": "boom", "startedAt": 10, "endedAt": 25,
            "steps": [{"agent": "shell", "status": "failed", "exitCode": 2}]
        }))
        .unwrap();
        let payload = payload_from_status(&status, "/runs/r");
        assert_eq!(payload["id"], "r");
        assert_eq!(payload["state"], "failed");
        assert_eq!(payload["success"], false);
        assert_eq!(payload["durationMs"], 15);
        assert_eq!(payload["results"][0]["exitCode"], 2);
        assert_eq!(payload["synthesizedFromStatus"], true);
    }
}
