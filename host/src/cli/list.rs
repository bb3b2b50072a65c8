//! `sublaunch list [--all] [--json]`: active runs (every run with `--all`). Listing first
//! reconciles: orphan temp files are swept (A12), runs whose shim died unobserved get their
//! proof (S13, a still-running status becomes `failed`), phantom markers are released (I5),
//! the capacity queue is settled. A run waiting for capacity shows its place: `queued (2nd)`,
//! `queuePosition` in `--json`.

use super::runs::say;
use super::runs::{agents, duration, elapsed, fail, now_ms, open_store, state_with_place, status_of};
use std::process::ExitCode;
use sublaunch::runs::RunView;
use sublaunch_protocol::os::clock::iso8601_utc;
use sublaunch_protocol::records::status::{RunState, Status};

/// Arguments of `sublaunch list`.
#[derive(clap::Args)]
pub struct Args {
    /// List every run, not only the active ones.
    #[arg(long)]
    all: bool,
    /// Print a JSON array.
    #[arg(long)]
    json: bool,
}

/// Runs `sublaunch list`.
pub fn run(args: Args) -> ExitCode {
    let store = match open_store("list") {
        Ok(store) => store,
        Err(code) => return code,
    };
    for warning in store.reconcile_all() {
        eprintln!("sublaunch list: warning: {warning}");
    }
    let ids = if args.all {
        store.run_ids()
    } else {
        store.active_run_ids()
    };
    let ids = match ids {
        Ok(ids) => ids,
        Err(e) => return fail("list", e),
    };
    let mut rows = Vec::new();
    for id in ids {
        if let Ok(Some(run)) = store.run_dir(&id) {
            let status = status_of(&run);
            rows.push((id, run, status));
        }
    }
    let places = store.queue_positions().unwrap_or_else(|e| {
        eprintln!("sublaunch list: warning: cannot read the capacity queue: {e}");
        Default::default()
    });
    let place = |id: &String, status: &Option<Status>| {
        places
            .get(id)
            .copied()
            .filter(|_| status.as_ref().is_some_and(|s| s.state == Some(RunState::Queued)))
    };
    rows.sort_by_key(|(id, _, status)| (status.as_ref().and_then(|s| s.started_at).unwrap_or(0), id.clone()));
    if args.json {
        let list: Vec<_> = rows
            .iter()
            .map(|(id, run, status)| {
                let mut view = RunView::new(id, run, status.as_ref());
                view.queue_position = place(id, status);
                view.to_json()
            })
            .collect();
        say!("{}", serde_json::to_string_pretty(&list).unwrap_or_default());
        return ExitCode::SUCCESS;
    }
    if rows.is_empty() {
        say!("{}", if args.all { "No runs." } else { "No active runs." });
        return ExitCode::SUCCESS;
    }
    let now = now_ms();
    let table: Vec<[String; 5]> = rows
        .iter()
        .map(|(id, _, status)| match status {
            Some(s) => [
                id.clone(),
                state_with_place(s, place(id, status)),
                agents(s),
                s.started_at.map(iso8601_utc).unwrap_or_default(),
                elapsed(s, now).map(duration).unwrap_or_default(),
            ],
            None => [
                id.clone(),
                "unknown".into(),
                String::new(),
                String::new(),
                String::new(),
            ],
        })
        .collect();
    super::print_table(["RUN ID", "STATE", "AGENTS", "STARTED", "DURATION"], &table);
    ExitCode::SUCCESS
}
