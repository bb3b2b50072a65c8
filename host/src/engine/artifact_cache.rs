//! The precompiled-component cache.
//!
//! Compiling the planner takes 50–400 ms; loading a precompiled artifact takes under 1 ms.
//! Artifacts live in a private directory (0700, files 0600), one file per key: the
//! component's hash, the wasmtime version and the engine's compatibility hash. Nothing there
//! is trusted: an entry is used only when it is a regular file owned by this user, not
//! writable by others, and its content hash (BLAKE3, in the file's trailer) matches. A
//! missing, corrupt, truncated, foreign or wrongly owned entry is replaced by a fresh
//! compilation, written atomically; if the directory itself cannot be trusted or written,
//! the component is compiled in memory and nothing is cached.
//!
//! Hashing the entry is most of a warm load's time, so an entry whose hash matched gets a
//! [`CHECKED_SUFFIX`] stamp beside it recording the file's identity (device, inode, size,
//! mtime and ctime). While the entry still has that identity it has not been written since it
//! was hashed, and the hash is skipped. ctime cannot be set back by a user, and the stamp is
//! only written for an entry whose last change is older than [`ArtifactCache::settle`], so a
//! write in the same tick of the filesystem's clock as the stamped ctime cannot go unseen.

use anyhow::anyhow;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::io::Read;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use sublaunch_protocol::files::atomic::{Dir, Durability};
use wasmtime::Engine;
use wasmtime::component::Component;

/// An entry is wasmtime's artifact followed by this trailer: the magic and the artifact's
/// BLAKE3 hash. At the end, so that wasmtime can map the entry's file as it is (the artifact's
/// code runs from the page cache) instead of copying it into fresh memory.
const MAGIC: &[u8; 16] = b"sublaunch-cwasm2";
const TRAILER_LEN: usize = MAGIC.len() + 32;
/// The size of the reads that hash an entry (one buffer, reused).
const HASH_CHUNK: usize = 64 * 1024;
/// Entries larger than this are not read (a planner artifact is a few MiB).
const MAX_ENTRY_BYTES: u64 = 256 * 1024 * 1024;
/// The stamp of an entry whose hash matched is its name with this suffix.
pub const CHECKED_SUFFIX: &str = ".checked";
/// How old an entry's last change must be before its check is stamped (by default): well
/// above the coarse clock that file timestamps are taken from.
pub const DEFAULT_SETTLE: std::time::Duration = std::time::Duration::from_secs(2);

/// How a component was obtained.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CacheOutcome {
    /// Loaded from a valid cache entry.
    Hit,
    /// Compiled, and the artifact stored for next time.
    Stored,
    /// Compiled; the entry could not be stored (the reason is kept in [`Loaded::note`]).
    Uncached,
}

/// How a hit's entry was found intact.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EntryCheck {
    /// Its content hash was computed and matched.
    Hashed,
    /// Its stamp showed it unchanged since its hash last matched.
    Stamped,
}

/// A component and how it was obtained.
pub struct Loaded {
    /// The ready component.
    pub component: Component,
    /// Hit, stored, or uncached.
    pub outcome: CacheOutcome,
    /// For a hit, how the entry was checked.
    pub check: Option<EntryCheck>,
    /// Why a present entry was rejected or why storing failed, for diagnostics.
    pub note: Option<String>,
}

/// A cache directory for precompiled components.
#[derive(Clone, Debug)]
pub struct ArtifactCache {
    dir: PathBuf,
    settle: std::time::Duration,
}

impl ArtifactCache {
    /// A cache in `dir` (created on first store).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self {
            dir: dir.into(),
            settle: DEFAULT_SETTLE,
        }
    }

    /// How old an entry's last change must be for a matching hash to be stamped
    /// ([`DEFAULT_SETTLE`] unless set).
    #[must_use]
    pub fn settle(mut self, settle: std::time::Duration) -> Self {
        self.settle = settle;
        self
    }

    /// The cache directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The file name of the entry for this component and engine.
    pub fn entry_name(engine: &Engine, component_sha256: &str) -> String {
        let mut hasher = DefaultHasher::new();
        engine.precompile_compatibility_hash().hash(&mut hasher);
        let short = component_sha256.get(..16).unwrap_or(component_sha256);
        format!(
            "planner-{short}-wasmtime{}-{:016x}.cwasm",
            env!("SUBLAUNCH_WASMTIME_VERSION"),
            hasher.finish()
        )
    }

    /// Loads the component from its cache entry, or compiles it and stores the entry.
    pub fn load_or_compile(&self, engine: &Engine, wasm: &[u8], component_sha256: &str) -> anyhow::Result<Loaded> {
        let name = Self::entry_name(engine, component_sha256);
        let rejected = match self.load(engine, &name) {
            Ok((component, check)) => {
                return Ok(Loaded {
                    component,
                    outcome: CacheOutcome::Hit,
                    check: Some(check),
                    note: None,
                });
            }
            Err(reason) => reason,
        };
        let component = Component::new(engine, wasm).map_err(|e| anyhow!("compiling the planner component: {e:?}"))?;
        let (outcome, store_note) = match self.store(&component, &name) {
            Ok(()) => (CacheOutcome::Stored, None),
            Err(e) => (CacheOutcome::Uncached, Some(format!("not cached: {e}"))),
        };
        let note = match (rejected, store_note) {
            (Rejected::Missing, note) => note,
            (Rejected::Invalid(reason), None) => Some(format!("replaced cache entry: {reason}")),
            (Rejected::Invalid(reason), Some(note)) => Some(format!("{reason}; {note}")),
        };
        Ok(Loaded {
            component,
            outcome,
            check: None,
            note,
        })
    }

    fn load(&self, engine: &Engine, name: &str) -> Result<(Component, EntryCheck), Rejected> {
        trusted_dir(&self.dir).map_err(|reason| match reason {
            DirProblem::Missing => Rejected::Missing,
            DirProblem::Untrusted(reason) => Rejected::Invalid(reason),
        })?;
        let dir = Dir::open(&self.dir).map_err(|e| Rejected::Invalid(e.to_string()))?;
        let (mut file, stat) = match dir.open_file(name) {
            Ok(Some(found)) => found,
            Ok(None) => return Err(Rejected::Missing),
            Err(e) => return Err(Rejected::Invalid(e.to_string())),
        };
        if let Some(reason) = not_private(&stat) {
            return Err(Rejected::Invalid(format!("{name} {reason}")));
        }
        if stat.st_size as u64 > MAX_ENTRY_BYTES {
            return Err(Rejected::Invalid(format!("{name} is too large")));
        }
        let payload_len = usize::try_from(stat.st_size)
            .ok()
            .and_then(|len| len.checked_sub(TRAILER_LEN))
            .ok_or_else(|| Rejected::Invalid(format!("{name} is corrupt or truncated")))?;
        let identity = Identity::of(&stat);
        let stamp = format!("{name}{CHECKED_SUFFIX}");
        let check = if read_stamp(&dir, &stamp) == Some(identity) {
            EntryCheck::Stamped
        } else if verified(&mut file, payload_len).map_err(|e| Rejected::Invalid(e.to_string()))? {
            if identity.settled(self.settle) {
                // Only an optimisation: an entry without a stamp is hashed again next time.
                let _ = dir.write(&stamp, identity.to_line().as_bytes(), Durability::Atomic);
            }
            EntryCheck::Hashed
        } else {
            let _ = dir.remove(&stamp);
            return Err(Rejected::Invalid(format!("{name} is corrupt or truncated")));
        };
        let rejected = |e: wasmtime::Error| Rejected::Invalid(format!("{name} was rejected by wasmtime: {e}"));
        // `/proc/self/fd` reopens the inode just checked, whatever its name points to now.
        let reopened = format!("/proc/self/fd/{}", file.as_raw_fd());
        if std::fs::metadata(&reopened).is_ok() {
            // SAFETY: the artifact is what `Component::serialize` produced for this engine
            // configuration: the entry is ours (owner and mode checked), it is keyed by the
            // component hash and the engine's compatibility hash, and its content hash matches
            // (now, or when it was stamped with the identity it still has).
            return unsafe { Component::deserialize_file(engine, &reopened) }
                .map(|component| (component, check))
                .map_err(rejected);
        }
        // Without /proc: the artifact is read and copied in.
        let mut bytes = Vec::with_capacity(payload_len);
        std::io::Seek::rewind(&mut file).map_err(|e| Rejected::Invalid(e.to_string()))?;
        (&mut file)
            .take(payload_len as u64)
            .read_to_end(&mut bytes)
            .map_err(|e| Rejected::Invalid(e.to_string()))?;
        // SAFETY: as above, for the same bytes.
        unsafe { Component::deserialize(engine, &bytes) }
            .map(|component| (component, check))
            .map_err(rejected)
    }

    fn store(&self, component: &Component, name: &str) -> anyhow::Result<()> {
        let dir = Dir::create_private(&self.dir)?;
        trusted_dir(&self.dir).map_err(|problem| match problem {
            DirProblem::Missing => anyhow!("{} vanished", self.dir.display()),
            DirProblem::Untrusted(reason) => anyhow!(reason),
        })?;
        let payload = component
            .serialize()
            .map_err(|e| anyhow!("serialising the component: {e:?}"))?;
        let mut bytes = payload.to_vec();
        bytes.extend_from_slice(MAGIC);
        bytes.extend_from_slice(blake3::hash(&payload).as_bytes());
        dir.write(name, &bytes, Durability::Atomic)?;
        Ok(())
    }
}

enum Rejected {
    Missing,
    Invalid(String),
}

/// What identifies one version of an entry's file: any write to it, or its replacement,
/// changes at least one of these (ctime is set by the kernel on every change).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Identity {
    dev: u64,
    ino: u64,
    size: i64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

impl Identity {
    #[allow(clippy::useless_conversion, clippy::unnecessary_cast)] // the field types differ between platforms
    pub(crate) fn of(stat: &rustix::fs::Stat) -> Self {
        Self {
            dev: stat.st_dev as u64,
            ino: stat.st_ino as u64,
            size: stat.st_size as i64,
            mtime: (stat.st_mtime as i64, stat.st_mtime_nsec as i64),
            ctime: (stat.st_ctime as i64, stat.st_ctime_nsec as i64),
        }
    }

    pub(crate) fn to_line(self) -> String {
        format!(
            "v1 {} {} {} {} {} {} {}\n",
            self.dev, self.ino, self.size, self.mtime.0, self.mtime.1, self.ctime.0, self.ctime.1
        )
    }

    pub(crate) fn parse(line: &str) -> Option<Self> {
        let mut fields = line.trim_end().split(' ');
        if fields.next()? != "v1" {
            return None;
        }
        let mut next = || fields.next()?.parse::<i64>().ok();
        let identity = Self {
            dev: u64::try_from(next()?).ok()?,
            ino: u64::try_from(next()?).ok()?,
            size: next()?,
            mtime: (next()?, next()?),
            ctime: (next()?, next()?),
        };
        fields.next().is_none().then_some(identity)
    }

    /// Whether the last change is at least `settle` old by the wall clock.
    pub(crate) fn settled(self, settle: std::time::Duration) -> bool {
        let changed = std::time::UNIX_EPOCH
            + std::time::Duration::new(
                u64::try_from(self.ctime.0).unwrap_or(u64::MAX),
                u32::try_from(self.ctime.1).unwrap_or(0),
            );
        std::time::SystemTime::now()
            .duration_since(changed)
            .is_ok_and(|age| age >= settle)
    }
}

/// Why a cache file is not to be trusted: not a regular file, another user's, or writable by
/// others; `None` for a private file of ours.
fn not_private(stat: &rustix::fs::Stat) -> Option<String> {
    let uid = rustix::process::getuid().as_raw();
    if rustix::fs::FileType::from_raw_mode(stat.st_mode) != rustix::fs::FileType::RegularFile {
        return Some("is not a regular file".to_owned());
    }
    if stat.st_uid != uid {
        return Some(format!("is owned by uid {}, not {uid}", stat.st_uid));
    }
    if stat.st_mode & 0o022 != 0 {
        return Some(format!("is writable by others (mode {:o})", stat.st_mode & 0o777));
    }
    None
}

/// The identity recorded in the stamp `name`, if it is a private file of ours that parses.
fn read_stamp(dir: &Dir, name: &str) -> Option<Identity> {
    let (mut file, stat) = dir.open_file(name).ok()??;
    (not_private(&stat).is_none() && stat.st_size < 256).then_some(())?;
    let mut line = String::new();
    file.read_to_string(&mut line).ok()?;
    Identity::parse(&line)
}

enum DirProblem {
    Missing,
    Untrusted(String),
}

/// The cache directory must be a real directory (not a symlink) owned by this user and
/// private; a directory of ours with looser permissions is tightened to 0700.
fn trusted_dir(dir: &Path) -> Result<(), DirProblem> {
    let meta = match std::fs::symlink_metadata(dir) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(DirProblem::Missing),
        Err(e) => return Err(DirProblem::Untrusted(format!("{}: {e}", dir.display()))),
    };
    if !meta.file_type().is_dir() {
        return Err(DirProblem::Untrusted(format!("{} is not a directory", dir.display())));
    }
    let uid = rustix::process::getuid().as_raw();
    if meta.uid() != uid {
        return Err(DirProblem::Untrusted(format!(
            "{} is owned by uid {}, not {uid}",
            dir.display(),
            meta.uid()
        )));
    }
    if meta.mode() & 0o077 != 0 {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
            .map_err(|e| DirProblem::Untrusted(format!("{}: cannot make it private: {e}", dir.display())))?;
    }
    Ok(())
}

/// Whether the entry open in `file` is `payload_len` bytes of artifact followed by an intact
/// trailer whose hash matches them. Reads the file once, in chunks, into one buffer.
fn verified(file: &mut std::fs::File, payload_len: usize) -> std::io::Result<bool> {
    let mut hasher = blake3::Hasher::new();
    let mut chunk = vec![0_u8; HASH_CHUNK];
    let mut left = payload_len;
    while left > 0 {
        let want = left.min(HASH_CHUNK);
        match file.read_exact(&mut chunk[..want]) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(false),
            Err(e) => return Err(e),
        }
        hasher.update(&chunk[..want]);
        left -= want;
    }
    let mut trailer = [0_u8; TRAILER_LEN];
    match file.read_exact(&mut trailer) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(false),
        Err(e) => return Err(e),
    }
    let (magic, hash) = trailer.split_at(MAGIC.len());
    Ok(magic == MAGIC && hasher.finalize().as_bytes() == hash)
}
