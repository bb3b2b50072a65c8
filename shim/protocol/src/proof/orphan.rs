//! Orphaned proofs and stale-run repair (S13 ⊕): a `pending` proof of a run this host did not
//! spawn, whose runner pid is dead (X3), becomes `unknown/observer-unavailable`; if the status
//! is still active the run is also marked failed and the reason becomes `stale-repair`.

use super::finalize::append_event;
use super::{ProcessTerminal, ProofState, UnknownReason};
use crate::dir::Dir;
use crate::doc::ReadDoc;
use crate::durability::{DocKind, DurabilityPolicy};
use crate::index::ActiveRunIndex;
use crate::layout::names;
use crate::lock::StatusLock;
use crate::procinfo::{Liveness, ProcessOracle};
use crate::status::{RunState, Status, read_status, write_status};
use std::io::{self, Read, Seek, SeekFrom};

/// Lines of `runner.stderr.log` quoted in a stale repair.
pub const STDERR_TAIL_LINES: usize = 30;
/// Characters of `runner.stderr.log` quoted in a stale repair.
pub const STDERR_TAIL_CHARS: usize = 4000;

/// Who is asking, and how liveness is judged.
pub struct OrphanRequest<'a> {
    /// The calling host spawned this run in this process (then its exit watcher finalizes).
    pub spawned_here: bool,
    /// Liveness of pids we did not spawn.
    pub oracle: &'a dyn ProcessOracle,
    /// The caller's `/proc/self/ns/pid` target; a status from another namespace is not judged.
    pub own_pid_namespace: Option<&'a str>,
}

/// The S13 verdict.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OrphanDecision {
    /// Leave the run alone (why).
    NotOrphan(&'static str),
    /// Write `unknown/observer-unavailable`; the status keeps its (terminal) state.
    ObserverUnavailable,
    /// The status is still active: mark it failed with this message; reason `stale-repair`.
    StaleRepair(String),
}

/// The S13 decision for a stored `proof` and `status`; `stderr_tail` is quoted in a repair.
pub fn decide_orphan(
    proof: &ProcessTerminal,
    status: &Status,
    request: &OrphanRequest<'_>,
    stderr_tail: Option<&str>,
) -> OrphanDecision {
    if proof.state != ProofState::Pending {
        return OrphanDecision::NotOrphan("the proof is not pending");
    }
    if request.spawned_here {
        return OrphanDecision::NotOrphan("this process observes the runner");
    }
    let Some(pid) = status.pid else {
        return OrphanDecision::NotOrphan("the status has no pid");
    };
    if let (Some(theirs), Some(ours)) = (status.pid_namespace_scope.as_deref(), request.own_pid_namespace)
        && theirs != ours
    {
        return OrphanDecision::NotOrphan("the runner lives in another pid namespace");
    }
    match request.oracle.liveness(pid, status.pid_start_identity.as_deref()) {
        Liveness::Dead => {}
        Liveness::Alive => return OrphanDecision::NotOrphan("the runner is alive"),
        Liveness::Unknown(_) => return OrphanDecision::NotOrphan("the runner's liveness is unknown"),
    }
    if status.is_active() {
        OrphanDecision::StaleRepair(stale_repair_message(pid, stderr_tail))
    } else {
        OrphanDecision::ObserverUnavailable
    }
}

/// `Async runner process <pid> exited or disappeared before writing a result. Marked run failed
/// by stale-run reconciliation.` plus the stderr tail when there is one.
pub fn stale_repair_message(pid: u32, stderr_tail: Option<&str>) -> String {
    let mut message = format!(
        "Async runner process {pid} exited or disappeared before writing a result. Marked run failed by stale-run reconciliation."
    );
    if let Some(tail) = stderr_tail.filter(|t| !t.is_empty()) {
        message.push_str("\n\nRunner stderr tail:\n");
        message.push_str(tail);
    }
    message
}

/// The last ≤ 30 lines / ≤ 4 000 characters of `<run>/runner.stderr.log`, trimmed; `None` when
/// absent, unreadable or empty.
pub fn stderr_tail(run: &Dir) -> Option<String> {
    let mut file = run.open_read(names::RUNNER_STDERR_LOG).ok()??;
    let len = file.seek(SeekFrom::End(0)).ok()?;
    let window = u64::try_from(STDERR_TAIL_CHARS * 4).unwrap_or(u64::MAX);
    file.seek(SeekFrom::Start(len.saturating_sub(window))).ok()?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes).ok()?;
    let text = String::from_utf8_lossy(&bytes);
    let text = text.trim_end();
    let lines: Vec<&str> = text.lines().collect();
    let tail = lines[lines.len().saturating_sub(STDERR_TAIL_LINES)..].join("\n");
    let chars: Vec<char> = tail.chars().collect();
    let tail: String = chars[chars.len().saturating_sub(STDERR_TAIL_CHARS)..].iter().collect();
    let tail = tail.trim().to_owned();
    (!tail.is_empty()).then_some(tail)
}

/// What [`repair_orphan`] did.
#[derive(Debug)]
pub struct OrphanOutcome {
    /// The written proof (emit `subagent:process-terminal` with it, once).
    pub proof: ProcessTerminal,
    /// Whether the status was marked failed (stale repair).
    pub status_repaired: bool,
    /// Non-fatal problems to log.
    pub warnings: Vec<String>,
}

/// S13 with its I/O under the status lock (so two listers act once): re-reads proof and status,
/// decides, writes the proof, overlays it (and the stale repair), appends the event and
/// releases the marker of a repaired run. `Ok(None)` when the run is not an orphan.
pub fn repair_orphan(
    run: &Dir,
    request: &OrphanRequest<'_>,
    index: Option<&ActiveRunIndex>,
    policy: DurabilityPolicy,
) -> io::Result<Option<OrphanOutcome>> {
    let _lock = StatusLock::acquire(run)?;
    let Ok(ReadDoc::Present(pending)) = run.read_doc::<ProcessTerminal>(names::PROCESS_TERMINAL) else {
        return Ok(None);
    };
    let Ok(ReadDoc::Present(mut status)) = read_status(run) else {
        return Ok(None);
    };
    let tail = stderr_tail(run);
    let decision = decide_orphan(&pending, &status, request, tail.as_deref());
    let reason = match &decision {
        OrphanDecision::NotOrphan(_) => return Ok(None),
        OrphanDecision::ObserverUnavailable => UnknownReason::ObserverUnavailable,
        OrphanDecision::StaleRepair(_) => UnknownReason::StaleRepair,
    };
    let proof = ProcessTerminal::unknown(&pending.run_id, &pending.runner_process_instance_id, reason, None);
    run.write_doc(names::PROCESS_TERMINAL, &proof, policy.for_kind(DocKind::FinalProof))?;
    let mut warnings = Vec::new();
    let now = run.os().clock.wall_ms();
    let candidate = run
        .read_doc::<super::Candidate>(names::PROCESS_TERMINAL_CANDIDATE)
        .ok()
        .and_then(ReadDoc::present);
    super::overlay(&mut status, &proof, candidate.as_ref());
    let status_repaired = if let OrphanDecision::StaleRepair(message) = decision {
        status.mark_terminal(RunState::Failed, now, Some(message));
        true
    } else {
        false
    };
    if let Err(e) = write_status(run, &status, policy.for_kind(DocKind::TerminalStatus)) {
        warnings.push(format!("Failed to overlay the proof into status.json: {e}"));
    }
    append_event(run, now, &proof, &mut warnings);
    if status_repaired && let Some(index) = index {
        match index.release(
            &pending.run_id,
            &RunState::Failed,
            status.tool_call_id.as_deref(),
            Some(run),
        ) {
            Ok(outcome) => warnings.extend(outcome.warnings),
            Err(e) => warnings.push(format!("Failed to release the active-run marker: {e}")),
        }
    }
    Ok(Some(OrphanOutcome {
        proof,
        status_repaired,
        warnings,
    }))
}
