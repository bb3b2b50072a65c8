//! Reading configuration files (agents, settings, chains, model registries) with errors that
//! name the file and the JSON path, within limits that keep a hostile file cheap to refuse:
//! at most [`FILE_LIMIT`] bytes, a regular file (a FIFO or device would block or never end),
//! YAML nested at most [`YAML_DEPTH_LIMIT`] levels.

use anyhow::anyhow;
use serde::de::DeserializeOwned;
use std::io::Read as _;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};

/// The largest configuration file sublaunch reads: 1 MiB.
pub const FILE_LIMIT: u64 = 1024 * 1024;

/// The deepest nesting a YAML document may have (mappings, sequences and flow collections).
pub const YAML_DEPTH_LIMIT: usize = 64;

/// A configuration file that cannot be used, and why. Shown as `<path> <problem>`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{} {problem}", path.display())]
pub struct FileProblem {
    /// The file.
    pub path: PathBuf,
    /// What is wrong, phrased to follow the path (`is not a regular file`).
    pub problem: String,
}

/// A configuration file (an agent or chain file) that cannot be used: which file, where in
/// it, what is wrong. Shown as `<path>: <at>: <message>`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileError {
    /// The file.
    pub path: PathBuf,
    /// Where in the file: a frontmatter field or a JSON path (`steps[1].agent`), when known.
    pub at: Option<String>,
    /// What is wrong.
    pub message: String,
}

impl FileError {
    /// The error `message` about `path`, at `at`.
    pub fn new(path: &Path, at: Option<String>, message: impl Into<String>) -> Self {
        let (path, message) = (path.to_owned(), message.into());
        Self { path, at, message }
    }
}

impl std::fmt::Display for FileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.at {
            Some(at) => write!(f, "{}: {at}: {}", self.path.display(), self.message),
            None => write!(f, "{}: {}", self.path.display(), self.message),
        }
    }
}

impl std::error::Error for FileError {}

/// Reads `file` whole; `Ok(None)` when it does not exist. Anything but a regular file of at
/// most [`FILE_LIMIT`] bytes is refused.
pub fn read_bytes(file: &Path) -> Result<Option<Vec<u8>>, FileProblem> {
    let problem = |problem: String| FileProblem {
        path: file.to_owned(),
        problem,
    };
    // O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused below.
    let opened = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32)
        .open(file);
    let mut handle = match opened {
        Ok(handle) => handle,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(problem(format!("cannot be read: {e}"))),
    };
    let meta = handle.metadata().map_err(|e| problem(format!("cannot be read: {e}")))?;
    if !meta.is_file() {
        return Err(problem("is not a regular file".into()));
    }
    let too_large = |size: u64| {
        problem(format!(
            "is {size} bytes; configuration files may have at most {FILE_LIMIT} bytes (1 MiB)"
        ))
    };
    if meta.len() > FILE_LIMIT {
        return Err(too_large(meta.len()));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    (&mut handle)
        .take(FILE_LIMIT + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| problem(format!("cannot be read: {e}")))?;
    if bytes.len() as u64 > FILE_LIMIT {
        return Err(too_large(bytes.len() as u64));
    }
    Ok(Some(bytes))
}

/// Reads `file` as UTF-8 text (see [`read_bytes`]); a missing file is a problem too.
pub fn read_text(file: &Path) -> Result<String, FileProblem> {
    let bytes = read_bytes(file)?.ok_or_else(|| FileProblem {
        path: file.to_owned(),
        problem: "does not exist".into(),
    })?;
    String::from_utf8(bytes).map_err(|e| FileProblem {
        path: file.to_owned(),
        problem: format!(
            "is not UTF-8 text (invalid byte at offset {})",
            e.utf8_error().valid_up_to()
        ),
    })
}

mod yaml_depth;

/// Refuses YAML nested deeper than [`YAML_DEPTH_LIMIT`] before it reaches the parser, whose
/// time grows steeply with depth. Levels are counted as the parser will read the text (block
/// indentation levels and flow collections), so quotes, scalars and comments cannot hide
/// brackets from the count.
pub fn check_yaml_depth(text: &str) -> Result<(), YamlTooDeep> {
    match yaml_depth::first_line_deeper_than(text, YAML_DEPTH_LIMIT) {
        Some(line) => Err(YamlTooDeep { line }),
        None => Ok(()),
    }
}

/// YAML nested deeper than [`YAML_DEPTH_LIMIT`], refused by [`check_yaml_depth`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: nested more than {} levels deep", YAML_DEPTH_LIMIT)]
pub struct YamlTooDeep {
    /// The first line past the limit (1-based, in the text checked).
    pub line: usize,
}

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
    match read_bytes(file)? {
        Some(bytes) => parse(file, &bytes).map(Some),
        None => Ok(None),
    }
}

/// Where an upward search for project files from `start` ends: the nearest repository root
/// ([`repository_root`]), else `home` when `start` is inside it, else `start` itself. Files in
/// directories shared with other users above a project (such as `/tmp`) are never picked up.
pub fn walk_boundary<'a>(start: &'a Path, home: Option<&Path>) -> &'a Path {
    if let Some(root) = repository_root(start) {
        return root;
    }
    match home {
        Some(home) if start.starts_with(home) => start.ancestors().find(|dir| *dir == home).unwrap_or(start),
        _ => start,
    }
}

/// The nearest directory at or above `start` holding a `.git` (a repository or worktree root)
/// that counts: the `.git` and the directory holding it belong to the user or root. Anyone
/// who can write a shared directory (`/tmp`) could plant a `.git` there to widen other users'
/// searches up to it, so another user's `.git` is passed over.
pub fn repository_root(start: &Path) -> Option<&Path> {
    use std::os::unix::fs::MetadataExt as _;
    let me = rustix::process::geteuid().as_raw();
    let ours = |path: &Path| std::fs::symlink_metadata(path).is_ok_and(|meta| meta.uid() == me || meta.uid() == 0);
    start.ancestors().find(|dir| ours(&dir.join(".git")) && ours(dir))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn oversized_fifo_and_directory_are_refused_by_name() {
        let tmp = tempfile::tempdir().unwrap();
        let big = tmp.path().join("big.json");
        std::fs::write(&big, vec![b' '; FILE_LIMIT as usize + 1]).unwrap();
        let error = read_bytes(&big).unwrap_err().to_string();
        assert!(
            error.contains("big.json is 1048577 bytes") && error.contains("1 MiB"),
            "{error}"
        );
        let fifo = tmp.path().join("fifo");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        assert_eq!(
            read_bytes(&fifo).unwrap_err().to_string(),
            format!("{} is not a regular file", fifo.display())
        );
        assert_eq!(read_bytes(tmp.path()).unwrap_err().problem, "is not a regular file");
        assert_eq!(read_bytes(&tmp.path().join("absent")), Ok(None));
        std::fs::write(&big, [b'a', 0xff]).unwrap();
        assert_eq!(
            read_text(&big).unwrap_err().problem,
            "is not UTF-8 text (invalid byte at offset 1)"
        );
    }

    #[test]
    fn deep_yaml_is_refused_and_ordinary_yaml_passes() {
        let ordinary = "a:\n  b:\n    - c: [1, {d: 2}]\n    - - e\n# [[[[ comment\ns: '[[['\n";
        assert_eq!(check_yaml_depth(ordinary), Ok(()));
        let flow = format!("x: {}{}", "[".repeat(YAML_DEPTH_LIMIT), "]".repeat(YAML_DEPTH_LIMIT));
        assert!(
            check_yaml_depth(&flow)
                .unwrap_err()
                .to_string()
                .contains("line 1: nested more than 64")
        );
        let block: String = (0..=YAML_DEPTH_LIMIT)
            .map(|i| format!("{}k{i}:\n", " ".repeat(i)))
            .collect();
        assert!(check_yaml_depth(&block).is_err());
        let dashes = format!("{}x\n", "- ".repeat(YAML_DEPTH_LIMIT + 1));
        assert!(check_yaml_depth(&dashes).is_err());
    }

    #[test]
    fn the_walk_stops_at_the_repository_root_or_home() {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().join("home");
        let deep = home.join("repo/src/deep");
        std::fs::create_dir_all(&deep).unwrap();
        assert_eq!(walk_boundary(&deep, Some(&home)), home);
        std::fs::create_dir(home.join("repo/.git")).unwrap();
        assert_eq!(walk_boundary(&deep, Some(&home)), home.join("repo"));
        let outside = tmp.path().join("shared/work");
        std::fs::create_dir_all(&outside).unwrap();
        assert_eq!(walk_boundary(&outside, Some(&home)), outside);
    }
}
