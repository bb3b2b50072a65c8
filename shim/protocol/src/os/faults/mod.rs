//! The test-hook facade (§T). The fault points and actions are plain data, always compiled, so
//! host and shim code consult hooks without `cfg`; but only builds with the `test-hooks`
//! feature read `SUBLAUNCH_HOST_FAULT` / `SUBLAUNCH_SHIM_FAULT` (see [`crate::faults`]) or
//! inject anything into a write. In production [`HostHooks::from_env`] and
//! [`ShimHooks::from_env`] return empty hooks without touching the environment.

use crate::atomic::WriteOptions;
use rustix::io::Errno;
use std::borrow::Cow;
use std::io;
use std::time::Duration;

/// The variable naming the host's fault points (test-hooks builds).
pub const HOST_FAULT_VAR: &str = "SUBLAUNCH_HOST_FAULT";

/// Host steps that accept faults (§T).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HostPoint {
    /// The cfg file write (H5).
    Cfg,
    /// Opening the runner logs (H7).
    Logs,
    /// The initial status (H13).
    StatusInitial,
    /// The active-run marker (H13/I3).
    Index,
    /// The lifecycle sidecars (H14).
    Sidecar,
    /// The capacity hook (H15).
    Capacity,
    /// The ack control (K6).
    Ack,
    /// The confirm control (K6).
    Confirm,
    /// The proceed control (H16).
    Proceed,
    /// The startup-failure persistence (S5).
    StartupFailure,
    /// The proof write (S7).
    Proof,
    /// The status overlay (S9).
    Overlay,
}

impl HostPoint {
    /// All points, in spec order.
    pub const ALL: [Self; 12] = [
        Self::Cfg,
        Self::Logs,
        Self::StatusInitial,
        Self::Index,
        Self::Sidecar,
        Self::Capacity,
        Self::Ack,
        Self::Confirm,
        Self::Proceed,
        Self::StartupFailure,
        Self::Proof,
        Self::Overlay,
    ];

    /// The name used in `SUBLAUNCH_HOST_FAULT`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Cfg => "cfg",
            Self::Logs => "logs",
            Self::StatusInitial => "status-initial",
            Self::Index => "index",
            Self::Sidecar => "sidecar",
            Self::Capacity => "capacity",
            Self::Ack => "ack",
            Self::Confirm => "confirm",
            Self::Proceed => "proceed",
            Self::StartupFailure => "startup-failure",
            Self::Proof => "proof",
            Self::Overlay => "overlay",
        }
    }
}

/// Shim steps that accept faults (§T).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ShimPoint {
    /// Process start.
    Start,
    /// After reading the config.
    AfterConfig,
    /// Before writing `ready`.
    BeforeReady,
    /// After writing `ready`.
    AfterReady,
    /// After writing `acknowledged`.
    AfterAcknowledged,
    /// After writing `confirmed`.
    AfterConfirmed,
    /// Before consuming proceed.
    BeforeCommit,
    /// Right after commit.
    AfterCommit,
    /// Before the first running status.
    BeforeFirstStatus,
    /// Before spawning the agent.
    BeforeAgentSpawn,
    /// After the agent exited.
    AfterAgentExit,
    /// Before the result file.
    BeforeResult,
    /// Before the final candidate.
    BeforeCandidate,
    /// Before exiting.
    BeforeExit,
}

impl ShimPoint {
    /// All points, in spec order.
    pub const ALL: [Self; 14] = [
        Self::Start,
        Self::AfterConfig,
        Self::BeforeReady,
        Self::AfterReady,
        Self::AfterAcknowledged,
        Self::AfterConfirmed,
        Self::BeforeCommit,
        Self::AfterCommit,
        Self::BeforeFirstStatus,
        Self::BeforeAgentSpawn,
        Self::AfterAgentExit,
        Self::BeforeResult,
        Self::BeforeCandidate,
        Self::BeforeExit,
    ];

    /// The name used in `SUBLAUNCH_SHIM_FAULT`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Start => "start",
            Self::AfterConfig => "after-config",
            Self::BeforeReady => "before-ready",
            Self::AfterReady => "after-ready",
            Self::AfterAcknowledged => "after-acknowledged",
            Self::AfterConfirmed => "after-confirmed",
            Self::BeforeCommit => "before-commit",
            Self::AfterCommit => "after-commit",
            Self::BeforeFirstStatus => "before-first-status",
            Self::BeforeAgentSpawn => "before-agent-spawn",
            Self::AfterAgentExit => "after-agent-exit",
            Self::BeforeResult => "before-result",
            Self::BeforeCandidate => "before-candidate",
            Self::BeforeExit => "before-exit",
        }
    }
}

/// The syscall step of an errno host fault (`@write`, `@fsync`, `@rename`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AtStep {
    /// Writing (the default).
    Write,
    /// fsync (only durable writes reach it).
    Fsync,
    /// rename.
    Rename,
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
}

/// The invalid JSON written by a `corrupt` action.
pub const CORRUPT_PAYLOAD: &[u8] = b"{\"corrupt-by-test-hook\":";

/// Host faults in force (empty in production builds).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HostHooks {
    entries: Vec<(HostPoint, HostAction)>,
}

impl HostHooks {
    /// No faults.
    pub fn none() -> Self {
        Self::default()
    }

    /// Faults from `SUBLAUNCH_HOST_FAULT` (test-hooks builds); production builds return no
    /// faults and never read the variable. An unparsable value is an error.
    pub fn from_env() -> Result<Self, String> {
        Self::from_setting(std::env::var(HOST_FAULT_VAR).ok().as_deref())
    }

    /// Faults from a `SUBLAUNCH_HOST_FAULT` value (test-hooks builds; production builds
    /// ignore it). An unparsable value is an error.
    pub fn from_setting(value: Option<&str>) -> Result<Self, String> {
        #[cfg(feature = "test-hooks")]
        {
            value
                .map_or_else(|| Ok(Vec::new()), crate::faults::parse_host_faults)
                .map(Self::from_entries)
        }
        #[cfg(not(feature = "test-hooks"))]
        {
            let _ = value;
            Ok(Self::none())
        }
    }

    /// Hooks from parsed entries.
    pub fn from_entries(entries: Vec<(HostPoint, HostAction)>) -> Self {
        Self { entries }
    }

    /// The actions at `point`.
    pub fn actions(&self, point: HostPoint) -> impl Iterator<Item = &HostAction> {
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

    /// The errno fault of `point`, if any.
    pub fn errno_fault(&self, point: HostPoint) -> Option<(Errno, AtStep)> {
        self.actions(point).find_map(|a| {
            if let HostAction::Errno { errno, at } = a {
                Some((*errno, *at))
            } else {
                None
            }
        })
    }

    /// The error to raise at a non-write step (`capacity`, `index`, `logs`) — any errno fault
    /// of that point regardless of `@step`.
    pub fn step_error(&self, point: HostPoint) -> Option<io::Error> {
        self.errno_fault(point)
            .map(|(errno, _)| crate::errors::os_error(errno, "test-hook", std::path::Path::new(point.as_str())))
    }

    /// `base` with the errno fault of `point` injected at its step (test-hooks builds only).
    #[allow(unused_variables)]
    pub fn write_options(&self, point: HostPoint, base: WriteOptions) -> WriteOptions {
        #[cfg(feature = "test-hooks")]
        if let Some((errno, at)) = self.errno_fault(point) {
            let step = match at {
                AtStep::Write => crate::atomic::FaultStep::Write,
                AtStep::Fsync => crate::atomic::FaultStep::Fsync,
                AtStep::Rename => crate::atomic::FaultStep::Rename,
            };
            return base.with_fault(Some(crate::atomic::InjectedFault { errno, step }));
        }
        base
    }

    /// The bytes to write at `point`: [`CORRUPT_PAYLOAD`] under a `corrupt` action.
    pub fn payload<'a>(&self, point: HostPoint, bytes: &'a [u8]) -> Cow<'a, [u8]> {
        if self.actions(point).any(|a| *a == HostAction::Corrupt) {
            Cow::Borrowed(CORRUPT_PAYLOAD)
        } else {
            Cow::Borrowed(bytes)
        }
    }
}

/// Shim faults in force (empty in production builds).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ShimHooks {
    entries: Vec<(ShimPoint, ShimAction)>,
}

impl ShimHooks {
    /// No faults.
    pub fn none() -> Self {
        Self::default()
    }

    /// Faults from `SUBLAUNCH_SHIM_FAULT` (test-hooks builds); production builds return no
    /// faults and never read the variable.
    pub fn from_env() -> Result<Self, String> {
        #[cfg(feature = "test-hooks")]
        {
            crate::faults::shim_faults_from_env().map(Self::from_entries)
        }
        #[cfg(not(feature = "test-hooks"))]
        {
            Ok(Self::none())
        }
    }

    /// Hooks from parsed entries.
    pub fn from_entries(entries: Vec<(ShimPoint, ShimAction)>) -> Self {
        Self { entries }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::atomic::Durability;

    #[test]
    fn t_empty_hooks_change_nothing() {
        let hooks = HostHooks::none();
        assert_eq!(hooks.sleep_before(HostPoint::Capacity), None);
        assert_eq!(
            hooks.write_options(HostPoint::Proceed, Durability::Durable.into()),
            WriteOptions::new(Durability::Durable)
        );
        assert_eq!(&*hooks.payload(HostPoint::Cfg, b"{}"), b"{}");
        assert!(hooks.step_error(HostPoint::Index).is_none());
        assert!(ShimHooks::none().is_empty());
    }

    #[test]
    fn t_host_hook_queries() {
        let hooks = HostHooks::from_entries(vec![
            (HostPoint::Logs, HostAction::Sleep(Duration::from_millis(300))),
            (HostPoint::Cfg, HostAction::Corrupt),
            (
                HostPoint::Capacity,
                HostAction::Errno {
                    errno: Errno::PERM,
                    at: AtStep::Write,
                },
            ),
        ]);
        assert_eq!(hooks.sleep_before(HostPoint::Logs), Some(Duration::from_millis(300)));
        assert_eq!(&*hooks.payload(HostPoint::Cfg, b"{}"), CORRUPT_PAYLOAD);
        assert!(serde_json::from_slice::<serde_json::Value>(CORRUPT_PAYLOAD).is_err());
        assert!(
            hooks
                .step_error(HostPoint::Capacity)
                .unwrap()
                .to_string()
                .starts_with("EPERM")
        );
    }

    #[cfg(feature = "test-hooks")]
    #[test]
    fn f12_errno_fault_reaches_the_write() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = crate::dir::Dir::open(tmp.path()).unwrap();
        let hooks = HostHooks::from_entries(vec![(
            HostPoint::Sidecar,
            HostAction::Errno {
                errno: Errno::IO,
                at: AtStep::Fsync,
            },
        )]);
        let strict =
            crate::durability::DurabilityPolicy::strict().options(crate::durability::DocKind::InitialCandidate);
        let error = dir
            .write_with(
                "process-terminal-candidate.json",
                b"{}",
                &hooks.write_options(HostPoint::Sidecar, strict),
            )
            .unwrap_err();
        assert!(error.to_string().starts_with("EIO"), "{error}");
        assert!(crate::testing::temp_files(tmp.path()).is_empty(), "temp file removed");
    }
}
