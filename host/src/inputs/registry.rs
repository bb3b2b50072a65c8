//! The model registry `sublaunch run` hands the planner (`availableModels`).
//!
//! Layers, lowest precedence first: the registry compiled into this binary
//! (`host/data/models.json`), the user's `~/.config/sublaunch/models.json`, the project's
//! nearest `.sublaunch/models.json`, and `--models FILE`. Each layer either extends the ones
//! below it — its entries come first, so on a duplicate provider/id it wins (the planner
//! takes the first) — or, with `"replace": true`, replaces them.
//!
//! A layer file is either a JSON array of entries or `{"replace": bool, "models": [...]}`;
//! each entry is `{provider, id, name?, reasoning?, thinkingLevels?, contextWindow?}`.

use crate::inputs::config_files;
use anyhow::{anyhow, bail};
use serde::Deserialize;
use serde_json::Value;
use std::path::{Path, PathBuf};
use sublaunch_contract::ModelEntry;

const BUILTIN: &str = include_str!("../../data/models.json");

/// One registry entry and the layer it came from.
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    /// The entry.
    pub model: ModelEntry,
    /// `built-in` or the file it was read from.
    pub source: String,
}

/// The effective registry, in the order the planner sees it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Registry {
    /// Entries, highest-precedence layer first.
    pub entries: Vec<Entry>,
}

#[derive(Deserialize)]
struct Document {
    #[serde(default)]
    replace: bool,
    models: Vec<ModelEntry>,
}

struct Layer {
    source: String,
    replace: bool,
    models: Vec<ModelEntry>,
}

impl Registry {
    /// The registry in effect for `cwd`, with `extra` (`--models FILE`) on top.
    pub fn load(cwd: &Path, extra: Option<&Path>, env: &crate::Environment) -> anyhow::Result<Self> {
        let mut layers = vec![builtin_layer()];
        let mut files: Vec<PathBuf> = Vec::new();
        if let Some(dir) = env.config_dir() {
            files.push(dir.join("models.json"));
        }
        if let Some(project) = config_files::nearest(cwd, env.home().as_deref(), ".sublaunch/models.json")
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
        Ok(Self::from_layers(layers))
    }

    /// Only the built-in registry.
    pub fn builtin() -> Self {
        Self::from_layers(vec![builtin_layer()])
    }

    fn from_layers(layers: Vec<Layer>) -> Self {
        let mut entries: Vec<Entry> = Vec::new();
        for layer in layers {
            let mut mine: Vec<Entry> = layer
                .models
                .into_iter()
                .map(|model| Entry {
                    model,
                    source: layer.source.clone(),
                })
                .collect();
            if !layer.replace {
                mine.append(&mut entries);
            }
            entries = mine;
        }
        Self { entries }
    }

    /// The entries as the planner's `availableModels`.
    pub fn models(&self) -> Vec<ModelEntry> {
        self.entries.iter().map(|e| e.model.clone()).collect()
    }
}

/// The registry compiled into this binary (`host/data/models.json`, checked by a test).
fn builtin_layer() -> Layer {
    let (_, models) = parse_layer(Path::new("<built-in>"), BUILTIN.as_bytes()).expect("the built-in registry is valid");
    Layer {
        source: "built-in".into(),
        replace: false,
        models,
    }
}

fn read_layer(file: &Path) -> anyhow::Result<Option<Layer>> {
    let Some(bytes) = config_files::read_bytes(file)? else {
        return Ok(None);
    };
    let (replace, models) = parse_layer(file, &bytes)?;
    Ok(Some(Layer {
        source: file.display().to_string(),
        replace,
        models,
    }))
}

/// Parses a registry file; errors name the file and the JSON path.
fn parse_layer(file: &Path, bytes: &[u8]) -> anyhow::Result<(bool, Vec<ModelEntry>)> {
    let value: Value = config_files::parse(file, bytes)?;
    let (replace, models, prefix) = match value {
        Value::Array(_) => (false, from_value::<Vec<ModelEntry>>(file, value)?, ""),
        Value::Object(_) => {
            let document = from_value::<Document>(file, value)?;
            (document.replace, document.models, "models")
        }
        other => bail!(
            "{}: expected an array of models or {{\"models\": [...]}}, got {}",
            file.display(),
            kind(&other)
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

fn from_value<T: serde::de::DeserializeOwned>(file: &Path, value: Value) -> anyhow::Result<T> {
    serde_path_to_error::deserialize(value).map_err(|error| {
        let path = error.path().to_string();
        anyhow!("{}: at {path}: {}", file.display(), error.into_inner())
    })
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layer(models: &[(&str, &str)], replace: bool, source: &str) -> Layer {
        Layer {
            source: source.into(),
            replace,
            models: models
                .iter()
                .map(|(p, i)| ModelEntry {
                    provider: (*p).into(),
                    id: (*i).into(),
                    ..ModelEntry::default()
                })
                .collect(),
        }
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
