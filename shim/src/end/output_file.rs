//! The copy of a step's answer in the file the step named (`output`), written once the step
//! completed: atomically (a temporary file beside it, then a rename), with the agents' umask
//! so that it looks like a file the user wrote. A file that was there is replaced whole or
//! not at all.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// Writes `text` to `path` (an absolute path whose directory the host checked).
pub fn write(path: &str, text: &str, umask: Option<u32>) -> Result<(), String> {
    let target = Path::new(path);
    let dir = target.parent().ok_or_else(|| format!("{path} has no directory"))?;
    let name = target.file_name().ok_or_else(|| format!("{path} names no file"))?;
    let temp = dir.join(format!(
        ".{}.sublaunch-{}.tmp",
        name.to_string_lossy(),
        std::process::id()
    ));
    let mode = 0o666 & !umask.unwrap_or(0o022);
    let written = (|| {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
            .open(&temp)?;
        file.write_all(text.as_bytes())?;
        file.sync_all()?;
        std::fs::rename(&temp, target)
    })();
    if let Err(e) = written {
        let _ = std::fs::remove_file(&temp);
        return Err(format!("cannot write the answer to {path}: {e}"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_answer_replaces_the_file_whole_and_leaves_no_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("answer.md");
        std::fs::write(&path, "old").unwrap();
        write(path.to_str().unwrap(), "new answer\n", Some(0o022)).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new answer\n");
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 1, "{names:?}");
        let missing = dir.path().join("gone/answer.md");
        let error = write(missing.to_str().unwrap(), "x", None).unwrap_err();
        assert!(
            error.starts_with(&format!("cannot write the answer to {}: ", missing.display())),
            "{error}"
        );
    }
}
