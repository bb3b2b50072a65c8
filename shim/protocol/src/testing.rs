//! Test doubles for the os (compiled for this crate's tests and with the `test-hooks`
//! feature, so host and shim tests can use them too).

use crate::os::files::{Files, RealFiles};
use rustix::fd::{BorrowedFd, OwnedFd};
use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;
use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// The operations of [`Fs`], for scripting and counting.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Op {
    /// `openat`.
    Open,
    /// `write`.
    Write,
    /// `fsync`.
    Fsync,
    /// `renameat`.
    Rename,
    /// `unlinkat`.
    Unlink,
    /// `mkdirat`.
    Mkdir,
    /// `rmdir`.
    Rmdir,
    /// `futimens`.
    Touch,
}

type Hook = Arc<dyn Fn(Op, &Path) + Send + Sync>;

/// A call that decides what a power loss keeps, with absolute paths ([`ScriptedFs::durable`]).
#[derive(Clone, Debug, PartialEq, Eq)]
enum Journal {
    Fsync(PathBuf),
    Rename { from: PathBuf, to: PathBuf },
}

/// The path an open descriptor names (`/proc/self/fd`).
fn fd_path(fd: BorrowedFd<'_>) -> PathBuf {
    use rustix::fd::AsRawFd;
    std::fs::read_link(format!("/proc/self/fd/{}", fd.as_raw_fd())).unwrap_or_default()
}

/// A real filesystem whose calls can be counted, failed with queued errnos, limited to short
/// writes, or paused by a hook run before each call.
#[derive(Default)]
pub struct ScriptedFs {
    errors: Mutex<HashMap<Op, VecDeque<Errno>>>,
    calls: Mutex<HashMap<Op, usize>>,
    paths: Mutex<Vec<(Op, PathBuf)>>,
    hook: Mutex<Option<Hook>>,
    write_chunk: Mutex<Option<usize>>,
    journal: Mutex<Vec<Journal>>,
}

impl fmt::Debug for ScriptedFs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScriptedFs")
            .field("calls", &self.calls)
            .finish_non_exhaustive()
    }
}

impl ScriptedFs {
    /// A fake that behaves like the real filesystem until scripted.
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// The next calls of `op` fail with `errnos`, in order (each consumed once).
    pub fn fail_next(&self, op: Op, errnos: impl IntoIterator<Item = Errno>) {
        self.errors.lock().unwrap().entry(op).or_default().extend(errnos);
    }

    /// How many times `op` was called.
    pub fn calls(&self, op: Op) -> usize {
        self.calls.lock().unwrap().get(&op).copied().unwrap_or(0)
    }

    /// The names passed to `op`, in call order.
    pub fn names(&self, op: Op) -> Vec<PathBuf> {
        self.paths
            .lock()
            .unwrap()
            .iter()
            .filter(|(o, _)| *o == op)
            .map(|(_, p)| p.clone())
            .collect()
    }

    /// The paths fsynced so far, in call order (what a descriptor named when it was fsynced).
    pub fn fsynced(&self) -> Vec<PathBuf> {
        self.journal
            .lock()
            .unwrap()
            .iter()
            .filter_map(|event| match event {
                Journal::Fsync(path) => Some(path.clone()),
                Journal::Rename { .. } => None,
            })
            .collect()
    }

    /// Runs `hook(op, name)` before every call (e.g. to pause on a barrier).
    pub fn set_hook(&self, hook: impl Fn(Op, &Path) + Send + Sync + 'static) {
        *self.hook.lock().unwrap() = Some(Arc::new(hook));
    }

    /// Limits every `write` to at most `chunk` bytes (short writes).
    pub fn set_write_chunk(&self, chunk: usize) {
        *self.write_chunk.lock().unwrap() = Some(chunk);
    }

    /// The files a power loss after the calls so far cannot take away, on a filesystem that
    /// keeps only what it was told to: a renamed file's content survives only if the file was
    /// fsynced before the rename (or after it, under its new name), and its new name only if
    /// its directory was fsynced after the rename. Real filesystems keep more (ext4 commits
    /// renames in order); sublaunch's durability promises (A4) must hold without that.
    pub fn durable(&self) -> std::collections::BTreeSet<PathBuf> {
        let mut synced_content = std::collections::HashSet::new();
        let mut named: HashMap<PathBuf, bool> = HashMap::new();
        let mut durable = std::collections::BTreeSet::new();
        for event in self.journal.lock().unwrap().iter() {
            match event {
                Journal::Fsync(path) => {
                    if named.contains_key(path) {
                        named.insert(path.clone(), true);
                    }
                    synced_content.insert(path.clone());
                    for (name, content) in &named {
                        if *content && name.parent() == Some(path.as_path()) {
                            durable.insert(name.clone());
                        }
                    }
                }
                Journal::Rename { from, to } => {
                    // The old document under `to` is gone, the new one is not durable yet; a
                    // renamed file keeps its content's durability (a temp file, or a file
                    // moved from another name).
                    durable.remove(to);
                    durable.remove(from);
                    let content = synced_content.remove(from) | named.remove(from).unwrap_or(false);
                    named.insert(to.clone(), content);
                }
            }
        }
        durable
    }

    fn enter(&self, op: Op, name: &Path) -> Result<(), Errno> {
        *self.calls.lock().unwrap().entry(op).or_default() += 1;
        self.paths.lock().unwrap().push((op, name.to_owned()));
        let hook = self.hook.lock().unwrap().clone();
        if let Some(hook) = hook {
            hook(op, name);
        }
        match self.errors.lock().unwrap().get_mut(&op).and_then(VecDeque::pop_front) {
            Some(errno) => Err(errno),
            None => Ok(()),
        }
    }
}

impl Files for ScriptedFs {
    fn openat(&self, dir: BorrowedFd<'_>, name: &Path, flags: OFlags, mode: Mode) -> Result<OwnedFd, Errno> {
        self.enter(Op::Open, name)?;
        RealFiles.openat(dir, name, flags, mode)
    }

    fn write(&self, fd: BorrowedFd<'_>, bytes: &[u8]) -> Result<usize, Errno> {
        self.enter(Op::Write, Path::new(""))?;
        let limit = self.write_chunk.lock().unwrap().unwrap_or(usize::MAX);
        RealFiles.write(fd, &bytes[..bytes.len().min(limit)])
    }

    fn fsync(&self, fd: BorrowedFd<'_>) -> Result<(), Errno> {
        self.enter(Op::Fsync, Path::new(""))?;
        RealFiles.fsync(fd)?;
        self.journal.lock().unwrap().push(Journal::Fsync(fd_path(fd)));
        Ok(())
    }

    fn renameat(&self, from_dir: BorrowedFd<'_>, from: &Path, to_dir: BorrowedFd<'_>, to: &Path) -> Result<(), Errno> {
        self.enter(Op::Rename, to)?;
        RealFiles.renameat(from_dir, from, to_dir, to)?;
        self.journal.lock().unwrap().push(Journal::Rename {
            from: fd_path(from_dir).join(from),
            to: fd_path(to_dir).join(to),
        });
        Ok(())
    }

    fn unlinkat(&self, dir: BorrowedFd<'_>, name: &Path) -> Result<(), Errno> {
        self.enter(Op::Unlink, name)?;
        RealFiles.unlinkat(dir, name)
    }

    fn mkdirat(&self, dir: BorrowedFd<'_>, name: &Path, mode: Mode) -> Result<(), Errno> {
        self.enter(Op::Mkdir, name)?;
        RealFiles.mkdirat(dir, name, mode)
    }

    fn rmdirat(&self, dir: BorrowedFd<'_>, name: &Path) -> Result<(), Errno> {
        self.enter(Op::Rmdir, name)?;
        RealFiles.rmdirat(dir, name)
    }

    fn touch(&self, fd: BorrowedFd<'_>, at_ms: Option<u64>) -> Result<(), Errno> {
        self.enter(Op::Touch, Path::new(""))?;
        RealFiles.touch(fd, at_ms)
    }
}

/// Whether the process runs as root (root bypasses permission bits).
pub fn running_as_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// The ordinary user permission tests run as when the suite runs as root (as CI does).
pub const UNPRIVILEGED_UID: u32 = 4242;

/// Runs `f` as an ordinary user, so permission bits apply: when the tests run as root, `tree`
/// (recursively) is given to [`UNPRIVILEGED_UID`] and `f` runs on a thread whose user ids are
/// that user's (the kernel drops the thread's capabilities with them); otherwise `f` runs as
/// it is.
pub fn as_unprivileged<T: Send>(tree: &std::path::Path, f: impl FnOnce() -> T + Send) -> T {
    if !running_as_root() {
        return f();
    }
    give_tree(tree, UNPRIVILEGED_UID);
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                let uid = rustix::process::Uid::from_raw(UNPRIVILEGED_UID);
                rustix::thread::set_thread_res_uid(uid, uid, uid).expect("drop to the unprivileged user");
                f()
            })
            .join()
            .expect("the unprivileged part")
    })
}

fn give_tree(path: &std::path::Path, uid: u32) {
    std::os::unix::fs::lchown(path, Some(uid), Some(uid)).expect("chown for the unprivileged user");
    if path.is_dir() && !path.is_symlink() {
        for entry in std::fs::read_dir(path).expect("list for chown").flatten() {
            give_tree(&entry.path(), uid);
        }
    }
}

/// The names of temp files (`.*.tmp`) directly in `dir`.
pub fn temp_files(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with('.') && n.ends_with(".tmp"))
                .collect()
        })
        .unwrap_or_default()
}
