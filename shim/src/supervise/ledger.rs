//! A step's spend (U1), appended to the state root's usage ledger as its agent reports it
//! (at most every [`LIVE_EVERY`]) and when the step ends
//! ([`sublaunch_protocol::records::ledger`]), so that it is counted after its run is pruned.

use crate::context::Ctx;
use crate::step::child::ChildRun;
use crate::step::end::StepEnd;
use std::time::{Duration, Instant};
use sublaunch_protocol::records::config::provider_of;
use sublaunch_protocol::records::ledger::{Ledger, LedgerEntry};
use sublaunch_protocol::records::usage::Usage;

/// How often, at most, a running step's new usage is appended.
pub const LIVE_EVERY: Duration = Duration::from_secs(2);

/// Appends what `end`'s agent reported and the ledger does not hold yet (what was appended
/// while it ran is left out), when it reported anything. Best effort, like every append
/// (A10): a ledger that cannot be written costs the run nothing.
pub fn record_step(ctx: &Ctx, end: &StepEnd) {
    let Some(usage) = &end.usage else { return };
    let rest = added(usage, &end.ledgered);
    append(
        ctx,
        end.index,
        end.reported_model.as_deref(),
        end.ended_wall,
        rest,
        false,
    );
}

/// Appends what a running agent reported since its last entry (U1: recorded as reported, so
/// that a runner killed mid-step loses at most [`LIVE_EVERY`] of it); returns whether it did.
pub fn record_progress(ctx: &Ctx, child: &mut ChildRun, now: Instant) -> bool {
    if now.duration_since(child.ledgered_at.unwrap_or(child.started)) < LIVE_EVERY {
        return false;
    }
    let Some(usage) = child.spent.usage.clone() else {
        return false;
    };
    if usage == child.ledgered {
        return false;
    }
    let delta = added(&usage, &child.ledgered);
    append(ctx, child.index, None, ctx.now_wall(), delta, true);
    child.ledgered = usage;
    child.ledgered_at = Some(now);
    true
}

/// What `now` adds to `before` (a cost, when both have one, by its difference).
fn added(now: &Usage, before: &Usage) -> Usage {
    let mut delta = now.since(before);
    if let (Some(now), Some(before)) = (now.cost_usd, before.cost_usd) {
        delta.cost_usd = Some((now - before).max(0.0));
    }
    delta
}

fn append(ctx: &Ctx, index: usize, reported_model: Option<&str>, at: u64, usage: Usage, partial: bool) {
    let step = ctx.cfg.steps.get(index);
    let spec = step.and_then(|s| s.adapter.as_ref());
    let planned = step
        .and_then(|s| s.model.clone())
        .or_else(|| spec.and_then(|s| s.model.clone()));
    // The provider from the plan (pi reports its model without one), the model as reported.
    let provider = step
        .and_then(sublaunch_protocol::records::config::StepConfig::provider)
        .or_else(|| provider_of(None, reported_model));
    let model = reported_model.map(str::to_owned).or(planned);
    let entry = LedgerEntry {
        at,
        run: ctx.cfg.id.clone(),
        parent: ctx.cfg.parent_run_id.clone(),
        root: ctx.cfg.tree_root_run_id.clone(),
        step: u32::try_from(index).unwrap_or(u32::MAX),
        agent: Some(ctx.agent_name(index)).filter(|a| !a.is_empty()),
        model,
        provider,
        machine: step.and_then(|s| s.placement.as_ref()).map(|p| p.machine.clone()),
        usage,
        partial,
    };
    if let Err(e) = Ledger::under(&ctx.paths.root).append(&entry) {
        eprintln!("sublaunch-shim: cannot record the step's usage in the ledger: {e}");
    }
}
