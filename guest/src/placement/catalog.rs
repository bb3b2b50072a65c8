//! The Herdr machine catalog: presence and shape (rule P4) and entry normalisation (rule P5).
//!
//! The catalog is the verbatim stdout of `herdr machine list --json`. It is parsed once per
//! plan (P16) into normalised entries plus two indexes, so that selecting a machine costs a
//! map lookup even for very large catalogs.

use crate::jsstr;
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use sublaunch_contract::{ErrorCode, LooseString, PlanError};

/// One usable catalog entry after normalisation (P5).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Machine {
    /// TRIM(id); never empty.
    pub id: String,
    /// TRIM(label), when the label is a string with non-empty TRIM.
    pub label: Option<String>,
    /// TRIM(session), under the same condition as the label.
    pub session: Option<String>,
    /// The ssh target, untrimmed (P13 trims and checks it).
    pub target: String,
    /// False only when the entry's `enabled` is literally `false` (Q1).
    pub enabled: bool,
}

impl Machine {
    /// The name messages use for the machine: its label, else its id (P6).
    pub fn display_name(&self) -> &str {
        self.label.as_deref().unwrap_or(&self.id)
    }
}

/// The normalised catalog, in catalog order, with lookup indexes.
#[derive(Debug, Default)]
pub struct Catalog {
    machines: Vec<Machine>,
    first_by_id: BTreeMap<String, usize>,
    by_label: BTreeMap<String, Vec<usize>>,
}

impl Catalog {
    /// Reads the request's `machineCatalog` (P4): it must be present, a string, JSON, and
    /// hold a machine list.
    pub fn load(raw: Option<&LooseString>) -> Result<Self, PlanError> {
        match raw {
            None => Err(catalog_error(
                "The Herdr machine catalog was not provided by the host; it is needed to place a step on a saved machine",
            )),
            Some(LooseString::NotText(json)) => Err(catalog_error(&format!(
                "The Herdr machine catalog must be the text printed by `herdr machine list --json`, got the JSON value {}",
                jsstr::utf16_prefix(json, 64)
            ))),
            Some(LooseString::Text(text)) => Self::parse(text),
        }
    }

    /// Parses catalog text (P4) and normalises its entries (P5). An empty list is valid.
    pub fn parse(text: &str) -> Result<Self, PlanError> {
        let value: Value = serde_json::from_str(text).map_err(|error| {
            catalog_error(&format!(
                "The Herdr machine catalog could not be parsed as JSON ({error})"
            ))
        })?;
        let entries = machine_list(value).ok_or_else(|| {
            catalog_error(
                "The Herdr machine catalog has no machine list: expected a JSON array of machines or an object whose 'machines' member is an array",
            )
        })?;
        Ok(Self::from_entries(entries))
    }

    fn from_entries(entries: Vec<Value>) -> Self {
        let mut catalog = Self::default();
        for entry in entries {
            if let Value::Object(fields) = entry
                && let Some(machine) = normalise(&fields)
            {
                catalog.push(machine);
            }
        }
        catalog
    }

    fn push(&mut self, machine: Machine) {
        let index = self.machines.len();
        self.first_by_id.entry(machine.id.clone()).or_insert(index);
        if let Some(label) = &machine.label {
            self.by_label.entry(label.clone()).or_default().push(index);
        }
        self.machines.push(machine);
    }

    /// Every kept entry, in catalog order.
    pub fn machines(&self) -> &[Machine] {
        &self.machines
    }

    /// The first entry whose id is exactly `id`.
    pub fn first_with_id(&self, id: &str) -> Option<&Machine> {
        self.first_by_id.get(id).and_then(|&index| self.machines.get(index))
    }

    /// Every entry whose label is exactly `label`, disabled ones included, in catalog order.
    pub fn with_label<'c>(&'c self, label: &str) -> impl Iterator<Item = &'c Machine> + 'c {
        let indexes = self.by_label.get(label).map(Vec::as_slice).unwrap_or_default();
        indexes.iter().filter_map(|&index| self.machines.get(index))
    }
}

/// The machine list of a parsed catalog: the value itself when it is an array, or its
/// `machines` member when that is an array (P4).
fn machine_list(value: Value) -> Option<Vec<Value>> {
    match value {
        Value::Array(entries) => Some(entries),
        Value::Object(mut fields) => match fields.remove("machines") {
            Some(Value::Array(entries)) => Some(entries),
            _ => None,
        },
        _ => None,
    }
}

/// Normalises one catalog object (P5): kept only with a string `id` of non-empty TRIM and a
/// string `target`.
fn normalise(fields: &Map<String, Value>) -> Option<Machine> {
    let id = jsstr::trim(fields.get("id")?.as_str()?);
    if id.is_empty() {
        return None;
    }
    let target = fields.get("target")?.as_str()?;
    Some(Machine {
        id: id.to_owned(),
        label: trimmed_text(fields.get("label")),
        session: trimmed_text(fields.get("session")),
        target: target.to_owned(),
        enabled: fields.get("enabled") != Some(&Value::Bool(false)),
    })
}

/// TRIM of a string value, when it is a string with non-empty TRIM.
fn trimmed_text(value: Option<&Value>) -> Option<String> {
    let text = jsstr::trim(value?.as_str()?);
    (!text.is_empty()).then(|| text.to_owned())
}

fn catalog_error(what: &str) -> PlanError {
    PlanError::new(ErrorCode::InvalidMachineCatalog, format!("{what}."))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refusal(raw: Option<&LooseString>) -> String {
        let error = Catalog::load(raw).expect_err("refused");
        assert_eq!(error.code, ErrorCode::InvalidMachineCatalog);
        assert!(error.message.contains("catalog"));
        error.message
    }

    #[test]
    fn p4_missing_or_non_string_catalog_is_refused() {
        refusal(None);
        refusal(Some(&LooseString::NotText("[]".to_owned())));
    }

    #[test]
    fn p4_text_that_is_not_json_is_a_parse_error() {
        for text in ["not json", "garbage{", "", "[", "[1,]", "\u{0}"] {
            assert!(refusal(Some(&LooseString::from(text))).contains("parse"), "{text:?}");
        }
    }

    #[test]
    fn p4_json_of_the_wrong_shape_has_no_machine_list() {
        for text in [
            "{\"items\": []}",
            "null",
            "\"[]\"",
            "42",
            "true",
            "{\"machines\": {}}",
            "{\"machines\": null}",
        ] {
            assert!(
                refusal(Some(&LooseString::from(text))).contains("no machine list"),
                "{text}"
            );
        }
    }

    #[test]
    fn p4_deeply_nested_json_is_refused_not_overflowed() {
        let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        assert!(refusal(Some(&LooseString::from(deep.as_str()))).contains("parse"));
    }

    #[test]
    fn p4_empty_lists_are_valid() {
        assert!(Catalog::parse("[]").expect("valid").machines().is_empty());
        assert!(
            Catalog::parse("{\"machines\": []}")
                .expect("valid")
                .machines()
                .is_empty()
        );
    }

    #[test]
    fn p5_entries_are_kept_only_with_an_id_and_a_string_target() {
        let catalog = Catalog::parse(
            r#"[1, null, "x", [], {"id": "  ", "target": "t"}, {"id": 7, "target": "t"},
                {"id": "a"}, {"id": "b", "target": 3}, {"id": " c ", "target": ""},
                {"id": "d", "target": " h ", "label": "  ", "session": 5}]"#,
        )
        .expect("valid");
        let ids: Vec<&str> = catalog.machines().iter().map(|m| m.id.as_str()).collect();
        assert_eq!(ids, ["c", "d"]);
        let d = &catalog.machines()[1];
        assert_eq!(
            (d.target.as_str(), d.label.as_deref(), d.session.as_deref()),
            (" h ", None, None)
        );
    }

    #[test]
    fn p5_label_and_session_are_trimmed_and_target_is_not() {
        let catalog =
            Catalog::parse(r#"[{"id": "\u00a0x ", "label": " lab\u3000", "session": " work ", "target": " t "}]"#)
                .expect("valid");
        let m = &catalog.machines()[0];
        assert_eq!(m.id, "x");
        assert_eq!(m.label.as_deref(), Some("lab"));
        assert_eq!(m.session.as_deref(), Some("work"));
        assert_eq!(m.target, " t ");
        assert_eq!(m.display_name(), "lab");
    }

    #[test]
    fn q1_only_literal_false_disables() {
        let catalog = Catalog::parse(
            r#"[{"id": "a", "target": "t", "enabled": false}, {"id": "b", "target": "t", "enabled": "false"},
                {"id": "c", "target": "t", "enabled": 0}, {"id": "d", "target": "t"},
                {"id": "e", "target": "t", "enabled": null}]"#,
        )
        .expect("valid");
        let enabled: Vec<bool> = catalog.machines().iter().map(|m| m.enabled).collect();
        assert_eq!(enabled, [false, true, true, true, true]);
    }

    #[test]
    fn p5_indexes_keep_the_first_id_and_every_label() {
        let catalog = Catalog::parse(
            r#"[{"id": "a", "label": "l", "target": "1"}, {"id": "a", "label": "l", "target": "2"},
                {"id": "b", "label": "l", "target": "3", "enabled": false}]"#,
        )
        .expect("valid");
        assert_eq!(catalog.first_with_id("a").map(|m| m.target.as_str()), Some("1"));
        assert_eq!(catalog.with_label("l").count(), 3);
        assert_eq!(catalog.with_label("L").count(), 0);
    }
}
