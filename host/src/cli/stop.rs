//! `sublaunch stop RUN_ID [--timeout DURATION]`: asks the shim to stop the run and its whole
//! process tree (`<run>/control/stop.json`, R12), then waits until the end is recorded.
//! Exit 0 once the run is terminal (stopped, or ended otherwise), 124 (as `wait`, and
//! timeout(1)) if it did not end in time.

use super::duration::{GivenDuration, parse_limit};
use super::runs::say;
use super::runs::{EXIT_TIMEOUT, async_runtime, fail, open_run, state_name, status_of};
use super::terminal_text::for_terminal;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;
use sublaunch::runs::{WaitEnd, stop_and_wait};
use sublaunch_protocol::records::status::RunState;

/// How long `stop` waits by default: the shim's SIGTERM grace and SIGKILL wait (X4) with room.
const DEFAULT_STOP_WAIT: Duration = Duration::from_secs(15);

/// Arguments of `sublaunch stop`.
#[derive(clap::Args)]
pub struct Args {
    /// The run id.
    run_id: String,
    /// Wait at most DURATION (`30s`, `2m`; a bare number is seconds) for the end to be
    /// recorded (default 15s); exit 124 when it is not.
    #[arg(long, value_name = "DURATION", value_parser = parse_limit)]
    timeout: Option<GivenDuration>,
}

/// Runs `sublaunch stop`.
pub fn run(args: Args) -> ExitCode {
    stop(&args).unwrap_or_else(|code| code)
}

fn stop(args: &Args) -> Result<ExitCode, ExitCode> {
    let given = args.timeout.as_ref();
    let limit = given.map_or(DEFAULT_STOP_WAIT, |t| t.duration);
    let (store, run, run_id) = open_run(&args.run_id, "stop")?;
    if let Some(status) = status_of(&run).filter(|s| s.is_terminal()) {
        // How it ended, as below: a run found dead by a lister just before says why.
        match status.error.as_deref() {
            Some(error) => say!(
                "{run_id}: {} (already ended): {}",
                state_name(&status),
                for_terminal(error)
            ),
            None => say!("{run_id}: {} (already ended)", state_name(&status)),
        }
        return Ok(ExitCode::SUCCESS);
    }
    let runtime = async_runtime("stop")?;
    let (store, run) = (Arc::new(store), Arc::new(run));
    let env = super::environment();
    // J9: a run on a cluster is stopped through its engine as well.
    let ended = runtime.block_on(stop_and_wait(&store, &run, &run_id, "sublaunch-cli", &env, limit));
    let ended = ended.map_err(|e| fail("stop", format_args!("cannot request the stop of '{run_id}': {e}")))?;
    Ok(match ended {
        WaitEnd::Terminal(status) => {
            // A run that ended otherwise than by this stop says how (a dead runner, and the
            // agent processes it left that were ended).
            match status
                .error
                .as_deref()
                .filter(|_| status.state != Some(RunState::Stopped))
            {
                Some(error) => say!("{run_id}: {}: {}", state_name(&status), for_terminal(error)),
                None => say!("{run_id}: {}", state_name(&status)),
            }
            ExitCode::SUCCESS
        }
        WaitEnd::TimedOut => {
            let within = given.map_or_else(|| "15s".to_owned(), |t| t.text.clone());
            eprintln!("sublaunch stop: run '{run_id}' did not record its end within {within}");
            ExitCode::from(EXIT_TIMEOUT)
        }
    })
}
