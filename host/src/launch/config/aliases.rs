//! `subagents.modelResponseAliases` in settings: other names a pi child may report for a
//! planned model (model verification: a child that silently ran another model fails). Two shapes are accepted:
//!
//! ```json
//! { "subagents": { "modelResponseAliases": {
//!     "anthropic/claude-sonnet-4-5": ["claude-sonnet-4-5-20250929", "sonnet-4.5"],
//!     "openai/gpt-5-mini": "gpt-5-mini-2025-08-07" } } }
//! ```
//!
//! a map from a planned model (with or without its provider, thinking suffix left out) to one
//! name or a list of names; or a list of groups of interchangeable names,
//! `[["anthropic/claude-sonnet-4-5", "claude-sonnet-4-5-20250929"], …]`: when the planned
//! model is in a group, every name of the group is accepted. Names compare ASCII
//! case-insensitively. Project settings win over user settings as a whole.

use crate::inputs::settings::Settings;
use serde_json::Value;
use std::path::Path;

/// The aliases from settings, normalised to groups: `(keys, names)` — a planned model matching
/// one of `keys` accepts every name of `names`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AliasTable {
    groups: Vec<(Vec<String>, Vec<String>)>,
}

impl AliasTable {
    /// Parses a `modelResponseAliases` value; `what` names it in errors.
    pub fn parse(value: &Value, what: &str) -> Result<Self, AliasError> {
        let bad = |problem: AliasProblem| AliasError {
            what: what.to_owned(),
            problem,
        };
        let mut groups = Vec::new();
        match value {
            Value::Null => {}
            Value::Object(map) => {
                for (planned, names) in map {
                    let names = match names {
                        Value::String(name) => vec![name.clone()],
                        Value::Array(items) => {
                            strings(items).ok_or_else(|| bad(AliasProblem::NotNames(planned.clone())))?
                        }
                        _ => return Err(bad(AliasProblem::NotNames(planned.clone()))),
                    };
                    groups.push((vec![planned.clone()], names));
                }
            }
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    let names = item
                        .as_array()
                        .and_then(|a| strings(a))
                        .ok_or_else(|| bad(AliasProblem::NotAGroup(i)))?;
                    groups.push((names.clone(), names));
                }
            }
            _ => {
                return Err(bad(AliasProblem::Shape));
            }
        }
        Ok(Self { groups })
    }

    /// The names accepted for `planned` (`provider/id`) whose registry id is `id`.
    pub fn for_model(&self, planned: &str, id: Option<&str>) -> Vec<String> {
        let matches =
            |key: &String| key.eq_ignore_ascii_case(planned) || id.is_some_and(|id| key.eq_ignore_ascii_case(id));
        let mut out: Vec<String> = Vec::new();
        for (keys, names) in &self.groups {
            if keys.iter().any(matches) {
                for name in names {
                    if !out.iter().any(|n| n.eq_ignore_ascii_case(name)) {
                        out.push(name.clone());
                    }
                }
            }
        }
        out
    }
}

/// A `modelResponseAliases` value that cannot be read: `<what>: <problem>`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{what}: {problem}")]
pub struct AliasError {
    /// What the value is (where it comes from).
    pub what: String,
    /// What is wrong with it.
    pub problem: AliasProblem,
}

/// What is wrong with a `modelResponseAliases` value.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AliasProblem {
    /// A planned model maps to something other than a name or a list of names.
    #[error("'{0}' must map to a name or a list of names")]
    NotNames(String),
    /// An entry of the list of groups is not a list of names.
    #[error("entry {0} must be a list of model names")]
    NotAGroup(usize),
    /// The value is neither an object nor a list.
    #[error("must be an object (planned model → names) or a list of name groups")]
    Shape,
}

/// Why the alias table of a directory's settings cannot be had.
#[derive(Clone, Debug, thiserror::Error)]
pub enum AliasesError {
    /// The settings cannot be read.
    #[error("{0:#}")]
    Settings(std::sync::Arc<anyhow::Error>),
    /// Their `modelResponseAliases` is wrong.
    #[error(transparent)]
    Invalid(#[from] AliasError),
}

fn strings(items: &[Value]) -> Option<Vec<String>> {
    items.iter().map(|v| v.as_str().map(str::to_owned)).collect()
}

impl AliasTable {
    /// The alias table of `settings`.
    pub fn of(settings: &Settings) -> Result<Self, AliasError> {
        match settings.model_response_aliases() {
            Some(value) => Self::parse(&value, "Invalid subagents.modelResponseAliases in settings"),
            None => Ok(Self::default()),
        }
    }
}

/// The alias table of the settings in effect for `cwd` (a launch not prepared from settings).
pub fn aliases_for(cwd: &Path, env: &crate::Environment) -> Result<AliasTable, AliasesError> {
    let project = crate::inputs::project::Project::open(cwd, env);
    let settings = Settings::load(&project, env).map_err(|e| AliasesError::Settings(std::sync::Arc::new(e)))?;
    Ok(AliasTable::of(&settings)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn both_shapes_give_the_names_for_a_model() {
        let map = AliasTable::parse(
            &json!({"anthropic/claude-x": ["x-2025", "X"], "claude-y": "y-1"}),
            "aliases",
        )
        .unwrap();
        assert_eq!(map.for_model("anthropic/claude-x", Some("claude-x")), ["x-2025", "X"]);
        assert_eq!(map.for_model("anthropic/claude-y", Some("claude-y")), ["y-1"]);
        assert!(map.for_model("openai/gpt-5", Some("gpt-5")).is_empty());
        let groups = AliasTable::parse(&json!([["anthropic/claude-x", "x-2025"]]), "aliases").unwrap();
        assert_eq!(
            groups.for_model("Anthropic/Claude-X", None),
            ["anthropic/claude-x", "x-2025"]
        );
        let error = AliasTable::parse(&json!({"m": 3}), "aliases").unwrap_err();
        assert_eq!(error.to_string(), "aliases: 'm' must map to a name or a list of names");
        assert!(AliasTable::parse(&json!("x"), "aliases").is_err());
    }
}
