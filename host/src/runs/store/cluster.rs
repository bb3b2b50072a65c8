//! The runs handed to a cluster (J7, J8), seen by a lister or a waiter: the engine, not a
//! pid, says whether the job's runner lives. A job the engine reports ended whose run is not
//! settled is finalized here as the launching host finalizes a runner it saw exit — the proof
//! with the engine's evidence (state, exit code and signal, reason, node), and a run whose
//! records are still active marked failed with that evidence.
//!
//! Looks are batched: a full pass asks the engine once for every job it is about to judge
//! ([`RunStore::look_at_jobs_of`]), and each run's reconciliation in that pass reads that
//! answer; outside a pass an answer serves for a second.

use super::RunStore;
use crate::cluster::engine::JobLook;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};
use sublaunch_protocol::files::dir::Dir;
use sublaunch_protocol::files::doc::ReadDoc;
use sublaunch_protocol::files::layout::names;
use sublaunch_protocol::os::processes::signal_name;
use sublaunch_protocol::records::cluster::{ClusterEvidence, ClusterJob};
use sublaunch_protocol::records::lease::SessionLeases;
use sublaunch_protocol::records::proof::{self, FinalizeContext, LeaseProbe, ProcessTerminal, RunnerInstance};
use sublaunch_protocol::records::status::{Status, read_status};

/// How long an answer of the engine is used outside a pass.
const FRESH: Duration = Duration::from_secs(1);
/// How long an answer is kept at all (for the queue reasons a listing shows).
const KEPT: Duration = Duration::from_secs(60);

/// Answers of the engine, by job id.
#[derive(Default)]
pub(crate) struct JobLooks {
    /// The answers of the pass under way, used whatever their age.
    pass: Option<BTreeMap<String, JobLook>>,
    /// Every answer, with when it was given.
    looks: BTreeMap<String, (Instant, JobLook)>,
}

impl RunStore {
    /// The engine asked about runs handed to a cluster.
    pub fn engine(&self) -> &dyn crate::cluster::engine::Engine {
        self.engine.as_ref()
    }

    /// Asks the engine about `jobs` at once; the answers serve the reconciliations that follow.
    pub fn look_at_jobs(&self, jobs: &[&ClusterJob]) -> BTreeMap<String, JobLook> {
        if jobs.is_empty() {
            return BTreeMap::new();
        }
        let looks = self.engine.look(jobs);
        if let Ok(mut cache) = self.job_looks.lock() {
            let now = Instant::now();
            cache.looks.retain(|_, (at, _)| now.duration_since(*at) < KEPT);
            for (id, look) in &looks {
                cache.looks.insert(id.clone(), (now, look.clone()));
            }
        }
        looks
    }

    /// Starts a pass over the runs `ids`: asks the engine at once about the jobs of those
    /// that were handed to a cluster, and keeps the answers until [`Self::end_pass`].
    pub(super) fn look_at_jobs_of(&self, ids: &[String]) {
        let jobs: Vec<ClusterJob> = ids
            .iter()
            .filter_map(|id| self.root.runs().open_child(id).ok().flatten())
            .filter_map(|run| read_status(&run).ok().and_then(ReadDoc::present))
            .filter_map(|status| status.cluster)
            .filter(|job| !job.job_id.is_empty())
            .collect();
        let jobs: Vec<&ClusterJob> = jobs.iter().collect();
        let looks = self.look_at_jobs(&jobs);
        if let Ok(mut cache) = self.job_looks.lock() {
            cache.pass = Some(looks);
        }
    }

    /// Ends the pass [`Self::look_at_jobs_of`] started.
    pub(super) fn end_pass(&self) {
        if let Ok(mut cache) = self.job_looks.lock() {
            cache.pass = None;
        }
    }

    /// The engine's reason each queued job of the last looks waits for, by job id
    /// (`Priority`, `Resources`, …).
    pub fn queue_reasons(&self) -> BTreeMap<String, String> {
        let Ok(cache) = self.job_looks.lock() else {
            return BTreeMap::new();
        };
        cache
            .looks
            .iter()
            .filter_map(|(id, (_, look))| match look {
                JobLook::Queued { reason: Some(reason) } => Some((id.clone(), reason.clone())),
                _ => None,
            })
            .collect()
    }

    /// How `job` is: a fresh answer of this listing, else the engine's.
    pub fn look_at_job(&self, job: &ClusterJob) -> JobLook {
        if let Ok(cache) = self.job_looks.lock() {
            if let Some(look) = cache.pass.as_ref().and_then(|pass| pass.get(&job.job_id)) {
                return look.clone();
            }
            if let Some((at, look)) = cache.looks.get(&job.job_id)
                && at.elapsed() < FRESH
            {
                return look.clone();
            }
        }
        self.look_at_jobs(&[job])
            .remove(&job.job_id)
            .unwrap_or_else(|| JobLook::Unknown("the engine did not answer about the job".into()))
    }

    /// J8: a run handed to a cluster whose job ended while its records are not settled is
    /// finalized with the engine's evidence. Returns the non-fatal problems.
    pub(super) fn settle_cluster_run(&self, run: &Dir) -> Vec<String> {
        let mut warnings = Vec::new();
        let Some(status) = read_status(run).ok().and_then(ReadDoc::present) else {
            return warnings;
        };
        let Some(job) = status.cluster.clone().filter(|j| !j.job_id.is_empty()) else {
            return warnings;
        };
        let Ok(ReadDoc::Present(stored)) = run.read_doc::<ProcessTerminal>(names::PROCESS_TERMINAL) else {
            return warnings;
        };
        if stored.state.is_final() && !status.is_active() {
            return warnings;
        }
        let JobLook::Ended(evidence) = self.look_at_job(&job) else {
            return warnings;
        };
        match self.finalize_ended_job(run, &status, &stored, evidence) {
            Ok(more) => warnings.extend(more),
            Err(e) => warnings.push(format!("Failed to record the end of Slurm job {}: {e}", job.job_id)),
        }
        warnings
    }

    fn finalize_ended_job(
        &self,
        run: &Dir,
        status: &Status,
        stored: &ProcessTerminal,
        evidence: ClusterEvidence,
    ) -> std::io::Result<Vec<String>> {
        let killed = evidence.signal.filter(|s| *s != 0);
        let exit = RunnerInstance {
            process_instance_id: stored.runner_process_instance_id.clone(),
            close_observed_at: run.os().clock.wall_ms(),
            exit_code: if killed.is_some() {
                None
            } else {
                evidence.exit_status.and_then(|s| i32::try_from(s).ok())
            },
            signal: killed.and_then(|s| i32::try_from(s).ok()).map(signal_name),
        };
        let leases = SessionLeases::open(self.root.root(), self.policy);
        let lease_probe = |file: &str| match &leases {
            Ok(leases) => leases.probe(file),
            Err(e) => LeaseProbe::Unreadable(e.to_string()),
        };
        let session_file_exists = |file: &str| Path::new(file).exists();
        let context = FinalizeContext {
            run_id: &stored.run_id,
            runner_process_instance_id: &stored.runner_process_instance_id,
            exit,
            lease_probe: &lease_probe,
            session_file_exists: &session_file_exists,
            cluster: Some(evidence.clone()),
        };
        let outcome = proof::finalize(run, &context, Some(&self.index), self.policy)?;
        let mut warnings = outcome.warnings.clone();
        if status.is_active() {
            let mut message = format!("{}, before the runner recorded how the run ended.", evidence.describe());
            if let Some(tail) = proof::stderr_tail(run) {
                message.push_str("\n\nRunner stderr tail:\n");
                message.push_str(&tail);
            }
            match proof::fail_dead_run(run, message, evidence.failure_kind(), Some(&self.index), self.policy) {
                Ok(Some(repair)) => warnings.extend(repair.warnings),
                Ok(None) => {}
                Err(e) => warnings.push(format!("Failed to mark the run failed: {e}")),
            }
        }
        // The end is final: the run sheds its scratch files, among them the configuration
        // of a job that never started (it holds the runner's environment).
        let terminal = read_status(run)
            .ok()
            .and_then(ReadDoc::present)
            .is_some_and(|s| s.is_terminal());
        if outcome.proof.state.is_final() && terminal {
            proof::shed_after_end(run, &mut warnings);
        }
        if outcome.should_emit()
            && let Some(run_id) = run.path().file_name().and_then(|n| n.to_str())
        {
            self.hooks.event(&crate::launch::HostEvent::ProcessTerminal {
                run_id: run_id.to_owned(),
                proof: outcome.proof.clone(),
            });
        }
        Ok(warnings)
    }
}

/// Whether a cluster run's runner is known to be gone: its proof, overlaid into the status,
/// is final (only the engine's word on the job makes it so).
pub(super) fn cluster_runner_gone(status: &Status) -> bool {
    status
        .process_terminal
        .clone()
        .and_then(|proof| serde_json::from_value::<ProcessTerminal>(proof).ok())
        .is_some_and(|proof| proof.state.is_final())
}
