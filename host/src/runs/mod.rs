//! Watching runs from any process: reading a run's status, waiting until it is terminal
//! (reconciling a run whose shim died unobserved) and following its directory for changes.
//! The CLI's `status`, `wait`, `stop`, `logs --follow` and `run --wait` use these, and so can an
//! embedder that launched a run with [`crate::launch::launch`].

pub mod answer;
pub mod prune;
pub mod request;
pub mod resume;
pub mod run_ids;
pub mod start;
pub mod stop;
pub mod wait;
pub mod wait_many;
pub mod watch;

pub use crate::launch::reconcile::RunStore;
pub use answer::{AnswerError, answer_json, answer_text, read_result, run_usage, settled_result, worktree_summaries};
pub use request::{RunRequest, Work};
pub use resume::{ResumeError, ResumeRequest, Resumed, resume};
pub use run_ids::{RunIdError, resolve_run_id};
pub use stop::request_stop;
pub use wait::{Look, WaitEnd, look, look_and_watch, wait_terminal};
pub use wait_many::{WaitMany, WaitUntil, wait_many};
pub use watch::RunWatcher;

use sublaunch_protocol::dir::Dir;
use sublaunch_protocol::doc::ReadDoc;
use sublaunch_protocol::status::{Status, read_status};

/// The run's `status.json` as a typed document; absent or corrupt as `None`.
pub fn status_of(run: &Dir) -> Option<Status> {
    read_status(run).ok().and_then(ReadDoc::present)
}

/// The shim a status names: its pid and start identity (X3).
pub(crate) fn shim_of(status: &Status) -> Option<(u32, Option<String>)> {
    Some((status.pid?, status.pid_start_identity.clone()))
}
