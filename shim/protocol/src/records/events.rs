//! `events.jsonl` (A10, S10): one JSON object per line, appended with
//! `O_APPEND|O_CREAT|O_NOFOLLOW|O_CLOEXEC` (0600), one `write` per line. Append failures are
//! diagnostic: they are logged (the shim's stderr is `runner.stderr.log`) and never fail the run.
//!
//! Child stream lines ("diagnostic" events) share a byte budget of
//! `SUBLAUNCH_ASYNC_EVENTS_MAX_BYTES` (default 52 428 800) with 512 bytes reserved; when it is
//! exhausted exactly one `subagent.events.truncated` line is appended and further diagnostics
//! are dropped. Lifecycle events are never dropped.

use crate::files::dir::Dir;
use crate::files::layout::names;
use crate::os::clock::Clock;
use crate::records::status::LIFECYCLE_ARTIFACT_VERSION;
use rustix::fd::AsFd;
use rustix::io::Errno;
use serde::Serialize;
use serde_json::{Value, json};
use std::fmt;
use std::io::{self, BufRead};
use std::sync::Arc;

/// The budget variable (S10; honoured in production).
pub const EVENTS_MAX_BYTES_ENV: &str = "SUBLAUNCH_ASYNC_EVENTS_MAX_BYTES";
/// The default diagnostic budget.
pub const DEFAULT_EVENTS_MAX_BYTES: u64 = 52_428_800;
/// Bytes of the budget reserved for the truncation line.
pub const RESERVED_BYTES: u64 = 512;

/// The budget from the environment; a missing or non-integer value gives the default.
pub fn max_bytes_from_env() -> u64 {
    std::env::var(EVENTS_MAX_BYTES_ENV)
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(DEFAULT_EVENTS_MAX_BYTES)
}

/// The result of one append.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AppendOutcome {
    /// The line was written.
    Written,
    /// A diagnostic line was dropped by the budget.
    Dropped,
    /// Writing failed (logged).
    Failed,
}

type Logger = Box<dyn FnMut(&str) + Send>;

/// The shim's appender for one run's `events.jsonl`.
pub struct EventLog {
    run: Dir,
    clock: Arc<dyn Clock>,
    file: Option<std::fs::File>,
    max_bytes: u64,
    diagnostic_bytes: u64,
    truncated: bool,
    logger: Logger,
    last_logged: Option<String>,
}

impl fmt::Debug for EventLog {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EventLog")
            .field("run", &self.run.path())
            .field("max_bytes", &self.max_bytes)
            .field("diagnostic_bytes", &self.diagnostic_bytes)
            .field("truncated", &self.truncated)
            .finish_non_exhaustive()
    }
}

impl EventLog {
    /// An appender for `<run>/events.jsonl` with a diagnostic budget of `max_bytes`, reporting
    /// failures through the `log` facade. The file is opened on first use.
    pub fn new(run: &Dir, max_bytes: u64) -> io::Result<Self> {
        Ok(Self {
            run: run.try_clone()?,
            clock: run.os().clock.clone(),
            file: None,
            max_bytes,
            diagnostic_bytes: 0,
            truncated: false,
            logger: Box::new(|line| log::warn!("{line}")),
            last_logged: None,
        })
    }

    /// Replaces the failure logger (tests, or a host that logs elsewhere).
    #[must_use]
    pub fn with_logger(mut self, logger: impl FnMut(&str) + Send + 'static) -> Self {
        self.logger = Box::new(logger);
        self
    }

    /// Appends a lifecycle event (never dropped by the budget).
    pub fn append(&mut self, event: &Event) -> AppendOutcome {
        let line = line_of(event);
        self.write_line(&line)
    }

    /// Appends a diagnostic (child stream) event within the budget.
    pub fn append_diagnostic(&mut self, event: &Event) -> AppendOutcome {
        if self.truncated {
            return AppendOutcome::Dropped;
        }
        let line = line_of(event);
        let limit = self.max_bytes.saturating_sub(RESERVED_BYTES);
        let len = u64::try_from(line.len()).unwrap_or(u64::MAX);
        if self.diagnostic_bytes.saturating_add(len) <= limit {
            let outcome = self.write_line(&line);
            if outcome == AppendOutcome::Written {
                self.diagnostic_bytes += len;
            }
            return outcome;
        }
        self.truncated = true;
        let dropped = event.event_type().unwrap_or("unknown").to_owned();
        let marker = line_of(&truncated(self.clock.wall_ms(), self.max_bytes, &dropped));
        if self.write_line(&marker) == AppendOutcome::Written {
            self.diagnostic_bytes += u64::try_from(marker.len()).unwrap_or(u64::MAX);
        }
        AppendOutcome::Dropped
    }

    /// Diagnostic bytes written so far (including the truncation line).
    pub fn diagnostic_bytes(&self) -> u64 {
        self.diagnostic_bytes
    }

    /// Whether the budget was exhausted.
    pub fn is_truncated(&self) -> bool {
        self.truncated
    }

    fn write_line(&mut self, line: &[u8]) -> AppendOutcome {
        let file = match self.file.take() {
            Some(file) => Ok(file),
            None => self.run.open_append(names::EVENTS),
        };
        // The file stays open once it was opened, whatever the write does.
        match file.and_then(|file| write_line_to(&self.run, self.file.insert(file), line)) {
            Ok(()) => AppendOutcome::Written,
            Err(e) => {
                self.log(&format!(
                    "Failed to append to {}: {e}",
                    self.run.join(names::EVENTS).display()
                ));
                AppendOutcome::Failed
            }
        }
    }

    /// Logs a failure once per distinct message (a broken file must not flood stderr).
    fn log(&mut self, message: &str) {
        if self.last_logged.as_deref() != Some(message) {
            (self.logger)(message);
            self.last_logged = Some(message.to_owned());
        }
    }
}

/// Appends one event line to `<run>/events.jsonl` (open, one write, close): for the host
/// finalizer's single `subagent.run.process_terminal` line. The caller logs an error.
pub fn append_once(run: &Dir, event: &Event) -> io::Result<()> {
    write_line_to(run, &run.open_append(names::EVENTS)?, &line_of(event))
}

fn line_of(event: &Event) -> Vec<u8> {
    let mut line = serde_json::to_vec(event).unwrap_or_else(|_| b"{}".to_vec());
    line.push(b'\n');
    line
}

/// One `write` for the whole line; a short write is completed, or, if that fails, followed by
/// a newline so the next line starts clean (A10).
fn write_line_to(run: &Dir, file: &std::fs::File, line: &[u8]) -> io::Result<()> {
    write_all_or_newline(run, file, line).map_err(|e| crate::errors::os_error(e, "write", &run.join(names::EVENTS)))
}

fn write_all_or_newline(run: &Dir, file: &std::fs::File, line: &[u8]) -> Result<(), Errno> {
    let fs = &run.os().files;
    let mut rest = line;
    let mut first = true;
    while !rest.is_empty() {
        match fs.write(file.as_fd(), rest) {
            Ok(0) => return finish_broken(run, file, first, Errno::IO),
            Ok(n) => {
                rest = &rest[n..];
                first = false;
            }
            Err(Errno::INTR) => {}
            Err(e) => return finish_broken(run, file, first, e),
        }
    }
    Ok(())
}

fn finish_broken(run: &Dir, file: &std::fs::File, nothing_written: bool, error: Errno) -> Result<(), Errno> {
    if !nothing_written {
        let _ = run.os().files.write(file.as_fd(), b"\n");
    }
    Err(error)
}

/// Whether `events.jsonl` has a `subagent.run.started` line for `run_id` (H20 commit evidence).
/// Absent file → `false`; unparsable lines are skipped.
pub fn has_run_started(run: &Dir, run_id: &str) -> io::Result<bool> {
    let Some(file) = run.open_read(names::EVENTS)? else {
        return Ok(false);
    };
    let mut reader = io::BufReader::new(file);
    let mut line = Vec::new();
    loop {
        line.clear();
        let n = reader
            .read_until(b'\n', &mut line)
            .map_err(|e| crate::errors::with_path(e, "read", &run.join(names::EVENTS)))?;
        if n == 0 {
            return Ok(false);
        }
        if !line.windows(20).any(|w| w == b"subagent.run.started") {
            continue;
        }
        if let Ok(v) = serde_json::from_slice::<Value>(&line)
            && v.get("type").and_then(Value::as_str) == Some("subagent.run.started")
            && v.get("runId").and_then(Value::as_str) == Some(run_id)
        {
            return Ok(true);
        }
    }
}

/// One event line: an ordered JSON object (`type` first, then `ts` …, as upstream writes them).
#[derive(Clone, Debug, PartialEq)]
pub struct Event {
    fields: Vec<(String, Value)>,
}

impl Event {
    /// An event of `event_type` at wall time `ts`.
    pub fn new(event_type: &str, ts: u64) -> Self {
        Self {
            fields: vec![("type".into(), json!(event_type)), ("ts".into(), json!(ts))],
        }
    }

    /// A run-level event: `type`, `lifecycleArtifactVersion`, `ts` (upstream order).
    pub fn versioned(event_type: &str, ts: u64) -> Self {
        Self {
            fields: vec![
                ("type".into(), json!(event_type)),
                ("lifecycleArtifactVersion".into(), json!(LIFECYCLE_ARTIFACT_VERSION)),
                ("ts".into(), json!(ts)),
            ],
        }
    }

    /// Adds (or replaces) a field, keeping the insertion order.
    #[must_use]
    pub fn with(mut self, key: &str, value: impl Serialize) -> Self {
        let value = serde_json::to_value(value).unwrap_or(Value::Null);
        match self.fields.iter_mut().find(|(k, _)| k == key) {
            Some(slot) => slot.1 = value,
            None => self.fields.push((key.to_owned(), value)),
        }
        self
    }

    /// An event from an arbitrary JSON object (e.g. an agent's own JSON line, R11); a
    /// non-object is wrapped as `{"value": …}`.
    pub fn from_value(value: Value) -> Self {
        match value {
            Value::Object(map) => Self {
                fields: map.into_iter().collect(),
            },
            other => Self {
                fields: vec![("value".into(), other)],
            },
        }
    }

    /// The `type` field.
    pub fn event_type(&self) -> Option<&str> {
        self.get("type").and_then(Value::as_str)
    }

    /// A field.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.fields.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// As a JSON value (field order is not kept by `serde_json::Map`).
    pub fn to_value(&self) -> Value {
        Value::Object(self.fields.iter().cloned().collect())
    }
}

impl Serialize for Event {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(Some(self.fields.len()))?;
        for (k, v) in &self.fields {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

/// `subagent.run.started` (S10; the first line after commit, H20's commit evidence).
pub fn run_started(ts: u64, run_id: &str, mode: &str, cwd: &str, pid: u32) -> Event {
    Event::versioned("subagent.run.started", ts)
        .with("runId", run_id)
        .with("mode", mode)
        .with("cwd", cwd)
        .with("pid", pid)
}

/// `subagent.step.started`.
pub fn step_started(ts: u64, run_id: &str, step_index: usize, agent: &str) -> Event {
    Event::new("subagent.step.started", ts)
        .with("runId", run_id)
        .with("stepIndex", step_index)
        .with("agent", agent)
}

/// `subagent.step.verifying`: step `step_index`'s agent ended and verification command `id`
/// started (G78), its output in `log`.
pub fn step_verifying(ts: u64, run_id: &str, step_index: usize, id: &str, command: &str, log: &str) -> Event {
    Event::new("subagent.step.verifying", ts)
        .with("runId", run_id)
        .with("stepIndex", step_index)
        .with("gate", id)
        .with("command", command)
        .with("outputFile", log)
}

/// `subagent.step.checkpoint`: the agent of step `step_index` was asked to wrap up, `ms`
/// before the run's deadline.
pub fn step_checkpoint(ts: u64, run_id: &str, step_index: usize, agent: &str, ms: u64) -> Event {
    Event::new("subagent.step.checkpoint", ts)
        .with("runId", run_id)
        .with("stepIndex", step_index)
        .with("agent", agent)
        .with("beforeDeadlineMs", ms)
}

/// How a step ended, for `subagent.step.<outcome>`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StepOutcome {
    /// `subagent.step.completed`.
    Completed,
    /// `subagent.step.failed`.
    Failed,
    /// `subagent.step.stopped`.
    Stopped,
    /// `subagent.step.paused`.
    Paused,
}

/// `subagent.step.completed|failed|stopped|paused`.
pub fn step_finished(
    outcome: StepOutcome,
    ts: u64,
    run_id: &str,
    step_index: usize,
    agent: &str,
    exit_code: Option<i64>,
    duration_ms: u64,
) -> Event {
    let kind = match outcome {
        StepOutcome::Completed => "completed",
        StepOutcome::Failed => "failed",
        StepOutcome::Stopped => "stopped",
        StepOutcome::Paused => "paused",
    };
    Event::new(&format!("subagent.step.{kind}"), ts)
        .with("runId", run_id)
        .with("stepIndex", step_index)
        .with("agent", agent)
        .with("exitCode", exit_code)
        .with("durationMs", duration_ms)
}

/// `subagent.run.completed` with the terminal `status`.
pub fn run_completed(ts: u64, run_id: &str, status: &str, duration_ms: u64) -> Event {
    Event::versioned("subagent.run.completed", ts)
        .with("runId", run_id)
        .with("status", status)
        .with("durationMs", duration_ms)
}

/// `subagent.run.timed_out` / `stopped` / `paused` (`kind` is the suffix), with the message.
pub fn run_marker(kind: &str, ts: u64, run_id: &str, error: Option<&str>) -> Event {
    let event = Event::new(&format!("subagent.run.{kind}"), ts).with("runId", run_id);
    match error {
        Some(error) => event.with("error", error),
        None => event,
    }
}

/// Which child stream a line came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stream {
    /// stdout.
    Stdout,
    /// stderr.
    Stderr,
}

/// `subagent.child.stdout|stderr` (a diagnostic event).
pub fn child_line(stream: Stream, ts: u64, line: &str, run_id: &str, step_index: usize, agent: &str) -> Event {
    let kind = match stream {
        Stream::Stdout => "stdout",
        Stream::Stderr => "stderr",
    };
    Event::new(&format!("subagent.child.{kind}"), ts)
        .with("line", line)
        .with("subagentSource", "child")
        .with("subagentRunId", run_id)
        .with("subagentStepIndex", step_index)
        .with("subagentAgent", agent)
        .with("observedAt", ts)
}

/// `subagent.run.process_terminal` (S7, by the host).
pub fn process_terminal(ts: u64, run_id: &str, proof: &Value) -> Event {
    Event::versioned("subagent.run.process_terminal", ts)
        .with("runId", run_id)
        .with("processTerminal", proof)
}

/// `subagent.events.truncated`.
pub fn truncated(ts: u64, max_bytes: u64, dropped_event_type: &str) -> Event {
    Event::new("subagent.events.truncated", ts)
        .with("maxBytes", max_bytes)
        .with("droppedEventType", dropped_event_type)
}

#[cfg(test)]
mod tests;
