//! Fault injection (§T): the points of the host's and the shim's work where a test may inject
//! a fault, and what the fault does. The points are plain data, always compiled, so host and
//! shim consult them without `cfg`; only builds with the `test-hooks` feature parse
//! `SUBLAUNCH_HOST_FAULT` / `SUBLAUNCH_SHIM_FAULT` (`parse`) or build the failing
//! `files::FaultyFiles` a host errno fault writes through. Production builds hold no faults
//! and never read the variables.

#[cfg(feature = "test-hooks")]
pub mod files;
#[cfg(feature = "test-hooks")]
pub mod parse;

use crate::files::atomic::Durability;
use crate::files::dir::Dir;
use rustix::io::Errno;
use std::io;
use std::sync::Arc;
use std::time::Duration;

/// The variable naming the host's fault points (test-hooks builds).
pub const HOST_FAULT_VAR: &str = "SUBLAUNCH_HOST_FAULT";
/// The variable naming the shim's fault points (test-hooks builds).
pub const SHIM_FAULT_VAR: &str = "SUBLAUNCH_SHIM_FAULT";

/// An enum of fault points with their names in the fault variables, in spec order.
macro_rules! points {
    ($(#[$meta:meta])* $name:ident { $($(#[$doc:meta])* $point:ident = $text:literal,)* }) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum $name {
            $($(#[$doc])* $point,)*
        }

        impl $name {
            /// All points, in spec order.
            pub const ALL: &[Self] = &[$(Self::$point),*];

            /// The name used in the fault variable.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(Self::$point => $text,)*
                }
            }
        }
    };
}

points! {
    /// Host steps that accept faults.
    HostPoint {
        /// The cfg file write (H5).
        Cfg = "cfg",
        /// Opening the runner logs (H7).
        Logs = "logs",
        /// The initial status (H13).
        StatusInitial = "status-initial",
        /// The active-run marker (H13/I3).
        Index = "index",
        /// The lifecycle sidecars (H14).
        Sidecar = "sidecar",
        /// The capacity hook (H15).
        Capacity = "capacity",
        /// The ack control (K6).
        Ack = "ack",
        /// The confirm control (K6).
        Confirm = "confirm",
        /// The proceed control (H16).
        Proceed = "proceed",
        /// Withdrawing a proceed file whose write failed after its rename (K8).
        Withdraw = "withdraw",
        /// The startup-failure persistence (S5).
        StartupFailure = "startup-failure",
        /// The proof write (S7).
        Proof = "proof",
        /// The status overlay (S9).
        Overlay = "overlay",
    }
}

points! {
    /// Shim steps that accept faults.
    ShimPoint {
        /// Process start.
        Start = "start",
        /// After reading the config.
        AfterConfig = "after-config",
        /// Before writing `ready`.
        BeforeReady = "before-ready",
        /// After writing `ready`.
        AfterReady = "after-ready",
        /// After writing `acknowledged`.
        AfterAcknowledged = "after-acknowledged",
        /// After writing `confirmed`.
        AfterConfirmed = "after-confirmed",
        /// Before consuming proceed.
        BeforeCommit = "before-commit",
        /// Right after commit.
        AfterCommit = "after-commit",
        /// Before the first running status.
        BeforeFirstStatus = "before-first-status",
        /// Before spawning the agent.
        BeforeAgentSpawn = "before-agent-spawn",
        /// After the agent exited.
        AfterAgentExit = "after-agent-exit",
        /// Before the result file.
        BeforeResult = "before-result",
        /// Before the final candidate.
        BeforeCandidate = "before-candidate",
        /// Before exiting.
        BeforeExit = "before-exit",
    }
}

#[cfg(feature = "test-hooks")]
impl HostPoint {
    /// The documents a fault of this point hits when the step writes several through one
    /// handle; `None`: every document the step writes.
    fn documents(self) -> Option<&'static [&'static str]> {
        use crate::files::layout::names;
        match self {
            Self::StartupFailure => Some(&[
                names::STATUS,
                names::PROCESS_TERMINAL_CANDIDATE,
                names::RUNNER_STARTUP_FAILURE,
            ]),
            Self::Proof => Some(&[names::PROCESS_TERMINAL]),
            Self::Overlay => Some(&[names::STATUS]),
            _ => None,
        }
    }
}

/// The syscall step at which an errno fault is raised (`@write`, `@fsync`, `@rename`,
/// `@dirfsync`; a simulated full disk fails at `Create`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AtStep {
    /// Creating the file.
    Create,
    /// Writing (the default).
    Write,
    /// fsync (only durable writes reach it).
    Fsync,
    /// rename.
    Rename,
    /// The directory fsync after the rename: the document is already in place (A4, K8).
    DirFsync,
}

/// A host fault action.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HostAction {
    /// Raise this errno at that step.
    Errno {
        /// The errno.
        errno: Errno,
        /// The step.
        at: AtStep,
    },
    /// Write invalid JSON instead of the payload.
    Corrupt,
    /// Delay before the step.
    Sleep(Duration),
}

/// A shim fault action.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ShimAction {
    /// `exit:<code>`.
    Exit(i32),
    /// `sigkill-self`.
    SigkillSelf,
    /// `hang`: sleep forever.
    Hang,
    /// `hang-noterm`: sleep forever with SIGTERM ignored.
    HangNoterm,
    /// `sleep:<ms>`.
    Sleep(Duration),
    /// `token:<value>` / `token:null` (`None`) for the next state written.
    Token(Option<String>),
    /// `state:<name>`: write this state instead.
    State(String),
    /// `corrupt`: write non-JSON to `runner-startup.json`.
    Corrupt,
    /// `skip-write`.
    SkipWrite,
    /// `doorbell-only`: ring without writing the file.
    DoorbellOnly,
    /// `wallclock:<±ms>`: shift the wall clock used for JSON timestamps.
    Wallclock(i64),
    /// `close-doorbell`.
    CloseDoorbell,
    /// `no-namespace`: spawn the agents as if the kernel refused a PID namespace.
    NoNamespace,
}

/// The invalid JSON written by a `corrupt` action.
pub const CORRUPT_PAYLOAD: &[u8] = b"{\"corrupt-by-test-hook\":";

/// Host faults in force (none in production builds).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HostFaults {
    entries: Vec<(HostPoint, HostAction)>,
}

impl HostFaults {
    /// No faults.
    pub fn none() -> Self {
        Self::default()
    }

    /// Faults from a `SUBLAUNCH_HOST_FAULT` value (test-hooks builds; production builds
    /// ignore it). An unparsable value is an error naming the entry.
    pub fn from_setting(value: Option<&str>) -> Result<Self, String> {
        #[cfg(feature = "test-hooks")]
        {
            value.map_or_else(|| Ok(Self::none()), Self::parse)
        }
        #[cfg(not(feature = "test-hooks"))]
        {
            let _ = value;
            Ok(Self::none())
        }
    }

    /// Faults from a `SUBLAUNCH_HOST_FAULT` value.
    #[cfg(feature = "test-hooks")]
    pub fn parse(spec: &str) -> Result<Self, String> {
        parse::host_faults(spec).map(|entries| Self { entries })
    }

    fn actions(&self, point: HostPoint) -> impl Iterator<Item = &HostAction> {
        self.entries.iter().filter(move |(p, _)| *p == point).map(|(_, a)| a)
    }

    /// Total `sleep:<ms>` to wait before `point` (the caller sleeps, asynchronously).
    pub fn sleep_before(&self, point: HostPoint) -> Option<Duration> {
        let total: Duration = self
            .actions(point)
            .filter_map(|a| if let HostAction::Sleep(d) = a { Some(*d) } else { None })
            .sum();
        (!total.is_zero()).then_some(total)
    }

    fn errno_fault(&self, point: HostPoint) -> Option<(Errno, AtStep)> {
        self.actions(point).find_map(|a| match a {
            HostAction::Errno { errno, at } => Some((*errno, *at)),
            _ => None,
        })
    }

    /// The error to raise at a step that writes no document (`capacity`, `index`, `logs`):
    /// any errno fault of that point regardless of `@step`.
    pub fn step_error(&self, point: HostPoint) -> Option<io::Error> {
        self.errno_fault(point)
            .map(|(errno, _)| crate::errors::os_error(errno, "test-hook", std::path::Path::new(point.as_str())))
    }

    /// Writes one document of the step `point` into `dir`: [`CORRUPT_PAYLOAD`] instead of
    /// `bytes` under a `corrupt` action, and through failing files under an errno fault, so
    /// the temp-file cleanup (A8) runs as in a real failure.
    pub fn write(
        &self,
        dir: &Dir,
        point: HostPoint,
        name: &str,
        bytes: &[u8],
        durability: Durability,
    ) -> io::Result<()> {
        let corrupt = self.actions(point).any(|a| *a == HostAction::Corrupt);
        let bytes = if corrupt { CORRUPT_PAYLOAD } else { bytes };
        match self.failing_dir(dir, &[point])? {
            Some(failing) => failing.write(name, bytes, durability),
            None => dir.write(name, bytes, durability),
        }
    }

    /// `dir` for a step covering `points` that writes several documents: a handle whose
    /// files fail the documents of those points' errno faults, or `dir` itself.
    pub fn dir(&self, dir: &Arc<Dir>, points: &[HostPoint]) -> io::Result<Arc<Dir>> {
        Ok(self.failing_dir(dir, points)?.map_or_else(|| dir.clone(), Arc::new))
    }

    #[cfg(feature = "test-hooks")]
    fn failing_dir(&self, dir: &Dir, points: &[HostPoint]) -> io::Result<Option<Dir>> {
        let rules: Vec<files::Rule> = points
            .iter()
            .filter_map(|point| {
                let (errno, at) = self.errno_fault(*point)?;
                let documents = point.documents().map(|d| d.iter().map(|s| (*s).to_owned()).collect());
                Some(files::Rule::new(documents, errno, at))
            })
            .collect();
        if rules.is_empty() {
            return Ok(None);
        }
        let os = (**dir.os())
            .clone()
            .with_files(Arc::new(files::FaultyFiles::new(rules)));
        dir.with_os(Arc::new(os)).map(Some)
    }

    #[cfg(not(feature = "test-hooks"))]
    #[allow(clippy::unnecessary_wraps, clippy::unused_self)]
    fn failing_dir(&self, _dir: &Dir, _points: &[HostPoint]) -> io::Result<Option<Dir>> {
        Ok(None)
    }
}

/// Shim faults in force (none in production builds).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ShimFaults {
    entries: Vec<(ShimPoint, ShimAction)>,
}

impl ShimFaults {
    /// No faults.
    pub fn none() -> Self {
        Self::default()
    }

    /// Faults from a `SUBLAUNCH_SHIM_FAULT` value (test-hooks builds; production builds
    /// ignore it). An unparsable value is an error naming the entry.
    pub fn from_setting(value: Option<&str>) -> Result<Self, String> {
        #[cfg(feature = "test-hooks")]
        {
            value.map_or_else(
                || Ok(Self::none()),
                |v| parse::shim_faults(v).map(|entries| Self { entries }),
            )
        }
        #[cfg(not(feature = "test-hooks"))]
        {
            let _ = value;
            Ok(Self::none())
        }
    }

    /// The actions at `point`, in the order given.
    pub fn actions(&self, point: ShimPoint) -> Vec<&ShimAction> {
        self.entries
            .iter()
            .filter(|(p, _)| *p == point)
            .map(|(_, a)| a)
            .collect()
    }

    /// Whether any fault is configured.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(all(test, feature = "test-hooks"))]
mod tests;
