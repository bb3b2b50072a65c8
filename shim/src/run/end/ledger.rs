//! A step's spend (U1), appended to the state root's usage ledger when the step ends
//! ([`sublaunch_protocol::records::ledger`]), so that it is counted after its run is pruned.

use crate::context::Ctx;
use crate::step::end::StepEnd;
use sublaunch_protocol::records::config::AdapterId;
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
    let provider = spec
        .and_then(|s| s.provider.clone())
        .or_else(|| provider_of(spec.map(|s| s.id), planned.as_deref()))
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

/// The provider a model is called at: the `provider/` of a qualified model name, else the
/// vendor of a CLI that has one.
fn provider_of(adapter: Option<AdapterId>, model: Option<&str>) -> Option<String> {
    if let Some((provider, _)) = model.and_then(|m| m.split_once('/')) {
        return Some(provider.to_owned());
    }
    let vendor = match adapter? {
        AdapterId::ClaudeCode | AdapterId::ClaudeCodeWriter => "anthropic",
        AdapterId::CodexExec | AdapterId::CodexExecWriter => "openai",
        AdapterId::CursorAgent | AdapterId::CursorAgentWriter => "cursor",
        _ => return None,
    };
    Some(vendor.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn providers_come_from_the_model_name_then_the_cli() {
        assert_eq!(
            provider_of(Some(AdapterId::Pi), Some("fake/fake-model")).as_deref(),
            Some("fake")
        );
        assert_eq!(
            provider_of(Some(AdapterId::ClaudeCode), Some("sonnet")).as_deref(),
            Some("anthropic")
        );
        assert_eq!(
            provider_of(Some(AdapterId::CodexExecWriter), None).as_deref(),
            Some("openai")
        );
        assert_eq!(provider_of(Some(AdapterId::Pi), Some("fake-model")), None);
    }
}
