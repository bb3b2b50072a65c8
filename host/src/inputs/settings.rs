//! Settings files (placement-and-schemas.md P-H2): the user's and the project's
//! `settings.json`, passed to the planner as parsed objects.
//!
//! sublaunch reads `~/.config/sublaunch/settings.json` (user) and the nearest
//! `.sublaunch/settings.json` above the working directory (project). So that pi users keep
//! their setup, pi's `~/.pi/agent/settings.json` (or `$PI_CODING_AGENT_DIR/settings.json`)
//! and the nearest `.pi/settings.json` are read in their place when ours are absent. Project
//! settings count only in a trusted project, and their completion hook only once approved
//! ([`crate::inputs::project`]).

use crate::inputs::config_files;
use crate::inputs::project::{Ignored, ProgramItem, Project};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::Duration;
use sublaunch_contract::loose::json_kind;
use sublaunch_protocol::records::spend::SpendLimit;

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
    /// The project they were read for, which decides whether its hook may run.
    pub from: Option<Project>,
}

impl Settings {
    /// Reads the user's settings and, when `project` is trusted, the project's. A malformed
    /// file is an error naming the file.
    pub fn load(project: &Project, env: &crate::Environment) -> anyhow::Result<Self> {
        let user = first_present(&user_candidates(env))?;
        let project_paths: Vec<PathBuf> = [".sublaunch/settings.json", ".pi/settings.json"]
            .into_iter()
            .filter_map(|relative| project.entry(relative))
            .collect();
        let mut project_file = first_present(&project_paths)?;
        if let (Some(u), Some(p)) = (&user, &project_file)
            && same_file(&u.path, &p.path)
        {
            project_file = None;
        }
        Ok(Self {
            user,
            project: project_file,
            from: Some(project.clone()),
        })
    }

    /// The ceiling configured for every agent (`subagents.maxThinking`), when set.
    pub fn thinking_ceiling(&self) -> Option<Value> {
        self.lookup(|v| v.get("subagents")?.get("maxThinking"))
    }

    /// The default OS sandbox of every run (`subagents.sandbox`): the user's, then the
    /// project's, each a source of its own so that a project only tightens the user's
    /// (rule G25); or what is wrong with one, naming its file.
    pub fn sandbox(&self) -> Result<Vec<sublaunch_contract::SandboxSetting>, String> {
        let mut all = Vec::new();
        for file in [&self.user, &self.project].into_iter().flatten() {
            let Some(value) = file
                .value
                .get("subagents")
                .and_then(|s| s.get("sandbox"))
                .filter(|v| !v.is_null())
            else {
                continue;
            };
            let origin = format!("settings subagents.sandbox ({})", file.path.display());
            let setting = sublaunch_contract::sandbox::setting(value.clone()).map_err(|e| format!("{origin}: {e}"))?;
            all.extend(setting.map(|s| sublaunch_contract::SandboxSetting {
                origin: Some(origin),
                ..s
            }));
        }
        Ok(all)
    }

    /// The ceiling configured for one agent (`subagents.agents.<name>.maxThinking`).
    pub fn agent_thinking_ceiling(&self, agent: &str) -> Option<Value> {
        self.lookup(|v| v.get("subagents")?.get("agents")?.get(agent)?.get("maxThinking"))
    }

    /// `modelResponseAliases`: model names a child may report for a planned model.
    pub fn model_response_aliases(&self) -> Option<Value> {
        self.lookup(|v| v.get("subagents")?.get("modelResponseAliases"))
    }

    /// The completion hook the settings configure (`subagents.onEnd`, a shell command, and
    /// `subagents.onEndTimeoutSeconds`). A hook names a command that runs as you, so it is
    /// taken only from a settings file that is trusted like an agent file (docs/guide/agents.md,
    /// "Which files are trusted"): the file and its directory belong to you or root and nobody
    /// else can write them; a project's hook also only once the user approved that command
    /// (`sublaunch trust`). The keys of any other file are left out, each with a warning in
    /// [`OnEndSettings::ignored`]. A value of the wrong type is an error naming the file.
    pub fn on_end(&self) -> Result<OnEndSettings, SettingsError> {
        let mut settings = OnEndSettings::default();
        for (file, project) in [(&self.project, true), (&self.user, false)] {
            let Some(file) = file else { continue };
            let subagents = file.value.get("subagents");
            let command = subagents.and_then(|s| s.get("onEnd")).filter(|v| !v.is_null());
            let timeout = subagents
                .and_then(|s| s.get("onEndTimeoutSeconds"))
                .filter(|v| !v.is_null());
            if command.is_none() && timeout.is_none() {
                continue;
            }
            if let Some(reason) = distrust(&file.path) {
                settings.ignored.push(format!(
                    "ignored the completion hook (subagents.onEnd) in {}: {reason}",
                    file.path.display()
                ));
                continue;
            }
            let command = match command {
                Some(command) => Some(
                    command
                        .as_str()
                        .ok_or_else(|| SettingsError::OnEndNotACommand(file.path.clone()))?,
                ),
                None => None,
            };
            let timeout_ms = match timeout {
                Some(timeout) => {
                    let max = sublaunch_protocol::records::hook::MAX_TIMEOUT_MS / 1000;
                    let seconds = timeout
                        .as_f64()
                        .filter(|s| s.is_finite() && *s > 0.0 && *s <= max as f64)
                        .ok_or_else(|| SettingsError::OnEndTimeout {
                            file: file.path.clone(),
                            max,
                        })?;
                    Some(((seconds * 1000.0).ceil() as u64).max(1))
                }
                None => None,
            };
            if project && let Some(command) = command.filter(|c| !c.trim().is_empty()) {
                let item = ProgramItem::completion_hook(&file.path, command, timeout_ms);
                // Settings put together by hand without their project cannot show that anyone
                // approved the hook: it is left out, as in an untrusted project.
                let Some(from) = &self.from else {
                    settings.ignored.push(format!(
                        "ignored the completion hook (subagents.onEnd) in {}: these settings were not read for a project, so nobody approved it",
                        file.path.display()
                    ));
                    continue;
                };
                match from.check(&item) {
                    Ok(()) => settings.program = Some(item),
                    Err(ignored) => {
                        settings.unapproved = Some(ignored);
                        continue;
                    }
                }
            }
            if let Some(command) = command
                && settings.command.is_none()
            {
                settings.command = Some(command.to_owned());
                settings.source = Some(file.path.clone());
                settings.from_project = project;
            }
            if let Some(timeout_ms) = timeout_ms
                && settings.timeout_ms.is_none()
            {
                settings.timeout_ms = Some(timeout_ms);
            }
        }
        Ok(settings)
    }

    /// The cap of active runs under the state root (`subagents.maxActive`, a whole number
    /// above 0), when set. A value of another kind is an error naming the file and key.
    pub fn max_active(&self) -> Result<Option<std::num::NonZeroU32>, SettingsError> {
        for file in [&self.project, &self.user].into_iter().flatten() {
            let value = file.value.get("subagents").and_then(|s| s.get("maxActive"));
            let Some(value) = value.filter(|v| !v.is_null()) else {
                continue;
            };
            return value
                .as_u64()
                .and_then(|n| u32::try_from(n).ok())
                .and_then(std::num::NonZeroU32::new)
                .map(Some)
                .ok_or_else(|| SettingsError::MaxActive {
                    file: file.path.clone(),
                    value: value.clone(),
                });
        }
        Ok(None)
    }

    /// U8: the spend limits every run is held to (`subagents.limits`: a list of `{per, costUsd,
    /// tokens, provider, agent}`), the user's and the project's together: a project can add
    /// limits, never lift the user's. A malformed limit is an error naming the file and entry.
    pub fn spend_limits(&self) -> Result<Vec<SpendLimit>, SettingsError> {
        let mut limits = Vec::new();
        for file in [&self.user, &self.project].into_iter().flatten() {
            let value = file.value.get("subagents").and_then(|s| s.get("limits"));
            let Some(value) = value.filter(|v| !v.is_null()) else {
                continue;
            };
            let wrong = |index: Option<usize>, why: String| SettingsError::SpendLimit {
                file: file.path.clone(),
                at: index.map_or_else(String::new, |i| format!("[{i}]")),
                why,
            };
            let entries = value
                .as_array()
                .ok_or_else(|| wrong(None, format!("must be a list of limits, not {}", json_kind(value))))?;
            for (index, entry) in entries.iter().enumerate() {
                let limit: SpendLimit =
                    serde_json::from_value(entry.clone()).map_err(|e| wrong(Some(index), e.to_string()))?;
                if limit.cost_usd.is_none() && limit.tokens.is_none() {
                    return Err(wrong(Some(index), "names neither costUsd nor tokens".into()));
                }
                if limit.cost_usd.is_some_and(|c| !c.is_finite() || c < 0.0) {
                    return Err(wrong(
                        Some(index),
                        "costUsd must be a number of dollars, 0 or more".into(),
                    ));
                }
                limits.push(limit);
            }
        }
        Ok(limits)
    }

    /// How long ended runs are kept before they are removed by themselves
    /// (`subagents.retention`: an age such as `30d`, or `"off"` to keep every run); absent:
    /// [`DEFAULT_RETENTION`]. Read from the user's settings only: the state root holds the
    /// runs of every project, so no repository may have the user's runs removed. A value of
    /// another kind is an error naming the file and key.
    pub fn retention(&self) -> Result<Option<Duration>, SettingsError> {
        let Some(file) = &self.user else {
            return Ok(Some(DEFAULT_RETENTION));
        };
        let value = file.value.get("subagents").and_then(|s| s.get("retention"));
        let Some(value) = value.filter(|v| !v.is_null()) else {
            return Ok(Some(DEFAULT_RETENTION));
        };
        let wrong = || SettingsError::Retention {
            file: file.path.clone(),
            value: value.clone(),
        };
        match value.as_str().ok_or_else(wrong)?.trim() {
            "off" | "never" => Ok(None),
            text => crate::inputs::age::parse_age(text)
                .ok()
                .filter(|age| !age.is_zero())
                .map(Some)
                .ok_or_else(wrong),
        }
    }

    /// The managed-worktree settings: where they go (`subagents.worktrees.dir`, an absolute
    /// path or one under `~/`; read from the user's settings only, so that a repository
    /// cannot send checkouts elsewhere) and whether a clean repository is required
    /// (`subagents.worktrees.requireClean`). A value of another kind is an error naming the
    /// file and key.
    pub fn worktrees(&self, home: Option<&Path>) -> Result<(Option<PathBuf>, bool), SettingsError> {
        let section = |file: &SettingsFile| file.value.get("subagents")?.get("worktrees").cloned();
        let mut dir = None;
        if let Some(file) = &self.user
            && let Some(value) = section(file)
                .and_then(|w| w.get("dir").cloned())
                .filter(|v| !v.is_null())
        {
            let wrong = || SettingsError::WorktreesDir {
                file: file.path.clone(),
                value: value.clone(),
            };
            let text = value.as_str().ok_or_else(wrong)?;
            let path = match (text.strip_prefix("~/"), home) {
                (Some(rest), Some(home)) => home.join(rest),
                (Some(_), None) => return Err(wrong()),
                (None, _) => PathBuf::from(text),
            };
            if !path.is_absolute() {
                return Err(wrong());
            }
            dir = Some(path);
        }
        let mut require_clean = false;
        for file in [&self.project, &self.user].into_iter().flatten() {
            let Some(value) = section(file)
                .and_then(|w| w.get("requireClean").cloned())
                .filter(|v| !v.is_null())
            else {
                continue;
            };
            require_clean = value.as_bool().ok_or_else(|| SettingsError::RequireClean {
                file: file.path.clone(),
                value: value.clone(),
            })?;
            break;
        }
        Ok((dir, require_clean))
    }

    /// The permission defaults (`subagents.permissions`: `tools`, `excludeTools`, `allow`,
    /// `deny`, `mode`, `nested`, `maxDepth`, `nestedAgents`, `nestedModels`), the lowest layers of every run's permission contract (rule
    /// G1): the user's, then the project's, each a layer of its own so that a project only
    /// narrows the user's defaults (rule G13). A malformed value or rule is an error naming
    /// the file.
    pub fn permissions(&self) -> Result<Vec<sublaunch_contract::Permissions>, SettingsError> {
        let mut all = Vec::new();
        for file in [&self.user, &self.project].into_iter().flatten() {
            let value = file.value.get("subagents").and_then(|s| s.get("permissions"));
            let Some(value) = value.filter(|v| !v.is_null()) else {
                continue;
            };
            let wrong = |reason: String| SettingsError::Permissions {
                file: file.path.clone(),
                reason,
            };
            let permissions: sublaunch_contract::Permissions =
                serde_json::from_value(value.clone()).map_err(|e| wrong(e.to_string()))?;
            if let Some((field, error)) = permissions.bad_rules().next() {
                return Err(wrong(format!("{field}: {error}")));
            }
            all.push(permissions);
        }
        Ok(all)
    }

    fn lookup(&self, find: impl Fn(&Value) -> Option<&Value>) -> Option<Value> {
        [&self.project, &self.user]
            .into_iter()
            .flatten()
            .find_map(|file| find(&file.value).filter(|v| !v.is_null()).cloned())
    }
}

/// How long ended runs are kept when the user's settings say nothing
/// ([`Settings::retention`]): long enough to come back to a run after a holiday, short enough
/// that a few hundred runs a day do not pile up for ever.
pub const DEFAULT_RETENTION: Duration = Duration::from_secs(30 * 86_400);

/// A setting of the wrong kind; the message names its file and key.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum SettingsError {
    /// `subagents.permissions` is malformed.
    #[error("{file}: subagents.permissions: {reason}")]
    Permissions {
        /// The settings file.
        file: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// `subagents.onEnd` is not a string.
    #[error("{0}: subagents.onEnd must be a string (a shell command)")]
    OnEndNotACommand(PathBuf),
    /// `subagents.onEndTimeoutSeconds` is no number of seconds in range.
    #[error("{file}: subagents.onEndTimeoutSeconds must be a number of seconds above 0 and at most {max}")]
    OnEndTimeout {
        /// The settings file.
        file: PathBuf,
        /// The most seconds a hook may run.
        max: u64,
    },
    /// An entry of `subagents.limits` is not a limit.
    #[error(
        "{file}: subagents.limits{at} {why} (a limit is {{\"per\": \"day\"|\"week\"|\"month\"|\"tree\", \"costUsd\": dollars, \"tokens\": count, \"provider\": name, \"agent\": name}})"
    )]
    SpendLimit {
        /// The settings file.
        file: PathBuf,
        /// `[2]`, or nothing for the key itself.
        at: String,
        /// What is wrong.
        why: String,
    },
    /// `subagents.maxActive` is no whole number above 0.
    #[error("{file}: subagents.maxActive must be a whole number above 0 (the most runs active at once), not {value}")]
    MaxActive {
        /// The settings file.
        file: PathBuf,
        /// The value found.
        value: Value,
    },
    /// `subagents.worktrees.dir` is no absolute directory or one under `~/`.
    #[error("{file}: subagents.worktrees.dir must be an absolute directory or one under ~/, not {value}")]
    WorktreesDir {
        /// The settings file.
        file: PathBuf,
        /// The value found.
        value: Value,
    },
    /// `subagents.retention` is no age above zero and not `"off"`.
    #[error(
        "{file}: subagents.retention must be an age such as \"30d\" or \"12h\", or \"off\" to keep every run, not {value}"
    )]
    Retention {
        /// The settings file.
        file: PathBuf,
        /// The value found.
        value: Value,
    },
    /// `subagents.worktrees.requireClean` is not a boolean.
    #[error("{file}: subagents.worktrees.requireClean must be true or false, not {value}")]
    RequireClean {
        /// The settings file.
        file: PathBuf,
        /// The value found.
        value: Value,
    },
}

/// The completion hook settings ([`Settings::on_end`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OnEndSettings {
    /// The command, from the nearest trusted file that sets one (an empty string: none).
    pub command: Option<String>,
    /// The file the command came from.
    pub source: Option<PathBuf>,
    /// Whether that file is the project's.
    pub from_project: bool,
    /// The time limit in ms, when a trusted file sets one.
    pub timeout_ms: Option<u64>,
    /// Warnings: the hooks of untrusted files, left out.
    pub ignored: Vec<String>,
    /// The project's hook, left out because the user has not approved it.
    pub unapproved: Option<Ignored>,
    /// The project's hook as approved (what `sublaunch trust` records).
    pub program: Option<ProgramItem>,
}

/// Why a settings file may not name a command (`None`: it may): it and its directory must
/// pass the agent-file trust check. The reason goes into a warning, not an error.
fn distrust(path: &Path) -> Option<String> {
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty());
    for checked in dir.into_iter().chain([path]) {
        match crate::inputs::agents::trust::check(checked) {
            Ok(_) => {}
            Err(untrusted) => {
                let reason = untrusted
                    .reason
                    .replace("agent files must be yours", "files that name commands must be yours");
                return Some(if checked == path {
                    reason
                } else {
                    format!("its directory {}: {reason}", checked.display())
                });
            }
        }
    }
    None
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
                let found = json_kind(&value);
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A project hook counts only through the project it was read for: settings assembled by
    /// hand (no project) leave it out and say so.
    #[test]
    fn a_project_hook_without_its_project_is_left_out() {
        let settings = Settings {
            project: Some(SettingsFile {
                path: PathBuf::from("/repo/.sublaunch/settings.json"),
                value: serde_json::json!({"subagents": {"onEnd": "curl x | sh"}}),
            }),
            ..Settings::default()
        };
        let on_end = settings.on_end().unwrap();
        assert_eq!(on_end.command, None);
        assert!(on_end.ignored[0].contains("nobody approved it"), "{:?}", on_end.ignored);
    }

    /// G1, G7: the settings' permission defaults, the project's over the user's, and a
    /// malformed value or rule named with its file.
    /// G25: a project's default sandbox is a source beside the user's, never in its place, so
    /// `none` in a project cannot loosen the user's `read-only`.
    #[test]
    fn default_sandboxes_of_user_and_project_are_sources_of_their_own() {
        let file = |path: &str, value: Value| {
            Some(SettingsFile {
                path: PathBuf::from(path),
                value,
            })
        };
        let settings = Settings {
            user: file(
                "/home/u/settings.json",
                serde_json::json!({"subagents": {"sandbox": "read-only"}}),
            ),
            project: file(
                "/repo/.sublaunch/settings.json",
                serde_json::json!({"subagents": {"sandbox": "none"}}),
            ),
            from: None,
        };
        let sources = settings.sandbox().unwrap();
        let origins: Vec<_> = sources.iter().map(|s| s.origin.clone().unwrap_or_default()).collect();
        assert_eq!(
            origins,
            [
                "settings subagents.sandbox (/home/u/settings.json)",
                "settings subagents.sandbox (/repo/.sublaunch/settings.json)"
            ]
        );
        assert_eq!(sources[0].profile.as_deref(), Some("read-only"));
    }

    #[test]
    fn permission_defaults_of_user_and_project_are_layers_of_their_own() {
        let file = |path: &str, value: Value| {
            Some(SettingsFile {
                path: PathBuf::from(path),
                value,
            })
        };
        let mut settings = Settings {
            user: file(
                "/home/u/settings.json",
                serde_json::json!({"subagents": {"permissions": {"deny": ["Bash(curl *)"], "nested": false}}}),
            ),
            ..Settings::default()
        };
        let layers = settings.permissions().unwrap();
        let [user] = layers.as_slice() else {
            panic!("{layers:?}")
        };
        assert_eq!(user.deny.as_deref().unwrap(), ["Bash(curl *)"]);
        assert_eq!(user.nested, Some(false));
        settings.project = file(
            "/repo/.sublaunch/settings.json",
            serde_json::json!({"subagents": {"permissions": {"mode": "read-only"}}}),
        );
        // G13: the project's layer comes beside the user's, which it cannot take away.
        let layers = settings.permissions().unwrap();
        let [user, project] = layers.as_slice() else {
            panic!("{layers:?}")
        };
        assert_eq!(user.deny.as_deref().unwrap(), ["Bash(curl *)"]);
        assert_eq!(project.mode, Some(sublaunch_contract::PermissionMode::ReadOnly));
        for (bad, words) in [
            (serde_json::json!({"deny": ["Bash(rm *"]}), "'Bash(rm *'"),
            (serde_json::json!({"mode": "rw"}), "unknown variant `rw`"),
            (serde_json::json!({"tool": ["Read"]}), "unknown field `tool`"),
        ] {
            settings.project = file(
                "/repo/.sublaunch/settings.json",
                serde_json::json!({"subagents": {"permissions": bad}}),
            );
            let error = settings.permissions().unwrap_err().to_string();
            assert!(
                error.contains("/repo/.sublaunch/settings.json: subagents.permissions") && error.contains(words),
                "{error}"
            );
        }
    }
}
