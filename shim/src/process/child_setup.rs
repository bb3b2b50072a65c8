//! What a child the shim forks is given, whatever it runs (an agent, the completion hook):
//! death with the shim, the launching user's umask, and a sealed in-memory file as its
//! standard input.

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
