//! Where everything lives (spec/README.md "Names and paths", host-and-shim.md §0).
//!
//! `<root>` = `$SUBLAUNCH_ROOT`, else `$XDG_STATE_HOME/sublaunch`, else
//! `~/.local/state/sublaunch`; `<runs>` = `<root>/runs`; `<results>` = `<root>/results`. File
//! names inside a run directory are the upstream ones, so tools reading pi-subagents' run files
//! read ours.

use crate::files::atomic::sha256_hex;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// Environment variable naming the root explicitly.
pub const ROOT_ENV: &str = "SUBLAUNCH_ROOT";

/// File and directory names of the run-file protocol.
pub mod names {
    /// `<root>/runs`.
    pub const RUNS_DIR: &str = "runs";
    /// `<root>/results`.
    pub const RESULTS_DIR: &str = "results";
    /// `<root>/session-leases`.
    pub const SESSION_LEASES_DIR: &str = "session-leases";
    /// Lease owner record inside a lease directory.
    pub const LEASE_OWNER: &str = "owner.json";

    /// `<run>/status.json`.
    pub const STATUS: &str = "status.json";
    /// `<run>/.status.lock` (S1).
    pub const STATUS_LOCK: &str = ".status.lock";
    /// `<run>/events.jsonl`.
    pub const EVENTS: &str = "events.jsonl";
    /// `<run>/runner-startup.json` (shim → host).
    pub const RUNNER_STARTUP: &str = "runner-startup.json";
    /// `<run>/runner-startup-ack.json`.
    pub const RUNNER_STARTUP_ACK: &str = "runner-startup-ack.json";
    /// `<run>/runner-startup-confirm.json`.
    pub const RUNNER_STARTUP_CONFIRM: &str = "runner-startup-confirm.json";
    /// `<run>/runner-startup-proceed.json`.
    pub const RUNNER_STARTUP_PROCEED: &str = "runner-startup-proceed.json";
    /// The four handshake files the host deletes before spawning (H6).
    pub const STALE_HANDSHAKE_FILES: [&str; 4] = [
        RUNNER_STARTUP,
        RUNNER_STARTUP_ACK,
        RUNNER_STARTUP_CONFIRM,
        RUNNER_STARTUP_PROCEED,
    ];
    /// `<run>/runner-startup-failure.json` (S5 ⊕).
    pub const RUNNER_STARTUP_FAILURE: &str = "runner-startup-failure.json";
    /// `<run>/process-terminal.json`.
    pub const PROCESS_TERMINAL: &str = "process-terminal.json";
    /// `<run>/process-terminal-candidate.json`.
    pub const PROCESS_TERMINAL_CANDIDATE: &str = "process-terminal-candidate.json";
    /// `<run>/launcher-close.json` (H21).
    pub const LAUNCHER_CLOSE: &str = "launcher-close.json";
    /// `<run>/scheduled-runner.json`: the configuration a cluster job's runner starts from
    /// (J6; private, it holds tokens; consumed when read).
    pub const SCHEDULED_RUNNER_CONFIG: &str = "scheduled-runner.json";
    /// `<run>/waiting.json`: why an active run (or its next step) waits for a limit (U10).
    pub const WAITING: &str = "waiting.json";
    /// `<run>/runner.stdout.log`.
    pub const RUNNER_STDOUT_LOG: &str = "runner.stdout.log";
    /// `<run>/runner.stderr.log`.
    pub const RUNNER_STDERR_LOG: &str = "runner.stderr.log";
    /// `<run>/control`.
    pub const CONTROL_DIR: &str = "control";
    /// `<run>/control/stop.json`.
    pub const CONTROL_STOP: &str = "stop.json";
    /// `<run>/control/interrupt.json`.
    pub const CONTROL_INTERRUPT: &str = "interrupt.json";
    /// `<run>/control/timeout.json`.
    pub const CONTROL_TIMEOUT: &str = "timeout.json";

    /// `<run>/nested`: the state root of the runs a sandboxed agent of the run launches
    /// (G66), the only part of the root it may write.
    pub const NESTED_DIR: &str = "nested";

    /// `<runs>/.active-runs`.
    pub const ACTIVE_RUNS_DIR: &str = ".active-runs";
    /// `<runs>/.active-runs/tool-calls` and `<results>/result-index/tool-calls`.
    pub const TOOL_CALLS_DIR: &str = "tool-calls";
    /// `<runs>/.capacity`: one ticket per active run, the capacity queue.
    pub const CAPACITY_DIR: &str = ".capacity";
    /// `<runs>/.capacity/lock`: the queue's flock, holding the next arrival number.
    pub const CAPACITY_LOCK: &str = "lock";
    /// `<runs>/.history`: the index of ended runs (I10).
    pub const HISTORY_DIR: &str = ".history";
    /// `<runs>/.ids`: the run-id index, one bucket of ids per agent slug and two characters
    /// (I14).
    pub const RUN_ID_INDEX_DIR: &str = ".ids";
    /// `<runs>/.ids/.built`: the index holds every run of the root (I14).
    pub const RUN_ID_INDEX_BUILT: &str = ".built";
    /// `<runs>/.terminal-runs`.
    pub const TERMINAL_RUNS_DIR: &str = ".terminal-runs";
    /// `<runs>/.unfinalized`: one empty file per run whose proof is not final yet (I9).
    pub const UNFINALIZED_DIR: &str = ".unfinalized";
    /// `<runs>/.unfinalized/.built`: the index holds every unfinalized run of the root (I9).
    pub const UNFINALIZED_BUILT: &str = ".built";
    /// `<root>/.staging-sweep`: its mtime says when listers last looked for the staging and
    /// removal directories of dead launch hosts in `<runs>`.
    pub const STAGING_SWEEP_STAMP: &str = ".staging-sweep";
    /// `<results>/result-pending`.
    pub const RESULT_PENDING_DIR: &str = "result-pending";
    /// `<results>/result-index`.
    pub const RESULT_INDEX_DIR: &str = "result-index";
    /// `<results>/result-index/sessions`.
    pub const RESULT_INDEX_SESSIONS_DIR: &str = "sessions";
    /// `<results>/result-index/runs`.
    pub const RESULT_INDEX_RUNS_DIR: &str = "runs";

    /// `async-cfg-<runId>.json` (in `<root>`).
    pub fn runner_config(run_id: &str) -> String {
        format!("async-cfg-{run_id}.json")
    }

    /// `output-<n>.log`.
    pub fn output_log(step: usize) -> String {
        format!("output-{step}.log")
    }

    /// `process-terminal.json.corrupt-<epochMs>` (S7 ⊕).
    pub fn corrupt_proof(epoch_ms: u64) -> String {
        format!("{PROCESS_TERMINAL}.corrupt-{epoch_ms}")
    }

    /// `<runId>.json`, the public result file name (S11).
    pub fn result_file(run_id: &str) -> String {
        format!("{run_id}.json")
    }

    /// `<16-digit endedAt>-<enc(runId)>.json` (I4).
    pub fn terminal_run_entry(ended_at: u64, run_id: &str) -> String {
        format!("{ended_at:016}-{}.json", super::enc(run_id))
    }
}

/// The resolved locations under one root.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    root: PathBuf,
}

/// Why no root could be determined.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("Cannot determine the sublaunch state directory: set SUBLAUNCH_ROOT, XDG_STATE_HOME or HOME.")]
pub struct NoRoot;

impl Layout {
    /// A layout rooted at `root` (used as given).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    /// The layout of the process environment (see [`resolve_root`]).
    pub fn from_env() -> Result<Self, NoRoot> {
        let cwd = std::env::current_dir().ok();
        resolve_root(|name| std::env::var_os(name), cwd.as_deref()).map(Self::new)
    }

    /// `<root>`.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `<root>/runs`.
    pub fn runs(&self) -> PathBuf {
        self.root.join(names::RUNS_DIR)
    }

    /// `<root>/results`.
    pub fn results(&self) -> PathBuf {
        self.root.join(names::RESULTS_DIR)
    }

    /// `<root>/async-cfg-<runId>.json`.
    pub fn runner_config(&self, run_id: &str) -> PathBuf {
        self.root.join(names::runner_config(run_id))
    }

    /// `<runs>/<runId>`.
    pub fn run_dir(&self, run_id: &str) -> PathBuf {
        self.runs().join(run_id)
    }

    /// `<results>/<runId>.json`, the default `resultPath`.
    pub fn result_path(&self, run_id: &str) -> PathBuf {
        self.results().join(names::result_file(run_id))
    }
}

/// Resolves `<root>` from an environment lookup: `$SUBLAUNCH_ROOT` (made absolute against
/// `cwd`, symlinks not resolved so H3 can refuse them), else `$XDG_STATE_HOME/sublaunch` (only
/// an absolute value counts, per the XDG spec), else `$HOME/.local/state/sublaunch`.
pub fn resolve_root(env: impl Fn(&str) -> Option<OsString>, cwd: Option<&Path>) -> Result<PathBuf, NoRoot> {
    let non_empty = |name: &str| env(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    if let Some(root) = non_empty(ROOT_ENV) {
        if root.is_absolute() {
            return Ok(root);
        }
        return cwd.map(|c| c.join(&root)).ok_or(NoRoot);
    }
    if let Some(state) = non_empty("XDG_STATE_HOME").filter(|p| p.is_absolute()) {
        return Ok(state.join("sublaunch"));
    }
    non_empty("HOME")
        .filter(|p| p.is_absolute())
        .map(|home| home.join(".local/state/sublaunch"))
        .ok_or(NoRoot)
}

/// `enc(x)` of §0: the URI-component encoding of `x` when it is ≤ 255 bytes and portable,
/// otherwise `~sha256-<hex>`.
///
/// Portable = not empty, not `.`/`..`, no trailing dot, not a Windows reserved device name
/// (`CON`, `PRN`, `AUX`, `NUL`, `COM1`–`COM9`, `LPT1`–`LPT9`, also with an extension), no
/// `%5C`, no trailing extension-like suffix (a dot followed by 1–8 ASCII letters or digits),
/// and not itself starting with `~sha256-`.
pub fn enc(x: &str) -> String {
    let encoded = uri_component(x);
    if encoded.len() <= 255 && is_portable(&encoded) {
        encoded
    } else {
        format!("~sha256-{}", sha256_hex(x.as_bytes()))
    }
}

/// The names a reader tries for `x`: `enc(x)`, then the historical plain URI encoding when it
/// differs and is a usable single path component of ≤ 255 bytes.
pub fn enc_candidates(x: &str) -> Vec<String> {
    let mut out = vec![enc(x)];
    let plain = uri_component(x);
    if plain != out[0] && !plain.is_empty() && plain != "." && plain != ".." && plain.len() <= 255 {
        out.push(plain);
    }
    out
}

/// `encodeURIComponent`: everything except `A-Z a-z 0-9 - _ . ! ~ * ' ( )` is percent-encoded
/// as UTF-8 with uppercase hex.
pub fn uri_component(x: &str) -> String {
    let mut out = String::with_capacity(x.len());
    for byte in x.bytes() {
        if byte.is_ascii_alphanumeric() || b"-_.!~*'()".contains(&byte) {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

fn is_portable(name: &str) -> bool {
    if name.is_empty()
        || name == "."
        || name == ".."
        || name.ends_with('.')
        || name.contains("%5C")
        || name.starts_with("~sha256-")
    {
        return false;
    }
    let stem = name.split('.').next().unwrap_or(name).to_ascii_uppercase();
    let reserved = matches!(stem.as_str(), "CON" | "PRN" | "AUX" | "NUL")
        || ((stem.starts_with("COM") || stem.starts_with("LPT"))
            && stem.len() == 4
            && matches!(stem.as_bytes()[3], b'1'..=b'9'));
    if reserved {
        return false;
    }
    if let Some((_, ext)) = name.rsplit_once('.')
        && (1..=8).contains(&ext.len())
        && ext.bytes().all(|b| b.is_ascii_alphanumeric())
    {
        return false;
    }
    true
}

/// Why a run id was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("Invalid run id '{}': {reason}.", id.escape_debug())]
pub struct InvalidRunId {
    /// The refused id.
    pub id: String,
    /// The reason.
    pub reason: &'static str,
}

/// Maximum run-id length in bytes.
pub const MAX_RUN_ID_LEN: usize = 128;

/// A run id must be a safe single path component: 1–128 bytes of `A-Z a-z 0-9 . _ -`,
/// starting with a letter or digit (so it is never `.`/`..`, hidden, or a temp name).
pub fn validate_run_id(id: &str) -> Result<(), InvalidRunId> {
    let fail = |reason| {
        Err(InvalidRunId {
            id: id.to_owned(),
            reason,
        })
    };
    if id.is_empty() {
        return fail("it is empty");
    }
    if id.len() > MAX_RUN_ID_LEN {
        return fail("it is longer than 128 bytes");
    }
    if !id.as_bytes()[0].is_ascii_alphanumeric() {
        return fail("it must start with a letter or digit");
    }
    if !id
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
    {
        return fail("only letters, digits, '.', '_' and '-' are allowed");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<OsString> + 'a {
        move |name| pairs.iter().find(|(k, _)| *k == name).map(|(_, v)| OsString::from(v))
    }

    #[test]
    fn root_precedence() {
        let cwd = Path::new("/work");
        assert_eq!(
            resolve_root(env(&[("SUBLAUNCH_ROOT", "/r"), ("HOME", "/h")]), Some(cwd)).unwrap(),
            Path::new("/r")
        );
        assert_eq!(
            resolve_root(env(&[("SUBLAUNCH_ROOT", "rel")]), Some(cwd)).unwrap(),
            Path::new("/work/rel")
        );
        assert_eq!(
            resolve_root(env(&[("XDG_STATE_HOME", "/s"), ("HOME", "/h")]), Some(cwd)).unwrap(),
            Path::new("/s/sublaunch")
        );
        assert_eq!(
            resolve_root(env(&[("XDG_STATE_HOME", "relative"), ("HOME", "/h")]), Some(cwd)).unwrap(),
            Path::new("/h/.local/state/sublaunch")
        );
        assert_eq!(
            resolve_root(env(&[("SUBLAUNCH_ROOT", ""), ("HOME", "/h")]), Some(cwd)).unwrap(),
            Path::new("/h/.local/state/sublaunch")
        );
        assert_eq!(resolve_root(env(&[]), Some(cwd)), Err(NoRoot));
    }

    #[test]
    fn layout_paths() {
        let l = Layout::new("/r");
        assert_eq!(l.runs(), Path::new("/r/runs"));
        assert_eq!(l.results(), Path::new("/r/results"));
        assert_eq!(l.runner_config("abc"), Path::new("/r/async-cfg-abc.json"));
        assert_eq!(l.run_dir("abc"), Path::new("/r/runs/abc"));
        assert_eq!(l.result_path("abc"), Path::new("/r/results/abc.json"));
        assert_eq!(
            names::terminal_run_entry(1_795_999_088_717, "bench-normal-00-w9e9jd"),
            "0001795999088717-bench-normal-00-w9e9jd.json"
        );
        assert_eq!(names::output_log(0), "output-0.log");
        assert_eq!(names::corrupt_proof(12), "process-terminal.json.corrupt-12");
    }

    #[test]
    fn enc_is_uri_component_when_portable() {
        assert_eq!(enc("bench-session"), "bench-session");
        assert_eq!(enc("a b/c"), "a%20b%2Fc");
        assert_eq!(enc("ü"), "%C3%BC");
        assert_eq!(enc("x!~*'()"), "x!~*'()");
    }

    #[test]
    fn enc_hashes_unportable_names() {
        let hashed = |x: &str| format!("~sha256-{}", sha256_hex(x.as_bytes()));
        for x in [
            "",
            ".",
            "..",
            "a.",
            "CON",
            "nul.txt",
            "com1",
            "LPT9",
            "a\\b",
            "run.json",
            "x.tmp",
            "~sha256-abc",
        ] {
            assert_eq!(enc(x), hashed(x), "{x:?}");
        }
        let long = "é".repeat(100);
        assert_eq!(enc(&long), hashed(&long), "over 255 bytes once encoded");
        assert_eq!(enc("COM10"), "COM10");
        assert_eq!(
            enc("a.b-c_d"),
            "a.b-c_d",
            "a suffix with punctuation is not extension-like"
        );
        assert_eq!(
            enc_candidates("run.json"),
            vec![hashed("run.json"), "run.json".to_owned()]
        );
        assert_eq!(enc_candidates("plain"), vec!["plain".to_owned()]);
    }

    #[test]
    fn run_ids_are_safe_single_components() {
        for ok in ["bench-normal-00-w9e9jd", "a", "A.b_c-1"] {
            validate_run_id(ok).unwrap();
        }
        for bad in ["", ".", "..", ".hidden", "-x", "a/b", "a b", "a\0", &"x".repeat(129)] {
            assert!(validate_run_id(bad).is_err(), "{bad:?}");
        }
        assert_eq!(
            validate_run_id("a/b").unwrap_err().to_string(),
            "Invalid run id 'a/b': only letters, digits, '.', '_' and '-' are allowed."
        );
    }
}
