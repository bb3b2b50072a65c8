//! The overlay of a proof into `status.json` (S9).

use super::{Candidate, Instance, ProcessTerminal, ProofState, UnknownReason};
use crate::records::status::Status;

/// The proof of step `step` derived from the run proof and the candidate (S9):
/// zero expected writers → `not-started`; run proof observed and the step's writer records
/// complete → `observed` with the runner and that step's writer records; run proof pending →
/// `pending`; otherwise `unknown` with the run proof's reason (or `writer-close-unverified`).
pub fn step_proof(proof: &ProcessTerminal, candidate: Option<&Candidate>, step: usize) -> ProcessTerminal {
    let mut out = ProcessTerminal::pending(&proof.run_id, &proof.runner_process_instance_id);
    out.child_index = u32::try_from(step).ok();
    out.resume_disposition = proof.resume_disposition;
    let expected = candidate.and_then(|c| c.expected(step));
    if expected == Some(0) {
        out.state = ProofState::NotStarted;
        return out;
    }
    match proof.state {
        ProofState::Pending => return out,
        ProofState::Observed => {
            let records = candidate.and_then(|c| c.writer_records(step).ok());
            if let (Some(expected), Some(records)) = (expected, records)
                && records.len() == usize::try_from(expected).unwrap_or(usize::MAX)
            {
                out.state = ProofState::Observed;
                out.observed_at = proof.observed_at;
                let mut instances: Vec<Instance> = proof
                    .runner_instance()
                    .cloned()
                    .map(Instance::Runner)
                    .into_iter()
                    .collect();
                instances.extend(records.into_iter().map(Instance::Writer));
                out.instances = Some(instances);
                return out;
            }
        }
        ProofState::NotStarted | ProofState::Unknown => {}
    }
    out.state = ProofState::Unknown;
    out.reason = Some(if proof.state == ProofState::Unknown {
        proof.reason.unwrap_or(UnknownReason::WriterCloseUnverified)
    } else {
        UnknownReason::WriterCloseUnverified
    });
    out
}

/// S9: `status.processTerminal = proof` and every step's proof from [`step_proof`]. The run
/// `state` is never touched.
pub fn overlay(status: &mut Status, proof: &ProcessTerminal, candidate: Option<&Candidate>) {
    status.process_terminal = Some(proof.to_value());
    if let Some(steps) = status.steps.as_mut() {
        for (i, step) in steps.iter_mut().enumerate() {
            step.process_terminal = Some(step_proof(proof, candidate, i).to_value());
        }
    }
}
