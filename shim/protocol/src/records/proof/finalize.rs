//! Finalization after the runner's exit was observed (S7): the pure decision over the stored
//! proof, the candidate and the lease, and the I/O sequence around it (write proof, release
//! marker, overlay status, append event).

use super::{
    Candidate, CanonicalSession, Instance, ProcessTerminal, ProofState, ResumeDisposition, RunnerInstance,
    UnknownReason, WriterRecord, validate_stored_proof,
};
use crate::files::atomic::sha256_hex;
use crate::files::dir::Dir;
use crate::files::doc::ReadDoc;
use crate::files::durability::{DocKind, DurabilityPolicy};
use crate::files::layout::names;
use crate::files::lock::StatusLock;
use crate::records::events;
use crate::records::index::ActiveRunIndex;
use crate::records::status::{Change, ModifyError, RunState, modify_status_locked, read_status};
use serde_json::Value;
use std::io;
use std::path::Path;

/// The state of a revival session lease at finalization (S7 step 4).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LeaseProbe {
    /// No lease directory.
    Free,
    /// A lease directory with an owner exists.
    Owned,
    /// The lease could not be read.
    Unreadable(String),
}

/// Inputs of the S7 decision.
pub struct FinalizeContext<'a> {
    /// The run.
    pub run_id: &'a str,
    /// The runner instance the host spawned.
    pub runner_process_instance_id: &'a str,
    /// What the exit watcher recorded.
    pub exit: RunnerInstance,
    /// Probes the lease of a candidate's `sessionFile` (see `lease::probe`).
    pub lease_probe: &'a dyn Fn(&str) -> LeaseProbe,
    /// Whether a session file exists (for `resumeDisposition`).
    pub session_file_exists: &'a dyn Fn(&str) -> bool,
    /// J8: the engine's word on a cluster job's end, kept in the proof.
    pub cluster: Option<crate::records::cluster::ClusterEvidence>,
}

/// The verdict on an existing `process-terminal.json` (S7 step 1).
#[derive(Clone, Debug, PartialEq)]
pub enum ExistingProof {
    /// A valid `observed`/`unknown` proof: returned unchanged.
    Final(ProcessTerminal),
    /// Absent, pending or not-started: compute the proof.
    Compute,
    /// Unparsable or invalid (diagnostic): ⊕ rename aside and compute.
    Corrupt(String),
}

/// S7 step 1.
pub fn judge_existing(
    existing: &ReadDoc<Value>,
    run_dir: &Path,
    run_id: &str,
    runner_process_instance_id: &str,
) -> ExistingProof {
    match existing {
        ReadDoc::Absent => ExistingProof::Compute,
        ReadDoc::Corrupt(c) => ExistingProof::Corrupt(format!(
            "Invalid process-terminal proof in '{}'. ({})",
            run_dir.display(),
            c.error
        )),
        ReadDoc::Present(value) => match validate_stored_proof(value, run_dir, run_id, runner_process_instance_id) {
            Ok(proof) if proof.state.is_final() => ExistingProof::Final(proof),
            Ok(_) => ExistingProof::Compute,
            Err(diagnostic) => ExistingProof::Corrupt(diagnostic),
        },
    }
}

/// S7 steps 2–8: the proof for this exit, from the candidate, the status state (for
/// `resumeDisposition`) and the lease.
pub fn decide(
    candidate: &ReadDoc<Candidate>,
    status_state: Option<&RunState>,
    run_dir: &Path,
    ctx: &FinalizeContext<'_>,
) -> ProcessTerminal {
    let runner = ctx.exit.clone();
    let unknown = |reason: UnknownReason, diagnostic: Option<String>| {
        let mut proof = ProcessTerminal::unknown(ctx.run_id, ctx.runner_process_instance_id, reason, diagnostic);
        proof.instances = Some(vec![Instance::Runner(runner.clone())]);
        proof
    };
    // Step 2.
    let candidate = match candidate {
        ReadDoc::Present(c) => c,
        ReadDoc::Absent => return unknown(UnknownReason::RunnerCandidateMissing, None),
        ReadDoc::Corrupt(c) => {
            let diagnostic = format!(
                "Invalid process-terminal candidate in '{}': {}",
                run_dir.display(),
                c.error
            );
            return unknown(UnknownReason::RunnerCandidateMissing, Some(diagnostic));
        }
    };
    // Step 3.
    if candidate.run_id != ctx.run_id || candidate.runner_process_instance_id != ctx.runner_process_instance_id {
        let diagnostic = format!(
            "Candidate belongs to run '{}' runner '{}', expected run '{}' runner '{}'.",
            candidate.run_id, candidate.runner_process_instance_id, ctx.run_id, ctx.runner_process_instance_id
        );
        return unknown(UnknownReason::RunnerInstanceMismatch, Some(diagnostic));
    }
    // Step 4.
    if let Some(session_file) = &candidate.session_file {
        match (ctx.lease_probe)(session_file) {
            LeaseProbe::Free => {}
            LeaseProbe::Owned => return unknown(UnknownReason::CanonicalSessionLeaseActive, None),
            LeaseProbe::Unreadable(why) => return unknown(UnknownReason::CanonicalSessionUnavailable, Some(why)),
        }
    }
    // Step 5.
    let released = candidate.revival_lease_release_acknowledged == Some(true);
    if candidate.revival_lease_token.is_some() && !released {
        return unknown(UnknownReason::CanonicalSessionReleaseUnverified, None);
    }
    // Step 6.
    let writers = match consistent_writers(candidate) {
        Ok(writers) => writers,
        Err(diagnostic) => return unknown(UnknownReason::WriterCloseUnverified, Some(diagnostic)),
    };
    // Step 7.
    if let Some(w) = writers.iter().find(|w| !w.process_tree.is_observed()) {
        return unknown(
            UnknownReason::ProcessTreeUnverified,
            Some(format!(
                "Writer '{}' attempt {} has an unverified process tree.",
                w.process_instance_id, w.attempt
            )),
        );
    }
    // Step 8.
    let resume = match status_state {
        Some(RunState::Stopped) => ResumeDisposition::NonResumable,
        Some(RunState::Complete | RunState::Failed | RunState::Paused)
            if candidate
                .session_file
                .as_deref()
                .is_some_and(|f| (ctx.session_file_exists)(f)) =>
        {
            ResumeDisposition::Resumable
        }
        _ => ResumeDisposition::Unavailable,
    };
    let mut proof = ProcessTerminal::pending(ctx.run_id, ctx.runner_process_instance_id);
    proof.state = ProofState::Observed;
    proof.observed_at = Some(runner.close_observed_at);
    let mut instances = vec![Instance::Runner(runner)];
    instances.extend(writers.into_iter().map(Instance::Writer));
    proof.instances = Some(instances);
    proof.resume_disposition = Some(resume);
    proof.canonical_session = candidate.session_file.as_ref().map(|file| CanonicalSession {
        canonical_session_id: sha256_hex(file.as_bytes()),
        lease_disposition: if candidate.revival_lease_token.is_some() {
            "released".into()
        } else {
            "not-held".into()
        },
        free_at_observation: true,
        canonical_session_lease_released: candidate.revival_lease_token.is_some().then_some(true),
    });
    proof
}

/// S7 step 6: every expected step has exactly its expected writer count, no unexpected step
/// has writers, and at least one step is expected. Returns the records in step order.
fn consistent_writers(candidate: &Candidate) -> Result<Vec<WriterRecord>, String> {
    let expected = candidate.expected_writers.clone().unwrap_or_default();
    if expected.is_empty() {
        return Err("The candidate declares no expected writers.".into());
    }
    for (step, list) in &candidate.writers {
        if !expected.contains_key(step) && !list.is_empty() {
            return Err(format!("Step {step} has writer records but no expected writers."));
        }
    }
    let mut steps: Vec<(u64, &String, u32)> = Vec::new();
    for (step, count) in &expected {
        let index = step
            .parse::<u64>()
            .map_err(|_| format!("Invalid step index '{step}' in expectedWriters."))?;
        steps.push((index, step, *count));
    }
    steps.sort_by_key(|s| s.0);
    let mut out = Vec::new();
    for (index, key, count) in steps {
        let list = candidate.writers.get(key).map_or(&[][..], Vec::as_slice);
        if list.len() != usize::try_from(count).unwrap_or(usize::MAX) {
            return Err(format!(
                "Step {index} expected {count} writer record(s), found {}.",
                list.len()
            ));
        }
        for value in list {
            out.push(
                serde_json::from_value::<WriterRecord>(value.clone())
                    .map_err(|e| format!("Invalid writer record for step {index}: {e}"))?,
            );
        }
    }
    Ok(out)
}

/// How [`finalize`] ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FinalizeKind {
    /// A valid final proof already existed: returned unchanged, nothing emitted.
    AlreadyFinal,
    /// A new proof was written: emit `subagent:process-terminal` with it.
    Finalized,
    /// Writing the proof failed: `unknown/proof-write-failed`, emit nothing.
    WriteFailed,
}

/// The result of [`finalize`].
#[derive(Debug)]
pub struct FinalizeOutcome {
    /// The persisted (or projected) proof.
    pub proof: ProcessTerminal,
    /// What happened.
    pub kind: FinalizeKind,
    /// ⊕ The name the corrupt proof was preserved under.
    pub corrupt_preserved_as: Option<String>,
    /// Whether `status.json` got the overlay (S9); false when missing or corrupt.
    pub overlay_applied: bool,
    /// Non-fatal problems to log (marker release, event append, overlay).
    pub warnings: Vec<String>,
}

impl FinalizeOutcome {
    /// Whether the host emits `subagent:process-terminal` (exactly once per run).
    pub fn should_emit(&self) -> bool {
        self.kind == FinalizeKind::Finalized
    }
}

/// S7 with its I/O, under the status lock: judge the stored proof (renaming a corrupt one to
/// `process-terminal.json.corrupt-<epochMs>`), decide, write the proof (durable), release the
/// active-run marker when observed (I4), overlay `status.json` (S9) and append
/// `subagent.run.process_terminal`. The caller runs this only after any startup-failure
/// persistence of the launch has completed (H19).
pub fn finalize(
    run: &Dir,
    ctx: &FinalizeContext<'_>,
    index: Option<&ActiveRunIndex>,
    policy: DurabilityPolicy,
) -> io::Result<FinalizeOutcome> {
    let _lock = StatusLock::acquire(run)?;
    let clock = run.os().clock.clone();
    let mut warnings = Vec::new();
    let existing = run
        .read_doc::<Value>(names::PROCESS_TERMINAL)
        .unwrap_or(ReadDoc::Absent);
    let mut corrupt_preserved_as = None;
    match judge_existing(&existing, run.path(), ctx.run_id, ctx.runner_process_instance_id) {
        ExistingProof::Final(proof) => {
            let overlay = apply_overlay(run, &proof, policy, &mut warnings);
            let overlay_applied = overlay.is_some();
            if overlay == Some(true)
                && policy.for_kind(DocKind::TerminalStatus) != crate::files::atomic::Durability::Atomic
                && let Err(e) = run.sync()
            {
                warnings.push(format!("Failed to overlay the proof into status.json: {e}"));
            }
            return Ok(FinalizeOutcome {
                proof,
                kind: FinalizeKind::AlreadyFinal,
                corrupt_preserved_as,
                overlay_applied,
                warnings,
            });
        }
        ExistingProof::Compute => {}
        ExistingProof::Corrupt(diagnostic) => {
            let name = names::corrupt_proof(clock.wall_ms());
            let preserved =
                run.rename_to(names::PROCESS_TERMINAL, run, &name)
                    .or_else(|rename_error| match &existing {
                        ReadDoc::Corrupt(c) => run.write(&name, &c.bytes, crate::files::atomic::Durability::Atomic),
                        ReadDoc::Present(v) => run.write(
                            &name,
                            &crate::files::doc::to_pretty_bytes(v),
                            crate::files::atomic::Durability::Atomic,
                        ),
                        ReadDoc::Absent => Err(rename_error),
                    });
            match preserved {
                Ok(()) => corrupt_preserved_as = Some(name),
                Err(e) => warnings.push(format!("Failed to preserve the invalid proof ({diagnostic}): {e}")),
            }
        }
    }
    let candidate = run
        .read_doc::<Candidate>(names::PROCESS_TERMINAL_CANDIDATE)
        .unwrap_or_else(|e| {
            ReadDoc::Corrupt(crate::files::doc::Corrupt {
                bytes: Vec::new(),
                error: e.to_string(),
            })
        });
    let status = read_status(run).ok().and_then(ReadDoc::present);
    let mut proof = decide(
        &candidate,
        status.as_ref().and_then(|s| s.state.as_ref()),
        run.path(),
        ctx,
    );
    proof.cluster = ctx.cluster.clone().map(Box::new);
    // The proof and the status overlay share one fsync of the run directory, at the end (A4).
    let durability = policy.for_kind(DocKind::FinalProof);
    if let Err(e) = run.write_doc(names::PROCESS_TERMINAL, &proof, durability.staged()) {
        let mut failed = ProcessTerminal::unknown(
            ctx.run_id,
            ctx.runner_process_instance_id,
            UnknownReason::ProofWriteFailed,
            Some("Failed to persist process-terminal proof.".into()),
        );
        failed.instances = Some(vec![Instance::Runner(ctx.exit.clone())]);
        warnings.push(e.to_string());
        return Ok(FinalizeOutcome {
            proof: failed,
            kind: FinalizeKind::WriteFailed,
            corrupt_preserved_as,
            overlay_applied: false,
            warnings,
        });
    }
    if proof.state == ProofState::Observed
        && let Some(index) = index
    {
        let state = status
            .as_ref()
            .and_then(|s| s.state.clone())
            .filter(RunState::is_terminal)
            .unwrap_or(RunState::Failed);
        let tool_call = status.as_ref().and_then(|s| s.tool_call_id.as_deref());
        match index.release(ctx.run_id, &state, tool_call, Some(run)) {
            Ok(outcome) => warnings.extend(outcome.warnings),
            Err(e) => warnings.push(format!("Failed to release the active-run marker: {e}")),
        }
    }
    let overlay_applied = apply_overlay(run, &proof, policy, &mut warnings).is_some();
    if durability != crate::files::atomic::Durability::Atomic
        && let Err(e) = run.sync()
    {
        warnings.push(format!("Failed to persist process-terminal proof: {e}"));
    }
    append_event(run, clock.wall_ms(), &proof, &mut warnings);
    Ok(FinalizeOutcome {
        proof,
        kind: FinalizeKind::Finalized,
        corrupt_preserved_as,
        overlay_applied,
        warnings,
    })
}

/// S9 under the held lock; a missing or corrupt status is skipped (the sidecar stays
/// authoritative). Skips the write when nothing changes. A durable overlay is staged: the
/// caller fsyncs the run directory after it. `Some(written)` when the status was there.
pub(super) fn apply_overlay(
    run: &Dir,
    proof: &ProcessTerminal,
    policy: DurabilityPolicy,
    warnings: &mut Vec<String>,
) -> Option<bool> {
    let candidate = run
        .read_doc::<Candidate>(names::PROCESS_TERMINAL_CANDIDATE)
        .ok()
        .and_then(ReadDoc::present);
    let result = modify_status_locked(run, false, |status| {
        let before = status.clone();
        super::overlay(status, proof, candidate.as_ref());
        if *status == before {
            (Change::Keep, false)
        } else {
            (Change::Write(policy.for_kind(DocKind::TerminalStatus).staged()), true)
        }
    });
    match result {
        Ok(written) => Some(written),
        Err(ModifyError::Absent | ModifyError::Corrupt(_)) => None,
        Err(ModifyError::Io(e)) => {
            warnings.push(format!("Failed to overlay the proof into status.json: {e}"));
            None
        }
    }
}

/// Appends `subagent.run.process_terminal` with `proof` (S7, S13); a failure is a warning.
pub(super) fn append_event(run: &Dir, now: u64, proof: &ProcessTerminal, warnings: &mut Vec<String>) {
    if let Err(e) = events::append_once(run, &events::process_terminal(now, &proof.run_id, &proof.to_value())) {
        warnings.push(format!("Failed to append the process-terminal event: {e}"));
    }
}
