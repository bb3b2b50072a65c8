//! J6: what the runner needs to hand a cluster run to its engine — the planned placement,
//! the engine's submission command and configuration as the launching environment has them,
//! and a runner the nodes can execute. The runner submits itself once the run is committed.
//! J11: a run only some of whose steps are on a cluster stays here; each of those steps gets
//! the engine's commands to run it on a node (`srun`) and to end its job (`scancel`).

use super::error::LaunchError;
use crate::Environment;
use crate::inputs::agents::locate_program;
use std::path::Path;
use sublaunch_contract::LaunchPlan;
use sublaunch_protocol::records::cluster::{ClusterStep, ClusterSubmission, SLURM_CONF_ENV};
use sublaunch_protocol::records::config::StepConfig;

/// The submission of `plan`'s cluster, `None` for a run that stays here. `shim` is the runner
/// this launch spawns; a cluster with a `sharedDir` gets its own copy of the embedded runner
/// there, since the nodes may not see where this one lives.
pub(crate) fn submission(
    plan: &LaunchPlan,
    env: &Environment,
    shim: &Path,
    cwd: &str,
) -> Result<Option<ClusterSubmission>, LaunchError> {
    // J3: the planner put every step of such a run on the same cluster.
    if !plan.steps.iter().all(|s| s.cluster.is_some()) {
        return Ok(None);
    }
    let Some(place) = plan.steps.iter().find_map(|s| s.cluster.clone()) else {
        return Ok(None);
    };
    // J4: admission checked it; looked up again, as the environment is what the runner gets.
    let sbatch = locate_program("sbatch", Path::new(cwd), env.var("PATH"))
        .map_err(|missing| LaunchError::Admission(super::admission::AdmissionError::NoSlurm(missing)))?;
    let runner = match &place.shared_dir {
        Some(shared) => crate::runner_install::install_embedded_runner(Path::new(shared)).map_err(|e| {
            LaunchError::Runner(super::options::RunnerError::Install(format!(
                "cannot put the runner in the cluster's shared directory {shared}: {e}"
            )))
        })?,
        None => shim.to_owned(),
    };
    Ok(Some(ClusterSubmission {
        place,
        sbatch: sbatch.to_string_lossy().into_owned(),
        conf: slurm_conf(env),
        runner: runner.to_string_lossy().into_owned(),
        environment: None,
    }))
}

/// J11: for a run that stays here, the steps `plan` places on a cluster get what the runner
/// needs to run them on a node. A run wholly on a cluster is left alone (its runner is the job).
pub(crate) fn place_steps(
    plan: &LaunchPlan,
    steps: &mut [StepConfig],
    env: &Environment,
    cwd: &str,
) -> Result<(), LaunchError> {
    if plan.steps.iter().all(|s| s.cluster.is_some()) {
        return Ok(());
    }
    for (step, config) in plan.steps.iter().zip(steps.iter_mut()) {
        let Some(place) = step.cluster.clone() else { continue };
        let program = |name: &str| {
            locate_program(name, Path::new(cwd), env.var("PATH"))
                .map(|p| p.to_string_lossy().into_owned())
                .map_err(|missing| LaunchError::Admission(super::admission::AdmissionError::NoSlurm(missing)))
        };
        config.cluster = Some(ClusterStep {
            place,
            srun: program("srun")?,
            scancel: program("scancel")?,
            conf: slurm_conf(env),
        });
    }
    Ok(())
}

/// `SLURM_CONF` as the launching environment has it.
fn slurm_conf(env: &Environment) -> Option<String> {
    env.var(SLURM_CONF_ENV)
        .filter(|v| !v.is_empty())
        .map(|v| v.to_string_lossy().into_owned())
}
