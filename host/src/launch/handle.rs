//! The caller's handle on a launched run: wait for the shim's commit, or for its exit and the
//! finalization (the proof).

use super::finalize::Finished;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;
use sublaunch_protocol::records::cluster::ClusterJob;
use tokio::sync::watch;

/// Whether the shim has committed the run (K7, K14 `committed`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CommitState {
    /// Not known yet.
    Pending,
    /// The shim committed: it reported `committed`, consumed the proceed file or logged
    /// `subagent.run.started`.
    Committed,
    /// The run never started (a launch failure, or H20: the shim died before committing).
    Failed(String),
}

/// Why [`LaunchHandle::committed`] did not confirm the commit.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CommitError {
    /// The run did not start; the text is the startup error.
    #[error("{0}")]
    Failed(String),
    /// The shim neither committed nor exited in time.
    #[error("Timed out after {}ms waiting for the async runner to commit.", .0.as_millis())]
    TimedOut(Duration),
    /// The supervising task is gone (the runtime shut down).
    #[error("The launch supervisor stopped before the runner committed.")]
    Abandoned,
}

/// The supervising task ended without finalizing (the runtime shut down).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("The launch supervisor stopped before the run was finalized.")]
pub struct Abandoned;

/// A handle on one launch's supervision. Clones share it; dropping every handle does not stop
/// the supervision (the exit watcher still finalizes the run).
#[derive(Clone)]
pub struct LaunchHandle {
    pub(crate) run_id: String,
    pub(crate) run_dir: PathBuf,
    pub(crate) commit: watch::Receiver<CommitState>,
    pub(crate) finished: watch::Receiver<Option<Finished>>,
    pub(crate) commit_timeout: Duration,
    /// J6: the run is placed wholly on a cluster (its runner hands it over after the commit).
    pub(crate) on_cluster: bool,
}

impl fmt::Debug for LaunchHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LaunchHandle")
            .field("run_id", &self.run_id)
            .field("commit", &*self.commit.borrow())
            .finish_non_exhaustive()
    }
}

impl LaunchHandle {
    /// The run id.
    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// `<run>`.
    pub fn run_dir(&self) -> &std::path::Path {
        &self.run_dir
    }

    /// The commit state now.
    pub fn commit_state(&self) -> CommitState {
        self.commit.borrow().clone()
    }

    /// Waits until the shim has committed the run, or its exit shows it never did (H20), or
    /// the commit timeout of the launch options passes.
    pub async fn committed(&self) -> Result<(), CommitError> {
        let mut commit = self.commit.clone();
        let wait = commit.wait_for(|state| *state != CommitState::Pending);
        match tokio::time::timeout(self.commit_timeout, wait).await {
            Err(_) => Err(CommitError::TimedOut(self.commit_timeout)),
            Ok(Err(_)) => Err(CommitError::Abandoned),
            Ok(Ok(state)) => match &*state {
                CommitState::Committed => Ok(()),
                CommitState::Failed(error) => Err(CommitError::Failed(error.clone())),
                CommitState::Pending => Err(CommitError::Abandoned),
            },
        }
    }

    /// Waits for the shim's exit and the finalization of the run (S7), without a time limit.
    pub async fn finished(&self) -> Result<Finished, Abandoned> {
        let mut finished = self.finished.clone();
        let result = finished.wait_for(Option::is_some).await;
        match result {
            Ok(value) => value.clone().ok_or(Abandoned),
            Err(_) => Err(Abandoned),
        }
    }

    /// J6: for a run placed on a cluster, waits until its runner handed it to the engine (it
    /// exits right after the engine accepted the job): the job, or the run's failure when the
    /// engine refused it. `Ok(None)` at once for a run that stays here.
    pub async fn handed_over(&self) -> Result<Option<ClusterJob>, String> {
        if !self.on_cluster {
            return Ok(None);
        }
        let finished = self.finished().await.map_err(|e| e.to_string())?;
        match finished.handed_over {
            Some(job) => Ok(Some(job)),
            None => Err(finished
                .status
                .and_then(|status| status.error)
                .unwrap_or_else(|| "the runner ended without handing the run to the cluster".to_owned())),
        }
    }

    /// The finalization, if it already happened.
    pub fn finished_now(&self) -> Option<Finished> {
        self.finished.borrow().clone()
    }
}
