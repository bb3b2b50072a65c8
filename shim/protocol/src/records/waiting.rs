//! Why an active run is not going on (U10): `<run>/waiting.json`, written by the runner while
//! the run (queued) or its next step waits for a provider's rate-limit cooldown or for room
//! under a spend limit, removed when the wait ends. `list` and `status` show its reason and
//! when the wait is expected to end; a waiting run killed outright leaves it behind, and
//! readers show it only while the run is active.

use crate::files::atomic::Durability;
use crate::files::dir::Dir;
use crate::files::doc::ReadDoc;
use crate::files::layout::names;
use serde::{Deserialize, Serialize};
use std::io;

/// What a run waits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WaitKind {
    /// A provider's rate-limit cooldown.
    RateLimit,
    /// Room under a spend limit.
    SpendLimit,
}

/// A run's wait.
#[serde_with_macros::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Waiting {
    /// What it waits for.
    pub kind: WaitKind,
    /// Why, for people, short: `rate limit: anthropic (HTTP 429)`, `spend limit: $4.10 of
    /// $5.00 used today`.
    pub reason: String,
    /// More, when there is more: what the agent's CLI said.
    pub detail: Option<String>,
    /// Since when (epoch ms).
    pub since: u64,
    /// When the wait is expected to end (epoch ms), when known.
    pub until: Option<u64>,
    /// The step (flat index) that waits, when the run already started.
    pub step: Option<u32>,
}

impl Waiting {
    /// Records the wait in `run`.
    pub fn write(&self, run: &Dir) -> io::Result<()> {
        run.write_doc(names::WAITING, self, Durability::Atomic)
    }

    /// The run's wait, when it records one.
    pub fn read(run: &Dir) -> io::Result<Option<Self>> {
        Ok(match run.read_doc::<Self>(names::WAITING)? {
            ReadDoc::Present(waiting) => Some(waiting),
            _ => None,
        })
    }

    /// Ends the run's wait.
    pub fn clear(run: &Dir) -> io::Result<()> {
        run.remove(names::WAITING)
    }
}
