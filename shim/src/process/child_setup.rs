//! What a child the shim forks is given, whatever it runs (an agent, the completion hook):
//! death with the shim, the launching user's umask, a sealed in-memory file as its
//! standard input, and the entry into its OS sandbox (G28).

use rustix::fd::OwnedFd;
use std::io;

/// In the forked agent: SIGKILL when the shim dies. The signal follows the thread that forked,
/// and the shim has one thread. Had the shim died before the request took effect, the agent
/// would have been re-parented already, so it leaves at once.
pub fn die_with(shim: rustix::process::Pid) {
    // SAFETY: prctl(PR_SET_PDEATHSIG) takes a signal number and touches no memory of ours.
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
    }
    if rustix::process::getppid() != Some(shim) {
        // SAFETY: _exit is async-signal-safe and ends the child without running destructors.
        unsafe { libc::_exit(1) };
    }
}

/// Runs `f` with the process umask set to `mask`, then restores the shim's. The child that
/// `f` spawns inherits `mask`; the shim's own files never depend on its umask (each is
/// created with an explicit private mode), so the short window is harmless to them.
pub fn with_umask<T>(mask: Option<u32>, f: impl FnOnce() -> T) -> T {
    let Some(mask) = mask else { return f() };
    let shim_mask = rustix::process::umask(rustix::fs::Mode::from_raw_mode(mask & 0o777));
    let result = f();
    rustix::process::umask(shim_mask);
    result
}

/// An anonymous in-memory file holding `bytes`, positioned at its start (the agent's stdin).
pub fn input_file(bytes: &[u8]) -> io::Result<OwnedFd> {
    sublaunch_protocol::os::memfd::with_bytes("sublaunch-prompt", bytes)
}

/// What the forked agent needs to enter the OS sandbox the runner prepared: the ruleset's
/// descriptor, which stays open in the runner until the spawn returns, and whether the agent
/// gets a network namespace of its own.
#[derive(Clone, Copy, Debug)]
pub struct Entry {
    ruleset: Option<std::os::fd::RawFd>,
    own_network: bool,
}

impl Entry {
    /// The entry for ruleset descriptor `ruleset` (`None`: only `no_new_privs`); with
    /// `own_network`, a contained agent starts in an empty network namespace (G36).
    pub fn new(ruleset: Option<std::os::fd::RawFd>, own_network: bool) -> Self {
        Self { ruleset, own_network }
    }

    /// The same entry with its ruleset at descriptor `fd`: the namespace init moves the
    /// descriptor before it closes everything else of the runner's.
    pub fn ruleset_at(self, fd: std::os::fd::RawFd) -> Self {
        Self {
            ruleset: self.ruleset.map(|_| fd),
            ..self
        }
    }

    /// Whether the agent's namespace gets an empty network namespace too (`offline`).
    pub fn own_network(self) -> bool {
        self.own_network
    }

    /// The ruleset's descriptor as the runner opened it.
    pub fn ruleset(self) -> Option<std::os::fd::RawFd> {
        self.ruleset
    }
}

/// In the forked agent, before exec: `no_new_privs`, then the ruleset. Only two system
/// calls on a descriptor opened before the fork: async-signal-safe, nothing allocated.
pub fn enter(prepared: &Entry) -> io::Result<()> {
    // SAFETY: prctl(PR_SET_NO_NEW_PRIVS) and landlock_restrict_self(2) take integers and a
    // descriptor and touch no memory of ours.
    unsafe {
        if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
            return Err(io::Error::last_os_error());
        }
        if let Some(fd) = prepared.ruleset
            && libc::syscall(libc::SYS_landlock_restrict_self, fd, 0u32) != 0
        {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}
