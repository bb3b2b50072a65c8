//! The process environment as one explicit value.
//!
//! Only the CLI reads the real environment ([`Environment::from_process`]); everything in the
//! library that depends on a variable takes an [`Environment`], so an embedder decides each
//! value (and a test states them) instead of the library reaching into `std::env`. The shim
//! started for a run inherits [`Environment::vars`], less what H10 removes.

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::time::Duration;
use sublaunch_protocol::files::durability::DurabilityPolicy;
use sublaunch_protocol::files::layout::{Layout, NoRoot, resolve_root};

/// Names the shim executable (else the one beside `sublaunch`, else the built-in copy).
pub const SHIM_VAR: &str = "SUBLAUNCH_SHIM";
/// Moves the ssh ControlMaster sockets; must name a private directory.
pub const SSH_CONTROL_DIR_VAR: &str = "SUBLAUNCH_SSH_CONTROL_DIR";
/// An ssh client configuration used instead of `~/.ssh/config` (`ssh -F FILE`).
pub const SSH_CONFIG_VAR: &str = "SUBLAUNCH_SSH_CONFIG";
/// The Herdr binary (else `herdr` on `PATH`).
pub const HERDR_BIN_VAR: &str = "HERDR_BIN";
/// How long `herdr machine list --json` may take, in milliseconds.
pub const HERDR_TIMEOUT_VAR: &str = "SUBLAUNCH_HERDR_TIMEOUT_MS";
/// How deep in runs a process runs: unset at top level, 1 in the agents of a top-level run,
/// one more in each run started from inside a run. `sublaunch mcp` reads it to limit nesting.
pub const RUN_DEPTH_VAR: &str = "SUBLAUNCH_DEPTH";

/// Environment variables, by name.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Environment {
    vars: BTreeMap<OsString, OsString>,
}

impl Environment {
    /// This process's environment (the CLI's one read of it).
    pub fn from_process() -> Self {
        Self::from_vars(std::env::vars_os())
    }

    /// An environment of exactly these variables.
    pub fn from_vars<K: Into<OsString>, V: Into<OsString>>(vars: impl IntoIterator<Item = (K, V)>) -> Self {
        Self {
            vars: vars.into_iter().map(|(k, v)| (k.into(), v.into())).collect(),
        }
    }

    /// The same environment with `name` set to `value`.
    #[must_use]
    pub fn with(mut self, name: impl Into<OsString>, value: impl Into<OsString>) -> Self {
        self.vars.insert(name.into(), value.into());
        self
    }

    /// The value of `name`, when set.
    pub fn var(&self, name: &str) -> Option<&OsStr> {
        self.vars.get(OsStr::new(name)).map(OsString::as_os_str)
    }

    /// The value of `name` as text, when set, valid UTF-8 and not empty.
    pub fn text(&self, name: &str) -> Option<&str> {
        self.var(name).and_then(OsStr::to_str).filter(|v| !v.is_empty())
    }

    /// Every variable (the base of the shim's environment).
    pub fn vars(&self) -> impl Iterator<Item = (OsString, OsString)> + '_ {
        self.vars.iter().map(|(k, v)| (k.clone(), v.clone()))
    }

    /// An absolute directory named by `name`.
    fn dir(&self, name: &str) -> Option<PathBuf> {
        self.var(name)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
    }

    /// The user's home directory (`$HOME`).
    pub fn home(&self) -> Option<PathBuf> {
        self.dir("HOME")
    }

    /// What the planner needs to compute sandbox paths: `$HOME`, `$TMPDIR`, `$CODEX_HOME`,
    /// `$XDG_CACHE_HOME` and `$XDG_CONFIG_HOME` (relative values are ignored; rule G22).
    pub fn sandbox_host(&self) -> sublaunch_contract::SandboxHost {
        let dir = |name: &str| self.dir(name).map(|d| d.to_string_lossy().into_owned());
        sublaunch_contract::SandboxHost {
            home: dir("HOME"),
            tmpdir: dir("TMPDIR"),
            codex_home: dir("CODEX_HOME"),
            cache_home: dir("XDG_CACHE_HOME"),
            config_home: dir("XDG_CONFIG_HOME"),
            claude_config_dir: dir("CLAUDE_CONFIG_DIR"),
            pi_agent_dir: self.pi_agent_dir().map(|d| d.to_string_lossy().into_owned()),
        }
    }

    /// The cache directory: `$SUBLAUNCH_CACHE_DIR`, else `$XDG_CACHE_HOME/sublaunch`, else
    /// `~/.cache/sublaunch`.
    pub fn cache_dir(&self) -> Option<PathBuf> {
        self.dir("SUBLAUNCH_CACHE_DIR")
            .or_else(|| self.dir("XDG_CACHE_HOME").map(|d| d.join("sublaunch")))
            .or_else(|| self.home().map(|h| h.join(".cache/sublaunch")))
    }

    /// Where precompiled planner components are cached (`<cache>/components`).
    pub fn component_cache(&self) -> Option<PathBuf> {
        self.cache_dir().map(|c| c.join("components"))
    }

    /// The configuration directory: `$SUBLAUNCH_CONFIG_DIR`, else
    /// `$XDG_CONFIG_HOME/sublaunch`, else `~/.config/sublaunch`.
    pub fn config_dir(&self) -> Option<PathBuf> {
        self.dir("SUBLAUNCH_CONFIG_DIR")
            .or_else(|| self.dir("XDG_CONFIG_HOME").map(|d| d.join("sublaunch")))
            .or_else(|| self.home().map(|h| h.join(".config/sublaunch")))
    }

    /// pi's agent directory: `$PI_CODING_AGENT_DIR` (with `~` expanded), else `~/.pi/agent`.
    pub fn pi_agent_dir(&self) -> Option<PathBuf> {
        match self.text("PI_CODING_AGENT_DIR") {
            Some("~") => self.home(),
            Some(dir) if dir.starts_with("~/") => self.home().map(|h| h.join(&dir[2..])),
            Some(dir) if dir.starts_with('/') => Some(PathBuf::from(dir)),
            _ => self.home().map(|h| h.join(".pi/agent")),
        }
    }

    /// Where runs live: `$SUBLAUNCH_ROOT` (relative to `cwd`), else
    /// `$XDG_STATE_HOME/sublaunch`, else `~/.local/state/sublaunch`.
    pub fn layout(&self, cwd: Option<&Path>) -> Result<Layout, NoRoot> {
        resolve_root(|name| self.var(name).map(OsStr::to_owned), cwd).map(Layout::new)
    }

    /// Which writes are fsynced: `SUBLAUNCH_DURABILITY=strict` makes every write durable.
    pub fn durability(&self) -> DurabilityPolicy {
        DurabilityPolicy::from_setting(self.text(sublaunch_protocol::files::durability::DURABILITY_ENV))
    }

    /// The shim executable the user named.
    pub fn shim(&self) -> Option<PathBuf> {
        self.var(SHIM_VAR).filter(|v| !v.is_empty()).map(PathBuf::from)
    }

    /// The ssh control directory the user named (absolute paths only).
    pub fn ssh_control_dir(&self) -> Option<String> {
        self.text(SSH_CONTROL_DIR_VAR)
            .filter(|v| v.starts_with('/'))
            .map(str::to_owned)
    }

    /// The ssh client configuration the user named.
    pub fn ssh_config(&self) -> Option<String> {
        self.text(SSH_CONFIG_VAR).map(str::to_owned)
    }

    /// The Herdr binary: `$HERDR_BIN`, else `herdr` (looked up on `PATH`).
    pub fn herdr_bin(&self) -> PathBuf {
        self.var(HERDR_BIN_VAR)
            .filter(|v| !v.is_empty())
            .map_or_else(|| "herdr".into(), PathBuf::from)
    }

    /// How deep in runs this process runs ([`RUN_DEPTH_VAR`]): 0 when unset or empty. A value
    /// that is not a whole number counts as `u32::MAX`, deeper than any limit: whoever set it
    /// wrong must not thereby escape a nesting limit.
    pub fn run_depth(&self) -> u32 {
        run_depth(self.var(RUN_DEPTH_VAR))
    }

    /// How long `herdr machine list --json` may take: `$SUBLAUNCH_HERDR_TIMEOUT_MS`, else
    /// `default`.
    pub fn herdr_timeout(&self, default: Duration) -> Duration {
        self.text(HERDR_TIMEOUT_VAR)
            .and_then(|ms| ms.parse().ok())
            .map_or(default, Duration::from_millis)
    }
}

/// A [`RUN_DEPTH_VAR`] value as a depth (see [`Environment::run_depth`]).
pub(crate) fn run_depth(value: Option<&OsStr>) -> u32 {
    match value {
        None => 0,
        Some(value) if value.is_empty() => 0,
        Some(value) => value.to_str().and_then(|v| v.parse().ok()).unwrap_or(u32::MAX),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directories_follow_the_xdg_order_and_ignore_relative_values() {
        let env = Environment::from_vars([("HOME", "/home/me"), ("XDG_CACHE_HOME", "relative")]);
        assert_eq!(env.cache_dir(), Some(PathBuf::from("/home/me/.cache/sublaunch")));
        let env = env.with("SUBLAUNCH_CACHE_DIR", "/c");
        assert_eq!(env.component_cache(), Some(PathBuf::from("/c/components")));
        assert_eq!(env.config_dir(), Some(PathBuf::from("/home/me/.config/sublaunch")));
        let env = env.with("PI_CODING_AGENT_DIR", "~/pi");
        assert_eq!(env.pi_agent_dir(), Some(PathBuf::from("/home/me/pi")));
        assert_eq!(Environment::default().home(), None);
    }

    #[test]
    fn the_layout_and_durability_come_from_the_value_not_the_process() {
        let env = Environment::from_vars([("SUBLAUNCH_ROOT", "state"), ("SUBLAUNCH_DURABILITY", "strict")]);
        assert_eq!(env.layout(Some(Path::new("/w"))).unwrap().root(), Path::new("/w/state"));
        assert!(env.durability().is_strict());
        assert!(!Environment::default().durability().is_strict());
        assert!(Environment::default().layout(None).is_err());
    }

    #[test]
    fn the_run_depth_is_zero_when_unset_and_deepest_when_malformed() {
        assert_eq!(Environment::default().run_depth(), 0);
        let at = |value: &str| Environment::from_vars([(RUN_DEPTH_VAR, value)]).run_depth();
        assert_eq!(at(""), 0);
        assert_eq!(at("2"), 2);
        for malformed in ["-1", "two", "1.5", " 1", "99999999999"] {
            assert_eq!(at(malformed), u32::MAX, "{malformed}");
        }
    }
}
