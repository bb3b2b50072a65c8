//! A run handed to a cluster engine (J6, J7, J8, J11): what the runner needs to submit itself as a job
//! ([`ClusterSubmission`], in the runner configuration), the job it became ([`ClusterJob`], in
//! `status.json`), and the engine's word on how that job ended ([`ClusterEvidence`], in the
//! proof). The runner is the job: while Slurm holds it, nothing of the run runs here.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use sublaunch_contract::ClusterRef;

/// The environment variable Slurm sets in a batch job to its job id.
pub const SLURM_JOB_ID_ENV: &str = "SLURM_JOB_ID";
/// The environment variable Slurm sets to the number of times the job was requeued.
pub const SLURM_RESTART_COUNT_ENV: &str = "SLURM_RESTART_COUNT";
/// The environment variable that names the Slurm configuration every Slurm command reads.
pub const SLURM_CONF_ENV: &str = "SLURM_CONF";

/// The options a job gets from its placement (`--partition=gpu`, `--time=90`, …); one left
/// out of the placement is the cluster's default.
pub fn job_options(place: &ClusterRef) -> Vec<String> {
    [
        ("--partition", place.partition.clone()),
        ("--account", place.account.clone()),
        ("--qos", place.qos.clone()),
        ("--time", place.time_limit_minutes.map(|m| m.to_string())),
        ("--cpus-per-task", place.cpus.map(|c| c.to_string())),
        ("--mem", place.memory.clone()),
    ]
    .into_iter()
    .filter_map(|(flag, value)| Some(format!("{flag}={}", value?)))
    .collect()
}

/// How the runner submits itself (in the runner configuration, written by the host).
#[serde_with_macros::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterSubmission {
    /// The placement the planner decided.
    pub place: ClusterRef,
    /// The absolute path of `sbatch` on the launching machine.
    pub sbatch: String,
    /// The Slurm configuration the launching machine uses (`SLURM_CONF`); absent: Slurm's
    /// default. Every later command about the job uses the same.
    pub conf: Option<String>,
    /// The runner the job executes: a path every node sees.
    pub runner: String,
    /// The runner's environment, for the job (written by the runner when it hands itself
    /// over; the job is submitted with no environment of its own, so nothing of it reaches
    /// the engine's records).
    pub environment: Option<BTreeMap<String, String>>,
}

/// A step of a run that stays here, run on a cluster's node through `srun` (J11): the run's
/// other steps run here, so its runner stays here too and waits for the step's job.
#[serde_with_macros::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterStep {
    /// The placement the planner decided.
    pub place: ClusterRef,
    /// The absolute path of `srun` on the launching machine.
    pub srun: String,
    /// The absolute path of `scancel` there, to end the step's job when `srun` could not.
    pub scancel: String,
    /// The Slurm configuration the launching machine uses (`SLURM_CONF`).
    pub conf: Option<String>,
}

/// The job a run became (`status.json` `cluster`).
#[serde_with_macros::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterJob {
    /// `slurm`.
    pub engine: String,
    /// The cluster as the run named it (`slurm:debug`, a name from settings).
    pub name: String,
    /// The engine's job id.
    pub job_id: String,
    /// The Slurm configuration the job was submitted with.
    pub conf: Option<String>,
    /// Wall ms when the engine accepted the job.
    pub submitted_at: Option<u64>,
    /// The host the runner started on, once it started.
    pub node: Option<String>,
}

/// The engine's word on how a job ended, kept in the proof (`process-terminal.json`
/// `cluster`): what a run whose runner recorded nothing ended with.
#[serde_with_macros::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterEvidence {
    /// `slurm`.
    pub engine: String,
    /// The job id.
    pub job_id: String,
    /// The engine's final state (`COMPLETED`, `FAILED`, `CANCELLED`, `TIMEOUT`, …), or `GONE`
    /// when the engine forgot the job and kept no record of its end.
    pub state: String,
    /// The batch task's exit status.
    pub exit_status: Option<u32>,
    /// The signal that killed the batch task.
    pub signal: Option<u32>,
    /// The engine's reason (`NonZeroExitCode`, `TimeLimit`, …).
    pub reason: Option<String>,
    /// The nodes the job ran on.
    pub node: Option<String>,
    /// When it started, as the engine prints it.
    pub start_time: Option<String>,
    /// When it ended, as the engine prints it.
    pub end_time: Option<String>,
    /// Where this was read: `scontrol`, `squeue`, `jobcomp` (the job-completion log) or
    /// `none`.
    pub source: String,
}

impl ClusterEvidence {
    /// Why a run whose job ended this way, before its runner recorded the end, did not
    /// complete (D1).
    pub fn failure_kind(&self) -> crate::records::failure::FailureKind {
        use crate::records::failure::FailureKind;
        match self.state.as_str() {
            "TIMEOUT" => FailureKind::Timeout,
            "DEADLINE" => FailureKind::Deadline,
            "NODE_FAIL" | "BOOT_FAIL" => FailureKind::ConnectionLost,
            "CANCELLED" => FailureKind::Stopped,
            "OUT_OF_MEMORY" | "PREEMPTED" => FailureKind::Killed,
            _ => FailureKind::RunnerLost,
        }
    }

    /// `Slurm job 42 ended TIMEOUT (TimeLimit) on node n1, exit 0:15` — the engine's evidence
    /// in words, for a failure message.
    pub fn describe(&self) -> String {
        let engine = match self.engine.as_str() {
            "slurm" => "Slurm",
            other => other,
        };
        let mut text = format!("{engine} job {} ended {}", self.job_id, self.state);
        if let Some(reason) = self.reason.as_deref().filter(|r| *r != "None") {
            text.push_str(&format!(" ({reason})"));
        }
        if let Some(node) = &self.node {
            text.push_str(&format!(" on node {node}"));
        }
        if let (Some(status), Some(signal)) = (self.exit_status, self.signal) {
            text.push_str(&format!(", exit {status}:{signal}"));
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn j8_evidence_in_words_names_state_reason_node_and_exit() {
        let evidence = ClusterEvidence {
            engine: "slurm".into(),
            job_id: "42".into(),
            state: "TIMEOUT".into(),
            exit_status: Some(0),
            signal: Some(15),
            reason: Some("TimeLimit".into()),
            node: Some("n1".into()),
            source: "scontrol".into(),
            ..ClusterEvidence::default()
        };
        assert_eq!(
            evidence.describe(),
            "Slurm job 42 ended TIMEOUT (TimeLimit) on node n1, exit 0:15"
        );
        let gone = ClusterEvidence {
            engine: "slurm".into(),
            job_id: "7".into(),
            state: "GONE".into(),
            reason: Some("None".into()),
            source: "none".into(),
            ..ClusterEvidence::default()
        };
        assert_eq!(gone.describe(), "Slurm job 7 ended GONE");
    }
}
