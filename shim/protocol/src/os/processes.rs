//! The processes capability: the signals the host sends its runner (X1). Tests swap it for one
//! that refuses or records signals, so a kill decision can be asserted on a real launch (F27).

use rustix::io::Errno;
use rustix::process::{Pid, Signal};
use std::fmt::Debug;

/// Signals to a process group or a single process.
pub trait Processes: Send + Sync + Debug {
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
