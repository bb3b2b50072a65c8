//! The launch sequence of host-and-shim.md §1.1, in order: preflight (H1–H3, and the
//! worktree checks), run directory, worktrees and step files, cfg (H5), stale files (H6), logs (H7), spawn (H8–H11) with the exit watcher armed first
//! (H12), bookkeeping (H13–H15), commit (H16) or the revival handshake (H17, K3), and the
//! failure path (K8, S5, X1, H18).

use super::blocking::{blocking, blocking_value};
use super::bookkeeping;
use super::completion_hook::HookRunner;
use super::config::{ConfigInputs, runner_config};
use super::context::{RunContext, fault_sleep, warn};
use super::doorbell::{self, HostDoorbell};
use super::environment::{ShimEnv, shim_environment};
use super::error::{LaunchError, RootFailure, cause};
use super::exit_watcher::{ExitWatcher, ProcessControl};
use super::failure::{LaunchFailure, LaunchStage};
use super::handle::{CommitState, LaunchHandle};
use super::handshake::Handshake;
use super::options::{HostEvent, LaunchOptions};
use super::plan_record::{PlanRecord, write_plan_record};
use super::preflight;
use super::run_dir::{self, Origin};
use super::setup::Setup;
use super::spawn::{self, SpawnRequest};
use super::spec::Launch;
use super::startup_failure;
use super::supervise::{Settled, Supervisor};
use crate::worktrees::{self, WorktreePlan};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use sublaunch_protocol::files::trust::TrustedRoot;
use sublaunch_protocol::os::faults::HostPoint;
use sublaunch_protocol::os::random::uuid_v4;
use sublaunch_protocol::records::config::{RunnerConfig, StepConfig};
use sublaunch_protocol::records::handshake::host_state_timeout;
use sublaunch_protocol::records::hook::{self, HookSpec};
use sublaunch_protocol::records::status::Status;
use tokio::sync::{oneshot, watch};

/// A run that started: the launch committed from the host's side.
#[derive(Debug)]
pub struct Launched {
    /// The run id.
    pub run_id: String,
    /// `<run>`.
    pub run_dir: PathBuf,
    /// Where the shim writes the run's result (`<results>/<runId>.json`).
    pub result_path: PathBuf,
    /// The shim's pid.
    pub pid: u32,
    /// H4.
    pub runner_process_instance_id: String,
    /// Commit and finalization of the run.
    pub handle: LaunchHandle,
}

/// Plans become runs: launches `launch` per `options` (see the module documentation of
/// [`super`]). Must run inside a tokio runtime with I/O and time enabled.
pub async fn launch(launch: Launch, options: LaunchOptions) -> Result<Launched, LaunchFailure> {
    let setup = Setup::new(&launch, &options).map_err(LaunchFailure::preflight)?;
    let launch = Arc::new(launch);
    let (root, worktree_plan) = preflight(&launch, &options, &setup).await?;
    preflight::sweep_once(&root);
    let instance = uuid_v4(setup.os.random.as_ref());
    let (run_id, run, origin) = setup.establish_run_dir(&root, &launch, &instance).await?;
    let ctx = Arc::new(RunContext {
        cfg_path: setup.layout.runner_config(&run_id),
        run_id: run_id.clone(),
        run: Arc::new(run),
        root,
        runner_process_instance_id: instance.clone(),
        policy: setup.policy,
        faults: setup.faults.clone(),
        hooks: options.hooks.clone(),
        os: setup.os.clone(),
        launch: launch.clone(),
        terminate_grace: options.timeouts.terminate_grace,
        on_end: launch.on_end.as_ref().map(|_| {
            HookRunner::new(
                setup.layout.root(),
                Some(setup.shim.clone()),
                options.environment.clone(),
                options.env.clone(),
            )
        }),
        worktrees: std::sync::Mutex::new(None),
        spend_waits: std::sync::atomic::AtomicBool::new(false),
    });
    let spawned = match spawn_runner(&ctx, worktree_plan, &setup, &options).await {
        Ok(spawned) => spawned,
        Err(error) => return Err(fail_before_spawn(&ctx, origin, error).await),
    };
    let (config, spawned, host_doorbell) = spawned;
    // H12: the watcher owns the child before anything else happens.
    let pid = spawned.child.id();
    let control: Arc<dyn ProcessControl> = Arc::new(ExitWatcher::arm(spawned.child, spawned.pidfd, setup.os.clone()));
    let (handle, settled_tx) = supervise(&ctx, &control, options.timeouts.commit);
    let mut doorbell = host_doorbell;
    let identity = spawned.start_identity.clone();
    let recorded = spawned.recorded_pid;
    let status = bookkeeping::initial_status_document(&ctx, &setup, recorded, spawned.start_identity);
    let runner = bookkeeping::Runner {
        pid: recorded,
        identity,
    };
    let committed = pre_commit(
        &ctx,
        control.as_ref(),
        doorbell.as_mut(),
        (runner, status),
        &config,
        &options,
    )
    .await;
    match committed {
        Ok(()) => {
            let _ = settled_tx.send(Settled::Started(doorbell));
            options.hooks.event(&HostEvent::AsyncStarted {
                run_id: run_id.clone(),
                pid,
                session_id: launch.caller.session_id.clone(),
                mode: setup.mode.to_owned(),
                agents: launch.plan.steps.iter().map(|s| s.agent.clone()).collect(),
                async_dir: ctx.run.path().to_owned(),
            });
            Ok(Launched {
                result_path: setup.layout.result_path(&run_id),
                run_id,
                run_dir: ctx.run.path().to_owned(),
                pid,
                runner_process_instance_id: instance,
                handle,
            })
        }
        Err(error) => Err(fail_pre_proceed(&ctx, control.as_ref(), doorbell, settled_tx, error, pid, handle).await),
    }
}

/// Every check [`launch`] makes of `launch` before it writes or starts anything, with nothing
/// written or started: the programs the steps need, the deadline, the working directories,
/// the shim, the worktrees' repositories, and the files the steps read or write. What `run
/// --dry-run` runs, so that a plan it prints is one the launch accepts. The state root is not
/// opened (that would create it).
pub async fn check(launch: &Launch, options: &LaunchOptions) -> Result<(), LaunchError> {
    let setup = Setup::new(launch, options)?;
    preflight::check_deadline(&launch.plan, &launch.limits, setup.os.clock.wall_ms())?;
    let (plan, worktree_options) = (launch.plan.clone(), launch.worktrees.clone());
    let (env, cwd) = (options.environment.clone(), setup.cwd.clone());
    let (checks, shim, mut steps) = (setup.cwd_checks, setup.shim, setup.steps);
    blocking_value(move || -> Result<(), LaunchError> {
        preflight::check_cwds(&checks)?;
        preflight::check_shim(&shim)?;
        if plan.steps.iter().any(|s| s.worktree) {
            worktrees::prepare(&plan, &worktree_options, &env, Path::new(&cwd))
                .map_err(|e| LaunchError::Worktree(cause(e)))?;
        }
        // A step bound for a worktree reads its files from the checkout the worktree copies.
        Ok(super::step_files::resolve(&mut steps, &env)?)
    })
    .await
    .unwrap_or_else(|| Err(LaunchError::Worktree(cause("cannot launch: the checks did not finish"))))
}

/// Arms the supervising task (K14 `committed`, H19): the caller's handle, and the sender the
/// launch tells how it settled.
fn supervise(
    ctx: &Arc<RunContext>,
    control: &Arc<dyn ProcessControl>,
    commit_timeout: std::time::Duration,
) -> (LaunchHandle, oneshot::Sender<Settled>) {
    let (settled_tx, settled_rx) = oneshot::channel();
    let (commit_tx, commit_rx) = watch::channel(CommitState::Pending);
    let (finished_tx, finished_rx) = watch::channel(None);
    tokio::spawn(
        Supervisor {
            ctx: ctx.clone(),
            control: control.clone(),
            settled: settled_rx,
            commit: commit_tx,
            finished: finished_tx,
        }
        .run(),
    );
    let handle = LaunchHandle {
        run_id: ctx.run_id.clone(),
        run_dir: ctx.run.path().to_owned(),
        commit: commit_rx,
        finished: finished_rx,
        commit_timeout,
        on_cluster: ctx.launch.plan.steps.iter().all(|s| s.cluster.is_some()),
    };
    (handle, settled_tx)
}

/// A failure after the spawn, before proceed (K8, S5, X1, H18): the failure persisted, the
/// shim terminated, the worktrees removed, the supervisor told.
async fn fail_pre_proceed(
    ctx: &Arc<RunContext>,
    control: &dyn ProcessControl,
    doorbell: Option<HostDoorbell>,
    settled: oneshot::Sender<Settled>,
    error: LaunchError,
    pid: u32,
    handle: LaunchHandle,
) -> LaunchFailure {
    let termination_observed = startup_failure::fail_pre_proceed(ctx, control, &error.to_string()).await;
    let context = ctx.clone();
    let _ = blocking_value(move || context.remove_worktrees()).await;
    // The doorbell stays open until the shim is terminated: closing it first would make the
    // shim report "host vanished" instead of the host's error.
    drop(doorbell);
    let _ = settled.send(Settled::Failed(error.to_string()));
    LaunchFailure {
        error,
        stage: LaunchStage::NotCommitted {
            run_id: ctx.run_id.clone(),
            runner_process_instance_id: ctx.runner_process_instance_id.clone(),
            pid,
            termination_observed,
            handle,
        },
    }
}

/// H1–H3 and the worktree checks, before anything is written: the verified root and the
/// worktrees to make.
async fn preflight(
    launch: &Arc<Launch>,
    options: &LaunchOptions,
    setup: &Setup,
) -> Result<(Arc<TrustedRoot>, Option<WorktreePlan>), LaunchFailure> {
    preflight::check_deadline(&launch.plan, &launch.limits, setup.os.clock.wall_ms())
        .map_err(LaunchFailure::preflight)?;
    let (checks, shim) = (setup.cwd_checks.clone(), setup.shim.clone());
    blocking_value(move || -> Result<(), LaunchError> {
        preflight::check_cwds(&checks)?;
        Ok(preflight::check_shim(&shim)?)
    })
    .await
    .unwrap_or(Ok(()))
    .map_err(LaunchFailure::preflight)?;
    let layout = setup.layout.clone();
    let os = setup.os.clone();
    let root = blocking_value(move || preflight::open_root(&layout, os))
        .await
        .unwrap_or(Err(RootFailure::Unfinished))
        .map_err(LaunchFailure::preflight)?;
    if !launch.plan.steps.iter().any(|s| s.worktree) {
        return Ok((Arc::new(root), None));
    }
    let (launch, env, cwd) = (launch.clone(), options.environment.clone(), setup.cwd.clone());
    let checked =
        blocking_value(move || worktrees::prepare(&launch.plan, &launch.worktrees, &env, Path::new(&cwd))).await;
    match checked {
        Some(checked) => {
            let plan = checked.map_err(|e| LaunchFailure::preflight(LaunchError::Worktree(cause(e))))?;
            Ok((Arc::new(root), plan))
        }
        None => {
            let unfinished = cause("the worktree checks did not finish");
            Err(LaunchFailure::preflight(LaunchError::Worktree(unfinished)))
        }
    }
}

/// The runner steps in their final directories: the worktrees made (and recorded in `ctx`,
/// so a failed launch removes them), the steps' files resolved there.
async fn steps_in_place(
    ctx: &Arc<RunContext>,
    worktree_plan: Option<WorktreePlan>,
    setup: &Setup,
    env: &crate::Environment,
) -> Result<Vec<StepConfig>, LaunchError> {
    let mut steps = setup.steps.clone();
    if let Some(worktree_plan) = worktree_plan {
        let context = ctx.clone();
        let now = setup.os.clock.wall_ms();
        let created = blocking_value(move || worktree_plan.create(&context.run_id, context.root.root(), now))
            .await
            .ok_or_else(|| LaunchError::Worktree(cause("the worktrees were not created")))?
            .map_err(|e| LaunchError::Worktree(cause(e)))?;
        created.apply(&mut steps);
        if let Ok(mut slot) = ctx.worktrees.lock() {
            *slot = Some(created);
        }
    }
    super::step_files::resolve(&mut steps, env)?;
    Ok(steps)
}

/// H5–H11: the runner's configuration and files, then the spawn.
async fn spawn_runner(
    ctx: &Arc<RunContext>,
    worktree_plan: Option<WorktreePlan>,
    setup: &Setup,
    options: &LaunchOptions,
) -> Result<(RunnerConfig, spawn::Spawned, Option<HostDoorbell>), LaunchError> {
    let mut steps = steps_in_place(ctx, worktree_plan, setup, &options.environment).await?;
    let (launch, run_id) = (&ctx.launch, &ctx.run_id);
    super::cluster::place_steps(&launch.plan, &mut steps, &options.environment, &setup.cwd)?;
    let cluster = super::cluster::submission(&launch.plan, &options.environment, &setup.shim, &setup.cwd)?;
    let mut config = runner_config(ConfigInputs {
        launch,
        run_id,
        runner_process_instance_id: &ctx.runner_process_instance_id,
        steps,
        result_path: setup.layout.result_path(run_id).to_string_lossy().into_owned(),
        cwd: setup.cwd.clone(),
        async_dir: ctx.run.path().to_string_lossy().into_owned(),
        agent_umask: options.agent_umask,
        cluster,
    });
    config.spend = super::spend::plan(ctx, &config).await?;
    refuse_a_wait(ctx, &config).await?;
    let record = PlanRecord {
        version: 1,
        run_id: run_id.clone(),
        cwd: setup.cwd.clone(),
        mode: setup.mode.to_owned(),
        plan: launch.plan.clone(),
        launched_from: launch.launched_from.clone(),
    };
    let (spawn_request, host_doorbell) = prepare_spawn(ctx, &config, record, options, setup).await?;
    let spawned = blocking(move || spawn::spawn_shim(spawn_request))
        .await
        .map_err(|e| LaunchError::Spawn {
            cwd: setup.cwd.clone(),
            source: Arc::new(e),
        })?;
    Ok((config, spawned, host_doorbell))
}

/// A run that can never fit under a spend limit is refused (it would wait for ever); so is one
/// that asked not to queue when it would wait for a spend limit or a provider's cooldown.
async fn refuse_a_wait(ctx: &Arc<RunContext>, config: &RunnerConfig) -> Result<(), LaunchError> {
    if let Some(plan) = &config.spend
        && let Some(short) = super::spend::shortfall(ctx, plan).await?
    {
        if short.never() {
            return Err(LaunchError::OverLimit {
                reason: short.reason(),
                wanted: format!("${:.2}", short.wanted.cost_usd),
                from: plan.estimate_from.clone(),
            });
        }
        if ctx.launch.limits.no_queue {
            return Err(LaunchError::WouldWait(short.reason()));
        }
        ctx.spend_waits.store(true, std::sync::atomic::Ordering::Relaxed);
    }
    if !ctx.launch.limits.no_queue {
        return Ok(());
    }
    if let Some(cooldown) = bookkeeping::provider_cooling(ctx, config).await {
        let left = cooldown.until.saturating_sub(ctx.os.clock.wall_ms()).div_ceil(1000);
        return Err(LaunchError::WouldWait(format!(
            "{} to cool down after a rate limit ({left} s left)",
            cooldown.provider
        )));
    }
    Ok(())
}

/// H5–H7 and the doorbell: everything the spawn needs.
async fn prepare_spawn(
    ctx: &Arc<RunContext>,
    config: &RunnerConfig,
    record: PlanRecord,
    options: &LaunchOptions,
    setup: &Setup,
) -> Result<(SpawnRequest, Option<HostDoorbell>), LaunchError> {
    ctx.fault_sleep(HostPoint::Cfg).await;
    let context = ctx.clone();
    let config_copy = config.clone();
    blocking(move || {
        // The completion hook is recorded in the run first: whoever fires it for a shim that
        // died reads it there (the cfg file is gone by then).
        if let Some(on_end) = &config_copy.on_end {
            let spec = HookSpec {
                version: 1,
                run_id: config_copy.id.clone(),
                on_end: on_end.clone(),
                cwd: config_copy.cwd.clone(),
                umask: config_copy.agent_umask,
            };
            hook::write_spec(&context.run, &spec, context.policy)
                .map_err(|e| std::io::Error::new(e.kind(), format!("Failed to record the completion hook: {e}")))?;
        }
        spawn::write_config(context.root.root(), &config_copy, &context.faults, context.policy)?;
        if let Err(e) = write_plan_record(&context.run, &record, context.policy) {
            warn(&format!(
                "could not record the launch plan of '{}': {e}",
                context.run_id
            ));
        }
        spawn::delete_stale_handshake(&context.run)
    })
    .await
    .map_err(LaunchError::files)?;
    fault_sleep(&ctx.faults, HostPoint::Logs).await;
    let context = ctx.clone();
    let (stdout, stderr) = blocking(move || spawn::open_logs(&context.run, &context.faults))
        .await
        .map_err(LaunchError::files)?;
    let (stdin, host_doorbell) = if options.doorbell {
        let no_channel = |e: std::io::Error| LaunchError::Doorbell(Arc::new(e));
        let pair = doorbell::pair().map_err(no_channel)?;
        let host = HostDoorbell::new(pair.host).map_err(no_channel)?;
        (Some(pair.child), Some(host))
    } else {
        (None, None)
    };
    let env = shim_environment(
        options.environment.vars(),
        &ShimEnv {
            cfg_path: &ctx.cfg_path,
            session_id: ctx.caller().session_id.as_deref(),
            doorbell: options.doorbell,
            root: setup.layout.root(),
            extra: &options.env,
        },
    );
    Ok((
        SpawnRequest {
            shim: setup.shim.clone(),
            config: ctx.cfg_path.clone(),
            env,
            stdin,
            stdout,
            stderr,
        },
        host_doorbell,
    ))
}

/// A failure before the shim exists: no status, no marker (H11); the cfg file goes (H5 ⊕),
/// a run directory this launch created goes, capacity is rolled back.
async fn fail_before_spawn(ctx: &Arc<RunContext>, origin: Origin, error: LaunchError) -> LaunchFailure {
    let context = ctx.clone();
    let _ = blocking(move || {
        // Before the run directory goes: a record of worktrees is never left without its run.
        context.remove_worktrees();
        let _ = std::fs::remove_file(&context.cfg_path);
        if origin == Origin::Created {
            run_dir::discard(context.root.runs(), &context.run_id);
        }
        Ok(())
    })
    .await;
    startup_failure::rollback_capacity(ctx);
    LaunchFailure::before_spawn(&ctx.run_id, &ctx.runner_process_instance_id, error)
}

/// H13–H16/H17: from the capacity ticket and the initial status to the commit point.
async fn pre_commit(
    ctx: &Arc<RunContext>,
    control: &dyn ProcessControl,
    doorbell: Option<&mut HostDoorbell>,
    (runner, mut status): (bookkeeping::Runner, Status),
    config: &RunnerConfig,
    options: &LaunchOptions,
) -> Result<(), LaunchError> {
    // J6: a cluster run waits in the engine's queue, which is its capacity queue; it takes no
    // slot here.
    let on_cluster = config.cluster.is_some();
    let over_cap = !on_cluster && !bookkeeping::take_ticket(ctx, runner).await?;
    if over_cap && ctx.launch.limits.no_queue {
        let cap = ctx.launch.limits.max_active.map_or(0, std::num::NonZeroU32::get);
        return Err(LaunchError::WouldWait(format!(
            "a capacity slot ({cap} runs may be active at once)"
        )));
    }
    // U7, U9: a run whose first steps' provider cools down, or that does not fit under a spend
    // limit, waits for it, queued; its runner starts it when it may.
    let waits = !on_cluster
        && (ctx.spend_waits.load(std::sync::atomic::Ordering::Relaxed)
            || bookkeeping::provider_cooling(ctx, config).await.is_some());
    if over_cap || waits {
        status.state = Some(sublaunch_protocol::records::status::RunState::Queued);
    }
    bookkeeping::initial_status(ctx, status).await?;
    bookkeeping::sidecars(ctx).await?;
    bookkeeping::capacity(ctx).await?;
    let mut handshake = Handshake {
        ctx,
        control,
        doorbell,
        timeout: options.timeouts.startup.unwrap_or_else(host_state_timeout),
    };
    Ok(match &config.launch_barrier_token {
        Some(token) => handshake.fresh_commit(token).await,
        None => handshake.revival().await,
    }?)
}
