//! The runner binaries (`sublaunch-shim` and `sublaunch-validate`) embedded in the host.
//!
//! A packaged sublaunch ships the runner next to the `sublaunch` binary. A binary that came
//! alone — `cargo run -p sublaunch` on a fresh clone (cargo builds only the package's own
//! binary) or `cargo install` — carries a copy of both, built by `host/build.rs` with the same
//! profile, and writes it on first use into `<cache>/runners/<hash>/`: a directory of this
//! user's (0700) with the two executables (0700), named by the shim's content hash so a copy
//! never goes stale when sublaunch is rebuilt. The validator sits beside the shim because the
//! shim looks for it there.
//!
//! Nothing found there is trusted: a copy is used only when the directory is a real
//! directory of this user's that nobody else can write, and each file is a regular file of
//! this user's, not writable by others, of the embedded size. Anything else is written again
//! (atomically: a temporary file renamed into place, so a concurrent launch sees the old file
//! or the whole new one).

use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// One embedded executable.
struct Embedded {
    name: &'static str,
    bytes: &'static [u8],
}

const SHIM: Embedded = Embedded {
    name: "sublaunch-shim",
    bytes: include_bytes!(env!("SUBLAUNCH_EMBEDDED_SHIM")),
};

const VALIDATOR: Embedded = Embedded {
    name: "sublaunch-validate",
    bytes: include_bytes!(env!("SUBLAUNCH_EMBEDDED_VALIDATOR")),
};

/// The directory name of this build's copy: the first 16 hex digits of the shim's SHA-256.
fn version_dir_name() -> &'static str {
    &env!("SUBLAUNCH_EMBEDDED_SHIM_SHA256")[..16]
}

/// Returns the embedded shim's path under `cache` (the sublaunch cache directory), writing
/// the runner binaries there first when no trustworthy copy is present.
pub fn install_embedded_runner(cache: &Path) -> Result<PathBuf, String> {
    let describe = |what: &str, path: &Path, e: io::Error| format!("Cannot {what} {}: {e}", path.display());
    let runners = cache.join("runners");
    for dir in [cache, &runners] {
        fs::DirBuilder::new()
            .mode(0o700)
            .create(dir)
            .or_else(|e| {
                if e.kind() == io::ErrorKind::AlreadyExists {
                    Ok(())
                } else {
                    Err(e)
                }
            })
            .map_err(|e| describe("create the directory", dir, e))?;
        private_dir(dir)?;
    }
    let dir = runners.join(version_dir_name());
    match fs::DirBuilder::new().mode(0o700).create(&dir) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(describe("create the directory", &dir, e)),
    }
    private_dir(&dir)?;
    for binary in [&VALIDATOR, &SHIM] {
        let path = dir.join(binary.name);
        if !usable_copy(&path, binary.bytes.len()) {
            write_executable(&dir, binary).map_err(|e| describe("write", &path, e))?;
        }
    }
    Ok(dir.join(SHIM.name))
}

/// A directory of this user's, not a symlink, that nobody else can write.
fn private_dir(dir: &Path) -> Result<(), String> {
    let meta = fs::symlink_metadata(dir).map_err(|e| format!("Cannot read {}: {e}", dir.display()))?;
    let uid = rustix::process::geteuid().as_raw();
    if !meta.file_type().is_dir() {
        return Err(format!("{} is not a directory; remove it.", dir.display()));
    }
    if meta.uid() != uid {
        return Err(format!(
            "{} belongs to uid {}, not to you (uid {uid}); remove it or set SUBLAUNCH_CACHE_DIR.",
            dir.display(),
            meta.uid()
        ));
    }
    if meta.mode() & 0o022 != 0 {
        return Err(format!(
            "{} can be written by other users (mode {:o}); make it private (chmod 700).",
            dir.display(),
            meta.mode() & 0o777
        ));
    }
    Ok(())
}

/// Whether `path` is a copy to run: a regular file of this user's, not writable by others,
/// executable, of the embedded size.
fn usable_copy(path: &Path, size: usize) -> bool {
    let Ok(meta) = fs::symlink_metadata(path) else {
        return false;
    };
    meta.file_type().is_file()
        && meta.uid() == rustix::process::geteuid().as_raw()
        && meta.mode() & 0o022 == 0
        && meta.mode() & 0o100 != 0
        && meta.len() == size as u64
}

/// Writes `binary` into `dir` durably under a temporary name, then renames it into place.
fn write_executable(dir: &Path, binary: &Embedded) -> io::Result<()> {
    let temp = dir.join(format!(".{}.{}.tmp", binary.name, std::process::id()));
    let written = (|| {
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o700)
            .open(&temp)?;
        file.write_all(binary.bytes)?;
        file.sync_all()?;
        fs::rename(&temp, dir.join(binary.name))?;
        fs::File::open(dir)?.sync_all()
    })();
    if written.is_err() {
        let _ = fs::remove_file(&temp);
    }
    written
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn the_runner_is_written_once_and_rewritten_when_tampered_with() {
        let tmp = tempfile::tempdir().unwrap();
        let cache = tmp.path().join("cache");
        let shim = install_embedded_runner(&cache).unwrap();
        assert_eq!(fs::read(&shim).unwrap(), SHIM.bytes);
        let validator = shim.with_file_name(VALIDATOR.name);
        assert_eq!(fs::read(&validator).unwrap(), VALIDATOR.bytes);
        for path in [&shim, &validator] {
            assert_eq!(fs::metadata(path).unwrap().mode() & 0o777, 0o700);
        }
        assert_eq!(fs::metadata(shim.parent().unwrap()).unwrap().mode() & 0o777, 0o700);

        // A second call leaves a good copy alone (same inode).
        let inode = fs::metadata(&shim).unwrap().ino();
        assert_eq!(install_embedded_runner(&cache).unwrap(), shim);
        assert_eq!(fs::metadata(&shim).unwrap().ino(), inode);

        // Truncated, or made writable by others: replaced.
        fs::write(&shim, b"#!/bin/sh\n").unwrap();
        fs::set_permissions(&validator, fs::Permissions::from_mode(0o777)).unwrap();
        install_embedded_runner(&cache).unwrap();
        assert_eq!(fs::read(&shim).unwrap(), SHIM.bytes);
        assert_eq!(fs::metadata(&validator).unwrap().mode() & 0o777, 0o700);
    }

    #[test]
    fn a_cache_others_can_write_is_refused_and_left_alone() {
        let tmp = tempfile::tempdir().unwrap();
        let cache = tmp.path().join("cache");
        fs::create_dir(&cache).unwrap();
        fs::set_permissions(&cache, fs::Permissions::from_mode(0o777)).unwrap();
        let error = install_embedded_runner(&cache).unwrap_err();
        assert!(error.contains("can be written by other users"), "{error}");
        assert_eq!(fs::metadata(&cache).unwrap().mode() & 0o777, 0o777, "never chmodded");
        assert!(!cache.join("runners").exists());
    }
}
