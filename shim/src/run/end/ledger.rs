//! A step's spend (U1), appended to the state root's usage ledger when the step ends
//! ([`sublaunch_protocol::records::ledger`]), so that it is counted after its run is pruned.

use crate::context::Ctx;
use crate::step::end::StepEnd;
use sublaunch_protocol::records::config::provider_of;
use sublaunch_protocol::records::ledger::{Ledger, LedgerEntry};

/// Appends what `end`'s agent reported, when it reported anything. Best effort, like every
/// append (A10): a ledger that cannot be written costs the run nothing.
pub fn record_step(ctx: &Ctx, end: &StepEnd) {
    let Some(usage) = &end.usage else { return };
    let step = ctx.cfg.steps.get(end.index);
    let spec = step.and_then(|s| s.adapter.as_ref());
    let planned = step
        .and_then(|s| s.model.clone())
        .or_else(|| spec.and_then(|s| s.model.clone()));
    // The provider from the plan (pi reports its model without one), the model as reported.
    let provider = step
        .and_then(sublaunch_protocol::records::config::StepConfig::provider)
        .or_else(|| provider_of(None, end.reported_model.as_deref()));
    let model = end.reported_model.clone().or(planned);
    let entry = LedgerEntry {
        at: end.ended_wall,
        run: ctx.cfg.id.clone(),
        parent: ctx.cfg.parent_run_id.clone(),
        step: u32::try_from(end.index).unwrap_or(u32::MAX),
        agent: Some(end.agent.clone()).filter(|a| !a.is_empty()),
        model,
        provider,
        machine: step.and_then(|s| s.placement.as_ref()).map(|p| p.machine.clone()),
        usage: usage.clone(),
    };
    if let Err(e) = Ledger::under(&ctx.paths.root).append(&entry) {
        eprintln!("sublaunch-shim: cannot record the step's usage in the ledger: {e}");
    }
}
