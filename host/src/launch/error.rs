//! Why a launch failed, by the stage that failed: [`LaunchError`]. Its text is the one the
//! caller is shown (and the one a failed run records, S5); how far the launch got is
//! [`super::LaunchStage`].

use std::io;
use std::sync::Arc;

pub use super::admission::AdmissionError;
pub use super::config::StepError;
pub use super::handshake::HandshakeError;
pub use super::options::RunnerError;
pub use super::preflight::{CwdError, CwdNames, DeadlineError, RootFailure};
pub use super::run_dir::RunDirError;
pub use super::step_files::StepFileError;

/// A cause from outside the launch (an embedder's hook, another module's error), shared so the
/// error stays cheap to clone.
pub type Cause = Arc<dyn std::error::Error + Send + Sync>;

/// `error` as a [`Cause`].
pub(crate) fn cause(error: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Cause {
    Arc::from(error.into())
}

/// Why a launch failed, by stage (host-and-shim.md H1–H18). `Display` is the text the caller
/// is shown, without the `Failed to start async run '<id>'` prefix
/// ([`super::LaunchFailure::message`] adds it).
#[derive(Clone, Debug, thiserror::Error)]
pub enum LaunchError {
    /// H1: a working directory is missing or not a directory.
    #[error(transparent)]
    Cwd(#[from] CwdError),
    /// H2: the runner (`sublaunch-shim`) cannot be found or installed.
    #[error(transparent)]
    Runner(#[from] RunnerError),
    /// H3: the state root cannot be opened or is not trusted.
    #[error(transparent)]
    Root(#[from] RootFailure),
    /// The run's deadline has passed, or leaves no time for its checkpoint.
    #[error(transparent)]
    Deadline(#[from] DeadlineError),
    /// This host cannot run the plan (a program or the ssh client is missing).
    #[error(transparent)]
    Admission(#[from] AdmissionError),
    /// A setting of the launch's environment is invalid (retries, host faults, the state
    /// root).
    #[error("{0}")]
    Setting(#[source] Cause),
    /// A runner step cannot be built from its plan step and agent.
    #[error(transparent)]
    Steps(#[from] StepError),
    /// The run directory cannot be chosen or created.
    #[error(transparent)]
    RunDir(#[from] RunDirError),
    /// The managed worktrees cannot be checked or created.
    #[error("{0}")]
    Worktree(#[source] Cause),
    /// A file a step reads or writes, or a pi resource it names, is not there.
    #[error(transparent)]
    StepFiles(#[from] StepFileError),
    /// H5–H7: the runner's configuration, the completion hook's record, the stale handshake
    /// files or the runner's logs cannot be written.
    #[error("{0}")]
    Files(#[source] Arc<io::Error>),
    /// The doorbell socket (K14) cannot be created.
    #[error("Failed to create the startup channel: {0}")]
    Doorbell(#[source] Arc<io::Error>),
    /// H11: the runner cannot be spawned.
    #[error("async runner did not produce a pid for cwd: {cwd}: {source}")]
    Spawn {
        /// The launch's working directory.
        cwd: String,
        /// Why the spawn failed.
        source: Arc<io::Error>,
    },
    /// The run's capacity ticket cannot be taken.
    #[error("Failed to take a capacity ticket: {0}")]
    Ticket(#[source] Arc<io::Error>),
    /// H13: the initial status or the active-run marker cannot be written.
    #[error("Failed to persist initial async status: {0}")]
    InitialStatus(#[source] Arc<io::Error>),
    /// H14: the lifecycle sidecars cannot be written.
    #[error("Failed to establish async runner lifecycle sidecar: {0}")]
    Sidecars(#[source] Arc<io::Error>),
    /// H15: the embedder's capacity claim failed.
    #[error("Failed to establish async runner capacity ownership: {0}")]
    Capacity(#[source] Cause),
    /// The launch asked not to queue, and would have waited: for a spend limit, a provider's
    /// rate-limit cooldown or a capacity slot (U8, U7).
    #[error("not started, as asked (no queueing): it would wait for {0}.")]
    WouldWait(String),
    /// The run can never fit under a spend limit: it alone reserves more than the limit allows,
    /// or its run tree spent its allowance (U9).
    #[error(
        "not started: {reason}, and the run reserves {wanted} ({from}), which the limit can never make room for. Raise the limit in settings (subagents.limits) or give the run a smaller budget (--max-cost)."
    )]
    OverLimit {
        /// The limit and what was used.
        reason: String,
        /// What the run reserves.
        wanted: String,
        /// Where that came from.
        from: String,
    },
    /// The run's reservation under the spend limits cannot be taken or checked (U9).
    #[error("Failed to check the spend limits: {0}")]
    Spend(#[source] Arc<io::Error>),
    /// H16/H17, K3–K8: the commit or the revival handshake failed.
    #[error(transparent)]
    Handshake(#[from] HandshakeError),
}

impl LaunchError {
    /// An I/O error of H5–H7.
    pub(crate) fn files(error: io::Error) -> Self {
        Self::Files(Arc::new(error))
    }
}
