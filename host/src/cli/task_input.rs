//! Where `run` and `resume` take the task from: an argument (`--task TEXT`, or the positional
//! TASK of `run`), standard input (`--task -`, as `codex exec -` reads it), or a file
//! (`--task-file FILE`, `-` again being standard input). Agents hand over long prompts of many
//! lines, which `--task "$(cat f)"` mangles; read text loses only its trailing newlines, as
//! `$(cat f)` would.

use std::io::{IsTerminal, Read};
use std::path::{Path, PathBuf};

/// The most a task read from a file or standard input may hold: the planner's request limit.
const MAX_TASK_BYTES: usize = sublaunch::contract::MAX_REQUEST_BYTES;

/// The ways a task can be given.
#[derive(Clone, Debug, Default)]
pub struct TaskSources {
    /// `--task TEXT` (`-`: standard input).
    pub flag: Option<String>,
    /// `--task-file FILE` (`-`: standard input).
    pub file: Option<PathBuf>,
    /// A positional TASK.
    pub positional: Option<String>,
}

impl TaskSources {
    /// The task, read from where it was given; `None` when it was not. The message says what
    /// was wrong, in the flags' terms.
    pub fn read(self) -> Result<Option<String>, String> {
        // Where it was read from, for the messages (an argument needs no saying).
        let (text, from) = match (self.flag, self.file, self.positional) {
            (Some(dash), None, None) if dash == "-" => (read_stdin()?, "--task -: standard input: ".to_owned()),
            (Some(text), None, None) | (None, None, Some(text)) => (text, String::new()),
            (None, Some(path), None) if path.as_os_str() == "-" => {
                (read_stdin()?, "--task-file -: standard input: ".to_owned())
            }
            (None, Some(path), None) => (read_file(&path)?, format!("--task-file {}: ", path.display())),
            (None, None, None) => return Ok(None),
            _ => return Err("give the task once: as an argument, with --task, or with --task-file".to_owned()),
        };
        if text.contains('\0') {
            return Err(format!(
                "{from}the task contains a NUL byte, which no program can be given"
            ));
        }
        if text.trim().is_empty() {
            return Err(format!("{from}the task is empty"));
        }
        Ok(Some(text))
    }
}

fn read_stdin() -> Result<String, String> {
    let stdin = std::io::stdin();
    if stdin.is_terminal() {
        // Reading a terminal waits for the user: say what it waits for.
        eprintln!("sublaunch: reading the task from standard input; end it with Ctrl-D");
    }
    bounded(stdin.lock()).map_err(|why| format!("--task -: cannot read standard input: {why}"))
}

fn read_file(path: &Path) -> Result<String, String> {
    let file = std::fs::File::open(path).map_err(|e| format!("--task-file {}: {e}", path.display()))?;
    if file.metadata().is_ok_and(|m| m.is_dir()) {
        return Err(format!("--task-file {}: is a directory", path.display()));
    }
    bounded(file).map_err(|why| format!("--task-file {}: {why}", path.display()))
}

/// At most [`MAX_TASK_BYTES`], as UTF-8, without its trailing newlines.
fn bounded(reader: impl Read) -> Result<String, String> {
    let mut bytes = Vec::new();
    reader
        .take(MAX_TASK_BYTES as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| e.to_string())?;
    if bytes.len() > MAX_TASK_BYTES {
        return Err(format!("longer than {} MiB", MAX_TASK_BYTES / (1024 * 1024)));
    }
    let mut text = String::from_utf8(bytes).map_err(|e| format!("not UTF-8 text ({e})"))?;
    let kept = text.trim_end_matches(['\n', '\r']).len();
    text.truncate(kept);
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sources(flag: Option<&str>, file: Option<&Path>, positional: Option<&str>) -> TaskSources {
        TaskSources {
            flag: flag.map(str::to_owned),
            file: file.map(Path::to_owned),
            positional: positional.map(str::to_owned),
        }
    }

    #[test]
    fn a_task_comes_from_one_place() {
        assert_eq!(sources(Some("hi"), None, None).read().unwrap().as_deref(), Some("hi"));
        assert_eq!(sources(None, None, Some("hi")).read().unwrap().as_deref(), Some("hi"));
        assert_eq!(sources(None, None, None).read().unwrap(), None);
        assert!(sources(Some("a"), None, Some("b")).read().unwrap_err().contains("once"));
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("task.md");
        std::fs::write(&file, "line 1\nline 2\n\n").unwrap();
        assert_eq!(
            sources(None, Some(&file), None).read().unwrap().as_deref(),
            Some("line 1\nline 2")
        );
        std::fs::write(&file, "a\0b").unwrap();
        assert!(
            sources(None, Some(&file), None)
                .read()
                .unwrap_err()
                .contains("NUL byte")
        );
        std::fs::write(&file, "\n").unwrap();
        assert!(
            sources(None, Some(&file), None)
                .read()
                .unwrap_err()
                .ends_with("the task is empty")
        );
        let missing = dir.path().join("missing");
        assert!(
            sources(None, Some(&missing), None)
                .read()
                .unwrap_err()
                .starts_with("--task-file ")
        );
        assert!(
            sources(None, Some(dir.path()), None)
                .read()
                .unwrap_err()
                .ends_with("is a directory")
        );
    }
}
