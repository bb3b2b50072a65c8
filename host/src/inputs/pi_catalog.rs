//! pi's own model list as a layer of the model registry (see [`super`]).
//!
//! The registry's layers, lowest precedence first: the built-in list, **pi's**, the user's
//! file, the project's file, `--models FILE`. pi's layer is what the `pi` found on `PATH`
//! accepts for `--model`: it is read from that installation, never copied into sublaunch, so a
//! pi upgrade (or a user's custom providers) changes it with no change to sublaunch.
//!
//! What is read, the way pi composes it (`ModelRuntime` of pi-coding-agent):
//!
//! 1. the catalog pi ships: the executable's symbolic links are followed to its package
//!    (`package.json` named `…/pi-coding-agent`), whose `…/pi-ai` dependency is found as
//!    Node resolves it (`node_modules` of the package and of each directory above it). That
//!    package holds the catalog as JSON, one file per provider, listed by
//!    `dist/providers/data/.manifest.json`: `{"<api>": {"<id>": {id, name, provider,
//!    reasoning, thinkingLevelMap, contextWindow, …}}}`;
//! 2. `<agent dir>/models-store.json`, the newer catalogs `pi update --models` saved: a
//!    provider's list there replaces models of the same id and adds the others, when it is
//!    newer than the shipped catalog (`lastModified` after the manifest's `generatedAt`);
//! 3. `<agent dir>/models.json`, the user's custom providers and models (`providers.<id>.models`,
//!    same id replaces, others are added; `modelOverrides` change fields of a model). pi
//!    accepts `//` comments and trailing commas there, and so does this reader. A file pi
//!    would refuse is left out with a warning, as pi leaves it out; a provider pi could not
//!    compose keeps only its shipped models.
//!
//! The agent directory is `$PI_CODING_AGENT_DIR`, else `~/.pi/agent`. Providers pi discovers
//! only while running (extensions, Radius gateways) cannot be known without running pi and
//! are not in the layer.
//!
//! Each entry carries pi's provider, id, name, `reasoning` (pi's "thinking" column) and
//! context window. A context window that is not a whole number from 1 to 2^53 is left out of
//! its entry with a warning, as the planner would (M-I18). The levels pi allows per model are
//! not carried: the planner does not consult `thinkingLevels`, and their thousands of strings
//! would cost every `sublaunch run` about a millisecond to hand over.
//!
//! **Speed.** Reading the catalog (some forty files, 700 KB for pi 0.85) costs about 3 ms of
//! a `sublaunch run` that otherwise takes under 10. So the composed layer is cached under `<cache dir>/pi-models/`, one file
//! per pi executable and agent directory, holding the identity (device, inode, size, mtime,
//! ctime) of every file it was built from, including the `node_modules` places searched in
//! vain. A later run uses it when every one of them is unchanged, and rebuilds it otherwise: a
//! new pi version, a changed `models.json`, a `pi update --models`. A cache file not owned by
//! this user, or writable by others, is never used.
//!
//! **Failures.** Nothing here fails a command: no `pi` on `PATH` is no layer, and a pi whose
//! catalog cannot be read (a compiled single-file pi, an unknown catalog format, a broken
//! install) is no layer with one warning saying why.

use serde::de::{Deserializer, MapAccess, Visitor};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Number, Value};
use std::fmt;
use std::io::Read as _;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};
use sublaunch_contract::ModelEntry;

/// The largest file of pi's this reader reads (a catalog file, `models-store.json`).
const PI_FILE_LIMIT: u64 = 32 * 1024 * 1024;
/// The largest cache file used.
const CACHE_FILE_LIMIT: u64 = 64 * 1024 * 1024;
/// The cache's format; a file of another format is rebuilt.
const CACHE_FORMAT: u32 = 1;
/// The largest context window that counts: 2^53 (M-I18).
pub const MAX_CONTEXT_WINDOW: u64 = 1 << 53;
/// pi's thinking levels, lowest first (the keys of a `thinkingLevelMap`).
const LEVELS: [&str; 7] = ["off", "minimal", "low", "medium", "high", "xhigh", "max"];
/// The context window pi gives a custom model that names none.
const DEFAULT_CUSTOM_CONTEXT_WINDOW: u64 = 128_000;

/// Where to read pi's model list from: explicit values (the CLI finds them in the
/// environment; an embedder names its own).
#[derive(Clone, Copy, Debug)]
pub struct PiSource<'a> {
    /// pi's executable (as found on `PATH`; symbolic links are followed here).
    pub executable: &'a Path,
    /// pi's agent directory (`models.json`, `models-store.json`), when known.
    pub agent_dir: Option<&'a Path>,
    /// sublaunch's cache directory; `None` reads pi every time.
    pub cache_dir: Option<&'a Path>,
}

/// pi's models, ready to be a registry layer.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PiModels {
    /// `pi <version>`.
    pub label: String,
    /// The entries, each with where it came from (`pi 0.85.1`, or the agent-directory file
    /// that added or changed it).
    pub entries: Vec<PiEntry>,
    /// What was left out, and why.
    pub warnings: Vec<String>,
}

/// One model of pi's.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PiEntry {
    /// The entry as the planner sees it.
    pub model: ModelEntry,
    /// `pi <version>` or `pi <version> (<file>)`.
    pub source: String,
}

/// Whether the cache was used, for tests and timings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CacheUse {
    /// The layer came from an up-to-date cache file.
    Hit,
    /// It was read from pi's files (and the cache rewritten when there is one).
    Rebuilt,
}

/// pi's models as the `pi` at `source.executable` would list them; `Err` is the one warning
/// to show when its catalog cannot be read.
pub fn load(source: &PiSource<'_>) -> Result<(PiModels, CacheUse), Unlisted> {
    let unlisted = |why: CatalogProblem| Unlisted {
        executable: source.executable.to_owned(),
        why,
    };
    let real = std::fs::canonicalize(source.executable).map_err(|e| unlisted(CatalogProblem::Unresolved(e)))?;
    let cache = source
        .cache_dir
        .and_then(|dir| Cache::new(dir, &real, source.agent_dir));
    if let Some(models) = cache.as_ref().and_then(Cache::read) {
        return Ok((models, CacheUse::Hit));
    }
    let (models, inputs) = read(&real, source.agent_dir).map_err(unlisted)?;
    if let Some(cache) = &cache {
        cache.write(&models, &inputs);
    }
    Ok((models, CacheUse::Rebuilt))
}

/// Why pi's model list is not in the registry: the one warning [`load`] gives.
#[derive(Debug, thiserror::Error)]
#[error("pi's model list is not in the registry: {executable} {why}")]
pub struct Unlisted {
    /// The `pi` executable, as found.
    pub executable: PathBuf,
    /// What is wrong with it or its catalog.
    pub why: CatalogProblem,
}

/// What keeps a pi's catalog from being read; each message follows the executable's path.
#[derive(Debug, thiserror::Error)]
pub enum CatalogProblem {
    /// The executable's links could not be followed.
    #[error("cannot be resolved: {0}")]
    Unresolved(std::io::Error),
    /// The executable belongs to another package.
    #[error("(which is {real}) belongs to the package {name:?} in {package}, not to pi-coding-agent")]
    ForeignPackage {
        /// The executable, links followed.
        real: PathBuf,
        /// The package's name.
        name: String,
        /// The package's directory.
        package: PathBuf,
    },
    /// The executable is in no package (a single-file build).
    #[error("(which is {0}) is in no package directory: a pi built into one executable has no catalog to read")]
    NoPackage(PathBuf),
    /// pi's package has no dependency on the catalog's package.
    #[error("is pi {version}, whose package ({package}) has no pi-ai dependency, the catalog's home")]
    NoCatalogDependency {
        /// pi's version.
        version: String,
        /// pi's package directory.
        package: PathBuf,
    },
    /// The catalog's package is not installed where Node would find it.
    #[error("is pi {version}, but its dependency {dependency} is not installed beside it ({package})")]
    CatalogNotInstalled {
        /// pi's version.
        version: String,
        /// The catalog's package name.
        dependency: String,
        /// pi's package directory.
        package: PathBuf,
    },
    /// The catalog has no manifest.
    #[error("is pi {version}, whose catalog is not in a format sublaunch reads ({manifest} is missing)")]
    NoManifest {
        /// pi's version.
        version: String,
        /// Where the manifest was looked for.
        manifest: PathBuf,
    },
    /// The manifest could not be read.
    #[error("is pi {version}, whose catalog cannot be read: {error}")]
    Unreadable {
        /// pi's version.
        version: String,
        /// Why not.
        error: PiFileError,
    },
    /// The manifest lists no provider.
    #[error("is pi {version}, whose catalog manifest {manifest} lists no provider")]
    NoProviders {
        /// pi's version.
        version: String,
        /// The manifest.
        manifest: PathBuf,
    },
}

/// A file of pi's that could not be read as one.
#[derive(Debug, thiserror::Error)]
pub enum PiFileError {
    /// It could not be opened or read.
    #[error("{path} cannot be read: {error}")]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// Why not.
        error: std::io::Error,
    },
    /// Not a regular file.
    #[error("{0} is not a regular file")]
    NotAFile(PathBuf),
    /// Larger than sublaunch reads (32 MiB).
    #[error("{0} is larger than {limit} bytes", limit = PI_FILE_LIMIT)]
    TooLarge(PathBuf),
    /// A file that must be there is not.
    #[error("{0} is missing")]
    Missing(PathBuf),
    /// Not the JSON expected.
    #[error("{path}: {error}")]
    NotJson {
        /// The file.
        path: PathBuf,
        /// What the parser said.
        error: serde_json::Error,
    },
}

/// `Some(n)` when `value` is a whole number from 1 to 2^53, exactly (M-I18); a JSON integer
/// is compared as an integer, so 2^53 + 1 is refused rather than rounded to 2^53.
pub fn whole_context_window(value: &Number) -> Option<u64> {
    if let Some(n) = value.as_u64() {
        return (1..=MAX_CONTEXT_WINDOW).contains(&n).then_some(n);
    }
    if value.is_i64() {
        return None;
    }
    let f = value.as_f64()?;
    // A whole float no larger than 2^53 is an integer the float holds exactly.
    (f.fract() == 0.0 && (1.0..=MAX_CONTEXT_WINDOW as f64).contains(&f)).then_some(f as u64)
}

// ---------------------------------------------------------------------------------------------
// Reading pi's files.

/// The files a layer was built from or looked for (absent ones too).
type Inputs = Vec<PathBuf>;

/// One model while the layer is composed.
#[derive(Clone, Debug)]
struct Model {
    provider: String,
    id: String,
    name: String,
    reasoning: bool,
    context_window: Option<Value>,
    /// The file that last added or changed it; `None` for pi's shipped catalog.
    changed_by: Option<PathBuf>,
}

/// Reads and composes pi's models; `Err` says why they cannot be read.
fn read(real: &Path, agent_dir: Option<&Path>) -> Result<(PiModels, Inputs), CatalogProblem> {
    let mut inputs: Inputs = Vec::new();
    let (package_dir, package) = pi_package(real)?;
    inputs.push(package_dir.join("package.json"));
    let version = text_field(&package, "version")
        .unwrap_or("(unknown version)")
        .to_owned();
    let label = format!("pi {version}");
    let dependency = package
        .get("dependencies")
        .and_then(Value::as_object)
        .and_then(|deps| deps.keys().find(|name| *name == "pi-ai" || name.ends_with("/pi-ai")))
        .ok_or_else(|| CatalogProblem::NoCatalogDependency {
            version: version.clone(),
            package: package_dir.clone(),
        })?
        .clone();
    let catalog_package = resolve_dependency(&package_dir, &dependency, &mut inputs).ok_or_else(|| {
        CatalogProblem::CatalogNotInstalled {
            version: version.clone(),
            dependency: dependency.clone(),
            package: package_dir.clone(),
        }
    })?;
    let data = catalog_package.join("dist/providers/data");
    let manifest_path = data.join(".manifest.json");
    inputs.push(manifest_path.clone());
    let manifest = match read_json_file(&manifest_path) {
        Ok(Some(manifest)) => manifest,
        Ok(None) => {
            return Err(CatalogProblem::NoManifest {
                version,
                manifest: manifest_path,
            });
        }
        Err(error) => return Err(CatalogProblem::Unreadable { version, error }),
    };
    let generated_at = manifest
        .get("generatedAt")
        .and_then(Value::as_str)
        .and_then(parse_iso8601_ms);
    let files: Vec<String> = manifest
        .get("files")
        .and_then(Value::as_object)
        .map(|files| files.keys().filter(|f| f.ends_with(".json")).cloned().collect())
        .unwrap_or_default();
    if files.is_empty() {
        return Err(CatalogProblem::NoProviders {
            version,
            manifest: manifest_path,
        });
    }
    let mut warnings = Vec::new();
    let mut providers: Vec<(String, Vec<Model>)> = Vec::new();
    for file in &files {
        let path = data.join(file);
        inputs.push(path.clone());
        let stem = file.trim_end_matches(".json");
        match read_catalog_file(&path, stem) {
            Ok(models) => providers.push((stem.to_owned(), models)),
            Err(e) => warnings.push(format!("pi's models of provider {stem} are left out: {e}")),
        }
    }
    if let Some(dir) = agent_dir {
        let store = dir.join("models-store.json");
        inputs.push(store.clone());
        apply_store(&store, generated_at, &mut providers, &mut warnings);
        let custom = dir.join("models.json");
        inputs.push(custom.clone());
        apply_models_json(&custom, &mut providers, &mut warnings);
    }
    let mut entries = Vec::new();
    for model in providers.into_iter().flat_map(|(_, models)| models) {
        let source = match &model.changed_by {
            Some(file) => format!("{label} ({})", file.display()),
            None => label.clone(),
        };
        let file = model.changed_by.as_deref().unwrap_or(&data);
        entries.push(PiEntry {
            model: entry(&model, file, &mut warnings),
            source,
        });
    }
    Ok((
        PiModels {
            label,
            entries,
            warnings,
        },
        inputs,
    ))
}

/// The directory of the pi-coding-agent package the executable belongs to, and its
/// `package.json`.
fn pi_package(real: &Path) -> Result<(PathBuf, Map<String, Value>), CatalogProblem> {
    for dir in real.ancestors().skip(1) {
        let Ok(Some(Value::Object(package))) = read_json_file(&dir.join("package.json")) else {
            continue;
        };
        let name = text_field(&package, "name").unwrap_or_default();
        if name == "pi-coding-agent" || name.ends_with("/pi-coding-agent") {
            return Ok((dir.to_owned(), package));
        }
        return Err(CatalogProblem::ForeignPackage {
            real: real.to_owned(),
            name: name.to_owned(),
            package: dir.to_owned(),
        });
    }
    Err(CatalogProblem::NoPackage(real.to_owned()))
}

/// Node's lookup of `dependency` from `package_dir`: `<dir>/node_modules/<dependency>` for the
/// package directory and each one above it (a `node_modules` directory itself is skipped).
/// Every place searched in vain joins `inputs`, so a package installed there later is noticed.
fn resolve_dependency(package_dir: &Path, dependency: &str, inputs: &mut Inputs) -> Option<PathBuf> {
    for dir in package_dir.ancestors() {
        if dir.file_name().is_some_and(|n| n == "node_modules") {
            continue;
        }
        let candidate = dir.join("node_modules").join(dependency);
        let manifest = candidate.join("package.json");
        inputs.push(manifest.clone());
        if manifest.is_file() {
            return Some(candidate);
        }
    }
    None
}

/// One model as pi's catalog files and `models-store.json` write it (unknown fields skipped).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawModel {
    id: String,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    provider: Option<String>,
    #[serde(default)]
    reasoning: Option<bool>,
    #[serde(default)]
    context_window: Option<Value>,
}

impl RawModel {
    fn into_model(self, provider: &str, changed_by: Option<PathBuf>) -> Model {
        Model {
            provider: self.provider.unwrap_or_else(|| provider.to_owned()),
            name: self.name.unwrap_or_else(|| self.id.clone()),
            id: self.id,
            reasoning: self.reasoning.unwrap_or(false),
            context_window: self.context_window,
            changed_by,
        }
    }
}

/// A JSON object's members in the order written (the crate's `Map` sorts them).
struct Ordered<T>(Vec<(String, T)>);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Ordered<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Members<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for Members<T> {
            type Value = Ordered<T>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut members = Vec::with_capacity(map.size_hint().unwrap_or(0));
                while let Some(member) = map.next_entry()? {
                    members.push(member);
                }
                Ok(Ordered(members))
            }
        }
        deserializer.deserialize_map(Members(std::marker::PhantomData))
    }
}

/// One provider's file of the shipped catalog: `{"<api>": {"<id>": model}}`, merged like
/// `Object.assign` (a later id replaces an earlier one in its place).
fn read_catalog_file(path: &Path, provider: &str) -> Result<Vec<Model>, PiFileError> {
    let bytes = read_file(path)?.ok_or_else(|| PiFileError::Missing(path.to_owned()))?;
    let groups: Ordered<Ordered<RawModel>> = serde_json::from_slice(&bytes).map_err(|error| PiFileError::NotJson {
        path: path.to_owned(),
        error,
    })?;
    let mut models = Vec::new();
    for (_, group) in groups.0 {
        for (_, raw) in group.0 {
            upsert(&mut models, raw.into_model(provider, None));
        }
    }
    Ok(models)
}

/// Replaces the model of the same id in its place, or appends.
fn upsert(models: &mut Vec<Model>, model: Model) {
    match models.iter_mut().find(|m| m.id == model.id) {
        Some(slot) => *slot = model,
        None => models.push(model),
    }
}

/// Overlays the catalogs `pi update --models` saved that are newer than the shipped one.
fn apply_store(
    path: &Path,
    generated_at: Option<i64>,
    providers: &mut [(String, Vec<Model>)],
    warnings: &mut Vec<String>,
) {
    let store = match read_json_file(path) {
        Ok(Some(Value::Object(store))) => store,
        Ok(None) => return,
        Ok(Some(_)) => {
            warnings.push(format!(
                "{}: not a JSON object; pi's saved catalogs are left out",
                path.display()
            ));
            return;
        }
        Err(e) => {
            warnings.push(format!("{e}; pi's saved catalogs are left out"));
            return;
        }
    };
    for (provider, models) in providers.iter_mut() {
        let Some(Value::Object(saved)) = store.get(provider.as_str()) else {
            continue;
        };
        let newer = match (generated_at, saved.get("lastModified").and_then(Value::as_f64)) {
            (None, _) => true,
            (Some(local), Some(remote)) => remote > local as f64,
            (Some(_), None) => false,
        };
        if !newer {
            continue;
        }
        let Some(list) = saved.get("models").and_then(Value::as_array) else {
            continue;
        };
        for (index, value) in list.iter().enumerate() {
            match RawModel::deserialize(value) {
                Ok(raw) if !raw.id.is_empty() => {
                    upsert(models, raw.into_model(provider, Some(path.to_owned())));
                }
                _ => warnings.push(format!(
                    "{}: {provider}.models[{index}] is not a model pi can use; it is left out",
                    path.display()
                )),
            }
        }
    }
}

/// Applies the user's `models.json` as pi does.
fn apply_models_json(path: &Path, providers: &mut Vec<(String, Vec<Model>)>, warnings: &mut Vec<String>) {
    let bytes = match read_file(path) {
        Ok(Some(bytes)) => bytes,
        Ok(None) => return,
        Err(e) => {
            warnings.push(format!("{e}; pi's custom models are left out"));
            return;
        }
    };
    let text = String::from_utf8_lossy(&bytes);
    let text = strip_json_comments(text.trim_start_matches('\u{feff}'));
    let config: Value = match serde_json::from_str(&text) {
        Ok(config) => config,
        Err(e) => {
            warnings.push(format!(
                "{}: {e}; pi refuses the file, and its custom models are left out",
                path.display()
            ));
            return;
        }
    };
    let configs = match check_models_json(&config) {
        Ok(configs) => configs,
        Err(at) => {
            warnings.push(format!(
                "{}: at {at}: not what pi accepts there; pi refuses the file, and its custom models are left out",
                path.display()
            ));
            return;
        }
    };
    for (provider_id, config) in configs {
        let position = providers.iter().position(|(id, _)| id == provider_id);
        let base = position.map(|i| providers[i].1.clone()).unwrap_or_default();
        match compose(provider_id, &base, config, path) {
            Ok(models) => match position {
                Some(i) => providers[i].1 = models,
                None => providers.push((provider_id.clone(), models)),
            },
            Err(e) => warnings.push(format!(
                "{}: provider {provider_id}: {e}; pi cannot use this configuration, so it is left out",
                path.display()
            )),
        }
    }
}

/// Each provider id of a `models.json` with its configuration.
type ProviderConfigs<'a> = Vec<(&'a String, &'a Map<String, Value>)>;

/// The JSON path of the first thing in a `models.json` that pi would refuse.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct RefusedAt(String);

/// The providers of a `models.json` whose shape pi accepts, or where it would refuse it.
fn check_models_json(config: &Value) -> Result<ProviderConfigs<'_>, RefusedAt> {
    let providers = config
        .get("providers")
        .and_then(Value::as_object)
        .ok_or_else(|| RefusedAt("providers".to_owned()))?;
    let mut out = Vec::new();
    for (id, provider) in providers {
        let provider = provider
            .as_object()
            .ok_or_else(|| RefusedAt(format!("providers.{id}")))?;
        for field in ["name", "baseUrl", "apiKey", "api"] {
            if provider.get(field).is_some_and(|v| !non_empty_text(v)) {
                return Err(RefusedAt(format!("providers.{id}.{field}")));
            }
        }
        if let Some(models) = provider.get("models") {
            let models = models
                .as_array()
                .ok_or_else(|| RefusedAt(format!("providers.{id}.models")))?;
            for (index, model) in models.iter().enumerate() {
                let at = format!("providers.{id}.models[{index}]");
                let model = model.as_object().ok_or_else(|| RefusedAt(at.clone()))?;
                if !model.get("id").is_some_and(non_empty_text) {
                    return Err(RefusedAt(format!("{at}.id")));
                }
                check_model_fields(model, &at)?;
            }
        }
        if let Some(overrides) = provider.get("modelOverrides") {
            let overrides = overrides
                .as_object()
                .ok_or_else(|| RefusedAt(format!("providers.{id}.modelOverrides")))?;
            for (model_id, fields) in overrides {
                let at = format!("providers.{id}.modelOverrides.{model_id}");
                check_model_fields(fields.as_object().ok_or_else(|| RefusedAt(at.clone()))?, &at)?;
            }
        }
        out.push((id, provider));
    }
    Ok(out)
}

fn check_model_fields(model: &Map<String, Value>, at: &str) -> Result<(), RefusedAt> {
    let wrong = |field: &str, ok: fn(&Value) -> bool| model.get(field).is_some_and(|v| !ok(v));
    for (field, ok) in [
        ("name", non_empty_text as fn(&Value) -> bool),
        ("api", non_empty_text),
        ("baseUrl", non_empty_text),
        ("reasoning", Value::is_boolean),
        ("contextWindow", Value::is_number),
        ("maxTokens", Value::is_number),
        ("thinkingLevelMap", |v: &Value| {
            v.as_object().is_some_and(|m| {
                m.iter()
                    .all(|(k, v)| LEVELS.contains(&k.as_str()) && (v.is_null() || v.is_string()))
            })
        }),
    ] {
        if wrong(field, ok) {
            return Err(RefusedAt(format!("{at}.{field}")));
        }
    }
    Ok(())
}

fn non_empty_text(value: &Value) -> bool {
    value.as_str().is_some_and(|s| !s.is_empty())
}

/// Where pi's composition of a `models.json` provider fails.
#[derive(Debug, thiserror::Error)]
enum ComposeError {
    #[error(r#"it names none of "baseUrl", "headers", "compat", "modelOverrides" or "models""#)]
    NothingToApply,
    #[error(r#""baseUrl" is required when "oauth" is set"#)]
    OauthWithoutBaseUrl,
    #[error(r#"model {0}: no "api" is given for it or its provider"#)]
    NoApi(String),
    #[error(r#""baseUrl" is required when defining custom models"#)]
    NoBaseUrl,
    #[error("model {0}: invalid contextWindow")]
    ContextWindow(String),
    #[error("model {0}: invalid maxTokens")]
    MaxTokens(String),
}

/// One provider of `models.json` over its shipped models (pi's `applyModelsJson` and model
/// overrides): `Err` where pi's composition fails.
fn compose(
    provider_id: &str,
    base: &[Model],
    config: &Map<String, Value>,
    file: &Path,
) -> Result<Vec<Model>, ComposeError> {
    let has = |field: &str| config.get(field).is_some();
    let overrides = config.get("modelOverrides").and_then(Value::as_object);
    let definitions = config.get("models").and_then(Value::as_array);
    if definitions.is_none_or(Vec::is_empty)
        && !["baseUrl", "headers", "compat", "apiKey", "oauth", "authHeader"]
            .iter()
            .any(|f| has(f))
        && overrides.is_none_or(Map::is_empty)
    {
        return Err(ComposeError::NothingToApply);
    }
    if has("oauth") && !has("baseUrl") {
        return Err(ComposeError::OauthWithoutBaseUrl);
    }
    let mut models: Vec<Model> = base.to_vec();
    let provider_text = |field: &str| config.get(field).and_then(Value::as_str);
    for definition in definitions.into_iter().flatten().filter_map(Value::as_object) {
        let id = definition.get("id").and_then(Value::as_str).unwrap_or_default();
        // Without its own api or baseUrl, a model takes them from a model of the provider.
        let inherits = !models.is_empty();
        let api = definition.get("api").and_then(Value::as_str).or(provider_text("api"));
        if api.is_none() && !inherits {
            return Err(ComposeError::NoApi(id.to_owned()));
        }
        let base_url = definition
            .get("baseUrl")
            .and_then(Value::as_str)
            .or(provider_text("baseUrl"));
        if base_url.is_none() && !inherits {
            return Err(ComposeError::NoBaseUrl);
        }
        if definition
            .get("contextWindow")
            .and_then(Value::as_f64)
            .is_some_and(|w| w <= 0.0)
        {
            return Err(ComposeError::ContextWindow(id.to_owned()));
        }
        if definition
            .get("maxTokens")
            .and_then(Value::as_f64)
            .is_some_and(|w| w <= 0.0)
        {
            return Err(ComposeError::MaxTokens(id.to_owned()));
        }
        upsert(
            &mut models,
            Model {
                provider: provider_id.to_owned(),
                id: id.to_owned(),
                name: definition.get("name").and_then(Value::as_str).unwrap_or(id).to_owned(),
                reasoning: definition.get("reasoning").and_then(Value::as_bool).unwrap_or(false),
                context_window: Some(
                    definition
                        .get("contextWindow")
                        .cloned()
                        .unwrap_or_else(|| DEFAULT_CUSTOM_CONTEXT_WINDOW.into()),
                ),
                changed_by: Some(file.to_owned()),
            },
        );
    }
    for model in &mut models {
        let Some(fields) = overrides.and_then(|o| o.get(&model.id)).and_then(Value::as_object) else {
            continue;
        };
        if let Some(name) = fields.get("name").and_then(Value::as_str) {
            model.name = name.to_owned();
        }
        if let Some(reasoning) = fields.get("reasoning").and_then(Value::as_bool) {
            model.reasoning = reasoning;
        }
        if let Some(window) = fields.get("contextWindow") {
            model.context_window = Some(window.clone());
        }
        model.changed_by = Some(file.to_owned());
    }
    Ok(models)
}

/// The registry entry of `model`; a context window that is no whole number from 1 to 2^53 is
/// left out with a warning naming `file` and the entry.
fn entry(model: &Model, file: &Path, warnings: &mut Vec<String>) -> ModelEntry {
    let context_window = match &model.context_window {
        None | Some(Value::Null) => None,
        Some(value) => {
            let whole = value.as_number().and_then(whole_context_window);
            if whole.is_none() {
                warnings.push(format!(
                    "{}: pi's model {}/{} has contextWindow {value}, which is not a whole number from 1 to 2^53; its context window is left out",
                    file.display(),
                    model.provider,
                    model.id
                ));
            }
            whole.map(|n| n as f64)
        }
    };
    ModelEntry {
        provider: model.provider.clone(),
        id: model.id.clone(),
        name: Some(model.name.clone()),
        reasoning: Some(model.reasoning),
        thinking_levels: None,
        context_window,
    }
}

/// pi's `stripJsonComments`: `//` comments and trailing commas go, string literals stay.
fn strip_json_comments(text: &str) -> String {
    /// Copies the string literal starting at `chars[i]` (a `"`) into `out`; the index after it.
    fn literal(chars: &[char], mut i: usize, out: &mut String) -> usize {
        out.push('"');
        i += 1;
        while i < chars.len() {
            let c = chars[i];
            out.push(c);
            i += 1;
            if c == '\\' && i < chars.len() {
                out.push(chars[i]);
                i += 1;
            } else if c == '"' {
                break;
            }
        }
        i
    }
    let chars: Vec<char> = text.chars().collect();
    let mut uncommented = String::with_capacity(text.len());
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '"' => i = literal(&chars, i, &mut uncommented),
            '/' if chars.get(i + 1) == Some(&'/') => {
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
            }
            c => {
                uncommented.push(c);
                i += 1;
            }
        }
    }
    let chars: Vec<char> = uncommented.chars().collect();
    let mut out = String::with_capacity(uncommented.len());
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '"' => i = literal(&chars, i, &mut out),
            ',' => {
                let next = chars[i + 1..].iter().find(|c| !c.is_whitespace());
                if !matches!(next, Some('}' | ']')) {
                    out.push(',');
                }
                i += 1;
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    out
}

/// `2026-09-05T11:58:56.761Z` as milliseconds since the epoch (UTC only, as pi writes it).
fn parse_iso8601_ms(text: &str) -> Option<i64> {
    let (date, time) = text.strip_suffix('Z')?.split_once('T')?;
    let mut date = date.splitn(3, '-').map(|p| p.parse::<i64>().ok());
    let (year, month, day) = (date.next()??, date.next()??, date.next()??);
    let (hms, fraction) = time.split_once('.').unwrap_or((time, "0"));
    let mut hms = hms.splitn(3, ':').map(|p| p.parse::<i64>().ok());
    let (hour, minute, second) = (hms.next()??, hms.next()??, hms.next()??);
    let millis: i64 = format!("{fraction:0<3}").get(..3)?.parse().ok()?;
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) {
        return None;
    }
    // Days from 1970-01-01 to the date (the proleptic Gregorian calendar).
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(((days * 24 + hour) * 60 + minute) * 60_000 + second * 1000 + millis)
}

fn text_field<'a>(object: &'a Map<String, Value>, field: &str) -> Option<&'a str> {
    object.get(field).and_then(Value::as_str)
}

/// Reads a file of pi's: `Ok(None)` when absent; anything but a regular file of at most
/// [`PI_FILE_LIMIT`] bytes is an error naming it.
fn read_file(path: &Path) -> Result<Option<Vec<u8>>, PiFileError> {
    let unreadable = |error| PiFileError::Unreadable {
        path: path.to_owned(),
        error,
    };
    let file = match std::fs::File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(unreadable(e)),
    };
    let meta = file.metadata().map_err(unreadable)?;
    if !meta.is_file() {
        return Err(PiFileError::NotAFile(path.to_owned()));
    }
    if meta.len() > PI_FILE_LIMIT {
        return Err(PiFileError::TooLarge(path.to_owned()));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(PI_FILE_LIMIT + 1)
        .read_to_end(&mut bytes)
        .map_err(unreadable)?;
    Ok(Some(bytes))
}

/// A JSON file of pi's, as [`read_file`] reads it.
fn read_json_file(path: &Path) -> Result<Option<Value>, PiFileError> {
    let Some(bytes) = read_file(path)? else {
        return Ok(None);
    };
    let text = String::from_utf8_lossy(&bytes);
    serde_json::from_str(text.trim_start_matches('\u{feff}'))
        .map(Some)
        .map_err(|error| PiFileError::NotJson {
            path: path.to_owned(),
            error,
        })
}

// ---------------------------------------------------------------------------------------------
// The cache.

/// A file's identity: any write, replacement or metadata change alters it (ctime cannot be
/// set back by a user).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
struct Stamp(u64, u64, u64, i64, i64, i64, i64);

fn stamp(path: &Path) -> Option<Stamp> {
    let meta = std::fs::metadata(path).ok()?;
    Some(Stamp(
        meta.dev(),
        meta.ino(),
        meta.size(),
        meta.mtime(),
        meta.mtime_nsec(),
        meta.ctime(),
        meta.ctime_nsec(),
    ))
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct CacheFile {
    format: u32,
    pi: String,
    agent_dir: Option<String>,
    inputs: Vec<(String, Option<Stamp>)>,
    models: PiModels,
}

/// The cache file of one pi executable (its real path) and agent directory.
struct Cache {
    dir: PathBuf,
    name: String,
    pi: String,
    agent_dir: Option<String>,
}

impl Cache {
    /// `None` for paths that are not UTF-8 (they are not cached).
    fn new(cache_dir: &Path, real: &Path, agent_dir: Option<&Path>) -> Option<Self> {
        let pi = real.to_str()?.to_owned();
        let agent_dir = match agent_dir {
            Some(dir) => Some(dir.to_str()?.to_owned()),
            None => None,
        };
        let mut key = blake3::Hasher::new();
        key.update(pi.as_bytes());
        key.update(b"\0");
        key.update(agent_dir.as_deref().unwrap_or_default().as_bytes());
        let name = format!("{}.json", &key.finalize().to_hex()[..32]);
        Some(Self {
            dir: cache_dir.join("pi-models"),
            name,
            pi,
            agent_dir,
        })
    }

    /// The cached layer when the file is ours and every input is as it was.
    fn read(&self) -> Option<PiModels> {
        let dir = sublaunch_protocol::files::dir::Dir::open(&self.dir).ok()?;
        let (file, stat) = dir.open_file(&self.name).ok()??;
        let ours = stat.st_uid == rustix::process::getuid().as_raw() && stat.st_mode & 0o022 == 0;
        if !ours || stat.st_size as u64 > CACHE_FILE_LIMIT {
            return None;
        }
        let mut bytes = Vec::with_capacity(stat.st_size as usize);
        file.take(CACHE_FILE_LIMIT).read_to_end(&mut bytes).ok()?;
        let cached: CacheFile = serde_json::from_slice(&bytes).ok()?;
        let current = cached.format == CACHE_FORMAT
            && cached.pi == self.pi
            && cached.agent_dir == self.agent_dir
            && cached.inputs.iter().all(|(path, was)| stamp(Path::new(path)) == *was);
        current.then_some(cached.models)
    }

    /// Records `models` with the identities of `inputs`; a cache that cannot be written is
    /// only slower.
    fn write(&self, models: &PiModels, inputs: &Inputs) {
        let Some(inputs) = inputs
            .iter()
            .map(|path| Some((path.to_str()?.to_owned(), stamp(path))))
            .collect::<Option<Vec<_>>>()
        else {
            return;
        };
        let file = CacheFile {
            format: CACHE_FORMAT,
            pi: self.pi.clone(),
            agent_dir: self.agent_dir.clone(),
            inputs,
            models: models.clone(),
        };
        let Ok(bytes) = serde_json::to_vec(&file) else { return };
        if let Ok(dir) = sublaunch_protocol::files::atomic::Dir::create_private(&self.dir) {
            let _ = dir.write(
                &self.name,
                &bytes,
                sublaunch_protocol::files::atomic::Durability::Atomic,
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn m_i18_context_windows_count_only_as_whole_numbers_from_1_to_2_pow_53() {
        let number = |text: &str| serde_json::from_str::<Number>(text).unwrap();
        for good in ["1", "200000", "200000.0", "9007199254740992"] {
            assert!(whole_context_window(&number(good)).is_some(), "{good}");
        }
        for bad in ["0", "-1", "1.5", "1e300", "9007199254740993", "-0", "0.5"] {
            assert_eq!(whole_context_window(&number(bad)), None, "{bad}");
        }
    }

    #[test]
    fn comments_and_trailing_commas_go_but_strings_stay() {
        let text = "{\n // a comment\n \"url\": \"http://x//y\", \"a\": [1, 2,],\n \"s\": \"a,]\",\n}";
        let value: Value = serde_json::from_str(&strip_json_comments(text)).unwrap();
        assert_eq!(value, json!({"url": "http://x//y", "a": [1, 2], "s": "a,]"}));
    }

    #[test]
    fn manifest_times_are_read_as_utc_milliseconds() {
        assert_eq!(parse_iso8601_ms("1970-01-01T00:00:00.000Z"), Some(0));
        assert_eq!(parse_iso8601_ms("2026-09-05T11:58:56.761Z"), Some(1_788_609_536_761));
        assert_eq!(parse_iso8601_ms("2000-02-29T00:00:01Z"), Some(951_782_401_000));
        assert_eq!(parse_iso8601_ms("yesterday"), None);
    }

    /// A pi installation of `data` (provider file name → content) under `root`.
    fn install(root: &Path, version: &str, data: &[(&str, Value)]) -> PathBuf {
        let package = root.join("node_modules/@earendil-works/pi-coding-agent");
        std::fs::create_dir_all(package.join("dist/bundle")).unwrap();
        std::fs::write(
            package.join("package.json"),
            json!({"name": "@earendil-works/pi-coding-agent", "version": version,
                   "dependencies": {"@earendil-works/pi-ai": "^1"}})
            .to_string(),
        )
        .unwrap();
        std::fs::write(package.join("dist/bundle/cli.js"), "#!/usr/bin/env node\n").unwrap();
        let ai = root.join("node_modules/@earendil-works/pi-ai");
        let data_dir = ai.join("dist/providers/data");
        std::fs::create_dir_all(&data_dir).unwrap();
        std::fs::write(ai.join("package.json"), r#"{"name": "@earendil-works/pi-ai"}"#).unwrap();
        let files: Map<String, Value> = data.iter().map(|(f, _)| ((*f).to_owned(), json!("hash"))).collect();
        std::fs::write(
            data_dir.join(".manifest.json"),
            json!({"generatedAt": "2026-01-01T00:00:00.000Z", "files": files}).to_string(),
        )
        .unwrap();
        for (file, content) in data {
            std::fs::write(data_dir.join(file), content.to_string()).unwrap();
        }
        std::fs::create_dir_all(root.join("node_modules/.bin")).unwrap();
        let bin = root.join("node_modules/.bin/pi");
        std::os::unix::fs::symlink("../@earendil-works/pi-coding-agent/dist/bundle/cli.js", &bin).unwrap();
        bin
    }

    fn ids(models: &PiModels) -> Vec<String> {
        models
            .entries
            .iter()
            .map(|e| format!("{}/{}", e.model.provider, e.model.id))
            .collect()
    }

    fn anthropic() -> Value {
        json!({"anthropic-messages": {
            "claude-a": {"id": "claude-a", "name": "A", "provider": "anthropic", "reasoning": true,
                          "contextWindow": 200000, "cost": {"input": 1}},
            "claude-b": {"id": "claude-b", "name": "B", "provider": "anthropic", "reasoning": false,
                          "contextWindow": 1.5}}})
    }

    #[test]
    fn the_shipped_catalog_is_read_through_the_executables_links() {
        let root = tempfile::tempdir().unwrap();
        let bin = install(root.path(), "9.9.9", &[("anthropic.json", anthropic())]);
        let source = PiSource {
            executable: &bin,
            agent_dir: None,
            cache_dir: None,
        };
        let (models, used) = load(&source).unwrap();
        assert_eq!(used, CacheUse::Rebuilt);
        assert_eq!(models.label, "pi 9.9.9");
        assert_eq!(ids(&models), ["anthropic/claude-a", "anthropic/claude-b"]);
        let a = &models.entries[0].model;
        assert_eq!(a.context_window, Some(200_000.0));
        assert_eq!(a.name.as_deref(), Some("A"));
        assert_eq!(models.entries[0].source, "pi 9.9.9");
        // A fraction is no context window: left out, with a warning naming the entry.
        assert_eq!(models.entries[1].model.context_window, None);
        assert_eq!(models.entries[1].model.reasoning, Some(false));
        assert!(
            models
                .warnings
                .iter()
                .any(|w| w.contains("anthropic/claude-b") && w.contains("1.5")),
            "{:?}",
            models.warnings
        );
    }

    #[test]
    fn the_agent_directory_adds_saved_catalogs_and_custom_models() {
        let root = tempfile::tempdir().unwrap();
        let bin = install(root.path(), "1.0.0", &[("anthropic.json", anthropic())]);
        let agent = root.path().join("agent");
        std::fs::create_dir_all(&agent).unwrap();
        std::fs::write(
            agent.join("models-store.json"),
            json!({"anthropic": {"lastModified": 1_900_000_000_000_i64, "models": [
                {"id": "claude-c", "name": "C", "provider": "anthropic", "contextWindow": 300000}]}})
            .to_string(),
        )
        .unwrap();
        std::fs::write(
            agent.join("models.json"),
            r#"{
              // pi allows comments and trailing commas
              "providers": {
                "ollama": {"baseUrl": "http://localhost:11434/v1", "api": "openai-completions",
                           "models": [{"id": "llama3.1:8b"},]},
                "anthropic": {"modelOverrides": {"claude-a": {"contextWindow": 100000}}},
                "broken": {"models": [{"id": "x"}]},
              },
            }"#,
        )
        .unwrap();
        let (models, _) = load(&PiSource {
            executable: &bin,
            agent_dir: Some(&agent),
            cache_dir: None,
        })
        .unwrap();
        assert_eq!(
            ids(&models),
            [
                "anthropic/claude-a",
                "anthropic/claude-b",
                "anthropic/claude-c",
                "ollama/llama3.1:8b"
            ]
        );
        let by_id = |id: &str| models.entries.iter().find(|e| e.model.id == id).unwrap();
        assert_eq!(by_id("claude-a").model.context_window, Some(100_000.0));
        assert!(
            by_id("claude-a").source.ends_with("models.json)"),
            "{}",
            by_id("claude-a").source
        );
        assert_eq!(by_id("claude-c").model.context_window, Some(300_000.0));
        assert_eq!(by_id("llama3.1:8b").model.context_window, Some(128_000.0));
        assert!(
            models.warnings.iter().any(|w| w.contains("provider broken")),
            "{:?}",
            models.warnings
        );
        // An older saved catalog than the shipped one is not used, as pi does not use it.
        std::fs::write(
            agent.join("models-store.json"),
            json!({"anthropic": {"lastModified": 1000, "models": [{"id": "claude-old"}]}}).to_string(),
        )
        .unwrap();
        let (models, _) = load(&PiSource {
            executable: &bin,
            agent_dir: Some(&agent),
            cache_dir: None,
        })
        .unwrap();
        assert!(!ids(&models).contains(&"anthropic/claude-old".to_owned()));
    }

    #[test]
    fn a_models_json_pi_would_refuse_is_left_out_whole_with_a_warning() {
        let root = tempfile::tempdir().unwrap();
        let bin = install(root.path(), "1.0.0", &[("anthropic.json", anthropic())]);
        let agent = root.path().join("agent");
        std::fs::create_dir_all(&agent).unwrap();
        std::fs::write(
            agent.join("models.json"),
            r#"{"providers": {"ollama": {"baseUrl": "u", "api": "a", "models": [{"id": "m", "contextWindow": "big"}]}}}"#,
        )
        .unwrap();
        let (models, _) = load(&PiSource {
            executable: &bin,
            agent_dir: Some(&agent),
            cache_dir: None,
        })
        .unwrap();
        assert_eq!(ids(&models), ["anthropic/claude-a", "anthropic/claude-b"]);
        assert!(
            models
                .warnings
                .iter()
                .any(|w| w.contains("providers.ollama.models[0].contextWindow")),
            "{:?}",
            models.warnings
        );
    }

    #[test]
    fn the_cache_is_used_until_a_file_it_was_built_from_changes() {
        let root = tempfile::tempdir().unwrap();
        let bin = install(root.path(), "1.0.0", &[("anthropic.json", anthropic())]);
        let cache = root.path().join("cache");
        let source = PiSource {
            executable: &bin,
            agent_dir: Some(&root.path().join("agent")),
            cache_dir: Some(&cache),
        };
        let (first, used) = load(&source).unwrap();
        assert_eq!(used, CacheUse::Rebuilt);
        let (second, used) = load(&source).unwrap();
        assert_eq!((used, &second), (CacheUse::Hit, &first));
        // A custom models.json appearing in the agent directory is noticed.
        std::fs::create_dir_all(root.path().join("agent")).unwrap();
        std::fs::write(
            root.path().join("agent/models.json"),
            r#"{"providers": {"x": {"baseUrl": "u", "api": "a", "models": [{"id": "m"}]}}}"#,
        )
        .unwrap();
        let (third, used) = load(&source).unwrap();
        assert_eq!(used, CacheUse::Rebuilt);
        assert!(ids(&third).contains(&"x/m".to_owned()));
        // So is a new pi version.
        let package = root
            .path()
            .join("node_modules/@earendil-works/pi-coding-agent/package.json");
        let text = std::fs::read_to_string(&package).unwrap().replace("1.0.0", "1.0.1");
        std::fs::write(&package, text).unwrap();
        let (fourth, used) = load(&source).unwrap();
        assert_eq!((used, fourth.label.as_str()), (CacheUse::Rebuilt, "pi 1.0.1"));
        assert_eq!(load(&source).unwrap().1, CacheUse::Hit);
        // And a closer copy of the catalog's package, which Node would now resolve first.
        let closer = root
            .path()
            .join("node_modules/@earendil-works/pi-coding-agent/node_modules/@earendil-works/pi-ai");
        std::fs::create_dir_all(&closer).unwrap();
        std::fs::write(closer.join("package.json"), "{}").unwrap();
        let error = load(&source).unwrap_err().to_string();
        assert!(error.contains("not in a format sublaunch reads"), "{error}");
    }

    #[test]
    fn an_unreadable_pi_is_one_warning() {
        let root = tempfile::tempdir().unwrap();
        let lone = root.path().join("pi");
        std::fs::write(&lone, "binary").unwrap();
        let error = load(&PiSource {
            executable: &lone,
            agent_dir: None,
            cache_dir: None,
        })
        .unwrap_err()
        .to_string();
        assert!(
            error.starts_with("pi's model list is not in the registry: ") && error.contains("no package"),
            "{error}"
        );
        let missing = root.path().join("gone");
        let error = load(&PiSource {
            executable: &missing,
            agent_dir: None,
            cache_dir: None,
        })
        .unwrap_err()
        .to_string();
        assert!(error.contains("cannot be resolved"), "{error}");
    }
}
