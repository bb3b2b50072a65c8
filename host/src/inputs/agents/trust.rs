//! Whether an agent file or directory may define what runs as you.
//!
//! An agent definition names the program sublaunch starts, so a file anybody else could have
//! written is code they could run as you. A location or file is used only when it is owned
//! by you or by root and nobody else can write it (mode without group or other write bits);
//! symbolic links are followed, so what counts is the file or directory they lead to.

use std::fmt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// A directory or file left out of discovery because someone else could have written it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Untrusted {
    /// The directory or file.
    pub path: PathBuf,
    /// Who else could write it, and how to fix that.
    pub reason: String,
}

impl fmt::Display for Untrusted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ignored {}: {}", self.path.display(), self.reason)
    }
}

/// Checks `path` (following symlinks); `Ok(false)` when it does not exist.
pub(crate) fn check(path: &Path) -> Result<bool, Untrusted> {
    let meta = match std::fs::metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(e) => {
            return Err(Untrusted {
                path: path.to_owned(),
                reason: format!("cannot read it ({e})"),
            });
        }
    };
    let me = rustix::process::geteuid().as_raw();
    let untrusted = |reason: String| {
        Err(Untrusted {
            path: path.to_owned(),
            reason,
        })
    };
    if meta.uid() != me && meta.uid() != 0 {
        return untrusted(format!(
            "it belongs to uid {}, not to you (uid {me}) or root; agent files must be yours",
            meta.uid()
        ));
    }
    if meta.mode() & 0o022 != 0 {
        let who = if meta.mode() & 0o002 != 0 {
            "anyone"
        } else {
            "its group"
        };
        return untrusted(format!(
            "{who} can write it (mode {:o}); run `chmod go-w {}` if you trust it",
            meta.mode() & 0o7777,
            path.display()
        ));
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn writable_by_others_is_untrusted_and_missing_is_absent() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("a.md");
        assert_eq!(check(&path), Ok(false));
        std::fs::write(&path, "x").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert_eq!(check(&path), Ok(true));
        for (mode, who) in [(0o664, "its group"), (0o646, "anyone")] {
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
            let error = check(&path).unwrap_err();
            assert!(
                error.reason.starts_with(who) && error.reason.contains("chmod go-w"),
                "{error}"
            );
        }
    }
}
