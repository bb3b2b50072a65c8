//! `sublaunch status RUN_ID [--json]`: the run's status, after reconciling a run whose shim
//! died unobserved (S13). `--json` prints the status.json object, with the answer of an ended
//! run under `result` (see `sublaunch result`); a run waiting for capacity says its place in
//! the queue (`queuePosition`).

use super::runs::say;
use super::runs::{describe, fail, now_ms, open_run, raw_status, status_of};
use std::process::ExitCode;
use sublaunch::runs::{AnswerError, RunStore, read_result, settled_result};
use sublaunch_protocol::files::dir::Dir;
use sublaunch_protocol::records::results::ResultPayload;
use sublaunch_protocol::records::status::RunState;

/// Arguments of `sublaunch status`.
#[derive(clap::Args)]
pub struct Args {
    /// The run id.
    run_id: String,
    /// Print the status.json object (an ended run's answer under `result`).
    #[arg(short, long)]
    json: bool,
}

/// Runs `sublaunch status`.
pub fn run(args: Args) -> ExitCode {
    let (store, run, run_id) = match open_run(&args.run_id, "status") {
        Ok(opened) => opened,
        Err(code) => return code,
    };
    for warning in store.reconcile_run(&run) {
        eprintln!("sublaunch status: warning: {warning}");
    }
    let queued = status_of(&run).is_some_and(|s| s.state == Some(RunState::Queued));
    let place = queued
        .then(|| store.queue_positions().ok()?.get(&run_id).copied())
        .flatten();
    if args.json {
        return match raw_status(&run) {
            Ok(mut value) => {
                // An ended run's answer, so one call tells a script both.
                if let (Some(object), Some(payload)) = (value.as_object_mut(), ended_result(&store, &run_id, &run)) {
                    object.insert("result".into(), sublaunch::runs::answer_json(&payload));
                }
                if let (Some(object), Some(place)) = (value.as_object_mut(), place) {
                    object.insert("queuePosition".into(), place.into());
                }
                say!("{}", serde_json::to_string_pretty(&value).unwrap_or_default());
                ExitCode::SUCCESS
            }
            Err(e) => fail("status", format_args!("run '{run_id}': {e}")),
        };
    }
    match status_of(&run) {
        Some(status) => {
            say!("{}", describe(&run_id, &run, &status, now_ms()));
            if let Some(place) = place {
                say!("queue    {} in line for a capacity slot", super::runs::ordinal(place));
            }
            ExitCode::SUCCESS
        }
        None => {
            let why = super::runs::status_problem(&run);
            fail("status", format_args!("run '{run_id}': {why}"))
        }
    }
}

/// The result of an ended run. The shim publishes it just after the terminal status, so a run
/// seen in between is given the moment it takes (an async runtime only then).
fn ended_result(store: &RunStore, run_id: &str, run: &Dir) -> Option<ResultPayload> {
    match read_result(store, run_id) {
        Err(AnswerError::NotYet(_)) if status_of(run).is_some_and(|s| s.is_terminal()) => {
            let runtime = super::runs::async_runtime("status").ok()?;
            runtime.block_on(settled_result(store, run_id, run)).ok()
        }
        read => read.ok(),
    }
}
