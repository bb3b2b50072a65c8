//! The session lease of a revival (R6a, X11): `<root>/session-leases/<sha256(canonical session
//! path)>/owner.json`. Acquisition prepares `<leaseDir>.candidate-<token>` (0700) with
//! `owner.json` (0600) and renames it onto `<leaseDir>`; an existing lease whose owner is
//! demonstrably stale is moved to the tombstone `<leaseDir>.stale-<oldToken>` and the
//! acquisition retried (≤ 4 attempts). Release removes the lease only if `owner.json` still
//! carries our token.

use crate::errors::has_errno;
use crate::files::atomic::sha256_hex;
use crate::files::dir::Dir;
use crate::files::doc::ReadDoc;
use crate::files::durability::{DocKind, DurabilityPolicy};
use crate::files::layout::names;
use crate::os::clock::iso8601_utc;
use crate::os::processes::Processes;
use crate::os::random::uuid_v4;
use crate::procinfo::Liveness;
use crate::records::proof::LeaseProbe;
use rustix::io::Errno;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::io;
use std::path::{Path, PathBuf};

/// Acquisition attempts (R6a).
pub const MAX_ACQUIRE_ATTEMPTS: usize = 4;

/// What the lease holder's agent writer is doing (K2).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WriterState {
    /// No agent process.
    #[default]
    None,
    /// Spawning the agent.
    Spawning,
    /// The agent runs (`writerPid`).
    Running,
}

/// `owner.json` (K2 lease owner object).
#[serde_with_macros::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LeaseOwner {
    /// Always 1.
    pub version: u32,
    /// The lease token (the revival handshake token T).
    pub token: String,
    /// The canonical session file.
    pub canonical_session_file: String,
    /// The run holding the lease.
    pub run_id: String,
    /// The run being revived.
    pub source_run_id: String,
    /// Parent session, if any.
    pub parent_session_id: Option<String>,
    /// The holder's pid.
    pub pid: u32,
    /// The holder's host name.
    pub hostname: String,
    /// The holder's start identity (X3).
    pub process_start_identity: Option<String>,
    /// Writer state.
    #[serde(default)]
    pub writer_state: WriterState,
    /// The agent's pid while running.
    pub writer_pid: Option<u32>,
    /// The agent's start identity.
    pub writer_process_start_identity: Option<String>,
    /// ISO 8601 acquisition time.
    pub acquired_at: String,
    /// Epoch ms acquisition time.
    pub acquired_at_ms: u64,
    /// Epoch ms of the last update.
    pub updated_at_ms: u64,
    /// Fields of other writers.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl LeaseOwner {
    /// The owner record `me` writes for `request` at `now_ms` (epoch ms): no writer yet.
    pub fn new(token: String, request: &LeaseRequest, me: &LeaseIdentity<'_>, now_ms: u64) -> Self {
        Self {
            version: 1,
            token,
            canonical_session_file: request.canonical_session_file.clone(),
            run_id: request.run_id.clone(),
            source_run_id: request.source_run_id.clone(),
            parent_session_id: request.parent_session_id.clone(),
            pid: me.pid,
            hostname: me.hostname.clone(),
            process_start_identity: me.process_start_identity.clone(),
            writer_state: WriterState::None,
            writer_pid: None,
            writer_process_start_identity: None,
            acquired_at: iso8601_utc(now_ms),
            acquired_at_ms: now_ms,
            updated_at_ms: now_ms,
            extra: Map::new(),
        }
    }
}

/// Who is acquiring.
#[derive(Clone, Debug)]
pub struct LeaseRequest {
    /// The session file (canonicalised by [`canonical_session_file`] before use).
    pub canonical_session_file: String,
    /// The acquiring run.
    pub run_id: String,
    /// The run being revived.
    pub source_run_id: String,
    /// Parent session, if any.
    pub parent_session_id: Option<String>,
}

/// The acquiring process and how to judge other owners.
pub struct LeaseIdentity<'a> {
    /// Our pid.
    pub pid: u32,
    /// Our host name.
    pub hostname: String,
    /// Our start identity.
    pub process_start_identity: Option<String>,
    /// Liveness of other owners.
    pub oracle: &'a dyn Processes,
}

/// Acquisition failed.
#[derive(Debug, thiserror::Error)]
pub enum LeaseError {
    /// Another live owner holds it (the R6a conflict text).
    #[error("{0}")]
    Conflict(String),
    /// Filesystem failure.
    #[error(transparent)]
    Io(io::Error),
}

/// The lease directory name for a canonical session path.
pub fn lease_id(canonical_session_file: &str) -> String {
    sha256_hex(canonical_session_file.as_bytes())
}

/// `realpath` of the session file (R6a "canonical session file").
pub fn canonical_session_file(path: &Path) -> io::Result<PathBuf> {
    std::fs::canonicalize(path).map_err(|e| crate::errors::with_path(e, "realpath", path))
}

/// The conflict text of R6a for a live `owner`.
pub fn conflict_message(session_file: &str, owner: &LeaseOwner) -> String {
    let parent = owner
        .parent_session_id
        .as_deref()
        .map(|p| format!(", parent session '{p}'"))
        .unwrap_or_default();
    format!(
        "Direct revival of session '{session_file}' is already owned by run '{}' (source run '{}'{parent}, pid {} on {}). Wait for that revival to finish or start a separate continuation without reusing this session file.",
        owner.run_id, owner.source_run_id, owner.pid, owner.hostname
    )
}

/// The conflict text when the existing owner's metadata cannot be read.
pub fn unreadable_owner_message(session_file: &str, cause: &str) -> String {
    format!(
        "Direct revival of session '{session_file}' is already owned by another run with unreadable owner metadata ({cause}). Wait for that revival to finish or start a separate continuation without reusing this session file."
    )
}

/// `<root>/session-leases`.
#[derive(Debug)]
pub struct SessionLeases {
    dir: Dir,
    policy: DurabilityPolicy,
}

/// A held lease.
#[derive(Debug)]
pub struct Lease {
    id: String,
    owner: LeaseOwner,
    policy: DurabilityPolicy,
    leases: Dir,
}

impl SessionLeases {
    /// Opens (creating 0700) `<root>/session-leases`.
    pub fn open(root: &Dir, policy: DurabilityPolicy) -> io::Result<Self> {
        Ok(Self {
            dir: root.ensure_child(names::SESSION_LEASES_DIR)?,
            policy,
        })
    }

    /// R6a acquisition.
    pub fn acquire(&self, request: &LeaseRequest, me: &LeaseIdentity<'_>) -> Result<Lease, LeaseError> {
        let id = lease_id(&request.canonical_session_file);
        let os = self.dir.os().clone();
        let mut last_conflict = None;
        for _ in 0..MAX_ACQUIRE_ATTEMPTS {
            let token = uuid_v4(os.random.as_ref());
            let now = os.clock.wall_ms();
            let owner = LeaseOwner::new(token.clone(), request, me, now);
            let candidate = format!("{id}.candidate-{token}");
            let prepared = self
                .dir
                .ensure_child(&candidate)
                .and_then(|c| c.write_doc(names::LEASE_OWNER, &owner, self.policy.for_kind(DocKind::LeaseOwner)));
            if let Err(e) = prepared {
                remove_lease_dir(&self.dir, &candidate);
                return Err(LeaseError::Io(e));
            }
            match self.dir.rename_to(&candidate, &self.dir, &id) {
                Ok(()) => {
                    return Ok(Lease {
                        id,
                        owner,
                        policy: self.policy,
                        leases: self.dir.try_clone().map_err(LeaseError::Io)?,
                    });
                }
                Err(e) => {
                    remove_lease_dir(&self.dir, &candidate);
                    if !has_errno(&e, Errno::EXIST) && !has_errno(&e, Errno::NOTEMPTY) {
                        return Err(LeaseError::Io(e));
                    }
                }
            }
            let Some(existing) = self.dir.open_child(&id).map_err(LeaseError::Io)? else {
                continue;
            };
            let current = read_owner(&existing).map_err(|cause| {
                LeaseError::Conflict(unreadable_owner_message(&request.canonical_session_file, &cause))
            })?;
            if !is_stale(&current, me) {
                return Err(LeaseError::Conflict(conflict_message(
                    &request.canonical_session_file,
                    &current,
                )));
            }
            let tombstone = format!("{id}.stale-{}", sanitize_token(&current.token));
            match self.dir.rename_to(&id, &self.dir, &tombstone) {
                Ok(()) => {}
                Err(e) if has_errno(&e, Errno::NOENT) => {}
                Err(e) => last_conflict = Some(e.to_string()),
            }
        }
        let cause = last_conflict.unwrap_or_else(|| "the lease kept changing".into());
        Err(LeaseError::Conflict(unreadable_owner_message(
            &request.canonical_session_file,
            &cause,
        )))
    }

    /// The lease state for S7 step 4.
    pub fn probe(&self, canonical_session_file: &str) -> LeaseProbe {
        match self.dir.open_child(&lease_id(canonical_session_file)) {
            Ok(None) => LeaseProbe::Free,
            Ok(Some(dir)) => match read_owner(&dir) {
                Ok(_) => LeaseProbe::Owned,
                Err(cause) => LeaseProbe::Unreadable(cause),
            },
            Err(e) => LeaseProbe::Unreadable(e.to_string()),
        }
    }
}

/// The owner record of a lease directory, or why it cannot be read.
fn read_owner(lease: &Dir) -> Result<LeaseOwner, String> {
    match lease.read_doc::<LeaseOwner>(names::LEASE_OWNER) {
        Ok(ReadDoc::Present(owner)) => Ok(owner),
        Ok(ReadDoc::Absent) => Err("owner.json is missing".into()),
        Ok(ReadDoc::Corrupt(c)) => Err(c.error),
        Err(e) => Err(e.to_string()),
    }
}

fn remove_lease_dir(leases: &Dir, name: &str) {
    if let Ok(Some(dir)) = leases.open_child(name)
        && let Ok(entries) = dir.entries()
    {
        for entry in entries {
            if let Some(n) = entry.name.to_str() {
                let _ = dir.remove(n);
            }
        }
    }
    let _ = leases.remove_empty_dir(name);
}

/// Tokens are UUIDs; anything else is reduced to a safe name component.
fn sanitize_token(token: &str) -> String {
    let cleaned: String = token
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '-')
        .take(64)
        .collect();
    if cleaned.is_empty() {
        sha256_hex(token.as_bytes())[..16].to_owned()
    } else {
        cleaned
    }
}

/// R6a: same host, owner pid gone (or its start identity changed), and no live writer.
pub fn is_stale(owner: &LeaseOwner, me: &LeaseIdentity<'_>) -> bool {
    if owner.hostname != me.hostname {
        return false;
    }
    if owner.pid == me.pid && owner.process_start_identity == me.process_start_identity {
        return false;
    }
    if me.oracle.liveness(owner.pid, owner.process_start_identity.as_deref()) != Liveness::Dead {
        return false;
    }
    match (owner.writer_state, owner.writer_pid) {
        (WriterState::None, _) | (_, None) => true,
        (_, Some(pid)) => me.oracle.liveness(pid, owner.writer_process_start_identity.as_deref()) == Liveness::Dead,
    }
}

impl Lease {
    /// The lease token (T of the revival handshake).
    pub fn token(&self) -> &str {
        &self.owner.token
    }

    /// The owner record as written.
    pub fn owner(&self) -> &LeaseOwner {
        &self.owner
    }

    /// The lease directory name (`canonicalSessionId`).
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Records the writer state (R10: spawning → running{pid} → none).
    pub fn set_writer(
        &mut self,
        state: WriterState,
        pid: Option<u32>,
        identity: Option<String>,
        now: u64,
    ) -> io::Result<()> {
        self.owner.writer_state = state;
        self.owner.writer_pid = pid;
        self.owner.writer_process_start_identity = identity;
        self.owner.updated_at_ms = now;
        let dir = self
            .leases
            .open_child(&self.id)?
            .ok_or_else(|| crate::errors::os_error(Errno::NOENT, "open", &self.leases.join(&self.id)))?;
        match dir.read_doc::<LeaseOwner>(names::LEASE_OWNER)? {
            ReadDoc::Present(current) if current.token == self.owner.token => {}
            _ => {
                return Err(io::Error::other(format!(
                    "The session lease '{}' is no longer ours.",
                    self.id
                )));
            }
        }
        dir.write_doc(
            names::LEASE_OWNER,
            &self.owner,
            self.policy.for_kind(DocKind::LeaseOwner),
        )
    }

    /// Releases the lease if `owner.json` still carries our token: the directory is first
    /// renamed aside (atomic hand-back), then emptied and removed. Returns whether it was ours.
    pub fn release(self) -> io::Result<bool> {
        let Some(dir) = self.leases.open_child(&self.id)? else {
            return Ok(false);
        };
        match dir.read_doc::<LeaseOwner>(names::LEASE_OWNER)? {
            ReadDoc::Present(current) if current.token == self.owner.token => {}
            _ => return Ok(false),
        }
        let released = format!("{}.released-{}", self.id, sanitize_token(&self.owner.token));
        self.leases.rename_to(&self.id, &self.leases, &released)?;
        remove_lease_dir(&self.leases, &released);
        Ok(true)
    }
}

#[cfg(test)]
mod tests;
