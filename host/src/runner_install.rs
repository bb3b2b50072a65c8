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
//! this user's, not writable by others, with exactly the embedded content. Anything else is
//! written again (atomically: a temporary file renamed into place, so a concurrent launch sees
//! the old file or the whole new one).
//!
//! Comparing the content costs a read of the whole binary, so a copy found equal gets a stamp
//! beside it (`.<name>.checked`) recording its identity (device, inode, size, mtime, ctime), as
//! the component cache does; while the copy keeps that identity it is not read again. Any write
//! to the copy or its replacement changes the identity (ctime cannot be set back, and a stamp is
//! only written for a copy whose last change is older than the coarse clock of file times). The
//! stamp lives in the same private directory as the copy: it catches a damaged or replaced
//! copy, but not someone running as this user who replaces the copy and forges the stamp to
//! match — such a user could as well replace the `sublaunch` binary itself.

use crate::engine::artifact_cache::{DEFAULT_SETTLE, Identity};
use std::fs::{self, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

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

/// Why the embedded runner could not be installed (or a copy found could not be trusted).
#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    /// A directory of the copy could not be made.
    #[error("Cannot create the directory {path}: {error}")]
    CreateDir {
        /// The directory.
        path: PathBuf,
        /// Why not.
        error: io::Error,
    },
    /// A binary could not be written.
    #[error("Cannot write {path}: {error}")]
    Write {
        /// The binary's path.
        path: PathBuf,
        /// Why not.
        error: io::Error,
    },
    /// A directory of the copy could not be inspected.
    #[error("Cannot read {path}: {error}")]
    Inspect {
        /// The directory.
        path: PathBuf,
        /// Why not.
        error: io::Error,
    },
    /// Something other than a directory is where one goes.
    #[error("{0} is not a directory; remove it.")]
    NotADirectory(PathBuf),
    /// The directory belongs to someone else.
    #[error("{path} belongs to uid {owner}, not to you (uid {uid}); remove it or set SUBLAUNCH_CACHE_DIR.")]
    NotYours {
        /// The directory.
        path: PathBuf,
        /// Its owner.
        owner: u32,
        /// This user.
        uid: u32,
    },
    /// Others can write the directory.
    #[error("{path} can be written by other users (mode {mode:o}); make it private (chmod 700).")]
    WritableByOthers {
        /// The directory.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
}

/// Returns the embedded shim's path under `cache` (the sublaunch cache directory), writing
/// the runner binaries there first when no trustworthy copy is present.
pub fn install_embedded_runner(cache: &Path) -> Result<PathBuf, InstallError> {
    install_runner(cache, DEFAULT_SETTLE)
}

/// [`install_embedded_runner`], stamping copies whose last change is at least `settle` old.
fn install_runner(cache: &Path, settle: Duration) -> Result<PathBuf, InstallError> {
    let create_dir = |path: &Path, error: io::Error| InstallError::CreateDir {
        path: path.to_owned(),
        error,
    };
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
            .map_err(|e| create_dir(dir, e))?;
        private_dir(dir)?;
    }
    let dir = runners.join(version_dir_name());
    match fs::DirBuilder::new().mode(0o700).create(&dir) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(create_dir(&dir, e)),
    }
    private_dir(&dir)?;
    for binary in [&VALIDATOR, &SHIM] {
        let path = dir.join(binary.name);
        if !usable_copy(&dir, binary, settle) {
            write_executable(&dir, binary).map_err(|error| InstallError::Write { path, error })?;
        }
    }
    Ok(dir.join(SHIM.name))
}

/// A directory of this user's, not a symlink, that nobody else can write.
fn private_dir(dir: &Path) -> Result<(), InstallError> {
    let meta = fs::symlink_metadata(dir).map_err(|error| InstallError::Inspect {
        path: dir.to_owned(),
        error,
    })?;
    let uid = rustix::process::geteuid().as_raw();
    if !meta.file_type().is_dir() {
        return Err(InstallError::NotADirectory(dir.to_owned()));
    }
    if meta.uid() != uid {
        return Err(InstallError::NotYours {
            path: dir.to_owned(),
            owner: meta.uid(),
            uid,
        });
    }
    if meta.mode() & 0o022 != 0 {
        return Err(InstallError::WritableByOthers {
            path: dir.to_owned(),
            mode: meta.mode() & 0o777,
        });
    }
    Ok(())
}

/// Whether `dir`'s copy of `binary` is one to run: a regular file of this user's, not
/// writable by others, executable, with the embedded content (compared, or stamped as compared
/// while it kept its identity).
fn usable_copy(dir: &Path, binary: &Embedded, settle: Duration) -> bool {
    let path = dir.join(binary.name);
    let Ok(mut file) = OpenOptions::new().read(true).custom_flags(nofollow()).open(&path) else {
        return false;
    };
    // The opened file's own metadata: what is compared below is what was judged here.
    let Ok(stat) = rustix::fs::fstat(&file) else {
        return false;
    };
    let private = rustix::fs::FileType::from_raw_mode(stat.st_mode) == rustix::fs::FileType::RegularFile
        && stat.st_uid == rustix::process::geteuid().as_raw()
        && stat.st_mode & 0o022 == 0
        && stat.st_mode & 0o100 != 0
        && stat.st_size as u64 == binary.bytes.len() as u64;
    if !private {
        return false;
    }
    let identity = Identity::of(&stat);
    let stamp = dir.join(format!(".{}.checked", binary.name));
    if read_stamp(&stamp) == Some(identity) {
        return true;
    }
    if !same_content(&mut file, binary.bytes) {
        let _ = fs::remove_file(&stamp);
        return false;
    }
    if identity.settled(settle) {
        // Only an optimisation: without a stamp the copy is compared again next time.
        let _ = write_stamp(dir, &stamp, identity);
    }
    true
}

/// `O_NOFOLLOW`, for [`OpenOptionsExt::custom_flags`] (the standard library adds `O_CLOEXEC`).
fn nofollow() -> i32 {
    i32::try_from(rustix::fs::OFlags::NOFOLLOW.bits()).unwrap_or(0)
}

/// Whether `file` holds exactly `expected`.
fn same_content(file: &mut fs::File, expected: &[u8]) -> bool {
    let mut buffer = vec![0u8; 256 * 1024];
    let mut rest = expected;
    loop {
        match file.read(&mut buffer) {
            Ok(0) => return rest.is_empty(),
            Ok(n) => match rest.split_at_checked(n) {
                Some((head, tail)) if head == &buffer[..n] => rest = tail,
                _ => return false,
            },
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return false,
        }
    }
}

/// The identity a stamp records, when it is a small private file of ours that parses.
fn read_stamp(path: &Path) -> Option<Identity> {
    let file = OpenOptions::new().read(true).custom_flags(nofollow()).open(path).ok()?;
    let meta = file.metadata().ok()?;
    let private = meta.file_type().is_file()
        && meta.uid() == rustix::process::geteuid().as_raw()
        && meta.mode() & 0o022 == 0
        && meta.len() < 256;
    private.then_some(())?;
    let mut line = String::new();
    file.take(256).read_to_string(&mut line).ok()?;
    Identity::parse(&line)
}

/// Writes the stamp atomically (a temporary file renamed over it).
fn write_stamp(dir: &Path, stamp: &Path, identity: Identity) -> io::Result<()> {
    let temp = dir.join(format!(".stamp.{}.tmp", std::process::id()));
    let written = (|| {
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&temp)?;
        file.write_all(identity.to_line().as_bytes())?;
        fs::rename(&temp, stamp)
    })();
    if written.is_err() {
        let _ = fs::remove_file(&temp);
    }
    written
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

    /// A shell script of exactly `size` bytes.
    fn script_of_size(size: usize) -> Vec<u8> {
        let mut script = b"#!/bin/sh\nexit 3\n".to_vec();
        script.resize(size, b'#');
        script
    }

    #[test]
    fn a_same_size_replacement_is_written_over_stamp_or_not() {
        let tmp = tempfile::tempdir().unwrap();
        let cache = tmp.path().join("cache");
        let shim = install_runner(&cache, Duration::ZERO).unwrap();
        let stamp = shim.with_file_name(".sublaunch-shim.checked");
        assert!(!stamp.exists(), "a copy just written is not stamped");
        // The next use compares the copy and, its last change being old enough, stamps it.
        install_runner(&cache, Duration::ZERO).unwrap();
        assert!(stamp.exists());
        let inode = fs::metadata(&shim).unwrap().ino();
        install_runner(&cache, Duration::ZERO).unwrap();
        assert_eq!(
            fs::metadata(&shim).unwrap().ino(),
            inode,
            "a stamped copy is left alone"
        );

        // Replaced by a script of the same size (a new file renamed over it): the stamp names
        // another file, the content differs, the copy is written again.
        let planted = shim.with_file_name("planted");
        fs::write(&planted, script_of_size(SHIM.bytes.len())).unwrap();
        fs::set_permissions(&planted, fs::Permissions::from_mode(0o700)).unwrap();
        fs::rename(&planted, &shim).unwrap();
        install_runner(&cache, Duration::ZERO).unwrap();
        assert!(
            fs::read(&shim).unwrap() == SHIM.bytes,
            "the planted script was replaced"
        );

        // Overwritten in place with the same size, with the default settle time (no stamp for a
        // change this recent): compared, and written again.
        fs::write(&shim, script_of_size(SHIM.bytes.len())).unwrap();
        install_embedded_runner(&cache).unwrap();
        assert!(
            fs::read(&shim).unwrap() == SHIM.bytes,
            "the overwritten copy was replaced"
        );
    }

    #[test]
    fn a_cache_others_can_write_is_refused_and_left_alone() {
        let tmp = tempfile::tempdir().unwrap();
        let cache = tmp.path().join("cache");
        fs::create_dir(&cache).unwrap();
        fs::set_permissions(&cache, fs::Permissions::from_mode(0o777)).unwrap();
        let error = install_embedded_runner(&cache).unwrap_err().to_string();
        assert!(error.contains("can be written by other users"), "{error}");
        assert_eq!(fs::metadata(&cache).unwrap().mode() & 0o777, 0o777, "never chmodded");
        assert!(!cache.join("runners").exists());
    }
}
