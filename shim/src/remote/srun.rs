//! J11: a step of a run that stays here, run on a cluster's node through `srun`: the
//! adapter's command is handed to `srun`, which waits in the engine's queue, runs it on a
//! node with this environment and directory, passes its input and output through and exits
//! with its status, so the step is supervised, parsed and recorded as a local one. A stop
//! reaches the agent through `srun`, which forwards SIGTERM; a job `srun` could not end (it
//! was killed itself) is cancelled by name when the step ends.

use crate::adapter::AgentCommand;
use std::process::Command;
use std::time::Duration;
use sublaunch_protocol::records::cluster::{ClusterStep, SLURM_CONF_ENV};

/// How long `scancel` may take.
const CANCEL_DEADLINE: Duration = Duration::from_secs(10);

/// The job name of step `index` of run `run_id`: unique, so that it names only this job.
pub fn job_name(run_id: &str, index: usize) -> String {
    format!("sl-{run_id}-{index}")
}

/// `srun <options> -- <argv>` for `command`, whose environment and directory it keeps.
pub fn wrap(mut command: AgentCommand, step: &ClusterStep, job_name: &str) -> AgentCommand {
    let place = &step.place;
    let mut argv = vec![
        step.srun.clone(),
        "--quiet".to_owned(),
        format!("--job-name={job_name}"),
        "--nodes=1".to_owned(),
        "--ntasks=1".to_owned(),
        format!("--chdir={}", command.cwd),
        // The agent's environment, as a local agent has it.
        "--export=ALL".to_owned(),
    ];
    argv.extend(sublaunch_protocol::records::cluster::job_options(place));
    argv.push("--".to_owned());
    argv.append(&mut command.argv);
    command.argv = argv;
    if let Some(conf) = &step.conf {
        command.env.insert(SLURM_CONF_ENV.to_owned(), conf.clone());
    }
    command
}

/// Cancels the step's job, if one is left (its `srun` was killed before it could end it).
pub fn end_job(step: &ClusterStep, job_name: &str) {
    let mut command = Command::new(&step.scancel);
    command.args(["--quiet", &format!("--name={job_name}")]);
    if let Some(conf) = &step.conf {
        command.env(SLURM_CONF_ENV, conf);
    }
    if let Err(e) = crate::process::bounded::run(command, None, CANCEL_DEADLINE) {
        eprintln!("sublaunch-shim: cannot cancel Slurm job {job_name}: scancel {e}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn j11_the_agents_command_runs_under_srun_with_the_planned_options() {
        let step = ClusterStep {
            place: serde_json::from_value(serde_json::json!({
                "engine": "slurm", "name": "slurm:gpu", "partition": "gpu",
                "timeLimitMinutes": 90, "cpus": 4
            }))
            .unwrap(),
            srun: "/usr/bin/srun".into(),
            scancel: "/usr/bin/scancel".into(),
            conf: Some("/etc/slurm/x.conf".into()),
        };
        let command = AgentCommand {
            argv: vec!["claude".into(), "-p".into()],
            env: BTreeMap::new(),
            cwd: "/w".into(),
            stdin: None,
            clear_env: false,
            streamed_stdin: false,
        };
        let wrapped = wrap(command, &step, &job_name("r1", 2));
        assert_eq!(
            wrapped.argv,
            [
                "/usr/bin/srun",
                "--quiet",
                "--job-name=sl-r1-2",
                "--nodes=1",
                "--ntasks=1",
                "--chdir=/w",
                "--export=ALL",
                "--partition=gpu",
                "--time=90",
                "--cpus-per-task=4",
                "--",
                "claude",
                "-p"
            ]
        );
        assert_eq!(wrapped.env[SLURM_CONF_ENV], "/etc/slurm/x.conf");
    }
}
