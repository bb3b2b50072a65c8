//! The seam a cluster engine plugs into (J7, J9): what the host asks of an engine about jobs
//! it did not start itself — how they are (batched: one question for any number of jobs),
//! and to cancel one. Slurm ([`super::slurm_engine::Slurm`]) is the one engine; a Kubernetes
//! provider would answer the same questions (see `docs/design/clusters.md`).

use std::collections::BTreeMap;
use sublaunch_protocol::records::cluster::{ClusterEvidence, ClusterJob};

/// How a job is, as its engine says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum JobLook {
    /// Waiting in the engine's queue; why (`Priority`, `Resources`, …).
    Queued {
        /// The engine's reason.
        reason: Option<String>,
    },
    /// Running, or ending without a final state yet.
    Running {
        /// The engine's state (`RUNNING`, `COMPLETING`, `SUSPENDED`, …).
        state: String,
        /// Where.
        node: Option<String>,
    },
    /// Ended for good, with the engine's evidence.
    Ended(ClusterEvidence),
    /// The engine gave no answer; nothing is concluded.
    Unknown(String),
}

impl JobLook {
    /// Whether the job's runner may still run (or start).
    pub fn is_alive(&self) -> bool {
        matches!(self, Self::Queued { .. } | Self::Running { .. } | Self::Unknown(_))
    }
}

/// How to cancel a job.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cancel {
    /// Ask the job's runner to stop: SIGTERM to it alone, which then ends its agents and
    /// records the run (`scancel --batch --signal=TERM`).
    AskRunner,
    /// Cancel the job: the engine signals every process of it, then kills them after its
    /// grace period (`scancel`).
    Job,
}

/// A cluster engine, as the host uses it.
pub trait Engine: Send + Sync {
    /// How `jobs` are, by job id: one question to the engine per configuration, never one
    /// per job.
    fn look(&self, jobs: &[&ClusterJob]) -> BTreeMap<String, JobLook>;
    /// Cancels `job` as `how` says; the error says why the engine refused.
    fn cancel(&self, job: &ClusterJob, how: Cancel) -> Result<(), String>;
}
