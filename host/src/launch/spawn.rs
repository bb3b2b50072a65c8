//! Writing the cfg file (H5), removing stale handshake files (H6), opening the runner logs
//! (H7) and spawning the shim (H8–H11) on the posix_spawn path: no `pre_exec`, its own
//! process group (the shim then calls setsid itself), stdin = the doorbell (or /dev/null).

use rustix::fd::OwnedFd;
use rustix::process::{Pid, PidfdFlags};
use std::ffi::OsString;
use std::fs::File;
use std::io;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use sublaunch_protocol::errors::{errno, os_error};
use sublaunch_protocol::files::dir::Dir;
use sublaunch_protocol::files::durability::{DocKind, DurabilityPolicy};
use sublaunch_protocol::files::layout::names;
use sublaunch_protocol::os::faults::{HostFaults, HostPoint};
use sublaunch_protocol::procinfo;
use sublaunch_protocol::records::config::RunnerConfig;

/// H5: writes `<root>/async-cfg-<runId>.json` privately and atomically.
pub(crate) fn write_config(
    root: &Dir,
    config: &RunnerConfig,
    faults: &HostFaults,
    policy: DurabilityPolicy,
) -> io::Result<()> {
    let name = names::runner_config(&config.id);
    faults.write(
        root,
        HostPoint::Cfg,
        &name,
        &config.to_bytes(),
        policy.for_kind(DocKind::RunnerConfig),
    )
}

/// H6: removes stale handshake files (absent is fine; any other error aborts).
pub(crate) fn delete_stale_handshake(run: &Dir) -> io::Result<()> {
    names::STALE_HANDSHAKE_FILES
        .iter()
        .try_for_each(|name| run.remove(name))
}

/// H7: opens `runner.stdout.log` / `runner.stderr.log` with
/// `O_APPEND|O_CREAT|O_NOFOLLOW|O_CLOEXEC`, 0600 (a symlink fails with `ELOOP`).
pub(crate) fn open_logs(run: &Dir, faults: &HostFaults) -> io::Result<(File, File)> {
    if let Some(error) = faults.step_error(HostPoint::Logs) {
        return Err(error);
    }
    Ok((
        run.open_append(names::RUNNER_STDOUT_LOG)?,
        run.open_append(names::RUNNER_STDERR_LOG)?,
    ))
}

/// A spawned shim, before the exit watcher takes it.
pub(crate) struct Spawned {
    /// The child.
    pub child: Child,
    /// Its pidfd, when the kernel has them.
    pub pidfd: Option<OwnedFd>,
    /// Its pid as `/proc` names it (G45): the child's pid, unless this host runs inside a
    /// contained agent's pid namespace, whose numbers mean other processes to anyone outside.
    pub recorded_pid: u32,
    /// Its start identity (X3), recorded in the status for later listers.
    pub start_identity: Option<String>,
}

/// What the shim is started with.
pub(crate) struct SpawnRequest {
    pub shim: PathBuf,
    /// `<root>/async-cfg-<runId>.json`, the shim's one argument (R1): its command line names
    /// the run, so the runs its agents launch find it among their ancestors (G61).
    pub config: PathBuf,
    pub env: Vec<(OsString, OsString)>,
    pub stdin: Option<OwnedFd>,
    pub stdout: File,
    pub stderr: File,
}

/// H8: spawns the shim as a direct child in its own process group (see below). The command (and with it
/// the host's copies of the shim's stdio descriptors) is dropped before returning, on success
/// and on failure (H7, K14). The error is the OS error naming the errno and the shim.
pub(crate) fn spawn_shim(request: SpawnRequest) -> io::Result<Spawned> {
    let mut command = Command::new(&request.shim);
    command
        .arg(&request.config)
        .env_clear()
        .envs(request.env)
        .stdin(request.stdin.map_or_else(Stdio::null, Stdio::from))
        .stdout(Stdio::from(request.stdout))
        .stderr(Stdio::from(request.stderr))
        .current_dir("/");
    // A group of its own keeps terminal signals off the shim until its setsid. When the
    // host's own group reads as 0 (led from outside this pid namespace) the shim could not
    // rejoin it to call setsid, so it starts in the host's group and calls setsid at once.
    if sublaunch_protocol::ids::own_group_is_nameable() {
        command.process_group(0);
    }
    let spawned = command.spawn();
    drop(command);
    let child = spawned.map_err(|e| match errno(&e) {
        Some(code) => os_error(rustix::io::Errno::from_raw_os_error(code), "spawn", &request.shim),
        None => e,
    })?;
    let pid = i32::try_from(child.id()).ok().and_then(Pid::from_raw);
    let pidfd = pid.and_then(|pid| rustix::process::pidfd_open(pid, PidfdFlags::empty()).ok());
    let recorded_pid = procinfo::host_view_of_child(child.id()).unwrap_or(child.id());
    let start_identity = procinfo::start_identity(recorded_pid).ok().flatten();
    Ok(Spawned {
        child,
        pidfd,
        recorded_pid,
        start_identity,
    })
}
