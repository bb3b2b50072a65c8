//! Shared by the run-management commands: opening the root, finding a run, reading and
//! describing its status.

use super::{EXIT_NOT_FOUND, EXIT_USAGE};
use serde_json::Value;
use std::process::ExitCode;
use std::time::Duration;
use sublaunch::runs::RunStore;
use sublaunch::runs::{RunIdError, resolve_run_id};
use sublaunch_protocol::files::dir::Dir;
use sublaunch_protocol::files::doc::ReadDoc;
use sublaunch_protocol::records::failure::FailureKind;
use sublaunch_protocol::records::status::{RunState, Status};
use sublaunch_protocol::records::waiting::Waiting;

/// Prints a line on stdout; a closed stdout (`| head`) is not an error worth a panic.
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout(), $($arg)*);
    }};
}
pub(crate) use say;

/// Exit code of a wait that ran out of time (like timeout(1)).
pub const EXIT_TIMEOUT: u8 = 124;

/// Prints `sublaunch <command>: <error>` and gives exit 1.
pub fn fail(command: &str, error: impl std::fmt::Display) -> ExitCode {
    eprintln!("sublaunch {command}: {error}");
    ExitCode::FAILURE
}

/// Opens the run store of the environment's root, or prints why not (exit 1).
pub fn open_store(command: &str) -> Result<RunStore, ExitCode> {
    let env = super::environment();
    let layout = env
        .layout(std::env::current_dir().ok().as_deref())
        .map_err(|e| fail(command, e))?;
    RunStore::open(&layout, &env).map_err(|e| fail(command, e))
}

/// The run store, the run directory and the full id of the run `run_id` names (its id, or a
/// unique prefix of it); an unknown id is exit 3, an invalid or ambiguous one a usage error
/// (exit 2).
pub fn open_run(run_id: &str, command: &str) -> Result<(RunStore, Dir, String), ExitCode> {
    let store = open_store(command)?;
    let (run, resolved) = find_run(&store, run_id, command)?;
    Ok((store, run, resolved))
}

/// The directory and the full id of the run `run_id` names in `store` (see [`open_run`]).
pub fn find_run(store: &RunStore, run_id: &str, command: &str) -> Result<(Dir, String), ExitCode> {
    let resolved = match resolve_run_id(store, run_id) {
        Ok(resolved) => resolved,
        Err(e @ RunIdError::Unknown(_)) => {
            eprintln!("sublaunch {command}: {e}");
            return Err(ExitCode::from(EXIT_NOT_FOUND));
        }
        Err(e @ (RunIdError::Invalid(_) | RunIdError::Ambiguous { .. })) => {
            eprintln!("sublaunch {command}: {e}");
            return Err(ExitCode::from(EXIT_USAGE));
        }
        Err(e @ RunIdError::Io { .. }) => return Err(fail(command, e)),
    };
    match store.run_dir(&resolved) {
        Ok(Some(run)) => Ok((run, resolved)),
        Ok(None) => {
            eprintln!("sublaunch {command}: unknown run '{resolved}'");
            Err(ExitCode::from(EXIT_NOT_FOUND))
        }
        Err(e) => Err(fail(command, format_args!("cannot open run '{resolved}': {e}"))),
    }
}

/// The async runtime of a command that waits, or prints why not (exit 1).
pub fn async_runtime(command: &str) -> Result<sublaunch::launch::tokio::runtime::Runtime, ExitCode> {
    sublaunch::launch::runtime().map_err(|e| fail(command, e))
}

pub use super::duration::MAX_SECONDS;

/// A number of seconds from 0 to [`MAX_SECONDS`] (the MCP tools' `timeout_seconds`).
pub fn seconds(value: f64) -> Result<Duration, String> {
    match Duration::try_from_secs_f64(value) {
        Ok(duration) if value <= MAX_SECONDS => Ok(duration),
        _ => Err(format!(
            "invalid number of seconds: {value:?} (give a number from 0 to {MAX_SECONDS}, a year)"
        )),
    }
}

/// The result payload at `result_path`, when it is readable.
pub fn read_result_file(result_path: &std::path::Path) -> Option<sublaunch_protocol::records::results::ResultPayload> {
    let bytes = std::fs::read(result_path).ok()?;
    serde_json::from_slice(&bytes).ok()
}

pub use sublaunch::runs::status_of;

/// `status.json` as raw JSON (for `--json`), with why it is unusable.
pub fn raw_status(run: &Dir) -> Result<Value, String> {
    let value = read_status_as::<Value>(run)?;
    // Printed as it is (one read), but only when it is a status at all.
    match serde_json::from_value::<sublaunch_protocol::records::status::Status>(value.clone()) {
        Ok(_) => Ok(value),
        Err(e) => Err(format!(
            "{} is not a valid status: {e}",
            run.join(sublaunch_protocol::files::layout::names::STATUS).display()
        )),
    }
}

/// Why `status.json` cannot be used as a status: absent, unreadable, not JSON, or not a status
/// object (naming the file and, for bad contents, the parser's line and column).
pub fn status_problem(run: &Dir) -> String {
    read_status_as::<sublaunch_protocol::records::status::Status>(run)
        .err()
        .unwrap_or_else(|| "the status cannot be read".into())
}

fn read_status_as<T: serde::de::DeserializeOwned>(run: &Dir) -> Result<T, String> {
    let file = run.join(sublaunch_protocol::files::layout::names::STATUS);
    match run.read_doc::<T>(sublaunch_protocol::files::layout::names::STATUS) {
        Ok(ReadDoc::Present(value)) => Ok(value),
        Ok(ReadDoc::Absent) => Err(format!("the run has no status file ({})", file.display())),
        Ok(ReadDoc::Corrupt(c)) => Err(format!("{} is not a valid status: {}", file.display(), c.error)),
        Err(e) => Err(e.to_string()),
    }
}

/// Exit code for a terminal state: 0 complete, 1 otherwise.
/// The exit code of a run that ended with `status` (D1): 0 when it completed, else its failure
/// kind's code (1 for a pause or a run whose kind is not recorded).
pub fn outcome_code(status: Option<&Status>) -> ExitCode {
    match status {
        Some(status) if status.state == Some(RunState::Complete) => ExitCode::SUCCESS,
        Some(Status {
            failure_kind: Some(kind),
            ..
        }) => exit_of(*kind),
        _ => ExitCode::FAILURE,
    }
}

/// The exit code of a failure kind.
pub fn exit_of(kind: FailureKind) -> ExitCode {
    ExitCode::from(u8::try_from(kind.exit_code()).unwrap_or(1))
}

/// The state's name (`unknown` when missing).
pub fn state_name(status: &Status) -> &str {
    status.state.as_ref().map_or("unknown", RunState::as_str)
}

/// `queued (2nd)` for a run waiting for capacity at that place, `queued (slurm: Priority)`
/// for one waiting in a cluster's queue for that reason, else the state.
pub fn state_with_place(status: &Status, place: Option<usize>, reason: Option<&str>) -> String {
    let queued = status.state == Some(RunState::Queued);
    match (place, reason) {
        (Some(place), _) if queued => format!("queued ({})", ordinal(place)),
        (None, Some(reason)) if queued => {
            let engine = status.cluster.as_ref().map_or("cluster", |job| job.engine.as_str());
            format!("queued ({engine}: {reason})")
        }
        _ => state_name(status).to_owned(),
    }
}

/// `queued (rate limit: anthropic (HTTP 429), 12s left)` or `running (step 2 waits: …)`: the
/// state with what the run waits for (U10).
pub fn state_with_wait(state: String, waiting: Option<&Waiting>, now: u64) -> String {
    let Some(waiting) = waiting else { return state };
    let left = waiting
        .until
        .map(|until| format!(", {} left", duration(until.saturating_sub(now))))
        .unwrap_or_default();
    match waiting.step {
        Some(step) => format!("{state} (step {} waits: {}{left})", step + 1, waiting.reason),
        None => {
            let state = state
                .strip_suffix(')')
                .map_or_else(|| format!("{state} ("), |s| format!("{s}; "));
            format!("{state}{}{left})", waiting.reason)
        }
    }
}

/// `1st`, `2nd`, `3rd`, `4th` … `11th` … `21st`.
pub fn ordinal(n: usize) -> String {
    let suffix = match (n % 10, n % 100) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    };
    format!("{n}{suffix}")
}

/// The agents of the steps, comma-separated.
pub fn agents(status: &Status) -> String {
    status
        .steps
        .iter()
        .flatten()
        .filter_map(|s| s.agent.as_deref())
        .collect::<Vec<_>>()
        .join(",")
}

/// `1.25s`, `3m04s`, `2h05m`.
pub fn duration(ms: u64) -> String {
    let secs = ms / 1000;
    if secs < 60 {
        format!("{}.{:02}s", secs, (ms % 1000) / 10)
    } else if secs < 3600 {
        format!("{}m{:02}s", secs / 60, secs % 60)
    } else {
        format!("{}h{:02}m", secs / 3600, (secs % 3600) / 60)
    }
}

/// How long the run took (or has been running, against `now`).
pub fn elapsed(status: &Status, now: u64) -> Option<u64> {
    let started = status.started_at?;
    Some(status.ended_at.unwrap_or(now).saturating_sub(started))
}

/// `1200 in, 80 out, 5000 cache read, 0 cache write ($0.0123)`.
pub fn usage_line(usage: &sublaunch_protocol::records::usage::Usage) -> String {
    let mut line = format!(
        "{} in, {} out, {} cache read, {} cache write",
        usage.input_tokens, usage.output_tokens, usage.cache_read_tokens, usage.cache_write_tokens
    );
    if let Some(cost) = usage.cost_usd {
        line.push_str(&format!(" ({})", sublaunch_protocol::records::usage::usd(cost)));
    }
    line
}

/// Wall-clock now in epoch ms.
pub fn now_ms() -> u64 {
    sublaunch_protocol::os::clock::Clock::wall_ms(&sublaunch_protocol::os::clock::SystemClock)
}
