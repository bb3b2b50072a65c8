//! `sublaunch prune [--older-than DURATION] [--state STATE…] [--dry-run] [--yes] [--json]`:
//! removes ended runs (their directories, result files and index entries), each whole or not
//! at all, never an active run, and says what it removed and how much space it freed. Without
//! a choice of runs (`--older-than`, `--state`, `--retention`) it removes every ended run, so
//! it asks first on a terminal, and elsewhere wants `--yes`; what it asked about is all it
//! removes (a run ending while the question is open is spared).

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
    #[arg(long, value_name = "DURATION", value_parser = super::duration::parse_duration)]
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
    #[arg(short = 'n', long)]
    dry_run: bool,
    /// Remove every ended run without asking (needed without --older-than, --state or
    /// --retention when not on a terminal).
    #[arg(short, long)]
    yes: bool,
    /// Print one JSON object.
    #[arg(short, long)]
    json: bool,
}

/// Whether a prune of everything may go ahead.
enum Consent {
    /// Yes: asked for with a filter, `--yes`, or `--dry-run`.
    Given,
    /// The user said yes to the runs that had ended by this time (wall ms).
    EndedBy(u64),
    /// No, or nobody to ask: the exit code.
    Refused(ExitCode),
}

/// Asks on a terminal before removing every ended run; elsewhere wants `--yes`.
fn consent(args: &Args, store: &sublaunch::runs::RunStore) -> Consent {
    use std::io::IsTerminal;
    let chosen = args.older_than.is_some() || !args.states.is_empty() || args.retention;
    if chosen || args.yes || args.dry_run {
        return Consent::Given;
    }
    let terminal = std::io::stdin().is_terminal() && std::io::stderr().is_terminal();
    if !terminal || args.json {
        eprintln!(
            "sublaunch prune: this removes every ended run: confirm with --yes, or choose runs with --older-than or --state (--dry-run shows what would go)"
        );
        return Consent::Refused(ExitCode::from(super::EXIT_USAGE));
    }
    let now = now_ms();
    let listed = match prune(store, &PruneFilter::default(), now, true) {
        Ok(listed) => listed,
        Err(e) => return Consent::Refused(fail("prune", e)),
    };
    if listed.removed.is_empty() {
        say!("no ended runs to remove");
        return Consent::Refused(ExitCode::SUCCESS);
    }
    for r in &listed.removed {
        let ended = r.ended_at.map(iso8601_utc).unwrap_or_default();
        eprintln!("  {} ({}, ended {ended}, {})", r.run_id, r.state, size(r.bytes));
    }
    let count = listed.removed.len();
    eprint!(
        "Remove {}, {}? [y/N] ",
        plural(count, "ended run", "ended runs"),
        size(listed.freed_bytes)
    );
    let mut answer = String::new();
    let _ = std::io::stdin().read_line(&mut answer);
    if matches!(answer.trim().to_ascii_lowercase().as_str(), "y" | "yes") {
        Consent::EndedBy(now)
    } else {
        say!("nothing removed");
        Consent::Refused(ExitCode::SUCCESS)
    }
}

/// `1 run`, `2 runs`.
pub(super) fn plural(count: usize, one: &str, many: &str) -> String {
    format!("{count} {}", if count == 1 { one } else { many })
}

/// Runs `sublaunch prune`.
pub fn run(args: Args) -> ExitCode {
    let store = match open_store("prune") {
        Ok(store) => store,
        Err(code) => return code,
    };
    let (now, older_than) = match consent(&args, &store) {
        Consent::Given => (now_ms(), args.older_than),
        // Only what was listed: the runs that had ended by then.
        Consent::EndedBy(listed_at) => (listed_at, Some(Duration::ZERO)),
        Consent::Refused(code) => return code,
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
        retention::apply(&store, retention, now, args.dry_run)
    } else {
        let filter = PruneFilter {
            older_than,
            states: args.states,
            spare_worktree_runs: false,
        };
        prune(&store, &filter, now, args.dry_run)
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
            "{} {}, {} {}",
            if args.dry_run { "would remove" } else { "removed" },
            plural(report.removed.len(), "run", "runs"),
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
    fn states_and_sizes_read_as_people_write_them() {
        assert!(parse_state("running").unwrap_err().contains("active"));
        assert_eq!(
            (plural(1, "run", "runs"), plural(2, "run", "runs")),
            ("1 run".to_owned(), "2 runs".to_owned())
        );
        assert_eq!((size(512), size(12_595)), ("512 B".to_owned(), "12.3 KiB".to_owned()));
    }
}
