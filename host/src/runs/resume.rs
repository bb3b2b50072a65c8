//! Revival: a new run that continues an ended one (`sublaunch resume`, and any embedder). It
//! holds the source's session lease (`revivalLease {sessionFile: <source>/launch-plan.json,
//! runId: <new>, sourceRunId: <source>}`: the source's plan record names the session, so two
//! revivals of one run exclude each other) through the full handshake ready → ack →
//! acknowledged → confirm → confirmed → proceed (K3). Without a follow-up it re-runs the
//! source run's steps; with one it continues the agent conversation of the source's last step
//! (or the step a label names) through the agent's own mechanism (Claude Code `--resume`,
//! Codex `exec resume`, pi's session file).

use super::request::MaxActiveError;
use super::{RunWatcher, read_result, status_of};
use crate::Environment;
use crate::inputs::project::{Ignored, Project};
use crate::launch::plan_record::{LAUNCH_PLAN_FILE, read_plan_record};
use crate::launch::{Caller, Continuation, Launch, LaunchOptions, OnEnd, RunLimits, new_run_id};
use crate::runs::store::RunStore;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use sublaunch_contract::{LaunchPlan, PlanStep};
use sublaunch_protocol::files::dir::Dir;
use sublaunch_protocol::files::doc::ReadDoc;
use sublaunch_protocol::os::processes::{Processes, RealProcesses};
use sublaunch_protocol::procinfo::Liveness;
use sublaunch_protocol::records::config::RevivalLease;
use sublaunch_protocol::records::status::RunState;

/// A revival as a person or an agent asks for it.
#[derive(Clone, Debug, Default)]
pub struct ResumeRequest {
    /// Continue the agent's conversation with this follow-up instead of re-running the steps.
    pub task: Option<String>,
    /// With `task`: the step whose conversation to continue (`2`, or `2.1` for a task of a
    /// parallel group; `None`: the last).
    pub step: Option<String>,
    /// The new run's completion hook (`None`: the source run's; an empty command: none).
    pub on_end: Option<String>,
    /// The cap of active runs (`None`: as [`super::request::max_active`] decides).
    pub max_active: Option<std::num::NonZeroU32>,
    /// Who asks (the revival lease is added).
    pub caller: Caller,
}

/// A revival ready for [`crate::launch::launch`].
pub struct Resumed {
    /// The new run's plan and settings.
    pub launch: Launch,
    /// How to launch it.
    pub options: LaunchOptions,
    /// Project configuration left out of the agents because the project or a program in it is
    /// not trusted: each says which file, and the command that trusts it.
    pub ignored: Vec<Ignored>,
}

/// Why a run cannot be resumed.
#[derive(Debug, thiserror::Error)]
pub enum ResumeError {
    /// The source run has not ended.
    #[error("run '{run_id}' is still {state}; wait for it or stop it first")]
    StillActive {
        /// The source run.
        run_id: String,
        /// Its state.
        state: String,
    },
    /// The source run's plan record is missing or unreadable.
    #[error("run '{run_id}' cannot be resumed: its launch plan is missing or unreadable")]
    NoPlan {
        /// The source run.
        run_id: String,
    },
    /// The follow-up cannot be sent (the request should change).
    #[error(transparent)]
    FollowUp(#[from] FollowUpError),
    /// The cap of active runs could not be read.
    #[error(transparent)]
    MaxActive(#[from] MaxActiveError),
    /// Resumed from inside a run, the source run was not launched from inside it, so its plan
    /// may allow more than this run's ceiling (G61).
    #[error(
        "run '{run_id}' was not launched from inside {parent}, so it cannot be resumed from inside it: launch a new run instead"
    )]
    OutsideCeiling {
        /// The source run.
        run_id: String,
        /// The run this process runs inside.
        parent: String,
    },
}

/// Why a follow-up cannot continue the source run's conversation.
#[derive(Debug, thiserror::Error)]
pub enum FollowUpError {
    /// The follow-up is empty.
    #[error("--task is empty; give the follow-up to send")]
    EmptyTask,
    /// No step has the label asked for.
    #[error("run '{run_id}' has no step '{wanted}' (its steps: {labels})")]
    NoSuchStep {
        /// The source run.
        run_id: String,
        /// The label asked for.
        wanted: String,
        /// The labels it has, comma-separated.
        labels: String,
    },
    /// The source run has no steps.
    #[error("the run has no steps")]
    NoSteps,
    /// The source run ended with a parallel group: which conversation is not clear.
    #[error(
        "run '{run_id}' ended with {count} parallel tasks; pick the conversation to continue with --step ({labels})"
    )]
    ParallelEnd {
        /// The source run.
        run_id: String,
        /// How many tasks the group had.
        count: usize,
        /// Their labels, comma-separated.
        labels: String,
    },
    /// The source run's result could not be read.
    #[error(transparent)]
    Result(#[from] super::AnswerError),
    /// The step's agent reported no conversation.
    #[error("step {label} ('{agent}') of run '{run_id}' left no conversation to continue (its agent reported none)")]
    NoConversation {
        /// The step's label.
        label: String,
        /// Its agent.
        agent: String,
        /// The source run.
        run_id: String,
    },
    /// The step's worktree, where its conversation lives, is gone.
    #[error(
        "step {label} ('{agent}') of run '{run_id}' ran in the worktree {cwd}, which is gone (pruned?); its conversation is continued only there"
    )]
    WorktreeGone {
        /// The step's label.
        label: String,
        /// Its agent.
        agent: String,
        /// The source run.
        run_id: String,
        /// The worktree.
        cwd: String,
    },
}

/// Prepares the revival of the ended run `source_id` (its directory `source`): waits
/// (bounded) for the source's shim to release its session lease, then builds the new run
/// from the source's plan record, the agents as they are defined now, and the completion hook
/// carried over unless `request` replaces it.
pub async fn resume(
    store: &RunStore,
    source_id: &str,
    source: &Dir,
    request: ResumeRequest,
    env: &Environment,
) -> Result<Resumed, ResumeError> {
    store.reconcile_run(source);
    if let Some(status) = status_of(source).filter(|s| !s.is_terminal()) {
        return Err(ResumeError::StillActive {
            run_id: source_id.to_owned(),
            state: status.state.as_ref().map_or("unknown", RunState::as_str).to_owned(),
        });
    }
    let Ok(ReadDoc::Present(record)) = read_plan_record(source) else {
        return Err(ResumeError::NoPlan {
            run_id: source_id.to_owned(),
        });
    };
    // G61: a resumed plan is not planned again, so from inside a run only a run launched
    // from inside the same run (planned under the same ceiling) may be resumed.
    let lineage = super::lineage::Lineage::of_this_process();
    if let Some(parent) = lineage.parents.first() {
        let same = record
            .launched_from
            .as_ref()
            .is_some_and(|from| from.run_id == parent.run_id);
        if !same {
            return Err(ResumeError::OutsideCeiling {
                run_id: source_id.to_owned(),
                parent: format!("run {}", parent.run_id),
            });
        }
    }
    let session_file = source.join(LAUNCH_PLAN_FILE);
    wait_for_source_shim(source).await;
    let (plan, continuation) = match &request.task {
        None => (record.plan.clone(), None),
        Some(task) => {
            let (plan, continuation) = follow_up(store, source_id, &record.plan, task, request.step.as_deref())?;
            (plan, Some(continuation))
        }
    };
    let agent = plan.steps.first().map_or("run", |s| s.agent.as_str());
    let run_id = new_run_id(agent);
    let project = Project::open(Path::new(&record.cwd), env);
    let settings = crate::inputs::settings::Settings::load(&project, env);
    let max_active = super::request::max_active(request.max_active, env, || match &settings {
        Ok(settings) => settings.max_active().map_err(|e| e.to_string()),
        Err(e) => Err(format!("{e:#}")),
    })?;
    // The completion hook carries over from the source run unless the request replaces it.
    let carried = crate::launch::completion_hook::hook_of(source)
        .ok()
        .flatten()
        .map(|spec| spec.on_end);
    let on_end = match request.on_end.as_deref() {
        Some(command) if command.trim().is_empty() => None,
        Some(command) => Some(OnEnd::new(command, carried.as_ref().map(|h| h.timeout_ms))),
        None => carried,
    };
    // The agents as they are defined now, seen from the run's directory.
    let catalog = crate::inputs::agents::discover(&project, env);
    let mut ignored = project.ignored();
    ignored.extend(catalog.ignored.iter().cloned());
    let launch = Launch {
        run_id: Some(run_id.clone()),
        cwd: Some(PathBuf::from(&record.cwd)),
        caller: Caller {
            revival_lease: Some(RevivalLease {
                session_file: session_file.to_string_lossy().into_owned(),
                run_id,
                source_run_id: source_id.to_owned(),
                parent_session_id: None,
            }),
            ..request.caller
        },
        limits: RunLimits {
            max_active,
            ..RunLimits::default()
        },
        agents: catalog.agents,
        continuation,
        on_end,
        project_config: project.agents_config(),
        settings: settings.ok().map(Arc::new),
        launched_from: lineage.launched_from(),
        ..Launch::new(plan)
    };
    let options = LaunchOptions {
        environment: env.clone(),
        // The new run's agents trust no more than this request does now.
        env: vec![project.lineage_var()],
        ..LaunchOptions::default()
    };
    Ok(Resumed {
        launch,
        options,
        ignored,
    })
}

/// The plan of a follow-up: the chosen step of `plan` with `task`, continuing the
/// conversation its agent reported in the source run's result.
fn follow_up(
    store: &RunStore,
    source_id: &str,
    plan: &LaunchPlan,
    task: &str,
    step: Option<&str>,
) -> Result<(LaunchPlan, Continuation), FollowUpError> {
    if task.trim().is_empty() {
        return Err(FollowUpError::EmptyTask);
    }
    let label = |s: &PlanStep| match s.task_index {
        Some(task) => format!("{}.{}", s.step_index + 1, task + 1),
        None => (s.step_index + 1).to_string(),
    };
    let index = match step {
        Some(wanted) => plan.steps.iter().position(|s| label(s) == wanted).ok_or_else(|| {
            let labels: Vec<String> = plan.steps.iter().map(label).collect();
            FollowUpError::NoSuchStep {
                run_id: source_id.to_owned(),
                wanted: wanted.to_owned(),
                labels: labels.join(", "),
            }
        })?,
        None => {
            let last = plan.steps.len().checked_sub(1).ok_or(FollowUpError::NoSteps)?;
            let group: Vec<String> = plan
                .steps
                .iter()
                .filter(|s| s.task_index.is_some() && s.step_index == plan.steps[last].step_index)
                .map(label)
                .collect();
            if group.len() > 1 {
                return Err(FollowUpError::ParallelEnd {
                    run_id: source_id.to_owned(),
                    count: group.len(),
                    labels: group.join(", "),
                });
            }
            last
        }
    };
    let result = match store.run_dir(source_id) {
        Ok(Some(run)) => super::answer::result_or_status(store, source_id, &run)?,
        _ => read_result(store, source_id)?,
    };
    let chosen = &plan.steps[index];
    let step_result = result.results.get(index);
    let session = step_result
        .and_then(|r| r.facts.agent_session.as_deref())
        .ok_or_else(|| FollowUpError::NoConversation {
            label: label(chosen),
            agent: chosen.agent.clone(),
            run_id: source_id.to_owned(),
        })?;
    let session_usage = step_result.and_then(|r| r.agent_session_usage.clone());
    let mut step = chosen.clone();
    // A step that ran in a managed worktree is continued there, where its work is.
    if let Some(cwd) = step_result
        .and_then(|r| r.facts.worktree.as_ref())
        .map(|w| w.cwd.as_str())
    {
        if !Path::new(cwd).is_dir() {
            return Err(FollowUpError::WorktreeGone {
                label: label(chosen),
                agent: chosen.agent.clone(),
                run_id: source_id.to_owned(),
                cwd: cwd.to_owned(),
            });
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

/// How long a revival waits for the source run's shim to exit (it releases the session lease
/// after writing its terminal status, S12).
const SOURCE_EXIT_WAIT: Duration = Duration::from_secs(10);

/// Waits (bounded) until the source run's shim is gone, so its session lease is free.
async fn wait_for_source_shim(source: &Dir) {
    let Some(status) = status_of(source) else { return };
    let Some(pid) = status.pid else { return };
    let identity = status.pid_start_identity.clone();
    let alive = || RealProcesses.liveness(pid, identity.as_deref()) != Liveness::Dead;
    if !alive() {
        return;
    }
    let mut watcher = RunWatcher::new(source.path());
    watcher.watch_pid(pid, identity.as_deref());
    let deadline = tokio::time::Instant::now() + SOURCE_EXIT_WAIT;
    // A shim delivering its end to the completion hook released the lease already (S12): its
    // end is in the stream by then (D6).
    let hook_started = || {
        source
            .stat(sublaunch_protocol::records::stream::END_MARKER)
            .is_ok_and(|m| m.is_some())
    };
    while alive() && !hook_started() && tokio::time::Instant::now() < deadline {
        let _ = tokio::time::timeout_at(deadline, watcher.changed()).await;
    }
}
