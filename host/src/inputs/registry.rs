//! The model registry `sublaunch run` hands the planner (`availableModels`).
//!
//! Layers, lowest precedence first:
//!
//! 1. the registry compiled into this binary (`host/data/models.json`): a short list of
//!    current models, every one of them a model pi accepts (a test checks them against the
//!    pi the suite installs);
//! 2. **pi's own model list**, when a `pi` is on `PATH`: its shipped catalog, its saved
//!    catalogs and the user's custom pi models, read from that installation (and cached) by
//!    [`pi_catalog`], so sublaunch accepts what that pi accepts;
//! 3. the user's `~/.config/sublaunch/models.json`;
//! 4. the project's nearest `.sublaunch/models.json`, in a trusted project;
//! 5. `--models FILE`.
//!
//! Each layer either extends the ones below it — its entries come first, so on a duplicate
//! provider/id it wins (the planner takes the first, and the lower duplicate is dropped) — or,
//! with `"replace": true`, replaces them.
//!
//! A layer file is either a JSON array of entries or `{"replace": bool, "models": [...]}`;
//! each entry is `{provider, id, name?, reasoning?, thinkingLevels?, contextWindow?}`. A file
//! that is not one is refused with an error naming the file and the JSON path; so is an entry
//! whose `contextWindow` is not a whole number of tokens from 1 to 2^53 (M-I18: `1.5`, `0`,
//! `1e300` or `"big"` would otherwise reach the planner as no context window at all). pi's
//! layer is never an error: what cannot be read from pi is a warning in
//! [`Registry::warnings`].

use crate::inputs::config_files;
use crate::inputs::pi_catalog::{self, PiSource};
use anyhow::{anyhow, bail};
use serde::Deserialize;
use serde_json::Value;
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use sublaunch_contract::ModelEntry;
use sublaunch_contract::loose::json_kind;

const BUILTIN: &str = include_str!("../../data/models.json");

/// One registry entry and the layer it came from.
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    /// The entry.
    pub model: ModelEntry,
    /// `built-in`, `pi <version>` (or `pi <version> (<file>)` for a model pi's agent directory
    /// adds or changes), or the file it was read from.
    pub source: String,
}

/// The effective registry, in the order the planner sees it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Registry {
    /// Entries, highest-precedence layer first; a provider/id appears once.
    pub entries: Vec<Entry>,
    /// What could not be read into the registry but did not stop it (pi's layer).
    pub warnings: Vec<String>,
}

#[derive(Deserialize)]
struct Document {
    #[serde(default)]
    replace: bool,
    models: Vec<ModelEntry>,
}

struct Layer {
    replace: bool,
    entries: Vec<Entry>,
}

impl Layer {
    fn of(source: &str, replace: bool, models: Vec<ModelEntry>) -> Self {
        let entries = models
            .into_iter()
            .map(|model| Entry {
                model,
                source: source.to_owned(),
            })
            .collect();
        Self { replace, entries }
    }
}

impl Registry {
    /// The registry in effect for `cwd`, with `extra` (`--models FILE`) on top. pi is looked
    /// up on `env`'s `PATH` (relative entries against `cwd`); its agent directory and
    /// sublaunch's cache directory come from `env` too.
    pub fn load(
        cwd: &Path,
        project: &crate::inputs::project::Project,
        extra: Option<&Path>,
        env: &crate::Environment,
    ) -> anyhow::Result<Self> {
        let pi = crate::inputs::agents::locate_program("pi", cwd, env.var("PATH")).ok();
        let agent_dir = env.pi_agent_dir();
        let cache_dir = env.cache_dir();
        let pi = pi.as_deref().map(|executable| PiSource {
            executable,
            agent_dir: agent_dir.as_deref(),
            cache_dir: cache_dir.as_deref(),
        });
        Self::load_with(project, extra, env, pi.as_ref())
    }

    /// [`Registry::load`] with pi's layer read from `pi` (`None`: no pi layer).
    pub fn load_with(
        project: &crate::inputs::project::Project,
        extra: Option<&Path>,
        env: &crate::Environment,
        pi: Option<&PiSource<'_>>,
    ) -> anyhow::Result<Self> {
        let mut warnings = Vec::new();
        let mut layers = vec![builtin_layer()];
        if let Some(source) = pi {
            match pi_catalog::load(source) {
                Ok((models, _)) => {
                    warnings.extend(models.warnings);
                    let entries = models
                        .entries
                        .into_iter()
                        .map(|e| Entry {
                            model: e.model,
                            source: e.source,
                        })
                        .collect();
                    layers.push(Layer {
                        replace: false,
                        entries,
                    });
                }
                Err(unlisted) => warnings.push(unlisted.to_string()),
            }
        }
        let mut files: Vec<PathBuf> = Vec::new();
        if let Some(dir) = env.config_dir() {
            files.push(dir.join("models.json"));
        }
        if let Some(project) = project.entry(".sublaunch/models.json")
            && !files.contains(&project)
        {
            files.push(project);
        }
        for file in &files {
            if let Some(layer) = read_layer(file)? {
                layers.push(layer);
            }
        }
        if let Some(file) = extra {
            layers.push(read_layer(file)?.ok_or_else(|| anyhow!("{}: no such file", file.display()))?);
        }
        let mut registry = Self::from_layers(layers);
        registry.warnings = warnings;
        Ok(registry)
    }

    /// Only the built-in registry.
    pub fn builtin() -> Self {
        Self::from_layers(vec![builtin_layer()])
    }

    fn from_layers(layers: Vec<Layer>) -> Self {
        let mut entries: Vec<Entry> = Vec::new();
        for layer in layers {
            let mut mine = layer.entries;
            if !layer.replace {
                mine.append(&mut entries);
            }
            entries = mine;
        }
        // The planner takes the first of identical provider/id pairs; the others are noise.
        let mut seen = HashSet::new();
        entries.retain(|e| seen.insert((e.model.provider.clone(), e.model.id.clone())));
        Self {
            entries,
            warnings: Vec::new(),
        }
    }

    /// The entries as the planner's `availableModels`.
    pub fn models(&self) -> Vec<ModelEntry> {
        self.entries.iter().map(|e| e.model.clone()).collect()
    }
}

/// The registry compiled into this binary (`host/data/models.json`, checked by a test).
fn builtin_layer() -> Layer {
    let (_, models) = parse_layer(Path::new("<built-in>"), BUILTIN.as_bytes()).expect("the built-in registry is valid");
    Layer::of("built-in", false, models)
}

fn read_layer(file: &Path) -> anyhow::Result<Option<Layer>> {
    let Some(bytes) = config_files::read_bytes(file)? else {
        return Ok(None);
    };
    let (replace, models) = parse_layer(file, &bytes)?;
    Ok(Some(Layer::of(&file.display().to_string(), replace, models)))
}

/// Parses a registry file; errors name the file and the JSON path.
fn parse_layer(file: &Path, bytes: &[u8]) -> anyhow::Result<(bool, Vec<ModelEntry>)> {
    let value: Value = config_files::parse(file, bytes)?;
    let (list, prefix) = match &value {
        Value::Array(list) => (Some(list), ""),
        Value::Object(object) => (object.get("models").and_then(Value::as_array), "models"),
        _ => (None, ""),
    };
    for (index, entry) in list.into_iter().flatten().enumerate() {
        check_context_window(file, &format!("{prefix}[{index}]"), entry)?;
    }
    let (replace, models, prefix) = match value {
        Value::Array(_) => (false, from_value::<Vec<ModelEntry>>(file, value)?, ""),
        Value::Object(_) => {
            let document = from_value::<Document>(file, value)?;
            (document.replace, document.models, "models")
        }
        other => bail!(
            "{}: expected an array of models or {{\"models\": [...]}}, got {}",
            file.display(),
            json_kind(&other)
        ),
    };
    for (index, model) in models.iter().enumerate() {
        for (field, text) in [("provider", &model.provider), ("id", &model.id)] {
            if text.trim().is_empty() {
                bail!("{}: at {prefix}[{index}].{field}: must not be empty", file.display());
            }
        }
    }
    Ok((replace, models))
}

/// Refuses an entry whose `contextWindow` is not a whole number from 1 to 2^53 (M-I18),
/// before the number is read as a float: the error names the file, the JSON path and the
/// entry.
fn check_context_window(file: &Path, at: &str, entry: &Value) -> anyhow::Result<()> {
    let Some(window) = entry.get("contextWindow").filter(|w| !w.is_null()) else {
        return Ok(());
    };
    if window.as_number().and_then(pi_catalog::whole_context_window).is_some() {
        return Ok(());
    }
    let text = |field: &str| entry.get(field).and_then(Value::as_str).unwrap_or("?").to_owned();
    bail!(
        "{}: at {at}.contextWindow ({}/{}): {window} is not a context window: it must be a whole number of tokens from 1 to 2^53",
        file.display(),
        text("provider"),
        text("id")
    )
}

fn from_value<T: serde::de::DeserializeOwned>(file: &Path, value: Value) -> anyhow::Result<T> {
    serde_path_to_error::deserialize(value).map_err(|error| {
        let path = error.path().to_string();
        anyhow!("{}: at {path}: {}", file.display(), error.into_inner())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layer(models: &[(&str, &str)], replace: bool, source: &str) -> Layer {
        let models = models
            .iter()
            .map(|(p, i)| ModelEntry {
                provider: (*p).into(),
                id: (*i).into(),
                ..ModelEntry::default()
            })
            .collect();
        Layer::of(source, replace, models)
    }

    fn ids(registry: &Registry) -> Vec<String> {
        registry
            .entries
            .iter()
            .map(|e| format!("{}/{}@{}", e.model.provider, e.model.id, e.source))
            .collect()
    }

    #[test]
    fn higher_layers_come_first_and_replace_drops_lower_ones() {
        let extended = Registry::from_layers(vec![
            layer(&[("a", "x")], false, "built-in"),
            layer(&[("u", "y")], false, "user"),
            layer(&[("p", "z")], false, "project"),
        ]);
        assert_eq!(ids(&extended), ["p/z@project", "u/y@user", "a/x@built-in"]);
        let replaced = Registry::from_layers(vec![
            layer(&[("a", "x")], false, "built-in"),
            layer(&[("u", "y")], true, "user"),
            layer(&[("p", "z")], false, "project"),
        ]);
        assert_eq!(ids(&replaced), ["p/z@project", "u/y@user"]);
    }

    #[test]
    fn m20_m_i18_a_context_window_must_be_a_whole_number_from_1_to_2_pow_53() {
        let file = Path::new("/x/models.json");
        for bad in ["1.5", "0", "-1", "1e300", "9007199254740993", "\"big\"", "true", "[]"] {
            let text = format!(
                r#"{{"models": [{{"provider": "a", "id": "b"}}, {{"provider": "acme", "id": "rocket", "contextWindow": {bad}}}]}}"#
            );
            let error = parse_layer(file, text.as_bytes()).unwrap_err().to_string();
            assert!(
                error.starts_with("/x/models.json: at models[1].contextWindow (acme/rocket): ")
                    && error.contains("whole number"),
                "{bad}: {error}"
            );
            let text = format!(r#"[{{"provider": "acme", "id": "rocket", "contextWindow": {bad}}}]"#);
            let error = parse_layer(file, text.as_bytes()).unwrap_err().to_string();
            assert!(error.contains("at [0].contextWindow (acme/rocket)"), "{bad}: {error}");
        }
        for good in ["1", "200000", "200000.0", "9007199254740992", "null"] {
            let text = format!(r#"[{{"provider": "a", "id": "b", "contextWindow": {good}}}]"#);
            assert!(parse_layer(file, text.as_bytes()).is_ok(), "{good}");
        }
    }

    #[test]
    fn a_provider_and_id_is_listed_once_from_its_highest_layer() {
        let registry = Registry::from_layers(vec![
            layer(&[("a", "x"), ("a", "y")], false, "built-in"),
            layer(&[("a", "x")], false, "pi"),
            layer(&[("a", "y"), ("a", "y")], false, "user"),
        ]);
        assert_eq!(ids(&registry), ["a/y@user", "a/x@pi"]);
    }

    #[test]
    fn the_builtin_registry_has_no_duplicates_and_whole_context_windows() {
        let (_, models) = parse_layer(Path::new("<built-in>"), BUILTIN.as_bytes()).unwrap();
        assert_eq!(Registry::builtin().entries.len(), models.len());
        assert!(models.iter().all(|m| m.context_window.is_some() && m.name.is_some()));
    }

    #[test]
    fn the_builtin_registry_parses() {
        assert!(Registry::builtin().entries.len() >= 20);
    }

    #[test]
    fn bad_files_name_the_file_and_the_json_path() {
        let file = Path::new("/x/models.json");
        let error = parse_layer(
            file,
            br#"{"models": [{"provider": "a", "id": "b"}, {"provider": 7, "id": "c"}]}"#,
        )
        .unwrap_err();
        assert!(
            error.to_string().contains("/x/models.json: at models[1].provider"),
            "{error}"
        );
        let error = parse_layer(file, br#"[{"provider": "a", "id": "  "}]"#).unwrap_err();
        assert!(error.to_string().contains("at [0].id: must not be empty"), "{error}");
        let error = parse_layer(file, br#"{"models": [}"#).unwrap_err();
        assert!(
            error.to_string().contains("/x/models.json: ") && error.to_string().contains("line 1"),
            "{error}"
        );
        let error = parse_layer(file, br#""nope""#).unwrap_err();
        assert!(error.to_string().contains("got a string"), "{error}");
    }
}
