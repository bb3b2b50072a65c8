//! R4: the test-parent monitor. When `SUBLAUNCH_TEST_PARENT_PID` names another live process,
//! the shim checks it every 250 ms and exits 1 once it is gone, so a crashed test run leaves no
//! stray shims behind.

use std::time::{Duration, Instant};
use sublaunch_protocol::procinfo::{Liveness, probe_pid};

/// The environment variable naming the test parent (R4).
pub const TEST_PARENT_ENV: &str = "SUBLAUNCH_TEST_PARENT_PID";
/// How often the parent is checked.
pub const INTERVAL: Duration = Duration::from_millis(250);

/// The monitor; inert when no (other, live) parent was named.
#[derive(Debug)]
pub struct ParentMonitor {
    pid: Option<u32>,
    next: Instant,
}

impl ParentMonitor {
    /// From `SUBLAUNCH_TEST_PARENT_PID`, ignoring our own pid and a pid that is not alive now.
    pub fn from_env(own_pid: u32) -> Self {
        let pid = std::env::var(TEST_PARENT_ENV)
            .ok()
            .and_then(|v| v.trim().parse::<u32>().ok())
            .filter(|pid| *pid != own_pid && *pid > 0)
            .filter(|pid| probe_pid(*pid) == Liveness::Alive);
        Self {
            pid,
            next: Instant::now() + INTERVAL,
        }
    }

    /// When the next check is due (`None` when inert).
    pub fn due(&self) -> Option<Instant> {
        self.pid.map(|_| self.next)
    }

    /// Checks the parent if a check is due; `true` when it is gone.
    pub fn gone(&mut self, now: Instant) -> bool {
        let Some(pid) = self.pid else { return false };
        if now < self.next {
            return false;
        }
        self.next = now + INTERVAL;
        probe_pid(pid) == Liveness::Dead
    }
}
