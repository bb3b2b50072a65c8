//! `sublaunch wait RUN_ID… [--any|--all] [--timeout SECS] [--json]`: waits for runs to end.
//! One run: its progress on stderr ([`super::progress`]), then its end. Several: a line per
//! run as it ends (`<id>: <state>`, its error on stderr), or with `--json` an object per line;
//! `--all` (the default) waits for every run, `--any` for the first. Exit 0 when every run
//! waited for completed, 1 when one ended otherwise, 124 on timeout. A run id may be a unique
//! prefix; works for runs launched by other processes.

use super::duration::{GivenDuration, parse_limit};
use super::progress::{Progress, Style, steps_json};
use super::runs::say;
use super::runs::{EXIT_TIMEOUT, async_runtime, find_run, open_store, outcome_code, state_name};
use super::terminal_text::for_terminal;
use serde_json::json;
use std::collections::HashMap;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;
use sublaunch::launch::tokio;
use sublaunch::runs::RunStore;
use sublaunch::runs::{WaitEnd, WaitUntil, answer_json, settled_result, wait_many, wait_terminal};
use sublaunch_protocol::files::dir::Dir;
use sublaunch_protocol::records::status::{RunState, Status};

/// Arguments of `sublaunch wait`.
#[derive(clap::Args)]
pub struct Args {
    /// The run ids (or unique prefixes of them).
    #[arg(required = true, value_name = "RUN_ID")]
    run_ids: Vec<String>,
    /// With several runs: return when the first of them ends.
    #[arg(long, conflicts_with = "all")]
    any: bool,
    /// With several runs: return when every one of them has ended (the default).
    #[arg(long)]
    all: bool,
    /// Give up after DURATION (`90s`, `10m`, `1h`; a bare number is seconds): exit 124.
    #[arg(long, value_name = "DURATION", value_parser = parse_limit)]
    timeout: Option<GivenDuration>,
    /// Print the end as one JSON object (progress on stderr as JSON lines); with several runs
    /// a JSON object per line as each ends.
    #[arg(short, long)]
    json: bool,
}

/// Runs `sublaunch wait`.
pub fn run(args: Args) -> ExitCode {
    wait(&args).unwrap_or_else(|code| code)
}

fn wait(args: &Args) -> Result<ExitCode, ExitCode> {
    let limit = args.timeout.as_ref().map(|t| t.duration);
    let store = open_store("wait")?;
    let mut runs: Vec<(String, Arc<Dir>)> = Vec::new();
    for text in &args.run_ids {
        let (run, run_id) = find_run(&store, text, "wait")?;
        // An id given twice (or as two prefixes) is waited for once.
        if !runs.iter().any(|(seen, _)| *seen == run_id) {
            runs.push((run_id, Arc::new(run)));
        }
    }
    let runtime = async_runtime("wait")?;
    let store = Arc::new(store);
    if let [(run_id, run)] = runs.as_slice() {
        return Ok(wait_one(args, &runtime, &store, (run_id, run), limit));
    }
    let until = if args.any { WaitUntil::Any } else { WaitUntil::All };
    Ok(wait_several(args.json, &runtime, &store, runs, until, limit))
}

/// One run: today's `wait`, with its progress.
fn wait_one(
    args: &Args,
    runtime: &tokio::runtime::Runtime,
    store: &Arc<RunStore>,
    (run_id, run): (&str, &Arc<Dir>),
    limit: Option<Duration>,
) -> ExitCode {
    let mut progress = Progress::new(run.clone(), run_id, Style::detect(args.json));
    let (end, snapshot, result) = runtime.block_on(async {
        let end = tokio::select! {
            end = wait_terminal(store, run, limit) => end,
            () = progress.follow() => unreachable!("progress follows until the wait ends"),
        };
        let snapshot = progress.finish().await;
        // The shim writes the result just after the terminal status.
        let result = match (&end, args.json) {
            (WaitEnd::Terminal(_), true) => settled_result(store, run_id, run).await.ok(),
            _ => None,
        };
        (end, snapshot, result)
    });
    match end {
        WaitEnd::Terminal(status) => {
            if args.json {
                say!(
                    "{}",
                    json!({
                        "runId": run_id,
                        "runDir": run.path(),
                        "state": state_name(&status),
                        "error": status.error,
                        "failureKind": status.failure_kind,
                        "processTerminal": status.process_terminal.as_ref().and_then(|p| p.get("state")),
                        "steps": steps_json(&snapshot),
                        "result": result.map(|payload| answer_json(&payload)),
                    })
                );
            } else {
                say!("{}: {}", run_id, state_name(&status));
                if let Some(error) = &status.error {
                    eprintln!("{}", for_terminal(error));
                }
            }
            outcome_code(Some(&status))
        }
        WaitEnd::TimedOut => {
            eprintln!("sublaunch wait: run '{run_id}' is still active");
            ExitCode::from(EXIT_TIMEOUT)
        }
    }
}

/// Several runs: a line (or a JSON object) per run as it ends, no progress.
fn wait_several(
    json: bool,
    runtime: &tokio::runtime::Runtime,
    store: &Arc<RunStore>,
    runs: Vec<(String, Arc<Dir>)>,
    until: WaitUntil,
    limit: Option<Duration>,
) -> ExitCode {
    let dirs: HashMap<String, Arc<Dir>> = runs.iter().cloned().collect();
    // The ends are printed by a task of their own: a JSON line waits for the result the shim
    // writes just after the terminal status, while the other runs are still waited for.
    let (sender, mut ends) = tokio::sync::mpsc::unbounded_channel::<(String, Box<Status>)>();
    let report = move |run_id: &str, status: &Status| {
        let _ = sender.send((run_id.to_owned(), Box::new(status.clone())));
    };
    let print = async {
        while let Some((run_id, status)) = ends.recv().await {
            if json {
                let result = match dirs.get(&run_id) {
                    Some(run) => settled_result(store, &run_id, run).await.ok(),
                    None => None,
                };
                say!(
                    "{}",
                    json!({
                        "runId": run_id,
                        "state": state_name(&status),
                        "error": status.error,
                        "failureKind": status.failure_kind,
                        "result": result.map(|payload| answer_json(&payload)),
                    })
                );
            } else {
                say!("{}: {}", run_id, state_name(&status));
                if let Some(error) = &status.error {
                    eprintln!("{}", for_terminal(error));
                }
            }
        }
    };
    let (outcome, ()) = runtime.block_on(async { tokio::join!(wait_many(store, runs, until, limit, report), print) });
    if outcome.timed_out {
        for run_id in &outcome.still_running {
            eprintln!("sublaunch wait: run '{run_id}' is still active");
        }
        return ExitCode::from(EXIT_TIMEOUT);
    }
    let all_complete = outcome
        .ended
        .iter()
        .all(|(_, status)| status.state == Some(RunState::Complete));
    let all_seen = until == WaitUntil::Any || outcome.still_running.is_empty();
    if !all_complete || outcome.ended.is_empty() || !all_seen {
        // The first run that ended otherwise than complete gives its failure's code.
        let failed = outcome
            .ended
            .iter()
            .map(|(_, status)| status)
            .find(|status| status.state != Some(RunState::Complete));
        return match failed {
            Some(status) => outcome_code(Some(status)),
            None => ExitCode::FAILURE,
        };
    }
    ExitCode::SUCCESS
}
