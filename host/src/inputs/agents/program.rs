//! Finding the program an agent's runner starts, before anything is launched: a name is
//! looked up in `PATH`, a path (anything with a `/`) must be an executable file.

use std::ffi::OsStr;
use std::fmt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// Why a program cannot be started.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MissingProgram {
    /// A bare name found in no directory of `PATH` (the value searched, possibly empty).
    NotOnPath {
        /// The program name.
        program: String,
        /// The `PATH` that was searched.
        path: String,
    },
    /// A path that is not an executable file.
    NotExecutable {
        /// The path as resolved (relative paths against the step's directory).
        path: PathBuf,
        /// What is wrong with it.
        reason: Unrunnable,
    },
}

/// What is wrong with a path given as a program.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Unrunnable {
    /// Not a regular file (after symlinks).
    NotAFile,
    /// No execute bit.
    NotExecutable,
    /// Nothing there.
    Absent,
    /// It could not be looked at (the system's message).
    Inaccessible(String),
}

impl fmt::Display for Unrunnable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotAFile => f.write_str("is not a regular file"),
            Self::NotExecutable => f.write_str("is not executable"),
            Self::Absent => f.write_str("does not exist"),
            Self::Inaccessible(why) => write!(f, "cannot be accessed: {why}"),
        }
    }
}

impl fmt::Display for MissingProgram {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotOnPath { program, path } if path.is_empty() => {
                write!(f, "'{program}' cannot be found: PATH is empty")
            }
            Self::NotOnPath { program, path } => write!(f, "'{program}' is not on PATH ({path})"),
            Self::NotExecutable { path, reason } => write!(f, "'{}' {reason}", path.display()),
        }
    }
}

impl std::error::Error for MissingProgram {}

/// Where `program` would be started from: a path with a `/` (relative ones against `cwd`) must
/// be an executable regular file; a bare name is searched in the directories of `path` (the
/// `PATH` value; empty entries mean the current directory, as for `execvp`; no `PATH` finds
/// nothing).
pub fn locate_program(program: &str, cwd: &Path, path: Option<&OsStr>) -> Result<PathBuf, MissingProgram> {
    if program.contains('/') {
        let candidate = cwd.join(program);
        return match executable(&candidate) {
            Ok(()) => Ok(candidate),
            Err(reason) => Err(MissingProgram::NotExecutable {
                path: candidate,
                reason,
            }),
        };
    }
    let path = path.unwrap_or_default();
    if path.is_empty() {
        return Err(MissingProgram::NotOnPath {
            program: program.to_owned(),
            path: String::new(),
        });
    }
    std::env::split_paths(path)
        .map(|dir| {
            let dir = if dir.as_os_str().is_empty() {
                cwd.to_owned()
            } else {
                cwd.join(dir)
            };
            dir.join(program)
        })
        .find(|candidate| executable(candidate).is_ok())
        .ok_or_else(|| MissingProgram::NotOnPath {
            program: program.to_owned(),
            path: path.to_string_lossy().into_owned(),
        })
}

/// `Ok` when `path` is a regular file (after symlinks) with an execute bit.
fn executable(path: &Path) -> Result<(), Unrunnable> {
    match std::fs::metadata(path) {
        Ok(meta) if !meta.is_file() => Err(Unrunnable::NotAFile),
        Ok(meta) if meta.permissions().mode() & 0o111 == 0 => Err(Unrunnable::NotExecutable),
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(Unrunnable::Absent),
        Err(e) => Err(Unrunnable::Inaccessible(e.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn make(dir: &Path, name: &str, mode: u32) -> PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
        path
    }

    #[test]
    fn names_are_searched_in_path_and_paths_must_be_executable() {
        let tmp = tempfile::tempdir().unwrap();
        let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
        std::fs::create_dir_all(&a).unwrap();
        std::fs::create_dir_all(&b).unwrap();
        make(&a, "tool", 0o644);
        let found = make(&b, "tool", 0o755);
        let path = std::env::join_paths([&a, &b]).unwrap();
        assert_eq!(
            locate_program("tool", tmp.path(), Some(path.as_os_str())).unwrap(),
            found
        );
        let missing = locate_program("ghost", tmp.path(), Some(path.as_os_str())).unwrap_err();
        assert!(missing.to_string().contains("'ghost' is not on PATH ("), "{missing}");
        assert!(
            locate_program("tool", tmp.path(), None)
                .unwrap_err()
                .to_string()
                .contains("PATH is empty")
        );

        assert_eq!(locate_program("b/tool", tmp.path(), None).unwrap(), found);
        let error = locate_program("a/tool", tmp.path(), None).unwrap_err();
        assert!(error.to_string().ends_with("a/tool' is not executable"), "{error}");
        let error = locate_program("/nonexistent/x", tmp.path(), None).unwrap_err();
        assert!(error.to_string().ends_with("does not exist"), "{error}");
        let error = locate_program("./a", tmp.path(), None).unwrap_err();
        assert!(error.to_string().ends_with("is not a regular file"), "{error}");
    }
}
