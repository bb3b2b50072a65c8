//! `sublaunch resume RUN_ID [--wait] [--json]`: revival. A new run re-runs the source run's
//! steps holding the source's session lease (`revivalLease {sessionFile:
//! <source>/session.json, runId: <new>, sourceRunId: RUN_ID}`), through the full handshake
//! ready → ack → acknowledged → confirm → confirmed → proceed (K3).

use super::launching::{CLI_SESSION_ID, Presentation, launch_and_report};
use super::runs::{fail, open_run, state_name, status_of};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;
use sublaunch::launch::plan_record::read_plan_record;
use sublaunch::launch::{Caller, LaunchOptions, new_run_id};
use sublaunch::runs::RunWatcher;
use sublaunch_protocol::config::RevivalLease;
use sublaunch_protocol::doc::ReadDoc;
use sublaunch_protocol::procinfo::{Liveness, ProcessOracle, SystemProcesses};

/// The session file a run leaves for revival (written by the shim at commit).
pub const SESSION_FILE: &str = "session.json";

/// Arguments of `sublaunch resume`.
#[derive(clap::Args)]
pub struct Args {
    /// The run to revive.
    run_id: String,
    /// Wait for the new run's end; exit 0 complete, 1 otherwise.
    #[arg(long)]
    wait: bool,
    /// Print `{"runId","runDir","pid"}`.
    #[arg(long)]
    json: bool,
}

/// Runs `sublaunch resume`.
pub fn run(args: Args) -> ExitCode {
    let (store, source) = match open_run(&args.run_id, "resume") {
        Ok(opened) => opened,
        Err(code) => return code,
    };
    let source_id = &args.run_id;
    store.reconcile_run(&source);
    if let Some(status) = status_of(&source).filter(|s| !s.is_terminal()) {
        let state = state_name(&status);
        return fail(
            "resume",
            format_args!("run '{source_id}' is still {state}; wait for it or stop it first"),
        );
    }
    let Ok(ReadDoc::Present(record)) = read_plan_record(&source) else {
        let why = "its launch plan is missing or unreadable";
        return fail("resume", format_args!("run '{source_id}' cannot be resumed: {why}"));
    };
    let session_file = source.join(SESSION_FILE);
    if !session_file.is_file() {
        let why = format!("it has no session file ({})", session_file.display());
        return fail("resume", format_args!("run '{source_id}' cannot be resumed: {why}"));
    }
    wait_for_source_shim(&source);
    let agent = record.plan.steps.first().map_or("run", |s| s.agent.as_str());
    let run_id = new_run_id(agent);
    let environment = super::environment();
    let options = LaunchOptions {
        run_id: Some(run_id.clone()),
        cwd: Some(PathBuf::from(&record.cwd)),
        // The agents as they are defined now, seen from the run's directory.
        agents: sublaunch::inputs::agents::discover(Path::new(&record.cwd), &environment).agents,
        caller: Caller {
            session_id: Some(CLI_SESSION_ID.into()),
            revival_lease: Some(RevivalLease {
                session_file: session_file.to_string_lossy().into_owned(),
                run_id,
                source_run_id: args.run_id.clone(),
                parent_session_id: None,
                extra: serde_json::Map::new(),
            }),
            ..Caller::default()
        },
        environment,
        ..LaunchOptions::default()
    };
    launch_and_report(
        &record.plan,
        options,
        Presentation {
            json: args.json,
            wait: args.wait,
        },
    )
}

/// How long `resume` waits for the source run's shim to exit (it releases the session lease
/// after writing its terminal status, S12).
const SOURCE_EXIT_WAIT: Duration = Duration::from_secs(10);

/// Waits (bounded) until the source run's shim is gone, so its session lease is free.
fn wait_for_source_shim(source: &sublaunch_protocol::dir::Dir) {
    let Some(status) = status_of(source) else { return };
    let Some(pid) = status.pid else { return };
    let identity = status.pid_start_identity.clone();
    let alive = || SystemProcesses.liveness(pid, identity.as_deref()) != Liveness::Dead;
    if !alive() {
        return;
    }
    let Ok(runtime) = sublaunch::launch::runtime() else {
        return;
    };
    runtime.block_on(async {
        let mut watcher = RunWatcher::new(source.path());
        watcher.watch_pid(pid, identity.as_deref());
        let deadline = sublaunch::launch::tokio::time::Instant::now() + SOURCE_EXIT_WAIT;
        while alive() && sublaunch::launch::tokio::time::Instant::now() < deadline {
            let _ = sublaunch::launch::tokio::time::timeout_at(deadline, watcher.changed()).await;
        }
    });
}
