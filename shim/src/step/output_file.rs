//! The copy of a step's answer in the file the step named (`output`), written once the step
//! completed: atomically (a temporary file beside it, then a rename), with the agents' umask
//! so that it looks like a file the user wrote; a file that was there keeps its mode, and is
//! replaced whole or not at all.
//!
//! The host resolved the file's directory before any agent ran, to a path of real directories
//! (symlinks resolved). An agent could since have swapped one of them for a symlink to send
//! its answer somewhere else, so the directory is opened once, one component at a time from
//! `/` without following a symlink, and the temporary file, its mode and the rename all go
//! through that one handle. A directory that is a symlink now fails the write, saying so: the
//! answer lands at the path the result names, or nowhere.

use rustix::fd::OwnedFd;
use rustix::fs::{self, AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;
use std::ffi::OsStr;
use std::io::Write;
use std::path::{Component, Path, PathBuf};

/// How the directory and each of its parents are opened: only to reach names beneath them
/// (`O_PATH` needs no read permission, as a path lookup needs none), never through a symlink.
const DIR_FLAGS: OFlags = OFlags::PATH
    .union(OFlags::DIRECTORY)
    .union(OFlags::NOFOLLOW)
    .union(OFlags::CLOEXEC);

/// Writes `text` to `path` (an absolute path whose directory the host checked and resolved)
/// with the mode a file made under `umask` gets (`None`: 022).
pub fn write(path: &str, text: &str, umask: Option<u32>) -> Result<(), String> {
    // Read after "its answer": "The step completed, but its answer cannot be written to …".
    let fail = |why: String| format!("cannot be written to {path}: {why}");
    let target = Path::new(path);
    let (Some(dir), Some(name)) = (target.parent(), target.file_name()) else {
        return Err(fail("it names no file".into()));
    };
    let dir = open_dir(dir).map_err(fail)?;
    // A file that is there keeps its mode; a new one gets the agents' umask, not the shim's.
    let mode = match fs::statat(&dir, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(stat) if FileType::from_raw_mode(stat.st_mode) == FileType::RegularFile => stat.st_mode & 0o777,
        _ => 0o666 & !umask.unwrap_or(0o022),
    };
    let mut temp = OsStr::new(".").to_owned();
    temp.push(name);
    temp.push(format!(".sublaunch-{}.tmp", std::process::id()));
    let written = (|| -> Result<(), std::io::Error> {
        let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let fd = fs::openat(&dir, temp.as_os_str(), flags, Mode::from_raw_mode(mode))?;
        // The shim's own umask (077) narrowed the mode given at creation.
        fs::fchmod(&fd, Mode::from_raw_mode(mode))?;
        let mut file = std::fs::File::from(fd);
        file.write_all(text.as_bytes())?;
        file.sync_all()?;
        fs::renameat(&dir, temp.as_os_str(), &dir, name)?;
        Ok(())
    })();
    if let Err(e) = written {
        let _ = fs::unlinkat(&dir, temp.as_os_str(), AtFlags::empty());
        return Err(fail(e.to_string()));
    }
    Ok(())
}

/// `dir`, opened from `/` one component at a time, none of them a symlink.
fn open_dir(dir: &Path) -> Result<OwnedFd, String> {
    let mut handle = fs::open("/", DIR_FLAGS, Mode::empty()).map_err(|e| format!("cannot open /: {e}"))?;
    let mut reached = PathBuf::from("/");
    for component in dir.components() {
        let name = match component {
            Component::RootDir => continue,
            Component::Normal(name) => name,
            // The host passes a resolved absolute path; anything else is not one.
            _ => return Err(format!("{} is not a resolved absolute directory", dir.display())),
        };
        reached.push(name);
        handle = match fs::openat(&handle, name, DIR_FLAGS, Mode::empty()) {
            Ok(next) => next,
            Err(error) => return Err(why_not_a_directory(&handle, name, &reached, error)),
        };
    }
    Ok(handle)
}

/// What stopped the walk at `name` (reached as `path`) in `parent`.
fn why_not_a_directory(parent: &OwnedFd, name: &OsStr, path: &Path, error: Errno) -> String {
    let symlink = fs::statat(parent, name, AtFlags::SYMLINK_NOFOLLOW)
        .is_ok_and(|stat| FileType::from_raw_mode(stat.st_mode) == FileType::Symlink);
    if symlink {
        format!(
            "{} is a symbolic link now; the answer is written only into the directory checked at launch, never through a link",
            path.display()
        )
    } else {
        format!("{}: {}", path.display(), std::io::Error::from(error))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    /// A temporary directory, and its path with symlinks resolved (as the host passes it).
    fn scratch() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = std::fs::canonicalize(dir.path()).unwrap();
        (dir, path)
    }

    #[test]
    fn the_answer_replaces_the_file_whole_and_leaves_no_temporary_file() {
        let (_keep, dir) = scratch();
        let path = dir.join("answer.md");
        std::fs::write(&path, "old").unwrap();
        write(path.to_str().unwrap(), "new answer\n", Some(0o022)).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new answer\n");
        let names: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 1, "{names:?}");
        let missing = dir.join("gone/answer.md");
        let error = write(missing.to_str().unwrap(), "x", None).unwrap_err();
        assert!(
            error.starts_with(&format!("cannot be written to {}: ", missing.display())),
            "{error}"
        );
    }

    #[test]
    fn a_directory_swapped_for_a_symlink_gets_nothing_and_nothing_is_written_elsewhere() {
        let (_keep, tmp) = scratch();
        let elsewhere = tmp.join("elsewhere");
        std::fs::create_dir(&elsewhere).unwrap();
        let out = tmp.join("out");
        std::os::unix::fs::symlink(&elsewhere, &out).unwrap();
        let path = out.join("answer.md");
        let error = write(path.to_str().unwrap(), "payload", Some(0o022)).unwrap_err();
        assert_eq!(
            error,
            format!(
                "cannot be written to {}: {} is a symbolic link now; the answer is written only into the directory checked at launch, never through a link",
                path.display(),
                out.display()
            )
        );
        assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
    }

    #[test]
    fn a_new_file_gets_the_agents_umask_and_an_existing_one_keeps_its_mode() {
        let (_keep, dir) = scratch();
        let mode = |path: &Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
        for (umask, expected) in [(0o022, 0o644), (0o027, 0o640), (0o002, 0o664)] {
            let new = dir.join(format!("new-{umask:o}.md"));
            write(new.to_str().unwrap(), "answer", Some(umask)).unwrap();
            assert_eq!(mode(&new), expected, "umask {umask:o}");
        }
        let existing = dir.join("existing.md");
        std::fs::write(&existing, "old").unwrap();
        std::fs::set_permissions(&existing, std::fs::Permissions::from_mode(0o604)).unwrap();
        write(existing.to_str().unwrap(), "answer", Some(0o077)).unwrap();
        assert_eq!(mode(&existing), 0o604);
        assert_eq!(std::fs::read_to_string(&existing).unwrap(), "answer");
    }
}
