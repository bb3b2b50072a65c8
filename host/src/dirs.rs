//! Where sublaunch keeps its files.

use std::path::PathBuf;

fn env_dir(var: &str) -> Option<PathBuf> {
    std::env::var_os(var)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
}

/// The user's home directory (`$HOME`).
pub fn home() -> Option<PathBuf> {
    env_dir("HOME")
}

/// The cache directory: `$SUBLAUNCH_CACHE_DIR`, else `$XDG_CACHE_HOME/sublaunch`, else
/// `~/.cache/sublaunch`.
pub fn cache() -> Option<PathBuf> {
    env_dir("SUBLAUNCH_CACHE_DIR")
        .or_else(|| env_dir("XDG_CACHE_HOME").map(|d| d.join("sublaunch")))
        .or_else(|| home().map(|h| h.join(".cache/sublaunch")))
}

/// Where precompiled planner components are cached (`<cache>/components`).
pub fn component_cache() -> Option<PathBuf> {
    cache().map(|c| c.join("components"))
}

/// The configuration directory: `$SUBLAUNCH_CONFIG_DIR`, else `$XDG_CONFIG_HOME/sublaunch`,
/// else `~/.config/sublaunch`.
pub fn config() -> Option<PathBuf> {
    env_dir("SUBLAUNCH_CONFIG_DIR")
        .or_else(|| env_dir("XDG_CONFIG_HOME").map(|d| d.join("sublaunch")))
        .or_else(|| home().map(|h| h.join(".config/sublaunch")))
}

/// pi's agent directory: `$PI_CODING_AGENT_DIR` (with `~` expanded), else `~/.pi/agent`.
pub fn pi_agent_dir() -> Option<PathBuf> {
    match std::env::var("PI_CODING_AGENT_DIR") {
        Ok(dir) if dir == "~" => home(),
        Ok(dir) if dir.starts_with("~/") => home().map(|h| h.join(&dir[2..])),
        Ok(dir) if dir.starts_with('/') => Some(PathBuf::from(dir)),
        _ => home().map(|h| h.join(".pi/agent")),
    }
}
