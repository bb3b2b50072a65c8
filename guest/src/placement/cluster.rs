//! Cluster placement (rules J1–J3): a child asked for `slurm`, `slurm:PARTITION`, or a cluster
//! named in settings runs as a batch job of that cluster instead of on a saved machine.
//!
//! Settings scopes may name clusters under `subagents.clusters`:
//! `{"gpu": {"engine": "slurm", "partition": "gpu", "account": "lab", "qos": "normal",
//! "time": "2:00:00", "cpus": 4, "memory": "8G", "sharedDir": "/shared/sublaunch"}}`. The
//! project entry's fields replace the user entry's, field by field. Every field is optional;
//! an option left out is the cluster's own default. Unknown fields are refused (a misspelt
//! `partiton` would otherwise submit to the default partition). `slurm:PARTITION` needs no
//! settings at all; an entry under that very name adds its options.

use crate::jsstr;
use serde_json::{Map, Value};
use sublaunch_contract::loose::json_kind;
use sublaunch_contract::{ClusterRef, ErrorCode, MachineSettings, PlanError};

/// The engine every cluster placement names today.
pub const SLURM: &str = "slurm";

/// The fields a cluster entry may have.
const FIELDS: [&str; 8] = [
    "engine",
    "partition",
    "account",
    "qos",
    "time",
    "cpus",
    "memory",
    "sharedDir",
];

/// The longest partition, account or QoS name accepted.
const MAX_NAME: usize = 64;

/// The most CPUs a job may ask for.
const MAX_CPUS: u64 = 65_536;

/// The longest time limit accepted, in minutes (a year).
const MAX_MINUTES: u64 = 366 * 24 * 60;

/// The clusters both settings scopes name; parsed once per plan.
pub struct Clusters {
    user: Scope,
    project: Scope,
}

/// One scope's `subagents.clusters`, or why it is unusable.
enum Scope {
    Nothing,
    Map(Map<String, Value>),
    Invalid(PlanError),
}

impl Clusters {
    /// Reads the request's settings scopes.
    pub fn new(settings: Option<&MachineSettings>) -> Self {
        let text = |pick: fn(&MachineSettings) -> Option<&String>| settings.and_then(pick).map(String::as_str);
        Self {
            user: Scope::parse("User settings", text(|s| s.user.as_ref())),
            project: Scope::parse("Project settings", text(|s| s.project.as_ref())),
        }
    }

    /// The cluster `selector` names, or `None` when it names none (a saved machine, then):
    /// `slurm`, `slurm:PARTITION`, or an entry of either scope (J1, J2).
    pub fn resolve(&self, selector: &str, location: &str) -> Result<Option<ClusterRef>, PlanError> {
        let user = self.user.entry(selector)?;
        let project = self.project.entry(selector)?;
        let partition = match selector.strip_prefix(SLURM) {
            Some("") => None,
            Some(rest) => match rest.strip_prefix(':') {
                Some(partition) => Some(check_name(partition, "partition").map_err(|problem| {
                    PlanError::new(
                        ErrorCode::InvalidMachineName,
                        format!("Invalid machine name for {location}: '{selector}': {problem}."),
                    )
                })?),
                None => None,
            },
            None => None,
        };
        let is_engine_name = selector == SLURM || selector.starts_with("slurm:");
        if user.is_none() && project.is_none() && !is_engine_name {
            return Ok(None);
        }
        let mut fields = Map::new();
        let mut scopes = std::collections::BTreeMap::new();
        for (scope, entry) in [("User settings", user), ("Project settings", project)] {
            let Some(entry) = entry else { continue };
            let Value::Object(entry) = entry else {
                return Err(settings_error(
                    scope,
                    &format!(
                        "'clusters.{selector}' must be an object such as {{\"engine\": \"slurm\", \"partition\": \"gpu\"}}, got {}",
                        json_kind(entry)
                    ),
                ));
            };
            for (key, value) in entry {
                if !FIELDS.contains(&key.as_str()) {
                    return Err(settings_error(
                        scope,
                        &format!(
                            "'clusters.{selector}' has an unknown field '{key}'; the fields are {}",
                            FIELDS.join(", ")
                        ),
                    ));
                }
                fields.insert(key.clone(), value.clone());
                scopes.insert(key.clone(), scope);
            }
        }
        let entry = Entry {
            selector,
            fields: &fields,
            scopes: &scopes,
        };
        let engine = entry.text("engine")?;
        if let Some(engine) = engine.as_deref()
            && engine != SLURM
        {
            return Err(entry.error(
                "engine",
                &format!("'clusters.{selector}.engine' is '{engine}'; the engine sublaunch submits to is slurm"),
            ));
        }
        Ok(Some(ClusterRef {
            engine: SLURM.to_owned(),
            name: selector.to_owned(),
            partition: entry.name("partition")?.or(partition),
            account: entry.name("account")?,
            qos: entry.name("qos")?,
            time_limit_minutes: entry.minutes()?,
            cpus: entry.cpus()?,
            memory: entry.memory()?,
            shared_dir: entry.shared_dir()?,
        }))
    }
}

impl Scope {
    fn parse(name: &'static str, text: Option<&str>) -> Self {
        let Some(text) = text else { return Self::Nothing };
        let Ok(Value::Object(mut settings)) = serde_json::from_str::<Value>(text) else {
            // A settings text that is not an object is reported by the machine rules when a
            // child reads it; for clusters it names none.
            return Self::Nothing;
        };
        let Some(Value::Object(mut subagents)) = settings.remove("subagents") else {
            return Self::Nothing;
        };
        match subagents.remove("clusters") {
            None => Self::Nothing,
            Some(Value::Object(clusters)) => Self::Map(clusters),
            Some(other) => Self::Invalid(settings_error(
                name,
                &format!(
                    "invalid 'clusters' in subagents: expected an object keyed by cluster name, got {}",
                    json_kind(&other)
                ),
            )),
        }
    }

    fn entry(&self, selector: &str) -> Result<Option<&Value>, PlanError> {
        match self {
            Self::Nothing => Ok(None),
            Self::Invalid(error) => Err(error.clone()),
            Self::Map(map) => Ok(map.get(selector)),
        }
    }
}

/// A cluster entry, both scopes merged.
struct Entry<'e> {
    selector: &'e str,
    fields: &'e Map<String, Value>,
    /// Which scope each field came from, so an error names the file to fix.
    scopes: &'e std::collections::BTreeMap<String, &'static str>,
}

impl Entry<'_> {
    fn error(&self, field: &str, what: &str) -> PlanError {
        settings_error(self.scopes.get(field).copied().unwrap_or("Settings"), what)
    }

    fn path(&self, field: &str) -> String {
        format!("'clusters.{}.{field}'", self.selector)
    }

    fn text(&self, field: &str) -> Result<Option<String>, PlanError> {
        match self.fields.get(field) {
            None => Ok(None),
            Some(Value::String(text)) if !jsstr::has_control(text) && !jsstr::trim(text).is_empty() => {
                Ok(Some(jsstr::trim(text).to_owned()))
            }
            Some(other) => Err(self.error(
                field,
                &format!(
                    "{} must be a non-empty string without control characters, got {}",
                    self.path(field),
                    json_kind(other)
                ),
            )),
        }
    }

    /// A partition, account or QoS name.
    fn name(&self, field: &str) -> Result<Option<String>, PlanError> {
        let Some(text) = self.text(field)? else { return Ok(None) };
        check_name(&text, field)
            .map(Some)
            .map_err(|problem| self.error(field, &format!("{} {problem}", self.path(field))))
    }

    /// `time`: whole minutes, or Slurm's `MM:SS`, `HH:MM:SS`, `D-HH`, `D-HH:MM`, `D-HH:MM:SS`;
    /// seconds round up to the next minute, as Slurm rounds them.
    fn minutes(&self) -> Result<Option<u32>, PlanError> {
        let refuse = || {
            self.error("time", &format!(
                "{} must be a number of minutes or a time such as \"90\", \"1:30:00\" or \"2-00:00:00\", at least a minute and at most a year",
                self.path("time")
            ))
        };
        let minutes = match self.fields.get("time") {
            None => return Ok(None),
            Some(Value::Number(number)) => number.as_u64().ok_or_else(refuse)?,
            Some(Value::String(text)) => slurm_minutes(jsstr::trim(text)).ok_or_else(refuse)?,
            Some(_) => return Err(refuse()),
        };
        if minutes == 0 || minutes > MAX_MINUTES {
            return Err(refuse());
        }
        Ok(Some(u32::try_from(minutes).map_err(|_| refuse())?))
    }

    fn cpus(&self) -> Result<Option<u32>, PlanError> {
        match self.fields.get("cpus") {
            None => Ok(None),
            Some(value) => value
                .as_u64()
                .filter(|n| (1..=MAX_CPUS).contains(n))
                .and_then(|n| u32::try_from(n).ok())
                .map(Some)
                .ok_or_else(|| {
                    self.error(
                        "cpus",
                        &format!(
                            "{} must be a whole number of CPUs from 1 to {MAX_CPUS}, got {value}",
                            self.path("cpus")
                        ),
                    )
                }),
        }
    }

    /// `memory`: a positive whole number with an optional unit `K`, `M`, `G` or `T`.
    fn memory(&self) -> Result<Option<String>, PlanError> {
        let Some(text) = self.text("memory")? else {
            return Ok(None);
        };
        let digits = text.strip_suffix(['K', 'M', 'G', 'T']).unwrap_or(&text);
        let valid = !digits.is_empty()
            && digits.len() <= 12
            && digits.bytes().all(|b| b.is_ascii_digit())
            && digits.bytes().any(|b| b != b'0');
        if !valid {
            return Err(self.error(
                "memory",
                &format!(
                    "{} must be an amount such as \"512M\" or \"8G\", got {}",
                    self.path("memory"),
                    jsstr::json_quote(&text)
                ),
            ));
        }
        Ok(Some(text))
    }

    fn shared_dir(&self) -> Result<Option<String>, PlanError> {
        let Some(text) = self.text("sharedDir")? else {
            return Ok(None);
        };
        if !text.starts_with('/') {
            return Err(self.error(
                "sharedDir",
                &format!(
                    "{} must be an absolute path every node sees, got {}",
                    self.path("sharedDir"),
                    jsstr::json_quote(&text)
                ),
            ));
        }
        Ok(Some(text))
    }
}

/// A partition, account or QoS name: letters, digits and `_ . + -`, not starting with `-`,
/// at most 64 characters; the problem otherwise.
fn check_name(name: &str, what: &str) -> Result<String, String> {
    let valid = !name.is_empty()
        && name.len() <= MAX_NAME
        && !name.starts_with('-')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'+' | b'-'));
    if valid {
        Ok(name.to_owned())
    } else {
        Err(format!(
            "the {what} must be 1 to {MAX_NAME} letters, digits, '_', '.', '+' or '-' (not starting with '-'), got {}",
            jsstr::json_quote(name)
        ))
    }
}

/// Minutes of a Slurm time string (`sbatch --time` formats), seconds rounded up.
fn slurm_minutes(text: &str) -> Option<u64> {
    let number = |s: &str| -> Option<u64> {
        (!s.is_empty() && s.len() <= 6 && s.bytes().all(|b| b.is_ascii_digit()))
            .then(|| s.parse().ok())
            .flatten()
    };
    let (days, clock) = match text.split_once('-') {
        Some((days, clock)) => (number(days)?, Some(clock)),
        None => (0, None),
    };
    let seconds = match clock {
        // D-HH, D-HH:MM, D-HH:MM:SS
        Some(clock) => {
            let parts: Vec<&str> = clock.split(':').collect();
            let mut parts = parts.iter().map(|p| number(p));
            let hours = parts.next()??;
            let minutes = parts.next().unwrap_or(Some(0))?;
            let seconds = parts.next().unwrap_or(Some(0))?;
            if parts.next().is_some() {
                return None;
            }
            days * 86_400 + hours * 3_600 + minutes * 60 + seconds
        }
        // MM, MM:SS, HH:MM:SS
        None => {
            let parts: Vec<u64> = text.split(':').map(number).collect::<Option<_>>()?;
            match parts.as_slice() {
                [minutes] => minutes * 60,
                [minutes, seconds] => minutes * 60 + seconds,
                [hours, minutes, seconds] => hours * 3_600 + minutes * 60 + seconds,
                _ => return None,
            }
        }
    };
    Some(seconds.div_ceil(60))
}

fn settings_error(scope: &str, what: &str) -> PlanError {
    PlanError::new(ErrorCode::InvalidMachineSettings, format!("{scope}: {what}."))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn clusters(user: Value, project: Option<Value>) -> Clusters {
        Clusters::new(Some(&MachineSettings {
            user: Some(user.to_string()),
            project: project.map(|p| p.to_string()),
        }))
    }

    #[test]
    fn j1_slurm_and_a_partition_need_no_settings() {
        let none = Clusters::new(None);
        let bare = none.resolve("slurm", "step 1").unwrap().unwrap();
        assert_eq!((bare.engine.as_str(), bare.partition.as_deref()), ("slurm", None));
        let debug = none.resolve("slurm:debug", "step 1").unwrap().unwrap();
        assert_eq!(debug.partition.as_deref(), Some("debug"));
        assert_eq!(debug.name, "slurm:debug");
        assert_eq!(
            none.resolve("workmac", "step 1").unwrap(),
            None,
            "a saved machine's name"
        );
        assert_eq!(none.resolve("slurmhost", "step 1").unwrap(), None);
        let error = none.resolve("slurm:--wrap=rm", "step 1").unwrap_err();
        assert_eq!(error.code, ErrorCode::InvalidMachineName);
        assert!(error.message.contains("partition"), "{}", error.message);
        assert!(none.resolve("slurm:", "step 1").is_err());
    }

    #[test]
    fn j2_a_named_cluster_takes_its_options_and_the_project_replaces_fields() {
        let settings = clusters(
            json!({"subagents": {"clusters": {"lab": {
                "engine": "slurm", "partition": "gpu", "account": "a1", "qos": "normal",
                "time": "1:30:01", "cpus": 4, "memory": "8G", "sharedDir": "/shared/s"
            }}}}),
            Some(json!({"subagents": {"clusters": {"lab": {"account": "a2", "time": 15}}}})),
        );
        let lab = settings.resolve("lab", "step 1").unwrap().unwrap();
        assert_eq!(
            lab,
            ClusterRef {
                engine: "slurm".into(),
                name: "lab".into(),
                partition: Some("gpu".into()),
                account: Some("a2".into()),
                qos: Some("normal".into()),
                time_limit_minutes: Some(15),
                cpus: Some(4),
                memory: Some("8G".into()),
                shared_dir: Some("/shared/s".into()),
            }
        );
        let by_partition = clusters(
            json!({"subagents": {"clusters": {"slurm:debug": {"time": "1-00"}}}}),
            None,
        );
        let debug = by_partition.resolve("slurm:debug", "step 1").unwrap().unwrap();
        assert_eq!(
            (debug.partition.as_deref(), debug.time_limit_minutes),
            (Some("debug"), Some(1440))
        );
    }

    #[test]
    fn j2_bad_entries_are_refused_with_the_field() {
        let refused = |entry: Value| {
            let settings = clusters(json!({"subagents": {"clusters": {"lab": entry}}}), None);
            let error = settings.resolve("lab", "step 1").unwrap_err();
            assert_eq!(error.code, ErrorCode::InvalidMachineSettings);
            error.message
        };
        assert!(refused(json!({"partiton": "gpu"})).contains("unknown field 'partiton'"));
        assert!(
            refused(json!({"time": 0})).starts_with("User settings: "),
            "the file to fix is named"
        );
        let project = clusters(
            json!({"subagents": {"clusters": {"lab": {"cpus": 2}}}}),
            Some(json!({"subagents": {"clusters": {"lab": {"cpus": 0}}}})),
        );
        assert!(
            project
                .resolve("lab", "step 1")
                .unwrap_err()
                .message
                .starts_with("Project settings: ")
        );
        assert!(refused(json!({"engine": "kubernetes"})).contains("engine"));
        assert!(refused(json!({"time": 0})).contains("'clusters.lab.time'"));
        assert!(refused(json!({"time": "1:2:3:4"})).contains("'clusters.lab.time'"));
        assert!(refused(json!({"cpus": 0})).contains("'clusters.lab.cpus'"));
        assert!(refused(json!({"memory": "lots"})).contains("'clusters.lab.memory'"));
        assert!(refused(json!({"sharedDir": "shared"})).contains("absolute"));
        assert!(refused(json!({"account": "-x"})).contains("'clusters.lab.account'"));
        assert!(refused(json!("gpu")).contains("must be an object"));
        let broken = clusters(json!({"subagents": {"clusters": []}}), None);
        assert!(
            broken
                .resolve("lab", "step 1")
                .unwrap_err()
                .message
                .contains("'clusters'")
        );
    }

    #[test]
    fn j2_slurm_time_strings_round_seconds_up() {
        for (text, minutes) in [
            ("90", 90),
            ("5:30", 6),
            ("1:00:00", 60),
            ("2-00", 2880),
            ("1-01:30", 1530),
            ("0-00:00:01", 1),
        ] {
            assert_eq!(slurm_minutes(text), Some(minutes), "{text}");
        }
        for text in ["", "a", "1:2:3:4", "-1", "1-", "1-1:2:3:4"] {
            assert_eq!(slurm_minutes(text), None, "{text}");
        }
    }
}
