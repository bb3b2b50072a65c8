//! The orphan temp sweep (A12 ⊕): removes `.<name>.<pid>.<ms>.<rand>.tmp` files older than 10
//! minutes whose writer pid is not alive. Run at host start and by listers, at most once per
//! [`ORPHAN_TEMP_AGE`] under a root ([`sweep_root_if_due`]).

use crate::files::atomic::parse_temp_name;
use crate::files::dir::Dir;
use crate::files::trust::TrustedRoot;
use crate::os::processes::Processes;
use crate::procinfo::Liveness;
use rustix::fs::FileType;
use std::path::PathBuf;
use std::time::Duration;

/// Minimum age of a temp file before it may be swept.
pub const ORPHAN_TEMP_AGE: Duration = Duration::from_secs(600);

/// The file in `<root>` whose mtime says when the root was last swept.
pub const SWEEP_STAMP: &str = ".temp-sweep";

/// What a sweep did.
#[derive(Debug, Default)]
pub struct SweepReport {
    /// Removed temp files.
    pub removed: Vec<PathBuf>,
    /// Temp files kept (young, or their writer lives).
    pub kept: Vec<PathBuf>,
    /// Errors (listing or removing), to be logged.
    pub errors: Vec<String>,
}

/// Sweeps the temp files directly in `dir`. Age is measured from the later of the name's
/// timestamp and the file's mtime against the handle's wall clock; a pid whose liveness is
/// unknown counts as alive.
pub fn sweep_dir(dir: &Dir, oracle: &dyn Processes, report: &mut SweepReport) {
    let now = dir.os().clock.wall_ms();
    let entries = match dir.entries() {
        Ok(entries) => entries,
        Err(e) => {
            report.errors.push(e.to_string());
            return;
        }
    };
    for entry in entries {
        if entry.file_type != FileType::RegularFile {
            continue;
        }
        let Some(temp) = parse_temp_name(&entry.name) else {
            continue;
        };
        let Some(name) = entry.name.to_str() else { continue };
        let mtime_ms = match dir.stat(name) {
            Ok(Some(stat)) => u64::try_from(stat.st_mtime).unwrap_or(0).saturating_mul(1000),
            Ok(None) => continue,
            Err(e) => {
                report.errors.push(e.to_string());
                continue;
            }
        };
        let age = Duration::from_millis(now.saturating_sub(temp.epoch_ms.max(mtime_ms)));
        let writer_dead = temp.pid != dir.os().pid && oracle.liveness(temp.pid, None) == Liveness::Dead;
        if age >= ORPHAN_TEMP_AGE && writer_dead {
            match dir.remove(name) {
                Ok(()) => report.removed.push(dir.join(name)),
                Err(e) => report.errors.push(e.to_string()),
            }
        } else {
            report.kept.push(dir.join(name));
        }
    }
}

/// Sweeps `<root>`, `<runs>`, `<results>`, every run directory (and its `control/`), and the
/// result pending/index trees, never following symlinks.
pub fn sweep_root(root: &TrustedRoot, oracle: &dyn Processes) -> SweepReport {
    let mut report = SweepReport::default();
    sweep_dir(root.root(), oracle, &mut report);
    sweep_tree(root.runs(), oracle, 2, &mut report);
    sweep_tree(root.results(), oracle, 3, &mut report);
    report
}

/// [`sweep_root`], unless the root was swept less than [`ORPHAN_TEMP_AGE`] ago (by its
/// [`SWEEP_STAMP`]); `None` when it was not due. A temp file becomes removable only at that
/// age, so sweeping more often finds next to nothing, while the walk over every run directory
/// would cost each launch and each `list` of a loop time that grows with the runs kept.
/// The stamp is set before the walk: of two processes finding it due at once, both may sweep,
/// which is harmless.
pub fn sweep_root_if_due(root: &TrustedRoot, oracle: &dyn Processes) -> Option<SweepReport> {
    if !sweep_due(root) {
        return None;
    }
    let mut report = SweepReport::default();
    if let Err(e) = root.root().stamp(SWEEP_STAMP) {
        report.errors.push(e.to_string());
    }
    let walked = sweep_root(root, oracle);
    report.removed = walked.removed;
    report.kept = walked.kept;
    report.errors.extend(walked.errors);
    Some(report)
}

/// Whether `root` has no [`SWEEP_STAMP`] younger than [`ORPHAN_TEMP_AGE`] (one `stat`).
pub fn sweep_due(root: &TrustedRoot) -> bool {
    stamp_due(root.root(), SWEEP_STAMP)
}

/// Whether `dir` has no `stamp` file younger than [`ORPHAN_TEMP_AGE`] (one `stat`): the
/// schedule of the periodic sweeps of a root.
pub fn stamp_due(dir: &Dir, stamp: &str) -> bool {
    let now = dir.os().clock.wall_ms();
    let last = match dir.stat(stamp) {
        Ok(Some(stat)) => {
            #[allow(clippy::useless_conversion)] // the field types differ between platforms
            let nanos = u64::try_from(stat.st_mtime_nsec).unwrap_or(0);
            u64::try_from(stat.st_mtime)
                .ok()
                .map(|secs| secs * 1000 + nanos / 1_000_000)
        }
        _ => None,
    };
    let age_ms = u64::try_from(ORPHAN_TEMP_AGE.as_millis()).unwrap_or(u64::MAX);
    // A stamp from the future (the clock was set back) does not postpone the sweep.
    !last.is_some_and(|last| last <= now && now - last < age_ms)
}

fn sweep_tree(dir: &Dir, oracle: &dyn Processes, depth: usize, report: &mut SweepReport) {
    sweep_dir(dir, oracle, report);
    if depth == 0 {
        return;
    }
    let Ok(entries) = dir.entries() else { return };
    for entry in entries.into_iter().filter(|e| e.file_type == FileType::Directory) {
        let Some(name) = entry.name.to_str() else { continue };
        if let Ok(Some(child)) = dir.open_child(name) {
            sweep_tree(&child, oracle, depth - 1, report);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::files::atomic::temp_name;
    use crate::files::layout::Layout;
    use crate::os::Os;
    use crate::os::clock::ManualClock;
    use std::sync::Arc;

    #[derive(Debug)]
    struct Oracle {
        alive: Vec<u32>,
    }

    impl Processes for Oracle {
        fn liveness(&self, pid: u32, _: Option<&str>) -> Liveness {
            if self.alive.contains(&pid) {
                Liveness::Alive
            } else {
                Liveness::Dead
            }
        }
    }

    /// A fresh root whose clock can be advanced. It starts a second behind the real wall
    /// time (returned), so a stamp taken from the kernel's clock instead of the root's would
    /// look as if it came from the future.
    fn root_at_now() -> (tempfile::TempDir, u64, Arc<ManualClock>, TrustedRoot) {
        let tmp = tempfile::tempdir().unwrap();
        let wall_now = crate::os::clock::Clock::wall_ms(&crate::os::clock::SystemClock);
        let clock = Arc::new(ManualClock::new(wall_now - 1000));
        let root = TrustedRoot::open(
            &Layout::new(tmp.path().join("root")),
            Os::system().with_clock(clock.clone()).shared(),
        )
        .unwrap();
        (tmp, wall_now, clock, root)
    }

    /// A12: a root swept less than ten minutes ago is not walked again; once the stamp is
    /// that old, it is.
    #[test]
    fn a12_a_root_is_swept_at_most_once_per_orphan_age() {
        let (_tmp, wall_now, clock, root) = root_at_now();
        let oracle = Oracle { alive: vec![] };
        assert!(sweep_root_if_due(&root, &oracle).is_some(), "a root never swept is due");
        assert!(!sweep_due(&root), "the sweep stamped the root");
        let orphan = temp_name("status.json", 111, wall_now - 11 * 60 * 1000, 1);
        std::fs::write(root.runs().join(&orphan), b"x").unwrap();
        clock.advance(Duration::from_secs(9 * 60));
        assert!(sweep_root_if_due(&root, &oracle).is_none(), "swept nine minutes ago");
        assert!(root.runs().join(&orphan).exists());
        clock.advance(Duration::from_secs(2 * 60));
        let report = sweep_root_if_due(&root, &oracle).expect("due after ten minutes");
        assert_eq!(report.removed, vec![root.runs().join(&orphan)]);
        assert!(root.root().join(SWEEP_STAMP).is_file(), "the sweep stamped the root");
    }

    #[test]
    fn f64_sweeps_old_temps_of_dead_writers_only() {
        let (_tmp, wall_now, clock, root) = root_at_now();
        let run = root.runs().ensure_child("run-1").unwrap();
        let old = wall_now - 11 * 60 * 1000;
        let dead_old = temp_name("status.json", 111, old, 1);
        let alive_old = temp_name("status.json", 222, old, 2);
        let dead_young = temp_name("events.json", 111, wall_now, 3);
        let in_root = temp_name("async-cfg-run-1.json", 111, old, 4);
        for name in [&dead_old, &alive_old, &dead_young] {
            std::fs::write(run.join(name), b"x").unwrap();
        }
        std::fs::write(root.root().join(&in_root), b"x").unwrap();
        std::fs::write(run.join("status.json"), b"{}").unwrap();
        std::os::unix::fs::symlink("/etc/passwd", run.join(temp_name("link", 111, old, 5))).unwrap();
        let oracle = Oracle { alive: vec![222] };

        // Files are fresh on disk (mtime now): nothing is 10 minutes old yet.
        let report = sweep_root(&root, &oracle);
        assert!(report.removed.is_empty(), "{:?}", report.removed);

        clock.advance(Duration::from_secs(11 * 60));
        let report = sweep_root(&root, &oracle);
        let mut removed: Vec<String> = report
            .removed
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        removed.sort();
        let mut expected = vec![dead_old.clone(), dead_young.clone(), in_root.clone()];
        expected.sort();
        assert_eq!(removed, expected);
        assert!(run.join(&alive_old).exists(), "a live writer's temp stays");
        assert!(run.join("status.json").exists(), "documents are never swept");
        assert!(report.errors.is_empty(), "{:?}", report.errors);
        assert_eq!(
            std::fs::read_dir(run.path()).unwrap().count(),
            3,
            "status.json, the live temp and the symlink remain"
        );
    }
}
