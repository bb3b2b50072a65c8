//! `sublaunch events [--follow] [--since CURSOR] [--json]`: the state root's event stream
//! (D4, D5) — every lifecycle event of every run, in order, each with its cursor; `--since`
//! resumes after the last cursor a consumer handled, `--follow` keeps printing new events.

use super::runs::{fail, open_store};
use super::terminal_text::for_terminal;
use std::io::Write;
use std::process::ExitCode;
use std::time::{Duration, Instant};
use sublaunch::runs::feed::Feed;
use sublaunch_protocol::records::stream::{StreamEvent, What};

/// How many events are printed per read.
const BATCH: usize = 1000;
/// How often a follower looks for runs whose runner died (their ends are recorded by a look).
const LOOK_EVERY: Duration = Duration::from_secs(5);

/// Arguments of `sublaunch events`.
#[derive(clap::Args)]
pub struct Args {
    /// Only the events after CURSOR: the `cursor` of the last event you handled (default:
    /// every event the log still keeps).
    #[arg(long, value_name = "CURSOR")]
    since: Option<u64>,
    /// Keep printing events as they happen, until interrupted.
    #[arg(long, short = 'f')]
    follow: bool,
    /// One JSON object per line: the event schema in docs/guide/events.md.
    #[arg(long)]
    json: bool,
}

/// Runs `sublaunch events`.
pub fn run(args: Args) -> ExitCode {
    let store = match open_store("events") {
        Ok(store) => store,
        Err(code) => return code,
    };
    // A run whose runner died has its end recorded by the first look.
    warn_all(store.reconcile_all());
    let mut feed = Feed::new(store.root().root().path(), args.since);
    let mut looked = Instant::now();
    let mut out = std::io::stdout().lock();
    loop {
        let wait = if args.follow { LOOK_EVERY } else { Duration::ZERO };
        let batch = match feed.next(BATCH, wait) {
            Ok(batch) => batch,
            Err(e) => return fail("events", format_args!("cannot read the event stream: {e}")),
        };
        if batch.dropped > 0 {
            let first = args.since.unwrap_or(0) + 1;
            eprintln!(
                "sublaunch events: {} event(s) from cursor {first} on are no longer kept (the log keeps the newest)",
                batch.dropped
            );
            if args.json {
                let dropped = serde_json::json!({"type": "dropped", "count": batch.dropped, "from": first});
                if writeln!(out, "{dropped}").is_err() {
                    return ExitCode::SUCCESS;
                }
            }
        }
        for event in &batch.events {
            let line = if args.json {
                serde_json::to_string(event).unwrap_or_default()
            } else {
                text_of(event)
            };
            // A closed pipe (`| head`) ends the command quietly.
            if writeln!(out, "{line}").is_err() {
                return ExitCode::SUCCESS;
            }
        }
        if out.flush().is_err() {
            return ExitCode::SUCCESS;
        }
        if !args.follow && batch.events.len() < BATCH {
            return ExitCode::SUCCESS;
        }
        if args.follow && looked.elapsed() >= LOOK_EVERY {
            warn_all(store.reconcile_all());
            looked = Instant::now();
        }
    }
}

fn warn_all(warnings: Vec<String>) {
    for warning in warnings {
        eprintln!("sublaunch events: warning: {warning}");
    }
}

/// `<cursor>  <UTC time>  <run>  <type>  <what>`.
fn text_of(event: &StreamEvent) -> String {
    let what = match &event.what {
        What::Launched {
            agent, mode, parent, ..
        } => match parent {
            Some(parent) => format!("{agent} ({mode}), from {parent}"),
            None => format!("{agent} ({mode})"),
        },
        What::Queued { reason } => reason.clone(),
        What::Started { pid } => format!("runner pid {pid}"),
        What::StepStarted { step, agent } => format!("step {} {agent}", step + 1),
        What::StepEnded {
            step,
            agent,
            state,
            failure_kind,
        } => match failure_kind {
            Some(kind) => format!("step {} {agent} {state} ({})", step + 1, kind.as_str()),
            None => format!("step {} {agent} {state}", step + 1),
        },
        What::Gate { step, gate, passed } => {
            format!(
                "step {} gate {gate} {}",
                step + 1,
                if *passed { "passed" } else { "failed" }
            )
        }
        What::Ended {
            state,
            failure_kind,
            delivery_id,
            error,
        } => {
            let kind = failure_kind.map(|k| format!(" ({})", k.as_str())).unwrap_or_default();
            let error = error
                .as_deref()
                .and_then(|e| e.lines().next())
                .map(|e| format!(": {e}"))
                .unwrap_or_default();
            format!("{state}{kind} [{delivery_id}]{error}")
        }
        What::Delivered {
            delivery_id,
            consumer,
            attempt,
        } => format!("{delivery_id} to the {consumer} (attempt {attempt})"),
        What::DeliveryFailed {
            delivery_id,
            consumer,
            attempt,
            error,
            next_attempt_at,
        } => match next_attempt_at {
            Some(_) => format!("{delivery_id} to the {consumer}, attempt {attempt}: {error}; tried again later"),
            None => format!("{delivery_id} to the {consumer}, attempt {attempt}: {error}; given up"),
        },
    };
    let seconds = event.at / 1000;
    let (h, m, s) = ((seconds / 3600) % 24, (seconds / 60) % 60, seconds % 60);
    for_terminal(&format!(
        "{:>8}  {h:02}:{m:02}:{s:02}  {}  {:<15}  {what}",
        event.cursor,
        event.run_id,
        event.what.type_word()
    ))
}
