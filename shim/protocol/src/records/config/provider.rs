//! The provider a step's model is called at (`anthropic`, `openai`, a pi provider): what the
//! usage ledger records (U1) and whose rate-limit cooldown the step waits for (U7).

use super::{AdapterId, StepConfig};

impl StepConfig {
    /// The provider the plan gives the step: the adapter's `provider`, else the `provider/` of
    /// the planned model, else the vendor of a CLI that has one.
    pub fn provider(&self) -> Option<String> {
        let spec = self.adapter.as_ref();
        let model = self.model.clone().or_else(|| spec.and_then(|s| s.model.clone()));
        spec.and_then(|s| s.provider.clone())
            .or_else(|| provider_of(spec.map(|s| s.id), model.as_deref()))
    }
}

/// The provider a model is called at: the `provider/` of a qualified model name, else the
/// vendor of a CLI that has one.
pub fn provider_of(adapter: Option<AdapterId>, model: Option<&str>) -> Option<String> {
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
