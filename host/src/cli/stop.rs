//! `sublaunch stop RUN_ID [--timeout SECS]`: asks the shim to stop the run and its whole
//! process tree (`<run>/control/stop.json`, R12), then waits until the end is recorded.
//! Exit 0 once the run is terminal (stopped, or ended otherwise), 1 if it did not end in time.

use super::runs::say;
use super::runs::{find_run, open_store, state_name, status_of};
use super::wait::seconds;
use serde_json::json;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;
use sublaunch::runs::{WaitEnd, wait_terminal};
use sublaunch_protocol::durability::DocKind;
use sublaunch_protocol::layout::names;

/// How long `stop` waits by default: the shim's SIGTERM grace and SIGKILL wait (X4) with room.
const DEFAULT_STOP_WAIT: Duration = Duration::from_secs(15);

/// Arguments of `sublaunch stop`.
#[derive(clap::Args)]
pub struct Args {
    /// The run id.
    run_id: String,
    /// Wait at most SECS seconds for the end to be recorded.
    #[arg(long, value_name = "SECS")]
    timeout: Option<f64>,
}

/// Runs `sublaunch stop`.
pub fn run(args: Args) -> ExitCode {
    let limit = match args.timeout.map(seconds).transpose() {
        Ok(limit) => limit.unwrap_or(DEFAULT_STOP_WAIT),
        Err(message) => {
            eprintln!("sublaunch stop: {message}");
            return ExitCode::from(super::EXIT_USAGE);
        }
    };
    let store = match open_store("stop") {
        Ok(store) => store,
        Err(code) => return code,
    };
    let run = match find_run(&store, &args.run_id, "stop") {
        Ok(run) => run,
        Err(code) => return code,
    };
    if let Some(status) = status_of(&run).filter(|s| s.is_terminal()) {
        say!("{}: {} (already ended)", args.run_id, state_name(&status));
        return ExitCode::SUCCESS;
    }
    let request = json!({
        "version": 1,
        "action": "stop",
        "runId": args.run_id,
        "requestedAt": super::runs::now_ms(),
        "requestedBy": "sublaunch-cli",
    });
    let written = run.ensure_child(names::CONTROL_DIR).and_then(|control| {
        control.write_doc(
            names::CONTROL_STOP,
            &request,
            &super::environment().durability().options(DocKind::ControlFile),
        )
    });
    if let Err(e) = written {
        eprintln!("sublaunch stop: cannot request the stop of '{}': {e}", args.run_id);
        return ExitCode::FAILURE;
    }
    let runtime = match sublaunch::launch::runtime() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("sublaunch stop: {e}");
            return ExitCode::FAILURE;
        }
    };
    let (store, run) = (Arc::new(store), Arc::new(run));
    match runtime.block_on(wait_terminal(&store, &run, Some(limit))) {
        WaitEnd::Terminal(status) => {
            say!("{}: {}", args.run_id, state_name(&status));
            ExitCode::SUCCESS
        }
        WaitEnd::TimedOut => {
            eprintln!(
                "sublaunch stop: run '{}' did not record its end within {}s",
                args.run_id,
                limit.as_secs_f64()
            );
            ExitCode::FAILURE
        }
    }
}
