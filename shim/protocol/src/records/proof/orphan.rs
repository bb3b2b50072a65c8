//! Orphaned proofs and stale-run repair (S13 ⊕): a `pending` proof of a run this host did not
//! spawn, whose runner pid is dead (X3), becomes `unknown/observer-unavailable`; if the status
//! is still active the run is also marked failed and the reason becomes `stale-repair`. A proof
//! and a run are left to the host that launched the run while that host lives: it observes the
//! exit, writes the proof and fails the run itself. A run whose proof is final but whose status was left active (the
//! runner died after commit) is marked failed too, its proof kept. Whoever marks a run failed
//! because its runner died also ends the agent processes the runner left behind (X8).

use super::finalize::append_event;
use super::{ProcessTerminal, ProofState, UnknownReason};
use crate::files::dir::Dir;
use crate::files::doc::ReadDoc;
use crate::files::durability::{DocKind, DurabilityPolicy};
use crate::files::layout::names;
use crate::files::lock::StatusLock;
use crate::os::processes::Processes;
use crate::procinfo::{Liveness, group_members, start_ticks};
use crate::records::failure::FailureKind;
use crate::records::index::ActiveRunIndex;
use crate::records::status::{RunState, Status, read_status, write_status};
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
    pub oracle: &'a dyn Processes,
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
    /// The proof is final but the status is still active: mark it failed with this message and
    /// keep the proof.
    StaleStatus(String),
}

/// The S13 decision for a stored `proof` and `status`; `stderr_tail` is quoted in a repair.
pub fn decide_orphan(
    proof: &ProcessTerminal,
    status: &Status,
    request: &OrphanRequest<'_>,
    stderr_tail: Option<&str>,
) -> OrphanDecision {
    let pending = proof.state == ProofState::Pending;
    if !pending && !status.is_active() {
        return OrphanDecision::NotOrphan("the run has ended");
    }
    if request.spawned_here {
        return OrphanDecision::NotOrphan("this process observes the runner");
    }
    // J7: a run handed to a cluster lives while its job does; its pid (on a node) is not
    // judged here, the engine is asked instead (the host's cluster observer).
    if status.cluster.is_some() {
        return OrphanDecision::NotOrphan("the cluster engine observes the runner");
    }
    let Some(pid) = status.pid else {
        return OrphanDecision::NotOrphan("the status has no pid");
    };
    if let (Some(theirs), Some(ours)) = (status.pid_namespace_scope.as_deref(), request.own_pid_namespace)
        && theirs != ours
    {
        return OrphanDecision::NotOrphan("the runner lives in another pid namespace");
    }
    // The launching host, while it lives, observes the runner: it writes the proof and fails
    // a run whose runner died itself, right after the exit.
    if let Some((host, identity)) = status.launch_host()
        && request.oracle.liveness(host, identity) == Liveness::Alive
    {
        return OrphanDecision::NotOrphan("the launching host observes the runner");
    }
    match request.oracle.liveness(pid, status.pid_start_identity.as_deref()) {
        Liveness::Dead => {}
        Liveness::Alive => return OrphanDecision::NotOrphan("the runner is alive"),
        Liveness::Unknown(_) => return OrphanDecision::NotOrphan("the runner's liveness is unknown"),
    }
    match (pending, status.is_active()) {
        (true, true) => OrphanDecision::StaleRepair(stale_repair_message(pid, stderr_tail)),
        (true, false) => OrphanDecision::ObserverUnavailable,
        (false, _) => OrphanDecision::StaleStatus(stale_repair_message(pid, stderr_tail)),
    }
}

/// The processes of the agents a dead runner left behind: for each step that records
/// `externalProcess {pid, startIdentity}`, the members of that process group in the runner's
/// session started no earlier than the agent (see [`group_members`]).
pub fn leftover_agents(status: &Status) -> Vec<u32> {
    let Some(session) = status.pid else {
        return Vec::new();
    };
    let groups = status.steps.iter().flatten().filter_map(|step| {
        let process = step.external_process.as_ref()?;
        let since = start_ticks(process.start_identity.as_deref()?)?;
        Some(group_members(process.pid, session, since))
    });
    groups.flatten().collect()
}

/// Ends the agent processes a dead runner left behind with SIGKILL; returns how many were
/// signalled.
pub fn end_leftover_agents(status: &Status, processes: &dyn Processes) -> usize {
    leftover_agents(status)
        .into_iter()
        .filter_map(|pid| rustix::process::Pid::from_raw(i32::try_from(pid).ok()?))
        .filter(|pid| processes.kill(*pid, rustix::process::Signal::KILL).is_ok())
        .count()
}

/// Marks an active run failed because its runner died, under the status lock: ends the agent
/// processes it left behind, writes the failed status with `message` and releases the
/// active-run marker. `Ok(None)` when the status is not active (someone else ended it).
pub fn fail_dead_run(
    run: &Dir,
    message: String,
    kind: FailureKind,
    index: Option<&ActiveRunIndex>,
    policy: DurabilityPolicy,
) -> io::Result<Option<DeadRunRepair>> {
    let _lock = StatusLock::acquire(run)?;
    let Ok(ReadDoc::Present(mut status)) = read_status(run) else {
        return Ok(None);
    };
    if !status.is_active() {
        return Ok(None);
    }
    let mut repair = DeadRunRepair::default();
    mark_failed(run, &mut status, message, kind, index, policy, &mut repair)?;
    Ok(Some(repair))
}

/// What repairing a run whose runner died did.
#[derive(Debug, Default)]
pub struct DeadRunRepair {
    /// Agent processes signalled.
    pub agents_ended: usize,
    /// Non-fatal problems to log.
    pub warnings: Vec<String>,
}

/// Ends the leftovers, marks `status` failed and writes it, releases the marker.
fn mark_failed(
    run: &Dir,
    status: &mut Status,
    message: String,
    kind: FailureKind,
    index: Option<&ActiveRunIndex>,
    policy: DurabilityPolicy,
    repair: &mut DeadRunRepair,
) -> io::Result<()> {
    repair.agents_ended = end_leftover_agents(status, run.os().processes.as_ref());
    remove_sandbox_tmpdirs(status);
    let message = match repair.agents_ended {
        0 => message,
        1 => format!("{message}\n\nEnded 1 agent process the runner left behind."),
        n => format!("{message}\n\nEnded {n} agent processes the runner left behind."),
    };
    // D1: a runner that died with its machine: the run was not lost by the runner alone.
    let (kind, message) = if kind == FailureKind::RunnerLost && status.host_restarted() {
        (
            FailureKind::HostLost,
            format!("The machine restarted while the run ran. {message}"),
        )
    } else {
        (kind, message)
    };
    // The steps that were running end with the run, for the same reason.
    for step in status.steps.iter_mut().flatten() {
        if step.status.as_deref() == Some("running") {
            step.facts.failure_kind = Some(kind);
        }
    }
    status.mark_terminal(RunState::Failed, run.os().clock.wall_ms(), Some(message), Some(kind));
    write_status(run, status, policy.for_kind(DocKind::TerminalStatus))?;
    if let (Some(index), Some(run_id)) = (index, status.run_id.clone()) {
        match index.release(&run_id, &RunState::Failed, status.tool_call_id.as_deref(), Some(run)) {
            Ok(outcome) => repair.warnings.extend(outcome.warnings),
            Err(e) => repair
                .warnings
                .push(format!("Failed to release the active-run marker: {e}")),
        }
    }
    Ok(())
}

/// Removes the temporary directories of a dead runner's sandboxed steps (G33), which it would
/// have removed at each step's end: the writable path of each step's recorded sandbox named
/// `sublaunch-<run>-<step>`, and nothing else.
pub(super) fn remove_sandbox_tmpdirs(status: &Status) {
    let Some(run_id) = status.run_id.as_deref() else {
        return;
    };
    for (index, step) in status.steps.iter().flatten().enumerate() {
        let Some(sandbox) = &step.facts.sandbox else {
            continue;
        };
        let name = format!("sublaunch-{run_id}-{index}");
        for path in sandbox.writable.iter().map(std::path::Path::new) {
            if path.is_absolute() && path.file_name().is_some_and(|n| n == name.as_str()) {
                // Not following a link put in its place: only the directory goes.
                if path.symlink_metadata().is_ok_and(|m| m.is_dir()) {
                    let _ = std::fs::remove_dir_all(path);
                }
            }
        }
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

/// The failure of a run whose runner the launching host saw exit before the run ended:
/// `Async runner process <pid> was killed by <signal>` (or `exited with code <n>`) `before
/// writing a result.` plus the stderr tail when there is one.
pub fn runner_death_message(
    pid: u32,
    exit_code: Option<i32>,
    signal: Option<&str>,
    stderr_tail: Option<&str>,
) -> String {
    let how = match (signal, exit_code) {
        (Some(signal), _) => format!("was killed by {signal}"),
        (None, Some(code)) => format!("exited with code {code}"),
        (None, None) => "exited".to_owned(),
    };
    let mut message = format!("Async runner process {pid} {how} before writing a result.");
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
    /// The proof: newly written (emit `subagent:process-terminal` with it, once) when
    /// `proof_written`, else the final proof that was already there.
    pub proof: ProcessTerminal,
    /// Whether the proof was written by this repair.
    pub proof_written: bool,
    /// Whether the status was marked failed, and what that did.
    pub repaired: Option<DeadRunRepair>,
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
    let Ok(ReadDoc::Present(mut status)) = read_status(run) else {
        return Ok(None);
    };
    let mut warnings = Vec::new();
    let mut unreadable = None;
    let stored = match run.read_doc::<ProcessTerminal>(names::PROCESS_TERMINAL) {
        Ok(ReadDoc::Present(stored)) => stored,
        Ok(ReadDoc::Corrupt(corrupt)) => match proof_from_status(&status) {
            Some(stored) => {
                unreadable = Some(corrupt);
                stored
            }
            None => return Ok(None),
        },
        Ok(ReadDoc::Absent) | Err(_) => return Ok(None),
    };
    let tail = stderr_tail(run);
    let (reason, failure) = match decide_orphan(&stored, &status, request, tail.as_deref()) {
        OrphanDecision::NotOrphan(_) => return Ok(None),
        OrphanDecision::ObserverUnavailable => (Some(UnknownReason::ObserverUnavailable), None),
        OrphanDecision::StaleRepair(message) => (Some(UnknownReason::StaleRepair), Some(message)),
        OrphanDecision::StaleStatus(message) => (None, Some(message)),
    };
    let proof = match reason {
        Some(reason) => {
            if let Some(corrupt) = &unreadable {
                preserve_corrupt_proof(run, corrupt, &mut warnings);
            }
            let proof = ProcessTerminal::unknown(&stored.run_id, &stored.runner_process_instance_id, reason, None);
            run.write_doc(names::PROCESS_TERMINAL, &proof, policy.for_kind(DocKind::FinalProof))?;
            let candidate = run
                .read_doc::<super::Candidate>(names::PROCESS_TERMINAL_CANDIDATE)
                .ok()
                .and_then(ReadDoc::present);
            super::overlay(&mut status, &proof, candidate.as_ref());
            proof
        }
        None => stored,
    };
    let repaired = match failure {
        Some(message) => {
            let mut repair = DeadRunRepair::default();
            if let Err(e) = mark_failed(
                run,
                &mut status,
                message,
                FailureKind::RunnerLost,
                index,
                policy,
                &mut repair,
            ) {
                warnings.push(format!("Failed to mark the run failed: {e}"));
            }
            Some(repair)
        }
        None => {
            if let Err(e) = write_status(run, &status, policy.for_kind(DocKind::TerminalStatus)) {
                warnings.push(format!("Failed to overlay the proof into status.json: {e}"));
            }
            None
        }
    };
    let proof_written = reason.is_some();
    if proof_written {
        append_event(run, run.os().clock.wall_ms(), &proof, &mut warnings);
    }
    // Nobody observed this run's end: its proof is final only now.
    if proof.state.is_final() && status.is_terminal() {
        super::shed_after_end(run, &mut warnings);
    }
    Ok(Some(OrphanOutcome {
        proof,
        proof_written,
        repaired,
        warnings,
    }))
}

/// The proof the status carries (S6: the host's initial status holds the pending proof, the
/// overlay a final one), when it names a run: stands in for a proof file that is unreadable.
/// The pending proof is written at launch without an fsync of its content, so after a power
/// loss the file can hold zeros or nothing while its name survived the commit; without this
/// the run whose runner the power loss killed would stay `running` forever.
fn proof_from_status(status: &Status) -> Option<ProcessTerminal> {
    let proof: ProcessTerminal = serde_json::from_value(status.process_terminal.clone()?).ok()?;
    let names_this_run = status.run_id.as_deref().is_none_or(|id| id == proof.run_id);
    (names_this_run && !proof.run_id.is_empty()).then_some(proof)
}

/// Keeps an unreadable proof's bytes as `process-terminal.json.corrupt-<epochMs>` before the
/// repair replaces it (as the finalizer does, F35).
fn preserve_corrupt_proof(run: &Dir, corrupt: &crate::files::doc::Corrupt, warnings: &mut Vec<String>) {
    let name = names::corrupt_proof(run.os().clock.wall_ms());
    if let Err(e) = run.write(&name, &corrupt.bytes, crate::files::atomic::Durability::Atomic) {
        warnings.push(format!("Failed to preserve the invalid proof ({}): {e}", corrupt.error));
    }
}
