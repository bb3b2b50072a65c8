//! Which writes are fsynced (A4 and spec/README.md "Settled readings → Durability").
//!
//! Every write is atomic. The durable class — fsync of the file, then of its directory — is
//! the launch commit (the proceed file and the status written before it) and the end records
//! (terminal status, process-terminal record, result payload and indexes). With
//! `SUBLAUNCH_DURABILITY=strict` every write is durable.
//!
//! The candidate (`process-terminal-candidate.json`) is not an end record: only the host that
//! watched the shim exit reads it, right after the exit, to write the proof (durably). A power
//! loss ends that host too, and whoever looks at the run after the reboot writes the orphan
//! proof (S13), `unknown` whatever the candidate says; a lost final candidate only turns the
//! step proof of a step that never spawned from `not-started` into that `unknown` (the result
//! still marks the step skipped). Its two fsyncs per run (four on a revival, with the lease
//! acknowledgement) bought nothing more.

use crate::files::atomic::Durability;

/// The environment variable selecting strict durability.
pub const DURABILITY_ENV: &str = "SUBLAUNCH_DURABILITY";

/// The documents this crate writes, by role (the unit of the durability decision).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DocKind {
    /// `<root>/async-cfg-<runId>.json` (H5).
    RunnerConfig,
    /// The host's initial `status.json` (S2), written just before proceed: launch commit.
    InitialStatus,
    /// A non-terminal status rewrite (S3 running, activity updates, pid adoption).
    RunningStatus,
    /// A terminal status (S4, S5 startup failure, R16, S13 repair, S9 overlay of an end proof).
    TerminalStatus,
    /// `runner-startup-proceed.json`: the commit point (K7).
    Proceed,
    /// `runner-startup-ack.json` / `-confirm.json` (K6).
    HandshakeControl,
    /// `runner-startup.json` written by the shim (K2, K10).
    StartupReport,
    /// The host's initial `process-terminal-candidate.json` (H14).
    InitialCandidate,
    /// The shim's final candidate and the S5 zero-writer candidate: read only by the host
    /// that observed the exit, so outside the default durable class.
    FinalCandidate,
    /// The pending `process-terminal.json` (H14).
    PendingProof,
    /// A final `process-terminal.json` (S7, S13).
    FinalProof,
    /// `runner-startup-failure.json` (S5 ⊕).
    StartupFailureRecord,
    /// The result payload: pending copy and public file (S11).
    ResultPayload,
    /// A result index entry (S11).
    ResultIndex,
    /// A `.terminal-runs/…` entry (I4).
    TerminalRunEntry,
    /// `control/{stop,interrupt,timeout}.json` (R12).
    ControlFile,
    /// A session lease `owner.json` (R6a).
    LeaseOwner,
    /// Anything else (caches, sidecars of later issues).
    Other,
}

impl DocKind {
    /// Whether the document belongs to the default durable class.
    pub fn in_default_durable_class(self) -> bool {
        matches!(
            self,
            Self::InitialStatus
                | Self::Proceed
                | Self::TerminalStatus
                | Self::FinalProof
                | Self::StartupFailureRecord
                | Self::ResultPayload
                | Self::ResultIndex
                | Self::TerminalRunEntry
        )
    }
}

/// The durability policy in force.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DurabilityPolicy {
    strict: bool,
}

impl DurabilityPolicy {
    /// The default policy (only the durable class is fsynced).
    pub fn standard() -> Self {
        Self { strict: false }
    }

    /// Every write fsynced.
    pub fn strict() -> Self {
        Self { strict: true }
    }

    /// From `SUBLAUNCH_DURABILITY`: `strict` (case-insensitive) → strict; anything else → standard.
    pub fn from_env() -> Self {
        Self::from_setting(std::env::var(DURABILITY_ENV).ok().as_deref())
    }

    /// From a `SUBLAUNCH_DURABILITY` value: `strict` (case-insensitive) → strict; anything
    /// else, or none, → standard.
    pub fn from_setting(value: Option<&str>) -> Self {
        Self {
            strict: value.is_some_and(|v| v.trim().eq_ignore_ascii_case("strict")),
        }
    }

    /// Whether every write is durable.
    pub fn is_strict(self) -> bool {
        self.strict
    }

    /// The durability of a write of `kind`.
    pub fn for_kind(self, kind: DocKind) -> Durability {
        if self.strict || kind.in_default_durable_class() {
            Durability::Durable
        } else {
            Durability::Atomic
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a4_launch_commit_and_end_records_are_durable_by_default() {
        let p = DurabilityPolicy::standard();
        for kind in [
            DocKind::InitialStatus,
            DocKind::Proceed,
            DocKind::TerminalStatus,
            DocKind::FinalProof,
            DocKind::ResultPayload,
            DocKind::ResultIndex,
        ] {
            assert_eq!(p.for_kind(kind), Durability::Durable, "{kind:?}");
        }
        for kind in [
            DocKind::RunnerConfig,
            DocKind::InitialCandidate,
            DocKind::FinalCandidate,
            DocKind::PendingProof,
            DocKind::HandshakeControl,
            DocKind::RunningStatus,
            DocKind::ControlFile,
        ] {
            assert_eq!(p.for_kind(kind), Durability::Atomic, "{kind:?}");
        }
    }

    #[test]
    fn a4_strict_makes_everything_durable() {
        let p = DurabilityPolicy::strict();
        assert_eq!(
            p.for_kind(DocKind::InitialCandidate),
            Durability::Durable,
            "F12 runs in strict mode"
        );
        assert_eq!(p.for_kind(DocKind::FinalCandidate), Durability::Durable);
        assert_eq!(p.for_kind(DocKind::Other), Durability::Durable);
    }
}
