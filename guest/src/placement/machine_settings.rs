//! Per-machine settings from the user and project `settings.json` (rules P7–P10, P-I2).
//!
//! Each scope's `subagents.machines` object maps a machine key (selector, label or id) to an
//! entry `{cwd?, env?}`. Only the entry matched by a placed child's candidate keys is read and
//! validated; entries under other keys are never looked at. Lookups are own-member lookups in
//! a JSON map, so keys such as `__proto__` or `constructor` are ordinary keys (P-I2).

use super::catalog::Machine;
use crate::{jsstr, paths};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use sublaunch_contract::loose::json_kind;
use sublaunch_contract::{ErrorCode, MachineSettings, PlanError};

/// The candidate settings keys of a selected machine, in priority order (P7): the selector,
/// then the label, then the id, without duplicates.
pub fn candidate_keys<'a>(selector: &'a str, machine: &'a Machine) -> Vec<&'a str> {
    let mut keys = vec![selector];
    for key in machine.label.as_deref().into_iter().chain([machine.id.as_str()]) {
        if !keys.contains(&key) {
            keys.push(key);
        }
    }
    keys
}

/// Both settings scopes, parsed once per plan; each matched entry is validated once.
pub struct Settings {
    user: Scope,
    project: Scope,
}

impl Settings {
    /// Reads the request's `machineSettings` (user and project scope).
    pub fn new(settings: Option<&MachineSettings>) -> Self {
        let text = |pick: fn(&MachineSettings) -> Option<&String>| settings.and_then(pick).map(String::as_str);
        Self {
            user: Scope::parse("User settings", text(|s| s.user.as_ref())),
            project: Scope::parse("Project settings", text(|s| s.project.as_ref())),
        }
    }

    /// The settings root of the machine the keys belong to (P8–P10): the user scope is read
    /// (and its errors raised) first, then the project scope; a `cwd` in the project entry
    /// replaces the user's. `None` when neither entry has a `cwd` (or neither scope matched).
    pub fn root(&mut self, keys: &[&str]) -> Result<Option<String>, PlanError> {
        let user = self.user.entry(keys)?;
        let project = self.project.entry(keys)?;
        let project_root = project.and_then(|entry| entry.root);
        Ok(project_root.or_else(|| user.and_then(|entry| entry.root)))
    }
}

/// What one scope holds for the placement rules.
enum Machines {
    /// The scope contributes nothing (not an object, no `subagents` object, no `machines`).
    Nothing,
    /// `subagents.machines`.
    Map(Map<String, Value>),
    /// The scope is malformed; raised when a placed child reads it.
    Invalid(PlanError),
}

/// The validated entry of one scope (P8.5–P8.7, P9).
#[derive(Clone, Debug, PartialEq, Eq)]
struct Entry {
    /// STRIP_TRAILING(TRIM(cwd)), when the entry has a `cwd`.
    root: Option<String>,
}

struct Scope {
    name: &'static str,
    machines: Machines,
    validated: BTreeMap<String, Result<Entry, PlanError>>,
}

impl Scope {
    /// Parses one scope's settings object (P8.1–P8.3).
    fn parse(name: &'static str, text: Option<&str>) -> Self {
        let machines = match text.map(serde_json::from_str::<Value>) {
            None => Machines::Nothing,
            Some(Err(error)) => Machines::Invalid(settings_error(
                name,
                &format!("the settings text could not be parsed as JSON ({error})"),
            )),
            Some(Ok(value)) => machines_of(name, value),
        };
        Self {
            name,
            machines,
            validated: BTreeMap::new(),
        }
    }

    /// The scope's entry for the first candidate key that is an own member of `machines`
    /// (P8.4), validated; `None` when the scope contributes nothing.
    fn entry(&mut self, keys: &[&str]) -> Result<Option<Entry>, PlanError> {
        let map = match &self.machines {
            Machines::Nothing => return Ok(None),
            Machines::Invalid(error) => return Err(error.clone()),
            Machines::Map(map) => map,
        };
        let Some((key, value)) = keys.iter().find_map(|&key| map.get_key_value(key)) else {
            return Ok(None);
        };
        let name = self.name;
        self.validated
            .entry(key.clone())
            .or_insert_with(|| validate_entry(name, key, value))
            .clone()
            .map(Some)
    }
}

/// `subagents.machines` of a parsed settings object (P8.1–P8.3).
fn machines_of(scope: &'static str, value: Value) -> Machines {
    let Value::Object(mut settings) = value else {
        return Machines::Nothing;
    };
    let Some(Value::Object(mut subagents)) = settings.remove("subagents") else {
        return Machines::Nothing;
    };
    match subagents.remove("machines") {
        None => Machines::Nothing,
        Some(Value::Object(machines)) => Machines::Map(machines),
        Some(other) => Machines::Invalid(settings_error(
            scope,
            &format!(
                "invalid 'machines' in subagents: expected an object keyed by machine id or label, got {}",
                json_kind(&other)
            ),
        )),
    }
}

/// Validates a matched entry (P8.5–P8.7) and refuses a non-empty `env` (P9).
fn validate_entry(scope: &'static str, key: &str, value: &Value) -> Result<Entry, PlanError> {
    let Value::Object(entry) = value else {
        return Err(settings_error(
            scope,
            &format!(
                "'machines.{key}' must be an object such as {{\"cwd\": \"~/project\"}}, got {}",
                json_kind(value)
            ),
        ));
    };
    let root = entry.get("cwd").map(|cwd| validate_root(scope, key, cwd)).transpose()?;
    if let Some(env) = entry.get("env") {
        validate_env(scope, key, env)?;
    }
    Ok(Entry { root })
}

/// The entry's `cwd` as a root (P8.6): a string of non-empty TRIM that is remote-absolute and
/// free of control characters; stored without trailing slashes (P-I3).
fn validate_root(scope: &'static str, key: &str, cwd: &Value) -> Result<String, PlanError> {
    let path = format!("'machines.{key}.cwd'");
    let root = cwd.as_str().map(jsstr::trim).unwrap_or_default();
    if root.is_empty() {
        return Err(settings_error(scope, &format!("{path} must be a non-empty string")));
    }
    if !paths::is_remote_absolute(root) {
        return Err(settings_error(
            scope,
            &format!(
                "{path} must be an absolute path on the machine (/…, ~ or ~/…), got {}",
                jsstr::json_quote(root)
            ),
        ));
    }
    if jsstr::has_control(root) {
        return Err(settings_error(scope, &format!("{path} contains control characters")));
    }
    Ok(paths::strip_trailing_slashes(root))
}

/// The entry's `env` (P8.7, P9): an object of string values under shell-safe names, and empty,
/// since 0.69 semantics export nothing to the machine.
fn validate_env(scope: &'static str, key: &str, env: &Value) -> Result<(), PlanError> {
    let well_formed = env
        .as_object()
        .is_some_and(|vars| vars.iter().all(|(name, value)| is_env_name(name) && value.is_string()));
    if !well_formed {
        return Err(settings_error(
            scope,
            &format!(
                "'machines.{key}.env' must be an object of string values whose names match ^[A-Za-z_][A-Za-z0-9_]*$"
            ),
        ));
    }
    if env.as_object().is_some_and(|vars| !vars.is_empty()) {
        return Err(settings_error(
            scope,
            &format!(
                "machines.{key}.env sets environment variables, but nothing local is exported to a saved machine; \
                 configure the environment and credentials on the remote machine itself"
            ),
        ));
    }
    Ok(())
}

/// Whether `name` matches `^[A-Za-z_][A-Za-z0-9_]*$`.
fn is_env_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn settings_error(scope: &str, what: &str) -> PlanError {
    PlanError::new(ErrorCode::InvalidMachineSettings, format!("{scope}: {what}."))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn settings(user: Option<Value>, project: Option<Value>) -> Settings {
        let settings = MachineSettings {
            user: user.map(|v| v.to_string()),
            project: project.map(|v| v.to_string()),
        };
        Settings::new(Some(&settings))
    }

    fn scoped(machines: Value) -> Value {
        json!({"subagents": {"machines": machines}})
    }

    fn root(user: Option<Value>, project: Option<Value>, keys: &[&str]) -> Result<Option<String>, PlanError> {
        settings(user, project).root(keys)
    }

    fn refusal(user: Option<Value>, project: Option<Value>, keys: &[&str]) -> String {
        let error = root(user, project, keys).expect_err("refused");
        assert_eq!(error.code, ErrorCode::InvalidMachineSettings);
        error.message
    }

    #[test]
    fn p7_keys_are_selector_label_id_without_duplicates() {
        let machine = |label: Option<&str>| Machine {
            id: "id1".into(),
            label: label.map(str::to_owned),
            session: None,
            target: "t".into(),
            enabled: true,
        };
        assert_eq!(candidate_keys("lab", &machine(Some("lab"))), ["lab", "id1"]);
        assert_eq!(candidate_keys("id1", &machine(Some("lab"))), ["id1", "lab"]);
        assert_eq!(candidate_keys("id1", &machine(None)), ["id1"]);
    }

    #[test]
    fn p8_scopes_that_are_not_settings_contribute_nothing() {
        for value in [
            json!(null),
            json!([]),
            json!("x"),
            json!({}),
            json!({"subagents": []}),
            json!({"subagents": {}}),
        ] {
            assert_eq!(root(Some(value.clone()), Some(value), &["m"]), Ok(None));
        }
        assert_eq!(Settings::new(None).root(&["m"]), Ok(None));
    }

    #[test]
    fn p8_machines_must_be_an_object() {
        for machines in [json!([]), json!(null), json!("x"), json!(3)] {
            let message = refusal(None, Some(scoped(machines)), &["m"]);
            assert!(
                message.contains("Project settings") && message.contains("invalid 'machines'"),
                "{message}"
            );
        }
    }

    #[test]
    fn p8_text_that_is_not_json_is_refused_when_read() {
        let broken = MachineSettings {
            user: Some("{".into()),
            project: None,
        };
        let error = Settings::new(Some(&broken)).root(&["m"]).expect_err("refused");
        assert_eq!(error.code, ErrorCode::InvalidMachineSettings);
        assert!(error.message.contains("User settings"));
    }

    #[test]
    fn p8_first_matching_key_wins_and_others_are_never_validated() {
        let user = scoped(json!({"lab": {"cwd": "/by-label"}, "id1": {"cwd": "/by-id"}, "other": 5}));
        assert_eq!(
            root(Some(user.clone()), None, &["sel", "lab", "id1"]),
            Ok(Some("/by-label".into()))
        );
        assert_eq!(root(Some(user), None, &["id1", "lab"]), Ok(Some("/by-id".into())));
    }

    #[test]
    fn p8_entry_must_be_an_object() {
        let message = refusal(Some(scoped(json!({"workmac": "/home"}))), None, &["workmac"]);
        assert!(message.contains("User settings") && message.contains("'machines.workmac'"));
    }

    #[test]
    fn p8_root_must_be_a_non_empty_string() {
        for cwd in [json!(""), json!("  "), json!(null), json!(7), json!(["/x"])] {
            let message = refusal(Some(scoped(json!({"m": {"cwd": cwd}}))), None, &["m"]);
            assert!(
                message.contains("'machines.m.cwd'") && message.contains("non-empty"),
                "{message}"
            );
        }
    }

    #[test]
    fn p8_root_must_be_remote_absolute_and_free_of_controls() {
        for cwd in ["relative/path", "~user/x", ".", "../x"] {
            let message = refusal(None, Some(scoped(json!({"m": {"cwd": cwd}}))), &["m"]);
            assert!(
                message.contains("Project settings")
                    && message.contains("'machines.m.cwd'")
                    && message.contains("absolute")
            );
        }
        let message = refusal(Some(scoped(json!({"m": {"cwd": "/a\u{1}b"}}))), None, &["m"]);
        assert!(message.contains("'machines.m.cwd'") && message.contains("control characters"));
    }

    #[test]
    fn p8_root_is_trimmed_and_stripped_but_not_normalised() {
        let cases = [
            (" /srv//x/./y/ ", "/srv//x/./y"),
            ("~/", "~"),
            ("~", "~"),
            ("//", "/"),
            ("///", "/"),
            ("/", "/"),
        ];
        for (cwd, want) in cases {
            assert_eq!(
                root(Some(scoped(json!({"m": {"cwd": cwd}}))), None, &["m"]),
                Ok(Some(want.into())),
                "{cwd}"
            );
        }
    }

    #[test]
    fn p8_env_must_be_an_object_of_strings_with_safe_names() {
        for env in [
            json!({"bad name": "x"}),
            json!({"1X": "x"}),
            json!({"": "x"}),
            json!({"X": 1}),
            json!([]),
            json!(null),
            json!("A=1"),
        ] {
            let message = refusal(None, Some(scoped(json!({"m": {"cwd": "/ok", "env": env}}))), &["m"]);
            assert!(
                message.contains("Project settings") && message.contains("'machines.m.env'"),
                "{message}"
            );
        }
    }

    #[test]
    fn p9_non_empty_env_is_refused_and_empty_env_is_accepted() {
        let message = refusal(Some(scoped(json!({"m": {"env": {"FOO": "user"}}}))), None, &["m"]);
        assert!(message.contains("User settings") && message.contains("machines.m.env") && message.contains("remote"));
        assert_eq!(
            root(Some(scoped(json!({"m": {"cwd": "/r", "env": {}}}))), None, &["m"]),
            Ok(Some("/r".into()))
        );
    }

    #[test]
    fn p8_user_errors_come_before_the_project_scope() {
        let user = scoped(json!({"m": {"env": {"A": "1"}}}));
        let project = scoped(json!([]));
        assert!(refusal(Some(user), Some(project), &["m"]).contains("User settings"));
    }

    #[test]
    fn p10_project_fields_replace_user_fields() {
        let user = scoped(json!({"lab": {"cwd": "/user"}}));
        let project_by_id = scoped(json!({"id1": {"cwd": "/project"}}));
        assert_eq!(
            root(Some(user.clone()), Some(project_by_id), &["lab", "id1"]),
            Ok(Some("/project".into()))
        );
        let project_without_cwd = scoped(json!({"id1": {"env": {}}}));
        assert_eq!(
            root(Some(user), Some(project_without_cwd), &["lab", "id1"]),
            Ok(Some("/user".into()))
        );
    }

    #[test]
    fn p_i2_prototype_names_are_ordinary_own_keys() {
        for key in ["__proto__", "constructor", "toString", "hasOwnProperty"] {
            // No entry under the key: nothing, never a bogus "invalid 'machines.constructor'".
            assert_eq!(
                root(Some(scoped(json!({"other": {"cwd": "/o"}}))), None, &[key]),
                Ok(None)
            );
            // An own entry under the key is read like any other.
            let text = format!(r#"{{"subagents": {{"machines": {{"{key}": {{"cwd": "/own"}}}}}}}}"#);
            let own = MachineSettings {
                user: Some(text),
                project: None,
            };
            assert_eq!(Settings::new(Some(&own)).root(&[key]), Ok(Some("/own".into())));
        }
        let settings_proto = json!({"__proto__": {"subagents": {"machines": {"m": {"cwd": "/x"}}}}});
        assert_eq!(root(Some(settings_proto), None, &["m"]), Ok(None));
    }
}
