//! `sublaunch prune [--older-than DURATION] [--state STATE…] [--dry-run] [--json]`: removes
//! ended runs (their directories, result files and index entries), each whole or not at all,
//! never an active run, and says what it removed and how much space it freed.

use super::runs::say;
use super::runs::{fail, now_ms, open_store};
use serde_json::json;
use std::process::ExitCode;
use std::time::Duration;
use sublaunch::inputs::project::Project;
use sublaunch::inputs::settings::Settings;
use sublaunch::runs::prune::{PruneFilter, prune};
use sublaunch::runs::retention;
use sublaunch_protocol::os::clock::iso8601_utc;
use sublaunch_protocol::records::status::RunState;

/// Arguments of `sublaunch prune`.
#[derive(clap::Args)]
pub struct Args {
    /// Only runs that ended at least this long ago: `90s`, `30m`, `12h`, `7d` (a bare number
    /// is seconds).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    older_than: Option<Duration>,
    /// Only runs that ended in this state (complete, failed, stopped, paused, rejected);
    /// repeat for several.
    #[arg(long = "state", value_name = "STATE", value_parser = parse_state)]
    states: Vec<RunState>,
    /// Remove the ended runs older than the retention period of your settings
    /// (`subagents.retention`, 30 days when unset; what `sublaunch run` starts in the
    /// background once a day), sparing runs whose worktrees are still recorded.
    #[arg(long, conflicts_with_all = ["older_than", "states"])]
    retention: bool,
    /// Say what would be removed, and remove nothing.
    #[arg(long)]
    dry_run: bool,
    /// Print one JSON object.
    #[arg(long)]
    json: bool,
}

/// Runs `sublaunch prune`.
pub fn run(args: Args) -> ExitCode {
    let store = match open_store("prune") {
        Ok(store) => store,
        Err(code) => return code,
    };
    let report = if args.retention {
        let env = super::environment();
        let project = Project::open(&std::env::current_dir().unwrap_or_default(), &env);
        let retention = match Settings::load(&project, &env)
            .map_err(|e| format!("{e:#}"))
            .and_then(|settings| settings.retention().map_err(|e| e.to_string()))
        {
            Ok(Some(retention)) => retention,
            Ok(None) => {
                say!("retention is off: every run is kept");
                return ExitCode::SUCCESS;
            }
            Err(message) => {
                eprintln!("sublaunch prune: {message}");
                return ExitCode::from(super::EXIT_USAGE);
            }
        };
        retention::apply(&store, retention, now_ms(), args.dry_run)
    } else {
        let filter = PruneFilter {
            older_than: args.older_than,
            states: args.states,
            spare_worktree_runs: false,
        };
        prune(&store, &filter, now_ms(), args.dry_run)
    };
    let report = match report {
        Ok(report) => report,
        Err(e) => return fail("prune", e),
    };
    for problem in &report.problems {
        eprintln!("sublaunch prune: {problem}");
    }
    if args.json {
        let removed: Vec<_> = report
            .removed
            .iter()
            .map(|r| json!({"runId": r.run_id, "state": r.state, "endedAt": r.ended_at, "bytes": r.bytes}))
            .collect();
        say!(
            "{}",
            json!({"dryRun": args.dry_run, "removed": removed, "freedBytes": report.freed_bytes})
        );
    } else {
        let verb = if args.dry_run { "would remove" } else { "removed" };
        for r in &report.removed {
            let ended = r.ended_at.map(iso8601_utc).unwrap_or_default();
            say!("{verb} {} ({}, ended {ended}, {})", r.run_id, r.state, size(r.bytes));
        }
        say!(
            "{} {} run{}, {} {}",
            if args.dry_run { "would remove" } else { "removed" },
            report.removed.len(),
            if report.removed.len() == 1 { "" } else { "s" },
            size(report.freed_bytes),
            if args.dry_run { "to free" } else { "freed" }
        );
    }
    if report.problems.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// `512 B`, `12.3 KiB`, `4.0 MiB`, `1.2 GiB`.
fn size(bytes: u64) -> String {
    let units = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < units.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{value:.1} {}", units[unit])
    }
}

/// A duration as `--older-than` and `list --since` take it: `90s`, `30m`, `12h`, `7d`, `2w`
/// (a bare number is seconds).
pub(super) fn parse_duration(text: &str) -> Result<Duration, String> {
    sublaunch::inputs::age::parse_age(text).map_err(|e| e.to_string())
}

fn parse_state(text: &str) -> Result<RunState, String> {
    match text {
        "complete" => Ok(RunState::Complete),
        "failed" => Ok(RunState::Failed),
        "stopped" => Ok(RunState::Stopped),
        "paused" => Ok(RunState::Paused),
        "rejected" => Ok(RunState::Rejected),
        "running" | "queued" => Err(format!("{text} runs are active; prune removes only ended runs")),
        other => Err(format!(
            "'{other}' is not a run state (complete, failed, stopped, paused, rejected)"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_and_sizes_read_as_people_write_them() {
        assert_eq!(parse_duration("90").unwrap(), Duration::from_secs(90));
        assert_eq!(parse_duration("30m").unwrap(), Duration::from_secs(1800));
        assert_eq!(parse_duration("1.5h").unwrap(), Duration::from_secs(5400));
        assert_eq!(parse_duration("7d").unwrap(), Duration::from_secs(604_800));
        assert!(parse_duration("soon").is_err());
        assert!(parse_duration("3y").unwrap_err().contains("unknown unit"));
        let huge = format!("{}w", "9".repeat(40));
        assert!(parse_duration(&huge).unwrap_err().contains("not a duration"));
        assert!(parse_state("running").unwrap_err().contains("active"));
        assert_eq!((size(512), size(12_595)), ("512 B".to_owned(), "12.3 KiB".to_owned()));
    }
}
