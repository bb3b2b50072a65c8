//! `sublaunch resume RUN_ID [--task TEXT [--step LABEL]] [--wait] [--json]`: revival. A new
//! run holds the source's session lease (`revivalLease {sessionFile:
//! <source>/launch-plan.json, runId: <new>, sourceRunId: RUN_ID}`: the source's plan record
//! names the session, so two revivals of one run exclude each other) through the full handshake ready → ack →
//! acknowledged → confirm → confirmed → proceed (K3). Without `--task` it re-runs the source
//! run's steps; with `--task` it continues the agent conversation of the source's last step
//! (or the task `--step` names) with that follow-up, through the agent's own mechanism
//! (Claude Code `--resume`, Codex `exec resume`, pi's session file).

use super::launching::{CLI_SESSION_ID, Presentation, launch_and_report};
use super::runs::{fail, open_run, state_name, status_of};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;
use sublaunch::contract::{LaunchPlan, PlanStep};
use sublaunch::launch::plan_record::{LAUNCH_PLAN_FILE, read_plan_record};
use sublaunch::launch::reconcile::RunStore;
use sublaunch::launch::{Caller, Continuation, LaunchOptions, OnEnd, new_run_id};
use sublaunch::runs::RunWatcher;
use sublaunch::runs::read_result;
use sublaunch_protocol::config::RevivalLease;
use sublaunch_protocol::doc::ReadDoc;
use sublaunch_protocol::procinfo::{Liveness, ProcessOracle, SystemProcesses};

/// Arguments of `sublaunch resume`.
#[derive(clap::Args)]
pub struct Args {
    /// The run to revive.
    run_id: String,
    /// Continue the agent's conversation with this follow-up instead of re-running the
    /// steps. It may start with `-`.
    #[arg(long, allow_hyphen_values = true)]
    task: Option<String>,
    /// With --task: the step whose conversation to continue (`2`, or `2.1` for a task of a
    /// parallel group; default: the last).
    #[arg(long, value_name = "LABEL", requires = "task")]
    step: Option<String>,
    /// Wait for the new run's end; exit 0 complete, 1 otherwise.
    #[arg(long)]
    wait: bool,
    /// Print `{"runId","runDir","pid"}`.
    #[arg(long)]
    json: bool,
    /// The new run's completion hook (default: the source run's; '' for none).
    #[arg(long, value_name = "CMD", allow_hyphen_values = true)]
    on_end: Option<String>,
}

/// Runs `sublaunch resume`.
pub fn run(args: Args) -> ExitCode {
    let (store, source, source_id) = match open_run(&args.run_id, "resume") {
        Ok(opened) => opened,
        Err(code) => return code,
    };
    let source_id = &source_id;
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
    let session_file = source.join(LAUNCH_PLAN_FILE);
    wait_for_source_shim(&source);
    let (plan, continuation) = match &args.task {
        None => (record.plan.clone(), None),
        Some(task) => match follow_up(&store, source_id, &record.plan, task, args.step.as_deref()) {
            Ok((plan, continuation)) => (plan, Some(continuation)),
            Err(message) => {
                eprintln!("sublaunch resume: {message}");
                return ExitCode::from(super::EXIT_USAGE);
            }
        },
    };
    let agent = plan.steps.first().map_or("run", |s| s.agent.as_str());
    let run_id = new_run_id(agent);
    let environment = super::environment();
    let project = sublaunch::inputs::project::Project::open(Path::new(&record.cwd), &environment);
    let max_active = match super::capacity::max_active(&environment).and_then(|cap| match cap {
        Some(cap) => Ok(Some(cap)),
        None => sublaunch::inputs::settings::Settings::load(&project, &environment)
            .map_err(|e| format!("{e:#}"))?
            .max_active(),
    }) {
        Ok(cap) => cap,
        Err(message) => {
            eprintln!("sublaunch resume: {message}");
            return ExitCode::from(super::EXIT_USAGE);
        }
    };
    // The completion hook carries over from the source run unless --on-end replaces it.
    let carried = sublaunch::launch::completion_hook::hook_of(&source)
        .ok()
        .flatten()
        .map(|spec| spec.on_end);
    let on_end = match args.on_end.as_deref() {
        Some(command) if command.trim().is_empty() => None,
        Some(command) => Some(OnEnd::new(command, carried.as_ref().map(|h| h.timeout_ms))),
        None => carried,
    };
    let options = LaunchOptions {
        run_id: Some(run_id.clone()),
        cwd: Some(PathBuf::from(&record.cwd)),
        // The agents as they are defined now, seen from the run's directory.
        agents: {
            let catalog = sublaunch::inputs::agents::discover(&project, &environment);
            super::print_notices("resume", project.ignored().iter().chain(&catalog.ignored));
            catalog.agents
        },
        caller: Caller {
            session_id: Some(CLI_SESSION_ID.into()),
            revival_lease: Some(RevivalLease {
                session_file: session_file.to_string_lossy().into_owned(),
                run_id,
                source_run_id: source_id.clone(),
                parent_session_id: None,
            }),
            ..Caller::default()
        },
        environment,
        continuation,
        on_end,
        max_active,
        // The new run's agents trust no more than this command does now.
        env: vec![project.lineage_var()],
        project_config: project.agents_config(),
        ..LaunchOptions::default()
    };
    launch_and_report(
        &plan,
        options,
        Presentation {
            json: args.json,
            wait: args.wait,
        },
    )
}

/// The plan of a follow-up: the chosen step of `plan` with `task`, continuing the
/// conversation its agent reported in the source run's result.
fn follow_up(
    store: &RunStore,
    source_id: &str,
    plan: &LaunchPlan,
    task: &str,
    step: Option<&str>,
) -> Result<(LaunchPlan, Continuation), String> {
    if task.trim().is_empty() {
        return Err("--task is empty; give the follow-up to send".into());
    }
    let label = |s: &PlanStep| match s.task_index {
        Some(task) => format!("{}.{}", s.step_index + 1, task + 1),
        None => (s.step_index + 1).to_string(),
    };
    let index = match step {
        Some(wanted) => plan.steps.iter().position(|s| label(s) == wanted).ok_or_else(|| {
            let labels: Vec<String> = plan.steps.iter().map(label).collect();
            format!(
                "run '{source_id}' has no step '{wanted}' (its steps: {})",
                labels.join(", ")
            )
        })?,
        None => {
            let last = plan.steps.len().checked_sub(1).ok_or("the run has no steps")?;
            let group: Vec<String> = plan
                .steps
                .iter()
                .filter(|s| s.task_index.is_some() && s.step_index == plan.steps[last].step_index)
                .map(label)
                .collect();
            if group.len() > 1 {
                return Err(format!(
                    "run '{source_id}' ended with {} parallel tasks; pick the conversation to continue with --step ({})",
                    group.len(),
                    group.join(", ")
                ));
            }
            last
        }
    };
    let result = read_result(store, source_id).map_err(|e| e.to_string())?;
    let chosen = &plan.steps[index];
    let step_result = result.results.get(index);
    let session = step_result
        .and_then(|r| r.extra.get("agentSession"))
        .and_then(|s| s.as_str())
        .ok_or_else(|| {
            format!(
                "step {} ('{}') of run '{source_id}' left no conversation to continue (its agent reported none)",
                label(chosen),
                chosen.agent
            )
        })?;
    let session_usage = step_result
        .and_then(|r| r.extra.get("agentSessionUsage"))
        .and_then(|u| serde_json::from_value(u.clone()).ok());
    let mut step = chosen.clone();
    // A step that ran in a managed worktree is continued there, where its work is.
    if let Some(cwd) = step_result
        .and_then(|r| r.extra.get("worktree"))
        .and_then(|w| w.get("cwd"))
        .and_then(|c| c.as_str())
    {
        if !Path::new(cwd).is_dir() {
            return Err(format!(
                "step {} ('{}') of run '{source_id}' ran in the worktree {cwd}, which is gone (pruned?); its conversation is continued only there",
                label(chosen),
                chosen.agent
            ));
        }
        step.worktree = false;
        step.cwd = cwd.to_owned();
        step.requested_cwd = cwd.to_owned();
    }
    step.task = task.to_owned();
    step.step_index = 0;
    step.task_index = None;
    Ok((
        LaunchPlan::single(step),
        Continuation {
            session: session.to_owned(),
            session_usage,
        },
    ))
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
        // A shim running its completion hook released the lease already (S12).
        let hook_started = || {
            source
                .stat(sublaunch_protocol::hook::FIRED_MARKER)
                .is_ok_and(|m| m.is_some())
        };
        while alive() && !hook_started() && sublaunch::launch::tokio::time::Instant::now() < deadline {
            let _ = sublaunch::launch::tokio::time::timeout_at(deadline, watcher.changed()).await;
        }
    });
}
