//! Append-only logs of checksummed lines, as the usage ledger (U1) and the event stream (D4)
//! keep them: `<crc32 as 8 hex digits> <JSON>\n`, each line appended with one `write` to a file
//! opened `O_APPEND`. A line cut short or zeroed by a crash fails its checksum and is skipped;
//! an appender that finds the file not ending in a newline starts its line with one, so a torn
//! line never swallows the next.

use serde::Serialize;
use serde::de::DeserializeOwned;
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::Path;

/// One line: checksum, space, the JSON of `value`, newline.
pub fn encode<T: Serialize>(value: &T) -> Vec<u8> {
    let json = serde_json::to_vec(value).unwrap_or_default();
    let mut line = format!("{:08x} ", crc32fast::hash(&json)).into_bytes();
    line.extend_from_slice(&json);
    line.push(b'\n');
    line
}

/// The value of one line (without its newline), when its checksum and JSON are right.
pub fn decode<T: DeserializeOwned>(line: &[u8]) -> Option<T> {
    let (sum, json) = (line.get(..8)?, line.get(9..)?);
    if line.get(8) != Some(&b' ') {
        return None;
    }
    let sum = u32::from_str_radix(std::str::from_utf8(sum).ok()?, 16).ok()?;
    if crc32fast::hash(json) != sum {
        return None;
    }
    serde_json::from_slice(json).ok()
}

/// Whether `file` is empty or ends in a newline (an appender that finds otherwise starts its
/// line with one).
pub fn ends_with_newline(file: &File) -> io::Result<bool> {
    let len = file.metadata()?.len();
    if len == 0 {
        return Ok(true);
    }
    let mut last = [0u8; 1];
    file.read_exact_at(&mut last, len - 1)?;
    Ok(last[0] == b'\n')
}

/// Creates the log's directory `dir` (0700) when missing; refuses a symbolic link or a file
/// there.
pub fn ensure_private_dir(dir: &Path) -> io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => return Ok(()),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    if std::fs::symlink_metadata(dir)?.is_dir() {
        Ok(())
    } else {
        Err(io::Error::other(format!("{} is not a directory", dir.display())))
    }
}
