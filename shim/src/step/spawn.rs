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
//!
//! Containment (G40–G44): the agent is first started in a PID namespace of its own
//! ([`crate::process::namespace`]), so its whole tree dies with the shim. Where the kernel
//! refuses one, the agent is started as above (process-group supervision) and the step records
//! which containment it got; with containment required the refusal fails the step instead.

use crate::adapter::AgentCommand;
use crate::process::child_setup::{die_with, input_file, with_umask};
use crate::process::namespace::{self, Containment, NamespaceError, Prepared};
use rustix::fd::OwnedFd;
use std::ffi::OsString;
use std::io;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};

/// A started agent.
#[derive(Debug)]
pub struct Spawned {
    /// Its pid (= its process group id) in the shim's namespace: what the shim signals.
    pub pid: u32,
    /// Its pid as `/proc` (the host) names it, for the records (G45); the same number unless
    /// the shim itself runs inside a PID namespace.
    pub host_pid: u32,
    /// The containment it got.
    pub containment: Containment,
    /// Why it got no PID namespace (the kernel's refusal), when it did not.
    pub fallback: Option<String>,
    /// The ns init (its pid, the read end of its status pipe), when contained.
    pub init: Option<(u32, OwnedFd)>,
    /// The read end of its stdout (non-blocking).
    pub stdout: OwnedFd,
    /// The read end of its stderr (non-blocking).
    pub stderr: OwnedFd,
    /// The write end of its stdin (non-blocking), when it takes messages while it runs.
    pub stdin: Option<OwnedFd>,
}

/// What containment a spawn asks for (G43, G44).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ContainmentPolicy {
    /// Fail the spawn when the kernel refuses a PID namespace instead of falling back.
    pub required: bool,
    /// Test hook: behave as if the kernel refused (`before-agent-spawn:no-namespace`).
    pub refuse: bool,
    /// A placed step: its agent is the local `ssh`, whose ControlMaster must outlive the step
    /// (later launches to the machine share it, expired only by `ControlPersist`), so it gets
    /// process-group supervision like the master's exception in the X8 sweep (G48).
    pub placed: bool,
    /// Codex in its own sandbox: its bubblewrap never returns from a command started inside a
    /// PID namespace of ours, so it gets process-group supervision (G50).
    pub vendor_sandbox: bool,
}

/// Why a placed step's `ssh` gets no PID namespace (recorded with its containment).
pub const PLACED_NOTE: &str =
    "a placed step's local ssh: the connection it may open is kept for later launches to the machine";

/// Why Codex in its own sandbox gets no PID namespace (recorded with its containment).
pub const VENDOR_SANDBOX_NOTE: &str = "Codex's own sandbox (bubblewrap) never finishes a command inside a PID namespace; \
     with sublaunch's sandbox (--sandbox) it is contained";

/// Spawns `command` (H10 environment, R10 placement) with `umask` (the launching user's;
/// `None`: the shim's own 077), contained in a PID namespace where the kernel allows it.
/// `sandbox`: the OS sandbox the agent enters right before exec (G28), prepared before any fork.
pub fn spawn(
    command: &AgentCommand,
    umask: Option<u32>,
    policy: ContainmentPolicy,
    sandbox: Option<&crate::sandbox::Prepared>,
) -> io::Result<Spawned> {
    let sandbox = sandbox.map(crate::sandbox::Prepared::entry);
    let refused = if policy.placed {
        PLACED_NOTE.to_owned()
    } else if policy.vendor_sandbox {
        VENDOR_SANDBOX_NOTE.to_owned()
    } else if policy.refuse {
        "the kernel refused a PID namespace (test hook)".to_owned()
    } else {
        match spawn_contained(command, umask, sandbox) {
            Ok(spawned) => return Ok(spawned),
            Err(NamespaceError::Start(error)) => return Err(error),
            Err(refused @ NamespaceError::Refused { .. }) => refused.to_string(),
        }
    };
    if policy.required {
        return Err(io::Error::other(format!(
            "containment is required, but {refused}; the agent was not started"
        )));
    }
    let mut spawned = spawn_grouped(command, umask, sandbox)?;
    spawned.fallback = Some(refused);
    Ok(spawned)
}

/// The agent's environment as `std::process::Command` would build it (H10).
fn environment(command: &AgentCommand) -> Vec<(OsString, OsString)> {
    let mut env: std::collections::BTreeMap<OsString, OsString> = if command.clear_env {
        std::collections::BTreeMap::new()
    } else {
        let removals = crate::process::env::removals();
        std::env::vars_os().filter(|(k, _)| !removals.contains(k)).collect()
    };
    for (key, value) in &command.env {
        env.insert(key.into(), value.into());
    }
    env.into_iter().collect()
}

/// G40: the agent in a PID namespace of its own.
fn spawn_contained(
    command: &AgentCommand,
    umask: Option<u32>,
    sandbox: Option<crate::sandbox::Entry>,
) -> Result<Spawned, NamespaceError> {
    let start = NamespaceError::Start;
    let prepared = Prepared::new(&command.argv, environment(command), &command.cwd, umask, sandbox).map_err(start)?;
    let pipe = || rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC).map_err(|e| start(e.into()));
    let (stdout, stdout_w) = pipe()?;
    let (stderr, stderr_w) = pipe()?;
    let (stdin_src, stdin) = match &command.stdin {
        _ if command.streamed_stdin => {
            let (r, w) = pipe()?;
            (r, Some(w))
        }
        None => (OwnedFd::from(std::fs::File::open("/dev/null").map_err(start)?), None),
        Some(bytes) => (input_file(bytes).map_err(start)?, None),
    };
    let stdio = namespace::Stdio {
        stdin: stdin_src,
        stdout: stdout_w,
        stderr: stderr_w,
    };
    let contained = crate::process::signals::unblocked(|| namespace::spawn(&prepared, stdio))?;
    for fd in [Some(&stdout), Some(&stderr), stdin.as_ref()].into_iter().flatten() {
        rustix::io::ioctl_fionbio(fd, true).map_err(|e| start(e.into()))?;
    }
    Ok(Spawned {
        pid: contained.agent,
        host_pid: contained.host_pid,
        containment: Containment::PidNamespace,
        fallback: None,
        init: Some((contained.init, contained.status)),
        stdout,
        stderr,
        stdin,
    })
}

/// The agent as the shim's own child in a new process group (process-group supervision).
fn spawn_grouped(
    command: &AgentCommand,
    umask: Option<u32>,
    sandbox: Option<crate::sandbox::Entry>,
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
        host_pid: pid,
        containment: Containment::ProcessGroup,
        fallback: None,
        init: None,
        stdout,
        stderr,
        stdin,
    })
}
