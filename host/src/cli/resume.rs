//! `sublaunch resume RUN_ID [--task TEXT [--step LABEL]] [--wait] [--json]`: revival. A new
//! run holds the source's session lease (`revivalLease {sessionFile:
//! <source>/launch-plan.json, runId: <new>, sourceRunId: RUN_ID}`: the source's plan record
//! names the session, so two revivals of one run exclude each other) through the full handshake ready → ack →
//! acknowledged → confirm → confirmed → proceed (K3). Without `--task` it re-runs the source
//! run's steps; with `--task` it continues the agent conversation of the source's last step
//! (or the task `--step` names) with that follow-up, through the agent's own mechanism
//! (Claude Code `--resume`, Codex `exec resume`, pi's session file).

use super::launching::{CLI_SESSION_ID, Presentation, launch_and_report};
use super::runs::{fail, open_run};
use super::task_input::TaskSources;
use std::process::ExitCode;
use sublaunch::launch::Caller;
use sublaunch::runs::{ResumeError, ResumeRequest, resume};

/// Arguments of `sublaunch resume`.
#[derive(clap::Args)]
pub struct Args {
    /// The run to revive.
    run_id: String,
    /// Continue the agent's conversation with this follow-up instead of re-running the
    /// steps; `-` reads it from standard input. It may start with `-`.
    #[arg(short, long, value_name = "TEXT", allow_hyphen_values = true)]
    task: Option<String>,
    /// Read the follow-up from FILE (`-`: standard input).
    #[arg(long, value_name = "FILE", conflicts_with = "task")]
    task_file: Option<std::path::PathBuf>,
    /// With --task or --task-file: the step whose conversation to continue (`2`, or `2.1`
    /// for a task of a parallel group; default: the last).
    #[arg(long, value_name = "LABEL")]
    step: Option<String>,
    /// Wait for the new run's end; exit 0 complete, 1 otherwise.
    #[arg(short, long)]
    wait: bool,
    /// Print `{"runId","runDir","pid"}`.
    #[arg(short, long)]
    json: bool,
    /// The new run's completion hook (default: the source run's; '' for none).
    #[arg(long, value_name = "CMD", allow_hyphen_values = true)]
    on_end: Option<String>,
}

impl Args {
    /// The revival these arguments ask for, or the usage error to print.
    fn request(&self) -> Result<ResumeRequest, String> {
        let task = TaskSources {
            flag: self.task.clone(),
            file: self.task_file.clone(),
            positional: None,
        }
        .read()?;
        if self.step.is_some() && task.is_none() {
            return Err(
                "--step names the conversation a follow-up continues: give the follow-up with --task or --task-file"
                    .to_owned(),
            );
        }
        Ok(ResumeRequest {
            task,
            step: self.step.clone(),
            on_end: self.on_end.clone(),
            max_active: None,
            caller: Caller {
                session_id: Some(CLI_SESSION_ID.into()),
                ..Caller::default()
            },
        })
    }
}

/// Runs `sublaunch resume`: the library prepares the revival ([`resume`]), this prints.
pub fn run(args: Args) -> ExitCode {
    let request = match args.request() {
        Ok(request) => request,
        Err(message) => {
            eprintln!("sublaunch resume: {message}");
            return ExitCode::from(super::EXIT_USAGE);
        }
    };
    let (store, source, source_id) = match open_run(&args.run_id, "resume") {
        Ok(opened) => opened,
        Err(code) => return code,
    };
    let Ok(runtime) = sublaunch::launch::runtime() else {
        return fail("resume", "cannot start the async runtime");
    };
    let environment = super::environment();
    let resumed = runtime.block_on(resume(&store, &source_id, &source, request, &environment));
    drop(runtime);
    let resumed = match resumed {
        Ok(resumed) => resumed,
        Err(error @ (ResumeError::StillActive { .. } | ResumeError::NoPlan { .. })) => return fail("resume", error),
        Err(error @ (ResumeError::FollowUp(_) | ResumeError::MaxActive(_) | ResumeError::OutsideCeiling { .. })) => {
            eprintln!("sublaunch resume: {error}");
            return ExitCode::from(super::EXIT_USAGE);
        }
    };
    super::print_notices("resume", &resumed.ignored);
    launch_and_report(
        resumed.launch,
        resumed.options,
        Presentation {
            command: "resume",
            json: args.json,
            wait: args.wait,
            timeout: None,
        },
    )
}
