//! `sublaunch wait RUN_ID [--timeout SECS] [--json]`: waits for the run's end, showing its
//! progress on stderr ([`super::progress`]); exit 0 complete, 1 any other end, 124 on
//! timeout. Works for runs launched by other processes.

use super::progress::{Progress, Style, steps_json};
use super::runs::say;
use super::runs::{EXIT_TIMEOUT, async_runtime, open_run, outcome_code, state_name, timeout_arg};
use serde_json::json;
use std::process::ExitCode;
use std::sync::Arc;
use sublaunch::launch::tokio;
use sublaunch::runs::{WaitEnd, wait_terminal};

/// Arguments of `sublaunch wait`.
#[derive(clap::Args)]
pub struct Args {
    /// The run id.
    run_id: String,
    /// Give up after SECS seconds (exit 124).
    #[arg(long, value_name = "SECS")]
    timeout: Option<f64>,
    /// Print the end as one JSON object (progress on stderr as JSON lines).
    #[arg(long)]
    json: bool,
}

/// Runs `sublaunch wait`.
pub fn run(args: Args) -> ExitCode {
    wait(&args).unwrap_or_else(|code| code)
}

fn wait(args: &Args) -> Result<ExitCode, ExitCode> {
    let limit = timeout_arg(args.timeout, "wait")?;
    let (store, run) = open_run(&args.run_id, "wait")?;
    let runtime = async_runtime("wait")?;
    let (store, run) = (Arc::new(store), Arc::new(run));
    let mut progress = Progress::new(run.clone(), &args.run_id, Style::detect(args.json));
    let (end, snapshot) = runtime.block_on(async {
        let end = tokio::select! {
            end = wait_terminal(&store, &run, limit) => end,
            () = progress.follow() => unreachable!("progress follows until the wait ends"),
        };
        (end, progress.finish().await)
    });
    Ok(match end {
        WaitEnd::Terminal(status) => {
            if args.json {
                say!(
                    "{}",
                    json!({
                        "runId": args.run_id,
                        "runDir": run.path(),
                        "state": state_name(&status),
                        "error": status.error,
                        "processTerminal": status.process_terminal.as_ref().and_then(|p| p.get("state")),
                        "steps": steps_json(&snapshot),
                        "result": sublaunch::runs::read_result(&store, &args.run_id)
                            .ok()
                            .map(|payload| sublaunch::runs::answer_json(&payload)),
                    })
                );
            } else {
                say!("{}: {}", args.run_id, state_name(&status));
                if let Some(error) = &status.error {
                    eprintln!("{}", super::terminal_text::for_terminal(error));
                }
            }
            outcome_code(status.state.as_ref())
        }
        WaitEnd::TimedOut => {
            eprintln!("sublaunch wait: run '{}' is still active", args.run_id);
            ExitCode::from(EXIT_TIMEOUT)
        }
    })
}
