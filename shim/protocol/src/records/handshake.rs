//! The startup handshake (K1–K16) as data and pure rules: the payloads of
//! `runner-startup*.json`, the host's evaluation of each observation (K4, K5), the shim's (K9,
//! K15), the doorbell line protocol (K14) and the timing table (K13). The waiting itself — the
//! doorbell, inotify or poll ticks, the exit watcher — belongs to the host and the shim.

use crate::files::doc::ReadDoc;
use crate::files::layout::names;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::io;
use std::path::Path;
use std::time::Duration;

/// Host wait per state (K13).
pub const HOST_STATE_TIMEOUT: Duration = Duration::from_millis(10_000);
/// Shim wait per control (K13).
pub const SHIM_CONTROL_TIMEOUT: Duration = Duration::from_millis(30_000);
/// First fallback poll interval without doorbell/inotify (K13 ⊕).
pub const FALLBACK_POLL_INITIAL: Duration = Duration::from_millis(50);
/// Largest fallback poll interval (K13 ⊕).
pub const FALLBACK_POLL_MAX: Duration = Duration::from_millis(250);
/// Pre-proceed termination: SIGTERM grace, then SIGKILL grace (X1).
pub const TERMINATE_GRACE: Duration = Duration::from_millis(1_000);
/// Test override of [`HOST_STATE_TIMEOUT`] (honoured only with `test-hooks`).
pub const STARTUP_TIMEOUT_ENV: &str = "SUBLAUNCH_RUNNER_STARTUP_TIMEOUT_MS";
/// Test override of [`SHIM_CONTROL_TIMEOUT`] (honoured only with `test-hooks`).
pub const CONTROL_TIMEOUT_ENV: &str = "SUBLAUNCH_SHIM_CONTROL_TIMEOUT_MS";
/// The doorbell fd variable (K14).
pub const STARTUP_FD_ENV: &str = "SUBLAUNCH_STARTUP_FD";
/// The doorbell fd number in the shim (K14).
pub const STARTUP_FD: i32 = 3;
/// R8 / K14: the shim's error when the doorbell hits EOF before commit.
pub const HOST_CLOSED_MESSAGE: &str = "Host closed the startup channel before proceed.";

/// The host's per-state timeout: 10 000 ms, or `SUBLAUNCH_RUNNER_STARTUP_TIMEOUT_MS` in
/// `test-hooks` builds.
pub fn host_state_timeout() -> Duration {
    override_ms(STARTUP_TIMEOUT_ENV).unwrap_or(HOST_STATE_TIMEOUT)
}

/// The shim's per-control timeout: 30 000 ms, or `SUBLAUNCH_SHIM_CONTROL_TIMEOUT_MS` in
/// `test-hooks` builds.
pub fn shim_control_timeout() -> Duration {
    override_ms(CONTROL_TIMEOUT_ENV).unwrap_or(SHIM_CONTROL_TIMEOUT)
}

/// The test override of a K13 timeout; production builds never read the variable.
fn override_ms(var: &str) -> Option<Duration> {
    if !cfg!(feature = "test-hooks") {
        return None;
    }
    let ms = std::env::var(var).ok()?.trim().parse().ok()?;
    Some(Duration::from_millis(ms))
}

/// The fallback poll intervals: 50 ms doubling up to 250 ms (K13 ⊕).
#[derive(Clone, Debug)]
pub struct PollBackoff {
    next: Duration,
}

impl Default for PollBackoff {
    fn default() -> Self {
        Self {
            next: FALLBACK_POLL_INITIAL,
        }
    }
}

impl Iterator for PollBackoff {
    type Item = Duration;

    fn next(&mut self) -> Option<Duration> {
        let current = self.next;
        self.next = (current * 2).min(FALLBACK_POLL_MAX);
        Some(current)
    }
}

/// A state the shim reports in `runner-startup.json`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StartupState {
    /// Lease taken, token T offered.
    Ready,
    /// Ack received.
    Acknowledged,
    /// Confirm received.
    Confirmed,
    /// Pre-commit failure (K10).
    Error,
    /// Launcher wrapper identity (H21).
    Identified,
}

impl StartupState {
    /// The JSON string.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ready => "ready",
            Self::Acknowledged => "acknowledged",
            Self::Confirmed => "confirmed",
            Self::Error => "error",
            Self::Identified => "identified",
        }
    }
}

/// A control the host writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ControlAction {
    /// `runner-startup-ack.json`.
    Ack,
    /// `runner-startup-confirm.json`.
    Confirm,
    /// `runner-startup-proceed.json` (the commit point).
    Proceed,
}

impl ControlAction {
    /// The JSON string.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ack => "ack",
            Self::Confirm => "confirm",
            Self::Proceed => "proceed",
        }
    }

    /// The file the host writes.
    pub fn file_name(self) -> &'static str {
        match self {
            Self::Ack => names::RUNNER_STARTUP_ACK,
            Self::Confirm => names::RUNNER_STARTUP_CONFIRM,
            Self::Proceed => names::RUNNER_STARTUP_PROCEED,
        }
    }

    /// The files the shim reads while waiting for this control: `confirm` is also accepted
    /// from the ack file (0.69 compatibility, K15).
    pub fn files_to_watch(self) -> &'static [&'static str] {
        match self {
            Self::Ack => &[names::RUNNER_STARTUP_ACK],
            Self::Confirm => &[names::RUNNER_STARTUP_CONFIRM, names::RUNNER_STARTUP_ACK],
            Self::Proceed => &[names::RUNNER_STARTUP_PROCEED],
        }
    }

    /// The host's failure prefix for this control's write (K6, H16).
    pub fn write_failure_prefix(self) -> &'static str {
        match self {
            Self::Ack => "Failed to acknowledge async runner startup",
            Self::Confirm => "Failed to confirm async runner startup",
            Self::Proceed => "Failed to authorize async runner startup",
        }
    }

    fn parse(s: &str) -> Option<Self> {
        [Self::Ack, Self::Confirm, Self::Proceed]
            .into_iter()
            .find(|action| action.as_str() == s)
    }
}

/// `runner-startup.json` (K2). `token` is kept raw: the host must tell a missing or non-string
/// token from a wrong one (K4).
#[serde_with_macros::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StartupReport {
    /// The state string.
    pub state: String,
    /// The token (string; `null` only from a faulty shim).
    pub token: Option<Value>,
    /// The shim's pid.
    pub pid: Option<u32>,
    /// `ready`: the lease owner object.
    pub owner: Option<Value>,
    /// `error`: the message.
    pub error: Option<Value>,
    /// `identified`: the namespace scope.
    pub pid_namespace_scope: Option<String>,
    /// Fields of other writers.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl StartupReport {
    fn new(state: StartupState, token: Option<&str>, pid: u32) -> Self {
        Self {
            state: state.as_str().into(),
            token: token.map(|t| Value::String(t.to_owned())),
            pid: Some(pid),
            ..Self::default()
        }
    }

    /// `{state:"ready", token, pid, owner}`.
    pub fn ready(token: &str, pid: u32, owner: Value) -> Self {
        Self {
            owner: Some(owner),
            ..Self::new(StartupState::Ready, Some(token), pid)
        }
    }

    /// `{state:"acknowledged", token, pid}`.
    pub fn acknowledged(token: &str, pid: u32) -> Self {
        Self::new(StartupState::Acknowledged, Some(token), pid)
    }

    /// `{state:"confirmed", token, pid}`.
    pub fn confirmed(token: &str, pid: u32) -> Self {
        Self::new(StartupState::Confirmed, Some(token), pid)
    }

    /// `{state:"error", pid, error}` (K10).
    pub fn error(pid: u32, message: &str) -> Self {
        Self {
            error: Some(Value::String(message.to_owned())),
            ..Self::new(StartupState::Error, None, pid)
        }
    }

    /// `{state:"identified", token, pid, pidNamespaceScope?}` (H21).
    pub fn identified(token: &str, pid: u32, pid_namespace_scope: Option<String>) -> Self {
        Self {
            pid_namespace_scope,
            ..Self::new(StartupState::Identified, Some(token), pid)
        }
    }
}

/// A control file `{action, token}` (K2).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ControlMessage {
    /// `ack` | `confirm` | `proceed`.
    pub action: String,
    /// The token T.
    pub token: String,
}

impl ControlMessage {
    /// The control for `action` with `token`.
    pub fn new(action: ControlAction, token: &str) -> Self {
        Self {
            action: action.as_str().into(),
            token: token.to_owned(),
        }
    }
}

/// The host's verdict on one observation of `runner-startup.json` (K4).
#[derive(Clone, Debug, PartialEq)]
pub enum HostObservation {
    /// Keep waiting (absent, or another state).
    KeepWaiting,
    /// Fail the launch with this text (`startupDidNotProceed:true`).
    Failed(String),
    /// The expected state with a good token (subject to the K5 exit race).
    Reached {
        /// The token (T learnt from `ready`).
        token: String,
        /// The report.
        report: Box<StartupReport>,
    },
}

/// K4: evaluates one read of `<run>/runner-startup.json` (at `path`) while waiting for
/// `expected`. `expected_token` is `None` only while waiting for `ready` (any non-empty
/// string is accepted there; ⊕ the empty string is not).
pub fn evaluate_host(
    read: &io::Result<ReadDoc<Value>>,
    expected: StartupState,
    expected_token: Option<&str>,
    path: &Path,
) -> HostObservation {
    let object = match read_object(read) {
        Ok(Some(object)) => object,
        Ok(None) => return HostObservation::KeepWaiting,
        Err(cause) => return HostObservation::Failed(read_failure(path, &cause)),
    };
    let state = object.get("state").and_then(Value::as_str);
    if state == Some(StartupState::Error.as_str()) {
        return match object.get("error").and_then(Value::as_str) {
            Some(error) => HostObservation::Failed(error.to_owned()),
            None => HostObservation::Failed(invalid_handshake(StartupState::Error, path)),
        };
    }
    if state != Some(expected.as_str()) {
        return HostObservation::KeepWaiting;
    }
    let token = object.get("token").and_then(Value::as_str);
    let good = match (token, expected_token) {
        (Some(t), None) => !t.is_empty(),
        (Some(t), Some(expected)) => t == expected,
        (None, _) => false,
    };
    if !good {
        return HostObservation::Failed(invalid_handshake(expected, path));
    }
    match serde_json::from_value::<StartupReport>(Value::Object(object.clone())) {
        Ok(report) => HostObservation::Reached {
            token: token.unwrap_or_default().to_owned(),
            report: Box::new(report),
        },
        Err(_) => HostObservation::Failed(invalid_handshake(expected, path)),
    }
}

/// One read of a handshake file as an object: `Ok(None)` while it is absent, `Err(cause)` when
/// it is unreadable, corrupt or not an object.
fn read_object(read: &io::Result<ReadDoc<Value>>) -> Result<Option<&Map<String, Value>>, String> {
    match read {
        Ok(ReadDoc::Absent) => Ok(None),
        Ok(ReadDoc::Corrupt(c)) => Err(c.error.clone()),
        Err(e) => Err(e.to_string()),
        Ok(ReadDoc::Present(value)) => value
            .as_object()
            .map(Some)
            .ok_or_else(|| "the document is not an object".into()),
    }
}

/// K5: the runner's exit was observed while waiting for `expected` (or in the same check the
/// state was seen): re-read the file — an `error` state or an unreadable file wins; otherwise
/// `Async runner exited before startup state '<state>' (…)`.
pub fn evaluate_host_after_exit(
    read: &io::Result<ReadDoc<Value>>,
    expected: StartupState,
    path: &Path,
    exit_code: Option<i32>,
    signal: Option<&str>,
) -> String {
    match evaluate_host(read, StartupState::Error, None, path) {
        HostObservation::Failed(message) => message,
        _ => format!(
            "Async runner exited before startup state '{}' {}.",
            expected.as_str(),
            exit_suffix(exit_code, signal)
        ),
    }
}

/// `(exit code <n|unknown>, signal <sig|none>)`.
pub fn exit_suffix(exit_code: Option<i32>, signal: Option<&str>) -> String {
    let code = exit_code.map_or_else(|| "unknown".to_owned(), |c| c.to_string());
    format!("(exit code {code}, signal {})", signal.unwrap_or("none"))
}

/// `Failed to read async runner startup handshake '<path>': <cause>` (K4).
pub fn read_failure(path: &Path, cause: &str) -> String {
    format!(
        "Failed to read async runner startup handshake '{}': {cause}",
        path.display()
    )
}

/// `Async runner wrote an invalid <state> startup handshake: <path>` (K4).
pub fn invalid_handshake(state: StartupState, path: &Path) -> String {
    format!(
        "Async runner wrote an invalid {} startup handshake: {}",
        state.as_str(),
        path.display()
    )
}

/// `Timed out after <ms>ms waiting for the async runner startup state '<state>'.` (K4).
pub fn host_timeout_message(timeout: Duration, state: StartupState) -> String {
    format!(
        "Timed out after {}ms waiting for the async runner startup state '{}'.",
        timeout.as_millis(),
        state.as_str()
    )
}

/// K5 ⊕ commit check after `confirmed`:
/// `Async runner exited after startup state 'confirmed' before proceed (…).`
pub fn exited_before_proceed_message(exit_code: Option<i32>, signal: Option<&str>) -> String {
    format!(
        "Async runner exited after startup state 'confirmed' before proceed {}.",
        exit_suffix(exit_code, signal)
    )
}

/// H16/K16/H20: `Async runner exited before startup commit (…).`
pub fn exited_before_commit_message(exit_code: Option<i32>, signal: Option<&str>) -> String {
    format!(
        "Async runner exited before startup commit {}.",
        exit_suffix(exit_code, signal)
    )
}

/// The shim's verdict on one observation of a control file (K9).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ShimObservation {
    /// Keep waiting.
    KeepWaiting,
    /// Pre-commit error (K10) with this text.
    Failed(String),
    /// The expected control arrived.
    Reached,
}

/// K9: evaluates one read of a control file (at `path`) while waiting for `expected` with
/// token `token`.
pub fn evaluate_shim(
    read: &io::Result<ReadDoc<Value>>,
    expected: ControlAction,
    token: &str,
    path: &Path,
) -> ShimObservation {
    let object = match read_object(read) {
        Ok(Some(object)) => object,
        Ok(None) => return ShimObservation::KeepWaiting,
        Err(cause) => {
            let path = path.display();
            return ShimObservation::Failed(format!("Failed to read runner startup control '{path}': {cause}"));
        }
    };
    if object.get("token").and_then(Value::as_str) != Some(token) {
        return ShimObservation::Failed("Runner startup control token does not match.".into());
    }
    match object
        .get("action")
        .and_then(Value::as_str)
        .and_then(ControlAction::parse)
    {
        Some(action) if action == expected => ShimObservation::Reached,
        Some(_) => ShimObservation::KeepWaiting,
        None => ShimObservation::Failed("Runner startup control action is invalid.".into()),
    }
}

/// K15: combines the observations of [`ControlAction::files_to_watch`] in order: the first
/// failure or arrival decides.
pub fn combine_shim(observations: impl IntoIterator<Item = ShimObservation>) -> ShimObservation {
    observations
        .into_iter()
        .find(|observation| *observation != ShimObservation::KeepWaiting)
        .unwrap_or(ShimObservation::KeepWaiting)
}

/// `Timed out after <ms>ms waiting for runner startup control '<action>'.` (K9).
pub fn shim_timeout_message(timeout: Duration, action: ControlAction) -> String {
    format!(
        "Timed out after {}ms waiting for runner startup control '{}'.",
        timeout.as_millis(),
        action.as_str()
    )
}

/// A doorbell message (K14): only a wake-up, the file is authoritative.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Doorbell {
    /// shim → host: `ready` | `acknowledged` | `confirmed` | `error` | `committed`.
    State(String),
    /// host → shim: `ack` | `confirm` | `proceed`.
    Action(String),
}

/// Version of the doorbell line protocol.
pub const DOORBELL_VERSION: u64 = 1;
/// Longest doorbell line kept; longer garbage is discarded.
pub const DOORBELL_MAX_LINE: usize = 1024;

impl Doorbell {
    /// The line `{"v":1,"state":…}\n` or `{"v":1,"action":…}\n`.
    pub fn encode(&self) -> Vec<u8> {
        let (key, value) = match self {
            Self::State(s) => ("state", s),
            Self::Action(a) => ("action", a),
        };
        let value = serde_json::to_string(value).unwrap_or_default();
        format!("{{\"v\":{DOORBELL_VERSION},\"{key}\":{value}}}\n").into_bytes()
    }

    /// Decodes one line (without or with its newline); `None` for anything that is not a v1
    /// message with exactly one string `state` or `action`.
    pub fn decode(line: &[u8]) -> Option<Self> {
        let value: Value = serde_json::from_slice(line.strip_suffix(b"\n").unwrap_or(line)).ok()?;
        let object = value.as_object()?;
        if object.get("v").and_then(Value::as_u64) != Some(DOORBELL_VERSION) {
            return None;
        }
        match (
            object.get("state").and_then(Value::as_str),
            object.get("action").and_then(Value::as_str),
        ) {
            (Some(state), None) => Some(Self::State(state.to_owned())),
            (None, Some(action)) => Some(Self::Action(action.to_owned())),
            _ => None,
        }
    }
}

/// Splits a doorbell byte stream into messages, tolerating garbage and partial reads; lines
/// longer than [`DOORBELL_MAX_LINE`] are dropped whole.
#[derive(Clone, Debug, Default)]
pub struct DoorbellReader {
    buffer: Vec<u8>,
    discarding: bool,
}

impl DoorbellReader {
    /// Feeds bytes read from the socket; returns the complete, valid messages.
    pub fn push(&mut self, bytes: &[u8]) -> Vec<Doorbell> {
        let mut out = Vec::new();
        for &byte in bytes {
            if byte == b'\n' {
                if !self.discarding {
                    out.extend(Doorbell::decode(&self.buffer));
                }
                self.buffer.clear();
                self.discarding = false;
            } else if !self.discarding {
                self.buffer.push(byte);
                if self.buffer.len() > DOORBELL_MAX_LINE {
                    self.buffer.clear();
                    self.discarding = true;
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests;
