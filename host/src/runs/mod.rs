//! Runs from any process: the run store of a state root ([`RunStore`], which reconciles runs
//! no live host observes), reading a run's status, waiting until it is terminal, following its
//! directory for changes, showing it ([`RunView`], what `list --json` and the MCP server
//! print), listing every run newest first from the history index ([`history`]), and pruning
//! ended runs ([`prune`]) and their worktrees ([`worktrees`]). The CLI's `list`, `status`,
//! `wait`, `stop`, `logs --follow`, `prune`, `worktrees` and `run --wait` use these, and so can an embedder that launched a run with [`crate::launch::launch`].

pub mod answer;
pub mod feed;
pub mod history;
pub mod lineage;
pub mod prune;
pub mod request;
pub mod resume;
pub mod retention;
pub mod run_ids;
pub mod start;
pub mod stop;
pub mod store;
pub mod view;
pub mod wait;
pub mod wait_many;
pub mod watch;
pub mod worktrees;

pub use answer::{
    AnswerError, acceptance_summaries, answer_json, answer_text, read_result, run_usage, sandbox_summaries,
    settled_result, worktree_summaries,
};
pub use history::{HistoryFilter, Listed, Page};
pub use request::{RunRequest, Work};
pub use resume::{ResumeError, ResumeRequest, Resumed, resume};
pub use run_ids::{RunIdError, resolve_run_id};
pub use stop::{request_stop, stop_and_wait};
pub use store::RunStore;
pub use view::RunView;
pub use wait::{Look, WaitEnd, look, look_and_watch, wait_terminal};
pub use wait_many::{WaitMany, WaitUntil, wait_many};
pub use watch::RunWatcher;

use sublaunch_protocol::files::dir::Dir;
use sublaunch_protocol::files::doc::ReadDoc;
use sublaunch_protocol::records::status::{Status, read_status};

/// The run's `status.json` as a typed document; absent or corrupt as `None`.
pub fn status_of(run: &Dir) -> Option<Status> {
    read_status(run).ok().and_then(ReadDoc::present)
}

/// The shim a status names: its pid and start identity (X3).
pub(crate) fn shim_of(status: &Status) -> Option<(u32, Option<String>)> {
    Some((status.pid?, status.pid_start_identity.clone()))
}
