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
    pub fn parse(value: &Value, what: &str) -> Result<Self, String> {
        let bad = |detail: &str| format!("{what}: {detail}");
        let mut groups = Vec::new();
        match value {
            Value::Null => {}
            Value::Object(map) => {
                for (planned, names) in map {
                    let names = match names {
                        Value::String(name) => vec![name.clone()],
                        Value::Array(items) => strings(items)
                            .ok_or_else(|| bad(&format!("'{planned}' must map to a name or a list of names")))?,
                        _ => return Err(bad(&format!("'{planned}' must map to a name or a list of names"))),
                    };
                    groups.push((vec![planned.clone()], names));
                }
            }
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    let names = item
                        .as_array()
                        .and_then(|a| strings(a))
                        .ok_or_else(|| bad(&format!("entry {i} must be a list of model names")))?;
                    groups.push((names.clone(), names));
                }
            }
            _ => {
                return Err(bad(
                    "must be an object (planned model → names) or a list of name groups",
                ));
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

fn strings(items: &[Value]) -> Option<Vec<String>> {
    items.iter().map(|v| v.as_str().map(str::to_owned)).collect()
}

/// The alias table of the settings in effect for `cwd`.
pub fn aliases_for(cwd: &Path, env: &crate::Environment) -> Result<AliasTable, String> {
    let project = crate::inputs::project::Project::open(cwd, env);
    let settings = Settings::load(&project, env).map_err(|e| format!("Subagent launch aborted: {e:#}"))?;
    match settings.model_response_aliases() {
        Some(value) => AliasTable::parse(&value, "Invalid subagents.modelResponseAliases in settings"),
        None => Ok(AliasTable::default()),
    }
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
        assert_eq!(error, "aliases: 'm' must map to a name or a list of names");
        assert!(AliasTable::parse(&json!("x"), "aliases").is_err());
    }
}
