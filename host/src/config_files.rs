//! Reading JSON configuration files with errors that name the file and the JSON path.

use anyhow::{Context as _, anyhow};
use serde::de::DeserializeOwned;
use std::path::{Path, PathBuf};

/// Parses `bytes` (the content of `file`) into `T`; a problem names the file, the JSON path
/// and the position.
pub fn parse<T: DeserializeOwned>(file: &Path, bytes: &[u8]) -> anyhow::Result<T> {
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    let value = serde_path_to_error::deserialize(&mut deserializer).map_err(|error| {
        let path = error.path().to_string();
        let inner = error.into_inner();
        if path == "." || inner.is_syntax() || inner.is_eof() {
            anyhow!("{}: {inner}", file.display())
        } else {
            anyhow!("{}: at {path}: {inner}", file.display())
        }
    })?;
    deserializer.end().map_err(|e| anyhow!("{}: {e}", file.display()))?;
    Ok(value)
}

/// Reads and parses `file`; `Ok(None)` when it does not exist.
pub fn read<T: DeserializeOwned>(file: &Path) -> anyhow::Result<Option<T>> {
    match std::fs::read(file) {
        Ok(bytes) => parse(file, &bytes).map(Some),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).with_context(|| format!("cannot read {}", file.display())),
    }
}

/// The nearest `<dir>/<relative>` that exists, walking up from `start` to the root.
pub fn nearest(start: &Path, relative: &str) -> Option<PathBuf> {
    start
        .ancestors()
        .map(|dir| dir.join(relative))
        .find(|candidate| candidate.is_file())
}
