//! Where sublaunch keeps its files.

use std::path::PathBuf;

fn env_dir(var: &str) -> Option<PathBuf> {
    std::env::var_os(var).filter(|v| !v.is_empty()).map(PathBuf::from).filter(|p| p.is_absolute())
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
