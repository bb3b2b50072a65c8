//! Where a child's model comes from (model-and-thinking.md M1, M2; improvements M-I1, M-I8;
//! quirk N6).

use crate::jsstr;
use sublaunch_contract::{ModelOrigin, ParentModel};

/// The parent session's model, when both parts are non-empty after trimming (M1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Parent<'r> {
    /// Trimmed provider.
    pub provider: &'r str,
    /// `provider/id` of the trimmed parts.
    pub full_id: String,
}

impl<'r> Parent<'r> {
    /// The usable parent model of a request; anything else counts as absent, never as an
    /// error (M1).
    pub fn from_request(parent: Option<&'r ParentModel>) -> Option<Self> {
        let parent = parent?;
        let provider = non_empty(parent.provider.as_deref())?;
        let id = non_empty(parent.id.as_deref())?;
        Some(Self {
            provider,
            full_id: format!("{provider}/{id}"),
        })
    }
}

/// A value trimmed with TRIM, or `None` when absent or empty after trimming.
pub fn non_empty(value: Option<&str>) -> Option<&str> {
    value.map(jsstr::trim).filter(|v| !v.is_empty())
}

/// The preferred provider of a step (M1, M-I1): the agent's `modelProvider`, else the
/// session's `currentModelProvider`, else the parent's provider. One per step.
pub fn preferred_provider<'a>(
    agent_provider: Option<&'a str>,
    session_provider: Option<&'a str>,
    parent: Option<&Parent<'a>>,
) -> Option<&'a str> {
    non_empty(agent_provider)
        .or_else(|| non_empty(session_provider))
        .or_else(|| parent.map(|p| p.provider))
}

/// What M2 selects for one child.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source<'r> {
    /// The step names a model (trimmed source string).
    Explicit(&'r str),
    /// The agent configures one (trimmed source string).
    Configured(&'r str),
    /// The parent model.
    Inherited,
    /// Nothing: the child uses its runtime default (N2, M-I8).
    NoModel,
}

impl Source<'_> {
    /// The plan's `modelOrigin`.
    pub fn origin(self) -> Option<ModelOrigin> {
        match self {
            Self::Explicit(_) => Some(ModelOrigin::Explicit),
            Self::Configured(_) => Some(ModelOrigin::Configured),
            Self::Inherited => Some(ModelOrigin::Inherited),
            Self::NoModel => None,
        }
    }
}

/// M2: picks the model source from the step's and the agent's trimmed `model` values
/// (`None` = absent) and whether a parent model exists. `""` and `inherit` are inherit
/// requests; a step's inherit request beats the agent's model when a parent exists (N6).
pub fn select<'r>(step: Option<&'r str>, agent: Option<&'r str>, has_parent: bool) -> Source<'r> {
    let configured = agent.filter(|a| !is_inherit_request(a)).map(Source::Configured);
    match step {
        Some(step) if !is_inherit_request(step) => Source::Explicit(step),
        Some(_) if has_parent => Source::Inherited,
        Some(_) => configured.unwrap_or(Source::NoModel),
        None => configured.unwrap_or(if has_parent { Source::Inherited } else { Source::NoModel }),
    }
}

/// Whether a trimmed model value asks for the parent model (M2): `""` or exactly `inherit`.
fn is_inherit_request(value: &str) -> bool {
    value.is_empty() || value == "inherit"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn m1_parent_needs_both_parts_after_trimming() {
        let parent = |p: Option<&str>, i: Option<&str>| ParentModel {
            provider: p.map(Into::into),
            id: i.map(Into::into),
        };
        let usable = parent(Some(" anthropic "), Some("claude\u{FEFF}"));
        assert_eq!(Parent::from_request(Some(&usable)).unwrap().full_id, "anthropic/claude");
        assert!(Parent::from_request(Some(&parent(Some(" "), Some("x")))).is_none());
        assert!(Parent::from_request(Some(&parent(Some("p"), None))).is_none());
        assert!(Parent::from_request(None).is_none());
    }

    #[test]
    fn m1_i1_agent_provider_then_session_then_parent() {
        let parent = Parent {
            provider: "anthropic",
            full_id: "anthropic/x".into(),
        };
        assert_eq!(
            preferred_provider(Some("openai"), Some("google"), Some(&parent)),
            Some("openai")
        );
        assert_eq!(
            preferred_provider(Some("  "), Some(" google "), Some(&parent)),
            Some("google")
        );
        assert_eq!(preferred_provider(None, Some(""), Some(&parent)), Some("anthropic"));
        assert_eq!(preferred_provider(None, None, None), None);
    }

    #[test]
    fn m2_precedence_table() {
        use Source::*;
        assert_eq!(select(Some("a/b"), Some("c/d"), true), Explicit("a/b"));
        assert_eq!(select(Some("inherit"), Some("c/d"), true), Inherited); // N6
        assert_eq!(select(Some(""), Some("c/d"), false), Configured("c/d"));
        assert_eq!(select(Some("inherit"), Some("inherit"), false), NoModel);
        assert_eq!(select(None, Some("c/d"), true), Configured("c/d"));
        assert_eq!(select(None, Some("inherit"), true), Inherited);
        assert_eq!(select(None, None, true), Inherited);
        assert_eq!(select(None, Some(""), false), NoModel);
        assert_eq!(select(Some("Inherit"), None, true), Explicit("Inherit"));
    }

    #[test]
    fn i8_no_model_has_no_origin() {
        assert_eq!(Source::NoModel.origin(), None);
        assert_eq!(Source::Explicit("x").origin(), Some(ModelOrigin::Explicit));
    }
}
