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
