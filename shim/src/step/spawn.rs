//! R10: spawning the agent as the shim's own child in a new process group.
//!
//! `std::process::Command` with `process_group(0)` (pgid = agent pid), stdin `/dev/null` (or,
//! for adapters that deliver the prompt there, a sealed in-memory file holding it, so the shim
//! never writes to a pipe the agent may not read), stdout and stderr pipes. The agent is told to
//! die with the shim (`PR_SET_PDEATHSIG`, X8): a `pre_exec` step, so fork+exec instead of
//! `posix_spawn`, which costs the small shim little. An agent that takes messages while it
//! runs gets a pipe instead ([`crate::process::input`]). Every other descriptor of the shim
//! is CLOEXEC (hygiene + every fd the shim opens), so the agent gets exactly 0, 1, 2 (F63).
//! The spawn runs with an empty signal mask. The agent is never waited for through `std`: the
//! shim reaps everything itself with `waitid(P_ALL)` (see [`crate::process::reaper`]).

use crate::adapter::AgentCommand;
use crate::process::child_setup::{die_with, input_file, with_umask};
use rustix::fd::OwnedFd;
use std::io;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};

/// A started agent.
#[derive(Debug)]
pub struct Spawned {
    /// Its pid (= its process group id).
    pub pid: u32,
    /// The read end of its stdout (non-blocking).
    pub stdout: OwnedFd,
    /// The read end of its stderr (non-blocking).
    pub stderr: OwnedFd,
    /// The write end of its stdin (non-blocking), when it takes messages while it runs.
    pub stdin: Option<OwnedFd>,
}

/// Spawns `command` (H10 environment, R10 placement) with `umask` (the launching user's;
/// `None`: the shim's own 077).
/// `sandbox`: the OS sandbox the agent enters before exec (G28), prepared before the fork.
pub fn spawn(
    command: &AgentCommand,
    umask: Option<u32>,
    sandbox: Option<&crate::sandbox::Prepared>,
) -> io::Result<Spawned> {
    let (program, args) = command
        .argv
        .split_first()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "empty argv"))?;
    let mut cmd = Command::new(program);
    cmd.args(args)
        .current_dir(&command.cwd)
        .process_group(0)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    match &command.stdin {
        _ if command.streamed_stdin => cmd.stdin(Stdio::piped()),
        None => cmd.stdin(Stdio::null()),
        Some(bytes) => cmd.stdin(Stdio::from(input_file(bytes)?)),
    };
    if command.clear_env {
        cmd.env_clear();
    } else {
        for key in crate::process::env::removals() {
            cmd.env_remove(key);
        }
    }
    for (key, value) in &command.env {
        cmd.env(key, value);
    }
    let shim = rustix::process::getpid();
    let sandbox = sandbox.map(crate::sandbox::Prepared::entry);
    // SAFETY: the closure runs in the forked child before exec and calls only prctl(2),
    // getppid(2), _exit(2) and landlock_restrict_self(2), which are async-signal-safe.
    unsafe {
        cmd.pre_exec(move || {
            die_with(shim);
            if let Some(prepared) = &sandbox {
                crate::sandbox::enter(prepared)?;
            }
            Ok(())
        });
    }
    let mut child = crate::process::signals::unblocked(|| with_umask(umask, || cmd.spawn()))?;
    let pid = child.id();
    let stdout = OwnedFd::from(child.stdout.take().ok_or_else(|| io::Error::other("no stdout pipe"))?);
    let stderr = OwnedFd::from(child.stderr.take().ok_or_else(|| io::Error::other("no stderr pipe"))?);
    let stdin = child.stdin.take().map(OwnedFd::from);
    // The `Child` is dropped without waiting: reaping is the reaper's job.
    drop(child);
    for fd in [Some(&stdout), Some(&stderr), stdin.as_ref()].into_iter().flatten() {
        rustix::io::ioctl_fionbio(fd, true)?;
    }
    Ok(Spawned {
        pid,
        stdout,
        stderr,
        stdin,
    })
}
