//! Model scopes (model-and-thinking.md M16–M18, E2; improvements M-I7, M-I11; quirk N3).

use crate::jsstr;
use crate::thinking::split_suffix;
use sublaunch_contract::{ErrorCode, LooseStrings, ModelOrigin, ModelScope, PlanError};

/// The pattern that stands for the parent model (M16).
const INHERIT: &str = "inherit";

/// One enforced scope rule with at least one pattern (other rules have no effect, M16).
#[derive(Debug)]
struct Rule<'r> {
    /// The agent the rule is limited to.
    agent: Option<&'r str>,
    /// Where the rule came from, for messages.
    origin: String,
    /// Trimmed, non-empty patterns.
    patterns: Vec<&'r str>,
    /// Whether inherited/configured violations fail instead of warning.
    strict: bool,
}

impl Rule<'_> {
    fn applies_to(&self, agent: &str) -> bool {
        self.agent.is_none_or(|name| name == agent)
    }

    /// The patterns with `inherit` replaced by the parent full id, when there is a parent.
    fn expanded<'a>(&'a self, parent: Option<&'a str>) -> impl Iterator<Item = &'a str> {
        self.patterns.iter().map(move |&p| match parent {
            Some(parent) if p == INHERIT => parent,
            _ => p,
        })
    }
}

/// The request's enforced scope rules, in rule order.
#[derive(Debug, Default)]
pub struct Scopes<'r> {
    rules: Vec<Rule<'r>>,
}

impl<'r> Scopes<'r> {
    /// Validates `modelScopes` (E2) and keeps the rules that can have an effect (M16).
    pub fn from_request(scopes: Option<&'r [ModelScope]>) -> Result<Self, PlanError> {
        let mut rules = Vec::new();
        for (index, scope) in scopes.unwrap_or_default().iter().enumerate() {
            if let Some(rule) = rule(index, scope)? {
                rules.push(rule);
            }
        }
        Ok(Self { rules })
    }

    /// M18, called only when there is no parent model and before resolution: an explicit
    /// model fails on an applicable rule made only of `inherit`; a configured model or no
    /// model fails on any applicable rule containing `inherit` (N3).
    pub fn check_without_parent(&self, agent: &str, origin: Option<ModelOrigin>) -> Result<(), PlanError> {
        let fails = |rule: &&Rule<'_>| match origin {
            Some(ModelOrigin::Explicit) => rule.patterns.iter().all(|&p| p == INHERIT),
            _ => rule.patterns.contains(&INHERIT),
        };
        match self.rules.iter().filter(|rule| rule.applies_to(agent)).find(fails) {
            Some(rule) => Err(PlanError::new(
                ErrorCode::NoParentModel,
                format!(
                    "Model scope '{}' enforces 'inherit', but no parent session model is available to inherit.",
                    rule.origin
                ),
            )),
            None => Ok(()),
        }
    }

    /// M16–M17: checks the selected model (before thinking is applied) against every
    /// applicable rule in order. An explicit model fails on the first violation; an
    /// inherited or configured one fails on the first strict violation and otherwise gets
    /// one warning per violated rule (M-I11).
    pub fn check(
        &self,
        agent: &str,
        selected: &str,
        origin: ModelOrigin,
        parent: Option<&str>,
        warnings: &mut Vec<String>,
    ) -> Result<(), PlanError> {
        let base = split_suffix(selected).base;
        let subject = base.to_ascii_lowercase();
        let mut kept = Vec::new();
        for rule in self.rules.iter().filter(|rule| rule.applies_to(agent)) {
            if rule
                .expanded(parent)
                .any(|pattern| matches(&pattern.to_ascii_lowercase(), &subject))
            {
                continue;
            }
            let sentence = out_of_scope(base, rule, parent);
            if origin == ModelOrigin::Explicit || rule.strict {
                return Err(PlanError::new(ErrorCode::ModelOutOfScope, format!("{sentence}.")));
            }
            kept.push(format!("{sentence}; kept because the model was not chosen explicitly."));
        }
        warnings.extend(kept);
        Ok(())
    }
}

/// Reads one `modelScopes` entry (E2, M16): `allow` must be an array of strings; an
/// enforced rule needs a non-empty pattern. Returns `None` for a rule with no effect.
fn rule(index: usize, scope: &ModelScope) -> Result<Option<Rule<'_>>, PlanError> {
    let patterns: Vec<&str> = match &scope.allow {
        None => Vec::new(),
        Some(LooseStrings::Strings(items)) => items.iter().map(|p| jsstr::trim(p)).filter(|p| !p.is_empty()).collect(),
        Some(LooseStrings::NotStrings(json)) => {
            return Err(PlanError::invalid_request(format!(
                "Invalid request at modelScopes[{index}].allow: expected an array of strings, got {json}."
            )));
        }
    };
    let enforced = scope.enforce == Some(true);
    if enforced && patterns.is_empty() {
        return Err(PlanError::invalid_request(format!(
            "Invalid request at modelScopes[{index}].allow: an enforced model scope needs at least one non-empty pattern."
        )));
    }
    if !enforced {
        return Ok(None);
    }
    let agent = scope.agent.as_deref();
    let origin = match (&scope.origin, agent) {
        (Some(origin), _) => origin.clone(),
        (None, Some(agent)) => format!("modelScope.agents.{agent}"),
        (None, None) => "modelScope".to_owned(),
    };
    Ok(Some(Rule {
        agent,
        origin,
        patterns,
        strict: scope.strict == Some(true),
    }))
}

/// The `model-out-of-scope` sentence of E3, without its final period.
fn out_of_scope(base: &str, rule: &Rule<'_>, parent: Option<&str>) -> String {
    let patterns: Vec<&str> = rule.expanded(parent).collect();
    format!(
        "Subagent model '{base}' is outside model scope '{}' (allowed patterns: {})",
        rule.origin,
        patterns.join(", ")
    )
}

/// Whether `pattern` matches all of `text` (M16, M-I7): `*` matches any run of characters,
/// `/` included; every other character is literal. Both sides are already lower-cased.
/// Linear: the greedy leftmost placement of the pieces between stars is optimal.
pub(crate) fn matches(pattern: &str, text: &str) -> bool {
    let mut pieces = pattern.split('*');
    let first = pieces.next().unwrap_or_default();
    let Some(rest) = text.strip_prefix(first) else {
        return false;
    };
    let middle: Vec<&str> = pieces.collect();
    let Some((last, inner)) = middle.split_last() else {
        return rest.is_empty();
    };
    let Some(mut window) = rest.strip_suffix(last) else {
        return false;
    };
    for piece in inner {
        match window.find(piece) {
            Some(at) => window = window.get(at + piece.len()..).unwrap_or_default(),
            None => return false,
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scope(allow: &[&str], enforce: bool) -> ModelScope {
        ModelScope {
            allow: Some(LooseStrings::Strings(allow.iter().map(|s| (*s).to_owned()).collect())),
            enforce: Some(enforce),
            ..ModelScope::default()
        }
    }

    fn scopes(list: &[ModelScope]) -> Scopes<'_> {
        Scopes::from_request(Some(list)).unwrap()
    }

    #[test]
    fn m16_i7_only_star_is_special() {
        assert!(matches("openai/gpt-5*", "openai/gpt-5"));
        assert!(!matches("openai/gpt-5-*", "openai/gpt-5"));
        assert!(matches("*", ""));
        assert!(matches("a*b*c", "abc"));
        assert!(matches("a*b*c", "axxbyyc"));
        assert!(!matches("a*b*c", "acb"));
        assert!(!matches("ab*ba", "aba"));
        assert!(matches("*/*", "x/y/z"));
        assert!(!matches("gpt-5?", "gpt-5x"));
        assert!(matches("gpt-5?", "gpt-5?"));
        assert!(!matches("gpt[5]", "gpt5"));
        assert!(matches("gpt[5]", "gpt[5]"));
        assert!(!matches("gpt.5", "gpt-5"));
        assert!(matches("**", "anything"));
        assert!(!matches("", "x"));
    }

    #[test]
    fn m16_matching_ignores_ascii_case_and_the_suffix() {
        let list = [scope(&["OPENAI/GPT-5-*"], true)];
        let mut warnings = Vec::new();
        let result = scopes(&list).check(
            "w",
            "openai/gpt-5-mini:high",
            ModelOrigin::Explicit,
            None,
            &mut warnings,
        );
        assert!(result.is_ok());
    }

    #[test]
    fn m16_inert_rules_have_no_effect() {
        let list = [scope(&["anthropic/*"], false), scope(&[], false), ModelScope::default()];
        let mut warnings = Vec::new();
        scopes(&list)
            .check("w", "openai/x", ModelOrigin::Explicit, None, &mut warnings)
            .unwrap();
        assert!(warnings.is_empty());
    }

    #[test]
    fn e2_enforced_rule_needs_a_pattern_and_allow_must_be_strings() {
        let blank = [scope(&["  ", ""], true)];
        assert_eq!(
            Scopes::from_request(Some(&blank)).unwrap_err().code,
            ErrorCode::InvalidRequest
        );
        let bad = [ModelScope {
            allow: Some(LooseStrings::NotStrings("[1]".to_owned())),
            ..ModelScope::default()
        }];
        let error = Scopes::from_request(Some(&bad)).unwrap_err();
        assert!(error.message.contains("modelScopes[0].allow"));
    }

    #[test]
    fn m17_explicit_fails_on_the_first_violated_rule() {
        let list = [
            scope(&["openai/*", "deepseek/*"], true),
            ModelScope {
                agent: Some("w".into()),
                ..scope(&["openai/gpt-5-mini"], true)
            },
        ];
        let error = scopes(&list)
            .check("w", "deepseek/v4", ModelOrigin::Explicit, None, &mut Vec::new())
            .unwrap_err();
        assert_eq!(error.code, ErrorCode::ModelOutOfScope);
        assert_eq!(
            error.message,
            "Subagent model 'deepseek/v4' is outside model scope 'modelScope.agents.w' (allowed patterns: openai/gpt-5-mini)."
        );
        // The agent rule does not apply to other agents.
        scopes(&list)
            .check("other", "deepseek/v4", ModelOrigin::Explicit, None, &mut Vec::new())
            .unwrap();
    }

    #[test]
    fn m17_i11_configured_and_inherited_warn_once_per_rule() {
        let list = [
            scope(&["anthropic/*"], true),
            ModelScope {
                origin: Some("team".into()),
                ..scope(&["x/*"], true)
            },
        ];
        for origin in [ModelOrigin::Configured, ModelOrigin::Inherited] {
            let mut warnings = Vec::new();
            scopes(&list)
                .check("w", "openai/gpt-5-mini:low", origin, None, &mut warnings)
                .unwrap();
            assert_eq!(warnings.len(), 2);
            assert!(warnings[1].starts_with("Subagent model 'openai/gpt-5-mini' is outside model scope 'team'"));
        }
    }

    #[test]
    fn m17_strict_violation_fails_and_reports_no_warnings() {
        let list = [
            scope(&["anthropic/*"], true),
            ModelScope {
                strict: Some(true),
                ..scope(&["x/*"], true)
            },
        ];
        let mut warnings = Vec::new();
        let error = scopes(&list)
            .check("w", "openai/m", ModelOrigin::Configured, None, &mut warnings)
            .unwrap_err();
        assert_eq!(error.code, ErrorCode::ModelOutOfScope);
        assert!(warnings.is_empty());
    }

    #[test]
    fn m16_inherit_expands_to_the_parent_in_matching_and_messages() {
        let list = [scope(&["inherit"], true)];
        let parent = Some("anthropic/claude-sonnet-4");
        scopes(&list)
            .check(
                "w",
                "Anthropic/Claude-Sonnet-4:high",
                ModelOrigin::Explicit,
                parent,
                &mut Vec::new(),
            )
            .unwrap();
        let error = scopes(&list)
            .check("w", "openai/m", ModelOrigin::Explicit, parent, &mut Vec::new())
            .unwrap_err();
        assert!(error.message.contains("(allowed patterns: anthropic/claude-sonnet-4)"));
    }

    #[test]
    fn m18_n3_inherit_without_a_parent_fails_closed() {
        let mixed = [ModelScope {
            agent: Some("w".into()),
            ..scope(&["inherit", "openai/*"], true)
        }];
        let only = [scope(&[" inherit "], true)];
        assert!(
            scopes(&mixed)
                .check_without_parent("w", Some(ModelOrigin::Explicit))
                .is_ok()
        );
        let error = scopes(&mixed)
            .check_without_parent("w", Some(ModelOrigin::Configured))
            .unwrap_err();
        assert_eq!(error.code, ErrorCode::NoParentModel);
        assert_eq!(
            error.message,
            "Model scope 'modelScope.agents.w' enforces 'inherit', but no parent session model is available to inherit."
        );
        assert!(scopes(&mixed).check_without_parent("w", None).is_err());
        assert!(scopes(&mixed).check_without_parent("other", None).is_ok());
        assert!(
            scopes(&only)
                .check_without_parent("w", Some(ModelOrigin::Explicit))
                .is_err()
        );
    }

    #[test]
    fn m16_unexpanded_inherit_matches_nothing_real() {
        let list = [scope(&["inherit", "openai/*"], true)];
        scopes(&list)
            .check("w", "openai/m", ModelOrigin::Explicit, None, &mut Vec::new())
            .unwrap();
        assert!(
            scopes(&list)
                .check("w", "anthropic/m", ModelOrigin::Explicit, None, &mut Vec::new())
                .is_err()
        );
    }
}
