//! Model verification for pi's JSON mode (a child that silently ran another model fails): the model the child reports in its
//! assistant messages must be the planned one.
//!
//! The reported name matches when it equals (ASCII case-insensitively) the planned model
//! without its thinking suffix (`anthropic/claude-sonnet-4-5`), the registry entry's id
//! (`claude-sonnet-4-5`), the id's last path segment (`openrouter/anthropic/claude-x` →
//! `claude-x`), or one of the aliases declared in settings (`modelResponseAliases`).
//! Otherwise the step fails with a message naming both models and the settings line that
//! declares the alias.

use sublaunch_protocol::records::config::ModelCheck;

/// Checks `reported` against `check`; the failure text on a mismatch.
pub fn verify(check: &ModelCheck, reported: Option<&str>, label: &str) -> Result<(), String> {
    let Some(reported) = reported.map(str::trim).filter(|r| !r.is_empty()) else {
        return Err(format!(
            "Model verification of {label} failed: the child reported no model (planned '{}').",
            check.planned
        ));
    };
    if accepted(check).iter().any(|name| name.eq_ignore_ascii_case(reported)) {
        return Ok(());
    }
    let alias = serde_json::json!({"subagents": {"modelResponseAliases": {check.planned.clone(): [reported]}}});
    Err(format!(
        "Model mismatch in {label}: planned '{}' but the child reported '{reported}'. If '{reported}' is the same model, declare it in settings.json: {alias}",
        check.planned
    ))
}

/// Every name that counts as the planned model.
pub fn accepted(check: &ModelCheck) -> Vec<String> {
    let mut names = vec![check.planned.clone()];
    if let Some(id) = &check.id {
        names.push(id.clone());
        if let Some(last) = id.rsplit('/').next() {
            names.push(last.to_owned());
        }
    }
    names.extend(check.aliases.iter().cloned());
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check() -> ModelCheck {
        ModelCheck {
            planned: "openrouter/anthropic/claude-x".into(),
            id: Some("anthropic/claude-x".into()),
            aliases: vec!["claude-x-20250101".into()],
        }
    }

    #[test]
    fn reported_names_that_match() {
        for name in [
            "openrouter/anthropic/claude-x",
            "anthropic/claude-x",
            "claude-x",
            "Claude-X",
            "claude-x-20250101",
        ] {
            assert_eq!(verify(&check(), Some(name), "step 1"), Ok(()), "{name}");
        }
    }

    #[test]
    fn a_mismatch_names_both_models_and_the_alias_setting() {
        let error = verify(&check(), Some("gpt-5"), "step 1 ('w')").unwrap_err();
        assert!(error.starts_with(
            "Model mismatch in step 1 ('w'): planned 'openrouter/anthropic/claude-x' but the child reported 'gpt-5'."
        ));
        assert!(
            error.contains(r#"{"subagents":{"modelResponseAliases":{"openrouter/anthropic/claude-x":["gpt-5"]}}}"#),
            "{error}"
        );
        assert!(verify(&check(), None, "s").unwrap_err().contains("reported no model"));
    }
}
