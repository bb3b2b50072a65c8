//! `sublaunch deliver [RUN_ID]`: delivers every end in the outbox (D7) to its completion hook
//! now — those whose runner died before delivering them, and those whose last attempt failed,
//! whatever their backoff or whether they were given up — waiting for each attempt (and for a
//! deliverer already at work on one). Exit 0 when nothing is left undelivered, 1 otherwise.

use super::runs::{fail, find_run, open_store, say};
use super::terminal_text::for_terminal;
use std::process::ExitCode;
use sublaunch::launch::completion_hook::SweepAction;

/// Arguments of `sublaunch deliver`.
#[derive(clap::Args)]
pub struct Args {
    /// Only this run's ends (its id or a unique prefix).
    run_id: Option<String>,
}

/// Runs `sublaunch deliver`.
pub fn run(args: Args) -> ExitCode {
    deliver(&args).unwrap_or_else(|code| code)
}

fn deliver(args: &Args) -> Result<ExitCode, ExitCode> {
    let store = open_store("deliver")?;
    // Ends of runs whose runner died are recorded (and put in the outbox) by this look.
    for warning in store.reconcile_runs() {
        eprintln!("sublaunch deliver: warning: {warning}");
    }
    let only = match &args.run_id {
        Some(given) => Some(find_run(&store, given, "deliver")?.1),
        None => None,
    };
    let swept = store
        .deliver_all(only.as_deref())
        .map_err(|e| fail("deliver", format_args!("cannot read the outbox: {e}")))?;
    if swept.is_empty() {
        say!("nothing to deliver");
        return Ok(ExitCode::SUCCESS);
    }
    let mut left = 0;
    for swept in swept {
        let id = &swept.delivery.delivery_id;
        let line = match swept.action {
            SweepAction::Attempted(Some(outcome)) if outcome.succeeded() => {
                format!("{id}: delivered to the hook (attempt {})", outcome.attempt.unwrap_or(1))
            }
            SweepAction::Attempted(Some(outcome)) => {
                left += 1;
                format!(
                    "{id}: attempt {} failed: {}",
                    outcome.attempt.unwrap_or(1),
                    outcome.failure()
                )
            }
            SweepAction::Attempted(None) => {
                // The helper found it delivered, or being delivered, by someone else.
                format!("{id}: delivered meanwhile by another deliverer")
            }
            SweepAction::Busy => {
                left += 1;
                format!("{id}: being delivered by another process")
            }
            SweepAction::RunGone => format!("{id}: its run was removed; dropped"),
            SweepAction::Failed(why) => {
                left += 1;
                format!("{id}: not delivered: {why}")
            }
            SweepAction::NotDue | SweepAction::Started => continue,
        };
        say!("{}", for_terminal(&line));
    }
    Ok(if left == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
