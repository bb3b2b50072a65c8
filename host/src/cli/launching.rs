//! Launching from the CLI (`run`, `resume`): a short-lived host. It launches, waits until the
//! shim reports `committed` (so it only prints the id of a run that really started), prints
//! the id and exits — nobody then observes the shim's exit, so the run's
//! `process-terminal.json` stays `pending` until a later `list`/`status`/`wait` finds the shim
//! gone and writes `unknown/observer-unavailable` (S13, F33). With `--wait` it stays, shows
//! the run's progress on stderr ([`super::progress`]), observes the exit itself and finalizes
//! the run with an `observed` proof.

use super::duration::GivenDuration;
use super::progress::{Progress, Style, steps_json};
use super::runs::say;
use serde_json::json;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;
use sublaunch::launch::error::{CwdError, LaunchError};
use sublaunch::launch::{self, Launch, LaunchFailure, LaunchHandle, LaunchOptions, LaunchStage};
use sublaunch_protocol::files::dir::Dir;
use sublaunch_protocol::files::layout::names;
use sublaunch_protocol::records::failure::FailureKind;
use sublaunch_protocol::records::proof::ProcessTerminal;
use sublaunch_protocol::records::status::RunState;

/// The session id the CLI launches under.
pub const CLI_SESSION_ID: &str = "sublaunch-cli";
/// How long a failed launch waits for the shim's finalization before the CLI exits.
const FINALIZE_GRACE: Duration = Duration::from_secs(5);

/// How the outcome is printed.
#[derive(Clone, Debug)]
pub struct Presentation {
    /// The command launching (`run`, `resume`), which prefixes its messages.
    pub command: &'static str,
    /// `--json`.
    pub json: bool,
    /// `--wait`.
    pub wait: bool,
    /// `--timeout` as the user wrote it, so that a timeout is reported in their unit.
    pub timeout: Option<GivenDuration>,
}

/// Launches `run`, reports it, and with `--wait` waits for the end.
pub fn launch_and_report(run: Launch, options: LaunchOptions, presentation: Presentation) -> ExitCode {
    let command = presentation.command;
    let runtime = match launch::runtime() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("sublaunch {command}: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    runtime.block_on(async {
        let launched = match launch::launch(run, options).await {
            Ok(launched) => launched,
            Err(failure) => return report_failure(command, presentation.json, &failure).await,
        };
        if let Err(e) = launched.handle.committed().await {
            settle(&launched.handle).await;
            // The run exists (its status records this failure): its id is worth naming.
            eprintln!(
                "sublaunch {command}: Failed to start async run '{}': {e}",
                launched.run_id
            );
            return ExitCode::FAILURE;
        }
        // J6: a run on a cluster is launched once the engine accepted its job.
        let job = match launched.handle.handed_over().await {
            Ok(job) => job,
            Err(e) => {
                eprintln!(
                    "sublaunch {command}: the run '{}' could not be submitted: {e}",
                    launched.run_id
                );
                return ExitCode::FAILURE;
            }
        };
        if !presentation.wait {
            if presentation.json {
                let mut printed = json!({"runId": launched.run_id, "runDir": launched.run_dir, "pid": launched.pid});
                if let Some(job) = &job {
                    printed["jobId"] = json!(job.job_id);
                }
                say!("{printed}");
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
        let mut finished = match finished {
            Ok(finished) => finished,
            Err(e) => {
                eprintln!("sublaunch {command}: {e}");
                return ExitCode::FAILURE;
            }
        };
        if finished.handed_over.is_some() {
            // J6: the run goes on as a cluster job; its end comes from its records and the
            // engine, as for any run this process did not spawn.
            match wait_for_job(command, &launched.run_dir, &mut progress).await {
                Ok((status, proof)) => {
                    finished.status = Some(status);
                    finished.proof = proof;
                }
                Err(code) => return code,
            }
        }
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
                    "failureKind": status.and_then(|s| s.failure_kind),
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
            for line in payload.iter().flat_map(sublaunch::runs::acceptance_summaries) {
                eprintln!("{}", super::terminal_text::for_terminal(&line));
            }
            for line in payload.iter().flat_map(sublaunch::runs::sandbox_summaries) {
                eprintln!("{}", super::terminal_text::for_terminal(&line));
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
                let error = in_users_unit(error, presentation.timeout.as_ref());
                eprintln!("{}", super::terminal_text::for_terminal(&error));
            }
        }
        super::runs::outcome_code(status)
    })
}

/// Waits until a run handed to a cluster job is terminal (its progress shown meanwhile):
/// its status and proof then.
async fn wait_for_job(
    command: &str,
    run_dir: &std::path::Path,
    progress: &mut Option<Progress>,
) -> Result<(sublaunch_protocol::records::status::Status, ProcessTerminal), ExitCode> {
    let store = Arc::new(super::runs::open_store(command)?);
    let run = Arc::new(Dir::open(run_dir).map_err(|e| super::runs::fail(command, e))?);
    let watch = async {
        match progress {
            Some(progress) => progress.follow().await,
            None => std::future::pending().await,
        }
    };
    let ended = launch::tokio::select! {
        ended = sublaunch::runs::wait::wait_terminal(&store, &run, None) => ended,
        () = watch => unreachable!("progress follows until the run ends"),
    };
    let sublaunch::runs::wait::WaitEnd::Terminal(status) = ended else {
        unreachable!("a wait without a limit ends with the run");
    };
    let proof = run
        .read_doc::<ProcessTerminal>(names::PROCESS_TERMINAL)
        .ok()
        .and_then(|doc| doc.present())
        .unwrap_or_default();
    Ok((*status, proof))
}

/// Prints why the launch failed as `sublaunch <command>: …`. A run whose runner started
/// exists (its status records the failure), so it is named as the launch layer names it; a
/// launch refused or undone before that left no run, and names none. A launch refused for its
/// inputs (a directory, a program, a file, a deadline) is exit 2; a failure of the launch
/// itself exit 1.
async fn report_failure(command: &str, json: bool, failure: &LaunchFailure) -> ExitCode {
    if let Some(handle) = failure.handle() {
        settle(handle).await;
    }
    let refused = is_refusal(&failure.error);
    let message = match &failure.stage {
        LaunchStage::NotCommitted { .. } => failure.message(),
        _ if refused => refusal(&failure.error),
        _ => format!("the run could not start: {}", failure.error),
    };
    eprintln!("sublaunch {command}: {message}");
    if json {
        // D3: in one word too — refused before the launch, or made and not started.
        let kind = if refused {
            FailureKind::Refused
        } else {
            FailureKind::NotStarted
        };
        let document = serde_json::json!({"error": message, "failureKind": kind.as_str()});
        println!("{}", serde_json::to_string_pretty(&document).unwrap_or_default());
    }
    if refused && !matches!(failure.stage, LaunchStage::NotCommitted { .. }) {
        ExitCode::from(super::EXIT_USAGE)
    } else {
        ExitCode::FAILURE
    }
}

/// Whether `error` refuses the launch for what was asked (bad input, exit 2), rather than
/// failing it.
fn is_refusal(error: &LaunchError) -> bool {
    matches!(
        error,
        LaunchError::Cwd(_)
            | LaunchError::Deadline(_)
            | LaunchError::Admission(_)
            | LaunchError::Setting(_)
            | LaunchError::Steps(_)
            | LaunchError::RunDir(_)
            | LaunchError::Worktree(_)
            | LaunchError::StepFiles(_)
    )
}

/// The exit code of a launch that `error` stopped before it began: 2 for a refusal, 1 otherwise.
pub(super) fn exit_for_refusal(error: &LaunchError) -> ExitCode {
    if is_refusal(error) {
        ExitCode::from(super::EXIT_USAGE)
    } else {
        ExitCode::FAILURE
    }
}

/// A refusal in the user's terms. The working directory's text is the launch layer's own
/// (`Subagent launch aborted: cwd …`, which embedders match on); the command says it plainly.
pub(super) fn refusal(error: &LaunchError) -> String {
    let LaunchError::Cwd(cwd) = error else {
        return error.to_string();
    };
    let (names, why) = match cwd {
        CwdError::Missing { cwd } => (cwd, "does not exist".to_owned()),
        CwdError::NotADirectory { cwd } => (cwd, "is not a directory".to_owned()),
        CwdError::Inaccessible { cwd, source } => (cwd, format!("cannot be accessed: {source}")),
    };
    match &names.requested {
        Some(requested) => format!("the working directory {} (from \"{requested}\") {why}", names.effective),
        None => format!("the working directory {} {why}", names.effective),
    }
}

/// The runner's timeout message (`Subagent timed out after 600000ms.`) in the unit the user
/// gave `--timeout` in (`timed out after 10m (--timeout 10m)`), or in the largest exact unit.
pub fn in_users_unit(error: &str, timeout: Option<&GivenDuration>) -> String {
    let Some(ms) = error
        .strip_prefix("Subagent timed out after ")
        .and_then(|rest| rest.strip_suffix("ms."))
        .and_then(|ms| ms.parse::<u64>().ok())
    else {
        return error.to_owned();
    };
    match timeout.filter(|t| t.duration.as_millis() == u128::from(ms)) {
        Some(given) => format!("timed out after {given} (--timeout {given})"),
        None => format!("timed out after {}", super::duration::exact(ms)),
    }
}

/// Gives the supervising task a moment to finalize a run whose shim is exiting, so the proof
/// is written before the CLI (the only observer) exits.
async fn settle(handle: &LaunchHandle) {
    let _ = launch::tokio::time::timeout(FINALIZE_GRACE, handle.finished()).await;
}
