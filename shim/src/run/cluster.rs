//! The runner on a cluster (J6, J7): once the run is committed, a runner whose configuration
//! names a cluster hands the run to the engine instead of running it — it writes the
//! configuration the job starts from, submits `exec <runner> --scheduled <that file>` with
//! `sbatch`, records the job in `status.json` (`queued`, no pid: nothing of the run is left
//! here) and exits. On the node, the job's runner claims the run under the status lock and
//! runs it as a local runner would.

use crate::context::Ctx;
use crate::remote::script::quote;
use std::collections::BTreeMap;
use std::process::Command;
use std::time::Duration;
use sublaunch_protocol::files::doc::to_pretty_bytes;
use sublaunch_protocol::files::durability::DocKind;
use sublaunch_protocol::files::layout::names;
use sublaunch_protocol::procinfo::hostname;
use sublaunch_protocol::records::cluster::{ClusterJob, ClusterSubmission, SLURM_CONF_ENV, SLURM_JOB_ID_ENV};
use sublaunch_protocol::records::config::RunnerConfig;
use sublaunch_protocol::records::handshake::STARTUP_FD_ENV;
use sublaunch_protocol::records::status::{Change, RunState, modify_status};

/// The argument that starts a runner as a cluster job.
pub const SCHEDULED_ARG: &str = "--scheduled";

/// How long before a job's time limit its runner is sent SIGUSR1 (J10): time to end the
/// agents gracefully and record the run. Slurm may send it up to a minute earlier.
const TIME_LIMIT_WARNING_SECS: u32 = 30;

/// How long `sbatch` may take to answer.
const SUBMIT_DEADLINE: Duration = Duration::from_secs(60);

/// Environment variables of this runner that mean nothing to the job's: the configuration
/// and the startup channel belong to this start.
const NOT_FOR_THE_JOB: &[&str] = &[crate::run::start::invocation::RUNNER_CONFIG_ENV, STARTUP_FD_ENV];

/// Hands the committed run to the cluster; returns the runner's exit code.
pub fn hand_over(ctx: &mut Ctx, cluster: &ClusterSubmission) -> i32 {
    let submitted = write_job_config(ctx, cluster).and_then(|config| submit(ctx, cluster, &config));
    match submitted {
        Ok(job_id) => {
            record_job(ctx, cluster, &job_id);
            // The job takes the revival lease again when it starts (J7).
            ctx.release_lease();
            crate::process::exit::HANDED_OVER
        }
        Err(why) => {
            if let Ok(run) = ctx.open_run() {
                let _ = run.remove(names::SCHEDULED_RUNNER_CONFIG);
            }
            crate::run::after_commit::committed_startup_failure(ctx, &why)
        }
    }
}

/// The job's configuration, beside the run's records (private: it holds tokens).
fn write_job_config(ctx: &Ctx, cluster: &ClusterSubmission) -> Result<std::path::PathBuf, String> {
    let mut config: RunnerConfig = ctx.cfg.clone();
    let environment: BTreeMap<String, String> = std::env::vars()
        .filter(|(key, _)| !NOT_FOR_THE_JOB.contains(&key.as_str()))
        .collect();
    config.cluster = Some(ClusterSubmission {
        environment: Some(environment),
        ..cluster.clone()
    });
    let run = ctx
        .open_run()
        .map_err(|e| format!("cannot open the run directory: {e}"))?;
    run.write(
        names::SCHEDULED_RUNNER_CONFIG,
        &to_pretty_bytes(&config),
        ctx.policy.for_kind(DocKind::ControlFile),
    )
    .map_err(|e| format!("cannot write the job's configuration: {e}"))?;
    Ok(ctx.paths.run.join(names::SCHEDULED_RUNNER_CONFIG))
}

/// `sbatch --parsable …` with the script on stdin; the job id Slurm accepted.
fn submit(ctx: &Ctx, cluster: &ClusterSubmission, config: &std::path::Path) -> Result<String, String> {
    let place = &cluster.place;
    let run = &ctx.paths.run;
    let log = |name: &str| run.join(name).to_string_lossy().into_owned();
    let mut args = vec![
        "--parsable".to_owned(),
        format!("--job-name=sl-{}", ctx.cfg.id),
        format!("--chdir={}", ctx.cfg.cwd),
        format!("--output={}", log(names::RUNNER_STDOUT_LOG)),
        format!("--error={}", log(names::RUNNER_STDERR_LOG)),
        "--open-mode=append".to_owned(),
        // A run is not idempotent: a requeued job would run its agents again.
        "--no-requeue".to_owned(),
        // Nothing of this environment goes into the engine's records; the job's runner
        // takes it from its private configuration.
        "--export=NONE".to_owned(),
        // J10: the runner is warned before the time limit, to end the run itself.
        format!("--signal=B:USR1@{TIME_LIMIT_WARNING_SECS}"),
    ];
    args.extend(sublaunch_protocol::records::cluster::job_options(place));
    let script = format!(
        "#!/bin/sh\nexec {} {SCHEDULED_ARG} {}\n",
        quote(&cluster.runner),
        quote(&config.to_string_lossy())
    );
    let mut command = Command::new(&cluster.sbatch);
    command.args(&args).current_dir(&ctx.cfg.cwd).env_clear();
    for key in ["PATH", "HOME", "USER", "LOGNAME"] {
        if let Some(value) = std::env::var_os(key) {
            command.env(key, value);
        }
    }
    if let Some(conf) = &cluster.conf {
        command.env(SLURM_CONF_ENV, conf);
    }
    let finished = crate::process::bounded::run_capturing(command, Some(script.into_bytes()), SUBMIT_DEADLINE)
        .map_err(|e| format!("sbatch {e}"))?;
    let said = |bytes: &[u8]| String::from_utf8_lossy(bytes).trim().to_owned();
    if !finished.status.success() {
        let complaint = said(&finished.stderr);
        let complaint = complaint.strip_prefix("sbatch: error: ").unwrap_or(&complaint);
        return Err(format!("Slurm refused the job: {complaint}"));
    }
    let stdout = said(&finished.stdout);
    // `42`, or `42;cluster` on a federation.
    let job_id = stdout
        .lines()
        .next()
        .and_then(|line| line.split(';').next())
        .unwrap_or("")
        .trim();
    if job_id.is_empty() || !job_id.bytes().all(|b| b.is_ascii_digit() || b == b'_') {
        return Err(format!("sbatch accepted the job but printed no job id ({stdout:?})"));
    }
    Ok(job_id.to_owned())
}

/// Records the job in the status: `queued`, without this runner's pid. A job that already
/// started (and claimed the run) or a run that ended in the meantime is left as it is.
fn record_job(ctx: &Ctx, cluster: &ClusterSubmission, job_id: &str) {
    let Ok(run) = ctx.open_run() else { return };
    let now = ctx.now_wall();
    let job = ClusterJob {
        engine: cluster.place.engine.clone(),
        name: cluster.place.name.clone(),
        job_id: job_id.to_owned(),
        conf: cluster.conf.clone(),
        submitted_at: Some(now),
        node: None,
    };
    let durability = ctx.policy.for_kind(DocKind::RunningStatus);
    let recorded = modify_status(&run, false, |status| {
        if status.is_terminal() || status.cluster.as_ref().is_some_and(|j| j.node.is_some()) {
            return (Change::Keep, ());
        }
        status.cluster = Some(job);
        status.state = Some(RunState::Queued);
        status.pid = None;
        status.pid_start_identity = None;
        status.pid_namespace_scope = None;
        status.last_update = Some(now);
        (Change::Write(durability), ())
    });
    if let Err(e) = recorded {
        // The job runs and claims the run when it starts; until then a lister sees this
        // runner's pid gone and the run failed, which the job then respects.
        eprintln!("sublaunch-shim: cannot record Slurm job {job_id} in status.json: {e}");
    }
}

/// Why a job's runner does not run the run.
#[derive(Debug)]
pub enum ClaimRefused {
    /// The run ended before the job started (stopped while queued, or repaired).
    Ended(String),
    /// The records cannot be read or written.
    Unwritable(String),
}

/// J7: the job's runner claims the run under the status lock — its node, its job id — unless
/// the run already ended.
pub fn claim(ctx: &Ctx) -> Result<(), ClaimRefused> {
    let run = ctx.open_run().map_err(|e| ClaimRefused::Unwritable(e.to_string()))?;
    let job_id = std::env::var(SLURM_JOB_ID_ENV).ok();
    let cluster = ctx.cfg.cluster.clone();
    let now = ctx.now_wall();
    let durability = ctx.policy.for_kind(DocKind::RunningStatus);
    modify_status(&run, false, |status| {
        if status.is_terminal() {
            let state = status.state.as_ref().map_or("ended", RunState::as_str).to_owned();
            return (Change::Keep, Err(ClaimRefused::Ended(state)));
        }
        let job = status.cluster.get_or_insert_with(|| ClusterJob {
            engine: cluster.as_ref().map(|c| c.place.engine.clone()).unwrap_or_default(),
            name: cluster.as_ref().map(|c| c.place.name.clone()).unwrap_or_default(),
            conf: cluster.as_ref().and_then(|c| c.conf.clone()),
            submitted_at: Some(now),
            ..ClusterJob::default()
        });
        if let Some(id) = &job_id {
            job.job_id.clone_from(id);
        }
        job.node = Some(hostname());
        status.last_update = Some(now);
        (Change::Write(durability), Ok(()))
    })
    .map_err(|e| ClaimRefused::Unwritable(e.to_string()))?
}
