//! Launching from the CLI (`run`, `resume`): a short-lived host. It launches, waits until the
//! shim reports `committed` (so it only prints the id of a run that really started), prints
//! the id and exits — nobody then observes the shim's exit, so the run's
//! `process-terminal.json` stays `pending` until a later `list`/`status`/`wait` finds the shim
//! gone and writes `unknown/observer-unavailable` (S13, F33). With `--wait` it stays, shows
//! the run's progress on stderr ([`super::progress`]), observes the exit itself and finalizes
//! the run with an `observed` proof.

use super::progress::{Progress, Style, steps_json};
use super::runs::say;
use serde_json::json;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;
use sublaunch::launch::{self, Launch, LaunchFailure, LaunchHandle, LaunchOptions};
use sublaunch_protocol::files::dir::Dir;
use sublaunch_protocol::records::status::RunState;

/// The session id the CLI launches under.
pub const CLI_SESSION_ID: &str = "sublaunch-cli";
/// How long a failed launch waits for the shim's finalization before the CLI exits.
const FINALIZE_GRACE: Duration = Duration::from_secs(5);

/// How the outcome is printed.
#[derive(Clone, Copy, Debug)]
pub struct Presentation {
    /// `--json`.
    pub json: bool,
    /// `--wait`.
    pub wait: bool,
}

/// Launches `run`, reports it, and with `--wait` waits for the end.
pub fn launch_and_report(run: Launch, options: LaunchOptions, presentation: Presentation) -> ExitCode {
    let runtime = match launch::runtime() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("sublaunch: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    runtime.block_on(async {
        let launched = match launch::launch(run, options).await {
            Ok(launched) => launched,
            Err(failure) => return report_failure(&failure).await,
        };
        if let Err(e) = launched.handle.committed().await {
            settle(&launched.handle).await;
            eprintln!("Failed to start async run '{}': {e}", launched.run_id);
            return ExitCode::FAILURE;
        }
        if !presentation.wait {
            if presentation.json {
                say!(
                    "{}",
                    json!({"runId": launched.run_id, "runDir": launched.run_dir, "pid": launched.pid})
                );
            } else {
                say!("{}", launched.run_id);
            }
            return ExitCode::SUCCESS;
        }
        // With --wait stdout carries the answer alone; the id and the outcome go to stderr.
        if !presentation.json {
            eprintln!("{}", launched.run_id);
        }
        let mut progress = Dir::open(&launched.run_dir)
            .ok()
            .map(|dir| Progress::new(Arc::new(dir), &launched.run_id, Style::detect(presentation.json)));
        let finished = {
            let watch = async {
                match &mut progress {
                    Some(progress) => progress.follow().await,
                    None => std::future::pending().await,
                }
            };
            launch::tokio::select! {
                finished = launched.handle.finished() => finished,
                () = watch => unreachable!("progress follows until the run ends"),
            }
        };
        let finished = match finished {
            Ok(finished) => finished,
            Err(e) => {
                eprintln!("sublaunch: {e}");
                return ExitCode::FAILURE;
            }
        };
        let snapshot = match &mut progress {
            Some(progress) => Some(progress.finish().await),
            None => None,
        };
        let status = finished.status.as_ref();
        let state = status.and_then(|s| s.state.clone());
        let error = status.and_then(|s| s.error.clone());
        if presentation.json {
            say!(
                "{}",
                json!({
                    "runId": launched.run_id,
                    "runDir": launched.run_dir,
                    "pid": launched.pid,
                    "state": state.as_ref().map(RunState::as_str),
                    "error": error,
                    "processTerminal": finished.proof.state,
                    "steps": snapshot.as_ref().map(steps_json),
                    "result": super::runs::read_result_file(&launched.result_path)
                        .map(|payload| sublaunch::runs::answer_json(&payload)),
                })
            );
        } else {
            let payload = super::runs::read_result_file(&launched.result_path);
            let answer = payload.as_ref().map(sublaunch::runs::answer_text).unwrap_or_default();
            let answer = super::terminal_text::for_terminal(&answer);
            let answer = answer.trim_end_matches('\n');
            if !answer.is_empty() {
                say!("{answer}");
            }
            for line in payload.iter().flat_map(sublaunch::runs::worktree_summaries) {
                eprintln!("{}", super::terminal_text::for_terminal(&line));
            }
            eprintln!(
                "{}: {}",
                launched.run_id,
                state.as_ref().map_or("unknown", RunState::as_str)
            );
            if let Some(error) = &error {
                eprintln!("{}", super::terminal_text::for_terminal(error));
            }
        }
        super::runs::outcome_code(state.as_ref())
    })
}

async fn report_failure(failure: &LaunchFailure) -> ExitCode {
    if let Some(handle) = failure.handle() {
        settle(handle).await;
    }
    eprintln!("{}", failure.message());
    ExitCode::FAILURE
}

/// Gives the supervising task a moment to finalize a run whose shim is exiting, so the proof
/// is written before the CLI (the only observer) exits.
async fn settle(handle: &LaunchHandle) {
    let _ = launch::tokio::time::timeout(FINALIZE_GRACE, handle.finished()).await;
}
