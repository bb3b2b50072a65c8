//! Settings files (placement-and-schemas.md P-H2): the user's and the project's
//! `settings.json`, passed to the planner as parsed objects.
//!
//! sublaunch reads `~/.config/sublaunch/settings.json` (user) and the nearest
//! `.sublaunch/settings.json` above the working directory (project). So that pi users keep
//! their setup, pi's `~/.pi/agent/settings.json` (or `$PI_CODING_AGENT_DIR/settings.json`)
//! and the nearest `.pi/settings.json` are read in their place when ours are absent.

use crate::inputs::config_files;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// One parsed settings file.
#[derive(Clone, Debug, PartialEq)]
pub struct SettingsFile {
    /// Where it was read from.
    pub path: PathBuf,
    /// Its parsed content (any JSON value; the planner ignores a non-object, P8).
    pub value: Value,
}

/// The user and project settings in effect for a working directory.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Settings {
    /// User settings.
    pub user: Option<SettingsFile>,
    /// Project settings (omitted when it is the same file as the user settings).
    pub project: Option<SettingsFile>,
}

impl Settings {
    /// Reads the settings for `cwd`. A malformed file is an error naming the file.
    pub fn load(cwd: &Path, env: &crate::Environment) -> anyhow::Result<Self> {
        let user = first_present(&user_candidates(env))?;
        let home = env.home();
        let project_paths: Vec<PathBuf> = [".sublaunch/settings.json", ".pi/settings.json"]
            .into_iter()
            .filter_map(|relative| config_files::nearest(cwd, home.as_deref(), relative))
            .collect();
        let mut project = first_present(&project_paths)?;
        if let (Some(u), Some(p)) = (&user, &project)
            && same_file(&u.path, &p.path)
        {
            project = None;
        }
        Ok(Self { user, project })
    }

    /// The ceiling configured for every agent (`subagents.maxThinking`), when set.
    pub fn thinking_ceiling(&self) -> Option<Value> {
        self.lookup(|v| v.get("subagents")?.get("maxThinking"))
    }

    /// The ceiling configured for one agent (`subagents.agents.<name>.maxThinking`).
    pub fn agent_thinking_ceiling(&self, agent: &str) -> Option<Value> {
        self.lookup(|v| v.get("subagents")?.get("agents")?.get(agent)?.get("maxThinking"))
    }

    /// `modelResponseAliases`: model names a child may report for a planned model.
    pub fn model_response_aliases(&self) -> Option<Value> {
        self.lookup(|v| v.get("subagents")?.get("modelResponseAliases"))
    }

    /// The project value when it has one, else the user value.
    fn lookup(&self, find: impl Fn(&Value) -> Option<&Value>) -> Option<Value> {
        [&self.project, &self.user]
            .into_iter()
            .flatten()
            .find_map(|file| find(&file.value).filter(|v| !v.is_null()).cloned())
    }
}

fn user_candidates(env: &crate::Environment) -> Vec<PathBuf> {
    let mut candidates = Vec::new();
    if let Some(dir) = env.config_dir() {
        candidates.push(dir.join("settings.json"));
    }
    if let Some(dir) = env.pi_agent_dir() {
        candidates.push(dir.join("settings.json"));
    }
    candidates
}

fn first_present(paths: &[PathBuf]) -> anyhow::Result<Option<SettingsFile>> {
    for path in paths {
        if let Some(value) = config_files::read::<Value>(path)? {
            if !value.is_object() {
                let found = match value {
                    Value::Array(_) => "an array",
                    Value::String(_) => "a string",
                    Value::Number(_) => "a number",
                    Value::Bool(_) => "a boolean",
                    _ => "null",
                };
                anyhow::bail!(
                    "{}: a settings file holds a JSON object, this one holds {found}",
                    path.display()
                );
            }
            return Ok(Some(SettingsFile {
                path: path.clone(),
                value,
            }));
        }
    }
    Ok(None)
}

fn same_file(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => a == b,
    }
}
