//! The OS sandbox a step runs in (rules G20, G21): the setting an agent, step, task, run or
//! the user's settings give, the host facts the planner needs to compute its paths, and the
//! sandbox the plan carries for each child. The planner decides the profile and its paths;
//! the runner only applies them.

use serde::{Deserialize, Serialize};

/// A sandbox setting as one source gives it (`sandbox:` in frontmatter, a step, a task, the
/// run's `--sandbox`, the settings' default). Every part is optional; the planner takes the
/// tightest of all sources.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(
    feature = "wasmtime",
    derive(
        wasmtime::component::ComponentType,
        wasmtime::component::Lift,
        wasmtime::component::Lower
    ),
    component(record)
)]
pub struct SandboxSetting {
    /// `none`, `read-only`, `workspace` or `offline` (checked by the planner).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
    /// The only TCP ports the agent may connect to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ports: Option<Vec<u16>>,
    /// Whether a sandbox the kernel can give only in part is applied in part instead of
    /// failing the launch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "wasmtime", component(name = "best-effort"))]
    pub best_effort: Option<bool>,
    /// Where the setting came from, for messages (e.g. `agents[reviewer].sandbox`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<String>,
}

/// What the host tells the planner about the machine so it can compute sandbox paths (the
/// planner reads no environment).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(
    feature = "wasmtime",
    derive(
        wasmtime::component::ComponentType,
        wasmtime::component::Lift,
        wasmtime::component::Lower
    ),
    component(record)
)]
pub struct SandboxHost {
    /// `$HOME`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub home: Option<String>,
    /// `$TMPDIR` (absent: `/tmp`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tmpdir: Option<String>,
    /// `$CODEX_HOME` (absent: `~/.codex`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "wasmtime", component(name = "codex-home"))]
    pub codex_home: Option<String>,
    /// `$XDG_CACHE_HOME` (absent: `~/.cache`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "wasmtime", component(name = "cache-home"))]
    pub cache_home: Option<String>,
    /// `$XDG_CONFIG_HOME` (absent: `~/.config`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "wasmtime", component(name = "config-home"))]
    pub config_home: Option<String>,
    /// `$CLAUDE_CONFIG_DIR` (Claude Code's state, beside `~/.claude`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "wasmtime", component(name = "claude-config-dir"))]
    pub claude_config_dir: Option<String>,
    /// `$PI_CODING_AGENT_DIR` (pi's, beside `~/.pi`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "wasmtime", component(name = "pi-agent-dir"))]
    pub pi_agent_dir: Option<String>,
}

/// A sandbox profile, loosest first.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[cfg_attr(
    feature = "wasmtime",
    derive(
        wasmtime::component::ComponentType,
        wasmtime::component::Lift,
        wasmtime::component::Lower
    ),
    component(enum)
)]
#[repr(u8)]
pub enum SandboxProfile {
    /// No OS sandbox.
    #[cfg_attr(feature = "wasmtime", component(name = "none"))]
    #[default]
    None,
    /// Write the step's directory, its temporary directory and the CLI's own state; read the
    /// rest (but the hidden secrets).
    #[cfg_attr(feature = "wasmtime", component(name = "workspace"))]
    Workspace,
    /// `workspace` without any TCP.
    #[cfg_attr(feature = "wasmtime", component(name = "offline"))]
    Offline,
    /// Write only the temporary directory and the CLI's own state.
    #[cfg_attr(feature = "wasmtime", component(name = "read-only"))]
    ReadOnly,
}

impl SandboxProfile {
    /// Every profile, in the order the tightest is found (loosest first).
    pub const ALL: [Self; 4] = [Self::None, Self::Workspace, Self::Offline, Self::ReadOnly];

    /// The profile's name as users write it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::Workspace => "workspace",
            Self::Offline => "offline",
            Self::ReadOnly => "read-only",
        }
    }

    /// The profile a user's name means.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|p| p.as_str() == name)
    }

    /// Whether the step's own directory (or worktree) is writable.
    pub fn writes_workdir(self) -> bool {
        matches!(self, Self::Workspace | Self::Offline)
    }
}

impl std::fmt::Display for SandboxProfile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The sandbox of one planned child: its profile and every path the runner needs, but the
/// step's own directory and temporary directory, which the host knows only when it launches.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(
    feature = "wasmtime",
    derive(
        wasmtime::component::ComponentType,
        wasmtime::component::Lift,
        wasmtime::component::Lower
    ),
    component(record)
)]
pub struct SandboxPlan {
    /// The tightest profile of every source.
    pub profile: SandboxProfile,
    /// The only TCP ports the agent may connect to (absent: any, unless `offline`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ports: Option<Vec<u16>>,
    /// Apply what the kernel offers instead of failing the launch.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    #[cfg_attr(feature = "wasmtime", component(name = "best-effort"))]
    pub best_effort: bool,
    /// Whether the step's own directory (its worktree, when it has one) is writable.
    #[cfg_attr(feature = "wasmtime", component(name = "write-workdir"))]
    pub write_workdir: bool,
    /// The agent CLI's own state directories and files (absolute), writable.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[cfg_attr(feature = "wasmtime", component(name = "state-paths"))]
    pub state_paths: Vec<String>,
    /// Paths the agent may not even read (absolute): the user's secrets.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hidden: Vec<String>,
    /// The directory the step's own temporary directory is made in (absolute).
    #[cfg_attr(feature = "wasmtime", component(name = "temp-base"))]
    pub temp_base: String,
    /// Where each part came from (`run --sandbox`, `agents[x].sandbox` …), for messages.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sources: Vec<String>,
}

/// Reads a port of a sandbox's allow-list: a number from 1 to 65535. A host (`host:443`) is
/// refused: Landlock restricts TCP by port only, so a per-host list cannot be enforced (G21).
pub fn parse_port(text: &str) -> Result<u16, String> {
    let text = text.trim();
    if text.contains(':') || text.parse::<u16>().is_err() && !text.chars().all(|c| c.is_ascii_digit()) {
        return Err(format!(
            "'{text}' is not a TCP port; the sandbox allows ports, not hosts (the kernel restricts connections by port only, so a per-host list cannot be enforced)"
        ));
    }
    match text.parse::<u16>() {
        Ok(port) if port > 0 => Ok(port),
        _ => Err(format!("'{text}' is not a TCP port (1 to 65535)")),
    }
}

/// Reads `sandbox`: a profile name (`sandbox: workspace`) or `{profile, ports, bestEffort}`.
pub fn setting<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Option<SandboxSetting>, D::Error> {
    use serde::de::Error;
    use serde_json::Value;
    let port = |value: &Value| match value {
        Value::Number(n) => n
            .as_u64()
            .and_then(|n| u16::try_from(n).ok())
            .filter(|n| *n > 0)
            .ok_or_else(|| format!("{n} is not a TCP port (1 to 65535)")),
        Value::String(text) => parse_port(text),
        other => Err(format!("{other} is not a TCP port")),
    };
    match Option::<Value>::deserialize(deserializer)? {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(name)) => Ok(Some(SandboxSetting {
            profile: Some(checked_profile(&name).map_err(D::Error::custom)?),
            ..SandboxSetting::default()
        })),
        Some(Value::Object(fields)) => {
            let mut setting = SandboxSetting::default();
            for (key, value) in fields {
                match (key.as_str(), value) {
                    ("profile", Value::String(name)) => {
                        setting.profile = Some(checked_profile(&name).map_err(D::Error::custom)?);
                    }
                    ("ports", Value::Array(items)) => {
                        setting.ports = Some(
                            items
                                .iter()
                                .map(port)
                                .collect::<Result<_, _>>()
                                .map_err(D::Error::custom)?,
                        );
                    }
                    ("bestEffort", Value::Bool(best)) => setting.best_effort = Some(best),
                    ("profile" | "ports" | "bestEffort", other) => {
                        return Err(D::Error::custom(format!("sandbox `{key}` cannot be {other}")));
                    }
                    (other, _) => {
                        return Err(D::Error::custom(format!(
                            "unknown field `{other}`, a sandbox has `profile`, `ports` and `bestEffort`"
                        )));
                    }
                }
            }
            Ok(Some(setting))
        }
        Some(other) => Err(D::Error::custom(format!(
            "a sandbox is a profile name or {{profile, ports, bestEffort}}, not {other}"
        ))),
    }
}

/// `name` when it names a profile, else a message listing them.
pub fn checked_profile(name: &str) -> Result<String, String> {
    SandboxProfile::parse(name.trim())
        .map(|p| p.as_str().to_owned())
        .ok_or_else(|| format!("unknown sandbox profile '{name}'; use none, read-only, workspace or offline"))
}
