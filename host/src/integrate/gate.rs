//! The gate of an integration (G82): a scratch worktree under the state root holding the
//! merged tree, and each gate command run there as `sh -c -- <command>` like a verification
//! command of the runner — its own process group, its output kept in a file of the run,
//! a time limit (TERM, then KILL after a grace period), what is left of its group killed when
//! it exits, the whole group killed when the integration is interrupted. Its shell dies with
//! the integration however that dies (a parent-death signal from the thread that waits for
//! it), and [`super::lock`] lets the next integration end the rest of a killed one's gate.

use super::lock::{self, GateGroup, Lock};
use super::report::{GateRun, GateStatus};
use crate::runs::RunStore;
use crate::worktrees::{Git, GitError};
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};
use sublaunch_protocol::git::{At, LinkedWorktree, Repository};
use sublaunch_protocol::procinfo::ProcStat;

/// How long a gate command may run when nothing says otherwise (as the runner's).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30 * 60);
/// How long a gate asked to stop (SIGTERM) has before it is killed.
const GRACE: Duration = Duration::from_secs(5);
/// The most output kept as a gate's tail in the report.
const TAIL_BYTES: u64 = 2048;

/// One gate command, and the directory (relative to the worktree's top) it runs in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Command {
    /// The shell command.
    pub command: String,
    /// Its directory relative to the top of the checkout (`.`: the top).
    pub dir: String,
}

/// The scratch worktree the merged trees are checked out in: `<root>/worktrees/.integrate-<run>`.
#[derive(Debug)]
pub struct Scratch {
    path: PathBuf,
    linked: LinkedWorktree,
    repository: Repository,
}

impl Scratch {
    /// Makes it, detached at `commit` with nothing checked out yet (after
    /// [`Scratch::remove_left`]).
    pub fn make(
        git: &Git,
        repository: &Repository,
        store: &RunStore,
        run_id: &str,
        commit: &str,
    ) -> Result<Self, GitError> {
        let path = Self::path_of(store, run_id)?;
        let at = At::Repository(repository);
        git.run(
            at,
            &[
                "worktree".as_ref(),
                "add".as_ref(),
                "--detach".as_ref(),
                "--no-checkout".as_ref(),
                path.as_os_str(),
                commit.as_ref(),
            ],
        )?;
        let linked = repository.worktree(&path)?;
        Ok(Self {
            path,
            linked,
            repository: repository.clone(),
        })
    }

    /// Removes the scratch worktree a killed integration of `run_id` left (an integration
    /// that needs no gate would otherwise leave it for good); where it goes.
    pub fn remove_left(
        git: &Git,
        repository: &Repository,
        store: &RunStore,
        run_id: &str,
    ) -> Result<PathBuf, GitError> {
        let path = Self::path_of(store, run_id)?;
        let at = At::Repository(repository);
        // An integration killed inside `git worktree add` leaves the worktree locked
        // ("initializing"): neither `remove --force` nor `prune` touches a locked one.
        let _ = git.run(at, &["worktree".as_ref(), "unlock".as_ref(), path.as_os_str()]);
        if path.exists() {
            let _ = git.run(
                at,
                &[
                    "worktree".as_ref(),
                    "remove".as_ref(),
                    "--force".as_ref(),
                    path.as_os_str(),
                ],
            );
            let _ = std::fs::remove_dir_all(&path);
        }
        let _ = git.run(at, &["worktree", "prune"]);
        Ok(path)
    }

    fn path_of(store: &RunStore, run_id: &str) -> Result<PathBuf, GitError> {
        let dir = crate::worktrees::record::records_dir(store.root().root()).map_err(|error| GitError::Spawn {
            dir: store.root().root().path().to_owned(),
            error,
        })?;
        Ok(dir.join(format!(".integrate-{run_id}")))
    }

    /// Checks `commit` out, dropping what an earlier gate left (untracked files; ignored ones,
    /// build caches, stay).
    pub fn check_out(&self, git: &Git, commit: &str) -> Result<(), GitError> {
        let at = At::Worktree(&self.linked);
        git.run(at, &["checkout", "--quiet", "--force", "--detach", commit])?;
        git.run(at, &["clean", "-ffdq"])?;
        Ok(())
    }

    /// Runs `command` on the checked-out tree, its output in `log`; `interrupt` ends it early.
    pub async fn run(
        &self,
        command: &Command,
        log: &Path,
        limit: Duration,
        lock: &Lock,
        interrupt: &mut (dyn Interrupt + Send),
    ) -> GateRun {
        let cwd = if command.dir == "." {
            self.path.clone()
        } else {
            self.path.join(&command.dir)
        };
        let mut gate = GateRun {
            command: command.command.clone(),
            cwd: cwd.display().to_string(),
            status: GateStatus::NotStarted,
            exit_code: None,
            signal: None,
            duration_ms: 0,
            log: Some(log.display().to_string()),
            output_tail: String::new(),
            error: None,
        };
        let started = Instant::now();
        let (pid, ended) = match spawn(&command.command, &cwd, log) {
            Ok(spawned) => spawned,
            Err(e) => {
                gate.error = Some(e);
                return gate;
            }
        };
        let group = ProcStat::read(pid).ok().flatten().map(|stat| GateGroup {
            pgid: pid,
            session: stat.session,
            since: stat.start_time,
        });
        lock.note(group);
        let signal_group = |signal| {
            if let Some(pgid) = rustix::process::Pid::from_raw(pid as i32) {
                let _ = rustix::process::kill_process_group(pgid, signal);
            }
        };
        let mut ended = ended;
        let first = tokio::select! {
            status = &mut ended => Ok(status.ok().flatten()),
            () = tokio::time::sleep(limit) => Err(GateStatus::TimedOut),
            () = interrupt.wait() => Err(GateStatus::Interrupted),
        };
        let (exit, ending) = match first {
            Ok(exit) => (exit, GateStatus::Failed),
            Err(ending) => {
                signal_group(rustix::process::Signal::TERM);
                match tokio::time::timeout(GRACE, &mut ended).await {
                    Ok(exit) => (exit.ok().flatten(), ending),
                    Err(_) => {
                        signal_group(rustix::process::Signal::KILL);
                        ((&mut ended).await.ok().flatten(), ending)
                    }
                }
            }
        };
        // What the gate left behind in its group goes with it.
        signal_group(rustix::process::Signal::KILL);
        if let Some(group) = group {
            lock::kill_group(group);
        }
        lock.note(None);
        gate.duration_ms = started.elapsed().as_millis() as u64;
        gate.output_tail = tail(log);
        match exit {
            Some(exit) => {
                gate.exit_code = exit.code();
                gate.signal = exit.signal();
                gate.status = match ending {
                    GateStatus::Failed if exit.success() => GateStatus::Passed,
                    other => other,
                };
            }
            None => {
                gate.status = ending;
                gate.error = Some("its end could not be read".into());
            }
        }
        gate
    }

    /// Removes the scratch worktree (best effort: the next integration removes a leftover).
    pub fn remove(self, git: &Git) {
        let at = At::Repository(&self.repository);
        let _ = git.run(
            at,
            &[
                "worktree".as_ref(),
                "remove".as_ref(),
                "--force".as_ref(),
                self.path.as_os_str(),
            ],
        );
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// What ends a gate early: the integration being interrupted.
pub trait Interrupt {
    /// Resolves when the integration is asked to stop.
    fn wait(&mut self) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send + '_>>;
}

/// Nothing interrupts (an embedder or the MCP server decides by dropping the future).
pub struct Never;

impl Interrupt for Never {
    fn wait(&mut self) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send + '_>> {
        Box::pin(std::future::pending())
    }
}

/// Starts `sh -c -- command` in `cwd` from a thread of its own that waits for it, so that the
/// shell's parent-death signal (which follows the thread that forked it) fires exactly when
/// this process dies. Its pid, and its exit (`None`: unreadable) when it ends.
fn spawn(
    command: &str,
    cwd: &Path,
    log: &Path,
) -> Result<(u32, tokio::sync::oneshot::Receiver<Option<std::process::ExitStatus>>), String> {
    // Private like every file under the root: a gate's output may quote the tree's secrets.
    let out = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(log)
        .map_err(|e| format!("cannot create {}: {e}", log.display()))?;
    let err = out.try_clone().map_err(|e| e.to_string())?;
    let mut shell = std::process::Command::new("sh");
    shell
        .args(["-c", "--", command])
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::from(out))
        .stderr(Stdio::from(err))
        .process_group(0);
    for name in sublaunch_protocol::git::ROUTING {
        shell.env_remove(name);
    }
    // SAFETY: prctl(PR_SET_PDEATHSIG) is async-signal-safe and touches no memory of the parent.
    unsafe {
        shell.pre_exec(|| {
            rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::KILL))
                .map_err(std::io::Error::from)
        });
    }
    let (started_tx, started_rx) = std::sync::mpsc::channel();
    let (ended_tx, ended_rx) = tokio::sync::oneshot::channel();
    let cwd_shown = cwd.display().to_string();
    std::thread::Builder::new()
        .name("sublaunch-integrate-gate".into())
        .spawn(move || match shell.spawn() {
            Ok(mut child) => {
                let _ = started_tx.send(Ok(child.id()));
                let _ = ended_tx.send(child.wait().ok());
            }
            Err(e) => {
                let _ = started_tx.send(Err(format!("cannot run sh in {cwd_shown}: {e}")));
            }
        })
        .map_err(|e| format!("cannot start a thread for the gate: {e}"))?;
    let pid = started_rx
        .recv()
        .map_err(|_| "the gate's thread ended before it started".to_owned())??;
    Ok((pid, ended_rx))
}

/// The last lines of `log`, at most [`TAIL_BYTES`].
fn tail(log: &Path) -> String {
    let Ok(mut file) = File::open(log) else {
        return String::new();
    };
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    let _ = file.seek(SeekFrom::Start(len.saturating_sub(TAIL_BYTES)));
    let mut bytes = Vec::new();
    let _ = file.read_to_end(&mut bytes);
    let text = String::from_utf8_lossy(&bytes);
    let text = if len > TAIL_BYTES {
        text.split_once('\n').map_or(&*text, |(_, rest)| rest)
    } else {
        &text
    };
    text.trim_end().to_owned()
}
