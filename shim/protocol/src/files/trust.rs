//! The trusted root (H3 ⊕): `<root>`, `<runs>` and `<results>` are created 0700; an existing
//! one must be a real directory (not a symlink) owned by the current uid and not writable by
//! group or others, otherwise the launch fails with
//! `Refusing untrusted temp root '<root>': <reason>`.
//!
//! Every existing directory above the root counts too: one that another user owns, or that
//! its group or others can write without the sticky bit, lets them move the root aside and put
//! their own in its place. Each must be owned by the current uid or root and not writable by
//! group or others unless it is sticky (as `/tmp` is: there nobody can rename what they do not
//! own).

use crate::errors::os_error;
use crate::files::dir::Dir;
use crate::files::layout::{Layout, names};
use crate::os::Os;
use rustix::fs::{self, AtFlags, FileType};
use rustix::io::Errno;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The refusal of H3.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("Refusing untrusted temp root '{}': {reason}", root.display())]
pub struct UntrustedRoot {
    /// The root that was refused.
    pub root: PathBuf,
    /// Why.
    pub reason: String,
}

/// Opening the root failed.
#[derive(Debug, thiserror::Error)]
pub enum RootError {
    /// The root (or `runs`/`results`) exists but cannot be trusted (H3).
    #[error(transparent)]
    Untrusted(UntrustedRoot),
    /// Creating or opening failed.
    #[error(transparent)]
    Io(#[from] io::Error),
}

/// The opened, verified root with its `runs` and `results` directories.
#[derive(Debug)]
pub struct TrustedRoot {
    layout: Layout,
    root: Dir,
    runs: Dir,
    results: Dir,
}

impl TrustedRoot {
    /// Creates (0700) or verifies `<root>`, `<runs>` and `<results>` (H3).
    pub fn open(layout: &Layout, os: Arc<Os>) -> Result<Self, RootError> {
        let root_path = layout.root();
        let untrusted = |reason| untrusted(root_path, reason);
        if let Some(reason) = untrusted_ancestor(root_path)? {
            return Err(untrusted(reason));
        }
        match lstat(root_path)? {
            None => {
                if let Some(parent) = root_path.parent() {
                    Dir::create_private_with(parent, os.clone())?;
                }
                match os.retry.run(os.sleeper.as_ref(), || {
                    os.files
                        .mkdirat(fs::CWD, root_path, fs::Mode::from_raw_mode(crate::files::dir::DIR_MODE))
                }) {
                    Ok(()) | Err(Errno::EXIST) => {}
                    Err(e) => return Err(os_error(e, "mkdir", root_path).into()),
                }
            }
            Some(stat) => {
                if let Some(reason) = judge(&stat, None) {
                    return Err(untrusted(reason));
                }
            }
        }
        let root = match Dir::open_with(root_path, os) {
            Ok(dir) => dir,
            Err(e) if crate::errors::has_errno(&e, Errno::LOOP) || crate::errors::has_errno(&e, Errno::NOTDIR) => {
                let reason = lstat(root_path)?
                    .and_then(|s| judge(&s, None))
                    .unwrap_or_else(|| "it changed while being opened".into());
                return Err(untrusted(reason));
            }
            Err(e) => return Err(e.into()),
        };
        // Judge the opened descriptor itself, so a swap between lstat and open cannot pass.
        let stat = fs::fstat(&root).map_err(|e| os_error(e, "stat", root_path))?;
        if let Some(reason) = judge(&stat, None) {
            return Err(untrusted(reason));
        }
        crate::files::placement::spread_subdirectories(&root);
        let runs = trusted_child(&root, names::RUNS_DIR)?;
        crate::files::placement::spread_subdirectories(&runs);
        let results = trusted_child(&root, names::RESULTS_DIR)?;
        crate::files::placement::spread_subdirectories(&results);
        Ok(Self {
            layout: layout.clone(),
            root,
            runs,
            results,
        })
    }

    /// The layout.
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// `<root>`.
    pub fn root(&self) -> &Dir {
        &self.root
    }

    /// `<runs>`.
    pub fn runs(&self) -> &Dir {
        &self.runs
    }

    /// `<results>`.
    pub fn results(&self) -> &Dir {
        &self.results
    }
}

/// The H3 refusal of `root` for `reason`.
fn untrusted(root: &Path, reason: String) -> RootError {
    RootError::Untrusted(UntrustedRoot {
        root: root.to_owned(),
        reason,
    })
}

/// Creates (0700) or verifies `<root>/<name>`.
fn trusted_child(root: &Dir, name: &str) -> Result<Dir, RootError> {
    if let Some(stat) = root.stat(name)?
        && let Some(reason) = judge(&stat, Some(name))
    {
        return Err(untrusted(root.path(), reason));
    }
    let dir = root.ensure_child(name)?;
    let stat = fs::fstat(&dir).map_err(|e| os_error(e, "stat", dir.path()))?;
    match judge(&stat, Some(name)) {
        Some(reason) => Err(untrusted(root.path(), reason)),
        None => Ok(dir),
    }
}

fn lstat(path: &Path) -> Result<Option<fs::Stat>, RootError> {
    match fs::statat(fs::CWD, path, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(stat) => Ok(Some(stat)),
        Err(Errno::NOENT) => Ok(None),
        Err(e) => Err(os_error(e, "stat", path).into()),
    }
}

/// The first directory above `root` that someone else could use to replace it, and why.
fn untrusted_ancestor(root: &Path) -> Result<Option<String>, RootError> {
    let absolute = if root.is_absolute() {
        root.to_owned()
    } else {
        std::env::current_dir()?.join(root)
    };
    let uid = rustix::process::geteuid().as_raw();
    for dir in absolute.ancestors().skip(1) {
        let stat = match fs::stat(dir) {
            Ok(stat) => stat,
            Err(Errno::NOENT) => continue,
            Err(e) => return Err(os_error(e, "stat", dir).into()),
        };
        let shown = dir.display();
        if stat.st_uid != uid && stat.st_uid != 0 {
            return Ok(Some(format!(
                "its parent directory '{shown}' is owned by uid {}, not by you (uid {uid}) or root",
                stat.st_uid
            )));
        }
        let mode = stat.st_mode & 0o7777;
        // In a sticky directory nobody can rename or remove an entry they do not own, so the
        // root below it stays put whoever can write there (the owner is already us or root).
        let sticky = mode & 0o1000 != 0;
        if sticky {
            continue;
        }
        if mode & 0o002 != 0 {
            return Ok(Some(format!(
                "its parent directory '{shown}' is writable by others (mode {mode:04o}); choose another SUBLAUNCH_ROOT or run `chmod o-w {shown}`"
            )));
        }
        // A group member could move the root aside just as well as anybody else.
        if mode & 0o020 != 0 {
            return Ok(Some(format!(
                "its parent directory '{shown}' is writable by its group (gid {}, mode {mode:04o}); choose another SUBLAUNCH_ROOT or run `chmod g-w {shown}`",
                stat.st_gid
            )));
        }
    }
    Ok(None)
}

/// The H3 verdict on one directory's `lstat`: `None` when trusted, else the reason.
fn judge(stat: &fs::Stat, child: Option<&str>) -> Option<String> {
    let subject = child.map_or_else(|| "it".to_owned(), |c| format!("'{c}'"));
    let uid = rustix::process::geteuid().as_raw();
    match FileType::from_raw_mode(stat.st_mode) {
        FileType::Symlink => return Some(format!("{subject} is a symbolic link")),
        FileType::Directory => {}
        _ => return Some(format!("{subject} is not a directory")),
    }
    if stat.st_uid != uid {
        return Some(format!("{subject} is owned by uid {}, not {uid}", stat.st_uid));
    }
    let mode = stat.st_mode & 0o7777;
    if mode & 0o022 != 0 {
        return Some(format!("{subject} is writable by group or others (mode {mode:04o})"));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn open(root: &Path) -> Result<TrustedRoot, RootError> {
        TrustedRoot::open(&Layout::new(root), Os::shared_default())
    }

    fn mode(p: &Path) -> u32 {
        std::fs::metadata(p).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn h3_creates_root_runs_results_with_0700() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("state/sublaunch");
        let trusted = open(&root).unwrap();
        assert_eq!(mode(&root), 0o700);
        assert_eq!(mode(&root.join("runs")), 0o700);
        assert_eq!(mode(&root.join("results")), 0o700);
        assert_eq!(trusted.runs().path(), root.join("runs"));
        open(&root).unwrap();
    }

    #[test]
    fn f04_symlinked_root_is_refused_and_target_untouched() {
        let tmp = tempfile::tempdir().unwrap();
        let target = tmp.path().join("elsewhere");
        std::fs::create_dir(&target).unwrap();
        std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o700)).unwrap();
        let link = tmp.path().join("root");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let error = open(&link).unwrap_err();
        assert_eq!(
            error.to_string(),
            format!(
                "Refusing untrusted temp root '{}': it is a symbolic link",
                link.display()
            )
        );
        assert_eq!(
            std::fs::read_dir(&target).unwrap().count(),
            0,
            "no new entries in the link target"
        );
    }

    #[test]
    fn f04_world_writable_root_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("root");
        std::fs::create_dir(&root).unwrap();
        std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o777)).unwrap();
        let error = open(&root).unwrap_err();
        assert!(matches!(error, RootError::Untrusted(_)));
        assert!(
            error
                .to_string()
                .ends_with("it is writable by group or others (mode 0777)"),
            "{error}"
        );
        assert_eq!(std::fs::read_dir(&root).unwrap().count(), 0);
    }

    #[test]
    fn h3_a_file_root_and_symlinked_runs_are_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("file");
        std::fs::write(&file, b"").unwrap();
        assert!(open(&file).unwrap_err().to_string().ends_with("it is not a directory"));

        let root = tmp.path().join("root");
        std::fs::create_dir(&root).unwrap();
        std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o700)).unwrap();
        std::os::unix::fs::symlink(tmp.path(), root.join("runs")).unwrap();
        let error = open(&root).unwrap_err();
        assert!(error.to_string().ends_with("'runs' is a symbolic link"), "{error}");
    }

    #[test]
    fn h3_a_parent_others_can_write_is_refused_unless_sticky() {
        let tmp = tempfile::tempdir().unwrap();
        let shared = tmp.path().join("shared");
        std::fs::create_dir(&shared).unwrap();
        std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o777)).unwrap();
        let root = shared.join("mine/sublaunch");
        let error = open(&root).unwrap_err().to_string();
        assert!(
            error.contains(&format!(
                "its parent directory '{}' is writable by others (mode 0777)",
                shared.display()
            )),
            "{error}"
        );
        assert!(
            !shared.join("mine").exists(),
            "nothing created under the refused parent"
        );
        std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o1777)).unwrap();
        open(&root).unwrap();
    }

    #[test]
    fn h3_a_parent_its_group_can_write_is_refused_unless_sticky() {
        assert!(crate::testing::running_as_root(), "chown needs root, as CI has");
        let tmp = tempfile::tempdir().unwrap();
        // Owned by root, as the current user is in CI, with a group another user could be in:
        // a member of that group could rename the root aside and plant their own.
        let shared = tmp.path().join("grp");
        std::fs::create_dir(&shared).unwrap();
        std::os::unix::fs::chown(&shared, Some(0), Some(4242)).unwrap();
        std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o775)).unwrap();
        let root = shared.join("mine/sublaunch");
        let error = open(&root).unwrap_err();
        assert!(matches!(error, RootError::Untrusted(_)));
        let error = error.to_string();
        assert!(
            error.contains(&format!(
                "its parent directory '{shown}' is writable by its group (gid 4242, mode 0775); choose another SUBLAUNCH_ROOT or run `chmod g-w {shown}`",
                shown = shared.display()
            )),
            "{error}"
        );
        assert!(
            !shared.join("mine").exists(),
            "nothing created under the refused parent"
        );
        std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o1775)).unwrap();
        open(&root).unwrap();
        std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o755)).unwrap();
        open(&root).unwrap();
    }

    #[test]
    fn h3_a_parent_owned_by_another_user_is_refused() {
        assert!(crate::testing::running_as_root(), "chown needs root, as CI has");
        let tmp = tempfile::tempdir().unwrap();
        let theirs = tmp.path().join("theirs");
        std::fs::create_dir(&theirs).unwrap();
        std::fs::set_permissions(&theirs, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::os::unix::fs::chown(&theirs, Some(4242), Some(4242)).unwrap();
        let error = open(&theirs.join("state/sublaunch")).unwrap_err().to_string();
        assert!(
            error.contains(&format!(
                "its parent directory '{}' is owned by uid 4242, not by you (uid 0) or root",
                theirs.display()
            )),
            "{error}"
        );
        assert!(!theirs.join("state").exists());
    }

    #[test]
    fn h3_foreign_owner_is_refused() {
        if !crate::testing::running_as_root() {
            eprintln!("skipped: needs root to chown a directory to another uid");
            return;
        }
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("root");
        std::fs::create_dir(&root).unwrap();
        std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o700)).unwrap();
        std::os::unix::fs::chown(&root, Some(65534), None).unwrap();
        let error = open(&root).unwrap_err();
        assert!(
            error.to_string().ends_with("it is owned by uid 65534, not 0"),
            "{error}"
        );
    }
}
