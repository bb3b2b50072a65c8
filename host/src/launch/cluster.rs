//! J6: what the runner needs to hand a cluster run to its engine — the planned placement,
//! the engine's submission command and configuration as the launching environment has them,
//! and a runner the nodes can execute. The runner submits itself once the run is committed.

use super::error::LaunchError;
use crate::Environment;
use crate::inputs::agents::locate_program;
use std::path::Path;
use sublaunch_contract::LaunchPlan;
use sublaunch_protocol::records::cluster::{ClusterSubmission, SLURM_CONF_ENV};

/// The submission of `plan`'s cluster, `None` for a run that stays here. `shim` is the runner
/// this launch spawns; a cluster with a `sharedDir` gets its own copy of the embedded runner
/// there, since the nodes may not see where this one lives.
pub(crate) fn submission(
    plan: &LaunchPlan,
    env: &Environment,
    shim: &Path,
    cwd: &str,
) -> Result<Option<ClusterSubmission>, LaunchError> {
    // J3: the planner put every step on the same cluster.
    let Some(place) = plan.steps.iter().find_map(|s| s.cluster.clone()) else {
        return Ok(None);
    };
    // J4: admission checked it; looked up again, as the environment is what the runner gets.
    let sbatch = locate_program("sbatch", Path::new(cwd), env.var("PATH"))
        .map_err(|missing| LaunchError::Admission(super::admission::AdmissionError::NoSbatch(missing)))?;
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
        conf: env
            .var(SLURM_CONF_ENV)
            .filter(|v| !v.is_empty())
            .map(|v| v.to_string_lossy().into_owned()),
        runner: runner.to_string_lossy().into_owned(),
        environment: None,
    }))
}
