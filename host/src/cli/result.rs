//! `sublaunch result RUN_ID [--json]`: a finished run's answer on stdout — the last step's
//! output, or each task of a final parallel group under a heading; with `--json` one object
//! with every step's text, structured value, exit code, error, usage and agent session. Exit
//! 0 when the run completed, 1 when it ended otherwise (its error on stderr) or has not ended.

use super::runs::say;
use super::runs::{fail, open_run, state_name, status_of};
use std::process::ExitCode;
use sublaunch::runs::{AnswerError, answer_json, answer_text, settled_result};

/// Arguments of `sublaunch result`.
#[derive(clap::Args)]
pub struct Args {
    /// The run id.
    run_id: String,
    /// Print one JSON object: the answer and every step's output, structured value, exit
    /// code, error, usage and agent session.
    #[arg(short, long)]
    json: bool,
}

/// Runs `sublaunch result`.
pub fn run(args: Args) -> ExitCode {
    let (store, run, run_id) = match open_run(&args.run_id, "result") {
        Ok(opened) => opened,
        Err(code) => return code,
    };
    for warning in store.reconcile_run(&run) {
        eprintln!("sublaunch result: warning: {warning}");
    }
    let runtime = match super::runs::async_runtime("result") {
        Ok(runtime) => runtime,
        Err(code) => return code,
    };
    let payload = match runtime.block_on(settled_result(&store, &run_id, &run)) {
        Ok(payload) => payload,
        Err(AnswerError::NotYet(_)) => {
            let state = status_of(&run).map_or_else(|| "unknown".to_owned(), |s| state_name(&s).to_owned());
            return fail(
                "result",
                format_args!(
                    "run '{run_id}' has no result yet (it is {state}); `sublaunch wait {run_id}` waits for it"
                ),
            );
        }
        Err(e) => return fail("result", e),
    };
    if args.json {
        say!(
            "{}",
            serde_json::to_string_pretty(&answer_json(&payload)).unwrap_or_default()
        );
    } else {
        let answer = super::terminal_text::for_terminal(&answer_text(&payload));
        let answer = answer.trim_end_matches('\n');
        if !answer.is_empty() {
            say!("{answer}");
        }
        for line in sublaunch::runs::acceptance_summaries(&payload) {
            eprintln!("{}", super::terminal_text::for_terminal(&line));
        }
        for line in sublaunch::runs::sandbox_summaries(&payload) {
            eprintln!("{}", super::terminal_text::for_terminal(&line));
        }
        for line in sublaunch::runs::worktree_summaries(&payload) {
            eprintln!("{}", super::terminal_text::for_terminal(&line));
        }
        if let Some(error) = &payload.error {
            eprintln!("{run_id}: {}", payload.state);
            let error = super::launching::in_users_unit(error, None);
            eprintln!("{}", super::terminal_text::for_terminal(&error));
        }
    }
    match (payload.success, payload.failure_kind) {
        (true, _) => ExitCode::SUCCESS,
        (false, Some(kind)) => super::runs::exit_of(kind),
        (false, None) => ExitCode::FAILURE,
    }
}
