//! The processes capability, the one process seam of the host and the shim: whether a process
//! they did not reap themselves is alive (X3) and the signals they send (the host to its runner,
//! X1; whoever fails a dead runner's run to its agents, X8). Tests swap it for one that refuses
//! or records signals, so a kill decision can be asserted on a real launch (F27), or for one
//! that answers liveness as the case needs. The host's own runner child is the exit watcher's
//! (H12): it signals through this seam, and learns of the exit by reaping.

use crate::procinfo::{self, Liveness};
use rustix::io::Errno;
use rustix::process::{Pid, Signal};
use std::fmt::Debug;

/// Liveness of pids and signals to a process group or a single process; every method has the
/// real behaviour by default.
pub trait Processes: Send + Sync + Debug {
    /// Liveness of `pid`; with `expected_identity`, a different current identity means `Dead`.
    fn liveness(&self, pid: u32, expected_identity: Option<&str>) -> Liveness {
        procinfo::liveness(pid, expected_identity)
    }

    /// `kill(-group, signal)`.
    fn kill_group(&self, group: Pid, signal: Signal) -> Result<(), Errno> {
        rustix::process::kill_process_group(group, signal)
    }

    /// `kill(pid, signal)`.
    fn kill(&self, pid: Pid, signal: Signal) -> Result<(), Errno> {
        rustix::process::kill_process(pid, signal)
    }
}

/// The real process table.
#[derive(Clone, Copy, Debug, Default)]
pub struct RealProcesses;

impl Processes for RealProcesses {}

/// The conventional name of a signal number (`15` → `SIGTERM`; unknown numbers `SIG<n>`).
pub fn signal_name(signal: i32) -> String {
    // Linux's signals 1 to 31, in order.
    const NAMES: [&str; 31] = [
        "HUP", "INT", "QUIT", "ILL", "TRAP", "ABRT", "BUS", "FPE", "KILL", "USR1", "SEGV", "USR2", "PIPE", "ALRM",
        "TERM", "STKFLT", "CHLD", "CONT", "STOP", "TSTP", "TTIN", "TTOU", "URG", "XCPU", "XFSZ", "VTALRM", "PROF",
        "WINCH", "IO", "PWR", "SYS",
    ];
    let known = usize::try_from(signal).ok().and_then(|n| NAMES.get(n.checked_sub(1)?));
    known.map_or_else(|| format!("SIG{signal}"), |name| format!("SIG{name}"))
}

#[cfg(test)]
mod tests {
    #[test]
    fn signal_names_follow_linux_numbering() {
        for (number, name) in [(1, "SIGHUP"), (9, "SIGKILL"), (15, "SIGTERM"), (31, "SIGSYS")] {
            assert_eq!(super::signal_name(number), name);
        }
        assert_eq!(super::signal_name(rustix::process::Signal::POWER.as_raw()), "SIGPWR");
        assert_eq!(super::signal_name(0), "SIG0");
        assert_eq!(super::signal_name(64), "SIG64");
        assert_eq!(super::signal_name(-3), "SIG-3");
    }
}
