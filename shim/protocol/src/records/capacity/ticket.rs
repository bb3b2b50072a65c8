//! One run's place in the capacity queue: `<runs>/.capacity/<seq:016>-<runId>`, a small JSON
//! document naming the runner (pid and start identity, so a dead or replaced runner is
//! recognised, X3), the cap in force for the run and whether it holds a slot.

use crate::files::layout::validate_run_id;
use serde::{Deserialize, Serialize};

/// The ticket format this build writes.
pub const TICKET_VERSION: u32 = 1;

/// A ticket.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Ticket {
    /// [`TICKET_VERSION`].
    pub version: u32,
    /// The run.
    pub run_id: String,
    /// The arrival number: tickets are served in this order.
    pub seq: u64,
    /// The runner's (shim's) pid.
    pub pid: u32,
    /// The runner's start identity (`linux:<starttime>`), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid_start_identity: Option<String>,
    /// The cap of active runs this run waits for (`None`: it never waits).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_active: Option<u32>,
    /// Whether the run holds a slot (may run) rather than waits.
    pub claimed: bool,
}

impl Ticket {
    /// The ticket's file name.
    pub fn file_name(&self) -> String {
        ticket_name(self.seq, &self.run_id)
    }
}

/// `<seq:016>-<runId>`: names sort in arrival order.
pub fn ticket_name(seq: u64, run_id: &str) -> String {
    format!("{seq:016}-{run_id}")
}

/// The arrival number and run id of a ticket's file name; `None` for anything else (the
/// lock, temporary files of atomic writes).
pub fn parse_ticket_name(name: &str) -> Option<(u64, &str)> {
    let (digits, run_id) = name.split_at_checked(16)?;
    let run_id = run_id.strip_prefix('-')?;
    if !digits.bytes().all(|b| b.is_ascii_digit()) || validate_run_id(run_id).is_err() {
        return None;
    }
    Some((digits.parse().ok()?, run_id))
}
