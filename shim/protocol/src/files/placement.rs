//! Where the filesystem puts the runs (H3 ⊕: the root, once trusted, is marked). ext4 without a
//! journal does not reuse an inode freed in the last minute or more: creating a file in a block
//! group checks every such inode of the group, one buffer-cache lookup each. Replacing a document
//! frees the old version's inode, so where run directories are packed into one group (ext4 places a
//! subdirectory near its parent), every run's replacements and removals tax the next run's
//! creations; with steady launches each creation costs up to a scan of the whole group (0.5–0.7 ms
//! measured, against ~15 µs in a quiet group). Marking `<runs>` as the top of a directory hierarchy
//! (`FS_TOPDIR_FL`, `chattr +T`) has ext4's Orlov allocator spread its subdirectories over the
//! block groups instead. The mark is a hint: filesystems without it refuse or ignore it, and
//! nothing else changes.

use rustix::fd::AsFd;
use rustix::fs::{IFlags, ioctl_getflags, ioctl_setflags};

/// `<root>`, `<runs>` and `<results>` are marked when the root is opened: the run
/// directories and the shared ones (the active-run index, the capacity queue, the result
/// indexes) then land in different groups, each away from the others' churn.
///
/// Asks the filesystem to spread the subdirectories of `dir` over its block groups (sets
/// `FS_TOPDIR_FL` unless it is set). Best effort: a filesystem that cannot is left as it is.
pub fn spread_subdirectories(dir: impl AsFd) {
    let Ok(flags) = ioctl_getflags(&dir) else { return };
    if flags.contains(IFlags::TOPDIR) {
        return;
    }
    if let Err(e) = ioctl_setflags(&dir, flags | IFlags::TOPDIR) {
        log::debug!("cannot mark a directory as the top of a hierarchy: {e}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::files::layout::Layout;
    use crate::files::trust::TrustedRoot;
    use crate::os::Os;

    const EXT4_SUPER_MAGIC: rustix::fs::FsWord = 0xEF53;

    fn opened_runs(parent: &std::path::Path) -> std::fs::File {
        let layout = Layout::new(parent.join("root"));
        let root = TrustedRoot::open(&layout, Os::system().shared()).unwrap();
        drop(root);
        std::fs::File::open(parent.join("root/runs")).unwrap()
    }

    /// This machine's and CI's temp directory is on ext4: there `<root>`, `<runs>` and
    /// `<results>` carry the mark once the root is opened, and opening it again keeps it.
    #[test]
    fn an_opened_root_spreads_its_directories_on_ext4() {
        let tmp = tempfile::tempdir().unwrap();
        let runs = opened_runs(tmp.path());
        assert_eq!(rustix::fs::fstatfs(&runs).unwrap().f_type, EXT4_SUPER_MAGIC, "not ext4");
        assert!(ioctl_getflags(&runs).unwrap().contains(IFlags::TOPDIR));
        for other in ["root", "root/results"] {
            let dir = std::fs::File::open(tmp.path().join(other)).unwrap();
            assert!(ioctl_getflags(&dir).unwrap().contains(IFlags::TOPDIR), "{other}");
        }
        drop(opened_runs(tmp.path()));
        assert!(ioctl_getflags(&runs).unwrap().contains(IFlags::TOPDIR));
    }

    /// On a filesystem without inode flags (tmpfs) the root opens all the same.
    #[test]
    fn a_filesystem_without_the_mark_opens_the_root_all_the_same() {
        let tmp = tempfile::tempdir_in("/dev/shm").unwrap();
        let runs = opened_runs(tmp.path());
        assert!(rustix::fs::fstat(&runs).is_ok());
    }
}
