//! Waiting until a run we did not spawn is terminal: re-read `status.json` on every change of
//! the run directory, watch the shim's liveness (pid + start identity, X3) and reconcile when
//! it died without an end record (S13). The file reads, the liveness probe and the locked
//! reconciliation run on the blocking pool (X2).
//!
//! A terminal status is the first of the end records the shim writes (S12); the result and its
//! indexes follow. A run counts as ended here only once they are durable too (A4) — the result
//! is published, or the shim is gone — so that nobody is told a run ended whose result a power
//! loss a moment later would take away.

use super::RunStore;
use super::watch::RunWatcher;
use super::{shim_of, status_of};
use crate::launch::tokio;
use std::sync::Arc;
use std::time::Duration;
use sublaunch_protocol::files::dir::Dir;
use sublaunch_protocol::os::processes::{Processes, RealProcesses};
use sublaunch_protocol::procinfo::Liveness;
use sublaunch_protocol::procinfo::hostname;
use sublaunch_protocol::records::cluster::ClusterJob;
use sublaunch_protocol::records::status::Status;

/// How a wait ended.
pub enum WaitEnd {
    /// The run is terminal.
    Terminal(Box<Status>),
    /// The time limit passed first.
    TimedOut,
}

/// One look at a run.
pub struct Look {
    /// The terminal status, once there is one.
    pub terminal: Option<Box<Status>>,
    /// The live shim to watch: pid and start identity.
    pub shim: Option<(u32, Option<String>)>,
    /// J7: the run was handed to a cluster: its engine is asked again soon.
    pub on_engine: bool,
}

impl Look {
    /// The run after reconciling it (its runner is gone): terminal, or nothing to watch.
    fn reconciled(store: &RunStore, run: &Dir) -> Self {
        store.reconcile_run(run);
        Self {
            terminal: status_of(run).filter(Status::is_terminal).map(Box::new),
            shim: None,
            on_engine: false,
        }
    }

    /// A run still going: its shim to watch, and whether its engine is asked again soon.
    fn waiting(shim: Option<(u32, Option<String>)>, on_engine: bool) -> Self {
        Self {
            terminal: None,
            shim,
            on_engine,
        }
    }
}

/// Waits until the run in `run` is terminal, at most `limit`.
pub async fn wait_terminal(store: &Arc<RunStore>, run: &Arc<Dir>, limit: Option<Duration>) -> WaitEnd {
    let mut watcher = RunWatcher::new(run.path());
    let deadline = deadline_after(limit);
    loop {
        if let Some(status) = look_and_watch(store, run, &mut watcher).await {
            return WaitEnd::Terminal(status);
        }
        let sleep_until = async {
            match deadline {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            () = watcher.changed() => {}
            () = sleep_until => return match look(store, run).await.terminal {
                Some(status) => WaitEnd::Terminal(status),
                None => WaitEnd::TimedOut,
            },
        }
    }
}

/// A limit longer than this is no limit: the timer is not asked to sleep that far.
const UNLIMITED_BEYOND: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

/// When a wait of at most `limit` from now gives up; `None`: never. A limit too long to be a
/// point in time is no limit, never an overflow panic.
pub(super) fn deadline_after(limit: Option<Duration>) -> Option<tokio::time::Instant> {
    limit
        .filter(|limit| *limit <= UNLIMITED_BEYOND)
        .and_then(|limit| tokio::time::Instant::now().checked_add(limit))
}

/// [`look`], then watches the live shim it found.
pub async fn look_and_watch(store: &Arc<RunStore>, run: &Arc<Dir>, watcher: &mut RunWatcher) -> Option<Box<Status>> {
    let seen = look(store, run).await;
    if let Some((pid, identity)) = &seen.shim {
        watcher.watch_pid(*pid, identity.as_deref());
    }
    if seen.on_engine {
        watcher.poll_engine();
    }
    seen.terminal
}

/// One look at the run on the blocking pool: terminal → the status; a dead shim or launcher
/// → reconcile first.
pub async fn look(store: &Arc<RunStore>, run: &Arc<Dir>) -> Look {
    let (store, run) = (store.clone(), run.clone());
    tokio::task::spawn_blocking(move || look_now(&store, &run))
        .await
        .unwrap_or(Look {
            terminal: None,
            shim: None,
            on_engine: false,
        })
}

fn look_now(store: &RunStore, run: &Dir) -> Look {
    let Some(status) = status_of(run) else {
        return Look {
            terminal: None,
            shim: None,
            on_engine: false,
        };
    };
    if let Some(job) = status.cluster.clone().filter(|job| !job.job_id.is_empty()) {
        return look_at_cluster_run(store, run, status, &job);
    }
    if status.is_terminal() {
        return match still_recording(store, run, &status) {
            None => Look {
                terminal: Some(Box::new(status)),
                shim: None,
                on_engine: false,
            },
            shim => Look {
                terminal: None,
                shim,
                on_engine: false,
            },
        };
    }
    let shim = shim_of(&status);
    let dead = match &shim {
        Some((pid, identity)) => RealProcesses.liveness(*pid, identity.as_deref()) == Liveness::Dead,
        None => true,
    };
    if dead {
        return Look::reconciled(store, run);
    }
    Look::waiting(shim, false)
}

/// J7: a run handed to a cluster is judged by its job, which the engine reports: it ended
/// once its records say so and its result is published (or the job is gone), or once the
/// engine says the job ended (then it is reconciled with the engine's evidence first). Its
/// runner's pid is watched only when it runs on this host.
fn look_at_cluster_run(store: &RunStore, run: &Dir, status: Status, job: &ClusterJob) -> Look {
    let here = job.node.as_deref() == Some(hostname().as_str());
    let shim = shim_of(&status).filter(|_| here);
    if status.is_terminal() {
        let published = result_published(store, run, &status);
        if published || !store.look_at_job(job).is_alive() {
            return Look {
                terminal: Some(Box::new(status)),
                shim: None,
                on_engine: false,
            };
        }
        return Look::waiting(shim, true);
    }
    if !store.look_at_job(job).is_alive() {
        return Look::reconciled(store, run);
    }
    Look::waiting(shim, true)
}

/// Whether the run's result is in `<results>` (then fsynced there, as [`still_recording`]
/// explains).
fn result_published(store: &RunStore, run: &Dir, status: &Status) -> bool {
    let Some(run_id) = status
        .run_id
        .clone()
        .or_else(|| Some(run.path().file_name()?.to_str()?.to_owned()))
    else {
        return false;
    };
    let results = store.root().results();
    match results.stat(&format!("{run_id}.json")) {
        Ok(Some(_)) => {
            if let Err(e) = results.sync() {
                log::warn!("cannot fsync {}: {e}", results.path().display());
            }
            true
        }
        Ok(None) | Err(_) => false,
    }
}

/// The shim, while it still records the end its terminal status announced: `None` once the
/// end records are durable. The shim publishes the result after the status, the indexes and
/// the terminal-run entry (each durable when its write returns), renaming it into `<results>`
/// and then fsyncing that directory; a waiter that sees the result fsyncs the directory itself
/// rather than race that last fsync. A shim that is gone has nothing left to write (killed,
/// its records are whatever S13 finds); one whose life cannot be judged is not waited for,
/// since nothing would end that wait when its result never comes.
fn still_recording(store: &RunStore, run: &Dir, status: &Status) -> Option<(u32, Option<String>)> {
    let (pid, identity) = shim_of(status)?;
    if RealProcesses.liveness(pid, identity.as_deref()) != Liveness::Alive {
        return None;
    }
    (!result_published(store, run, status)).then_some((pid, identity))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_limit_too_long_to_be_a_time_is_no_limit_not_a_panic() {
        assert!(deadline_after(None).is_none());
        assert!(deadline_after(Some(Duration::from_secs(60))).is_some());
        for huge in [
            Duration::MAX,
            Duration::from_secs(10_000_000_000_000_000_000),
            UNLIMITED_BEYOND * 2,
        ] {
            assert!(deadline_after(Some(huge)).is_none(), "{huge:?}");
        }
    }
}
