//! The orphan temp sweep (A12 ⊕): removes `.<name>.<pid>.<ms>.<rand>.tmp` files older than 10
//! minutes whose writer pid is not alive. Run at host start and by listers.

use crate::atomic::parse_temp_name;
use crate::dir::Dir;
use crate::procinfo::{Liveness, ProcessOracle};
use crate::trust::TrustedRoot;
use rustix::fs::FileType;
use std::path::PathBuf;
use std::time::Duration;

/// Minimum age of a temp file before it may be swept.
pub const ORPHAN_TEMP_AGE: Duration = Duration::from_secs(600);

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
pub fn sweep_dir(dir: &Dir, oracle: &dyn ProcessOracle, report: &mut SweepReport) {
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
        let writer_dead = temp.pid != std::process::id() && oracle.liveness(temp.pid, None) == Liveness::Dead;
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
pub fn sweep_root(root: &TrustedRoot, oracle: &dyn ProcessOracle) -> SweepReport {
    let mut report = SweepReport::default();
    sweep_dir(root.root(), oracle, &mut report);
    sweep_tree(root.runs(), oracle, 2, &mut report);
    sweep_tree(root.results(), oracle, 3, &mut report);
    report
}

fn sweep_tree(dir: &Dir, oracle: &dyn ProcessOracle, depth: usize, report: &mut SweepReport) {
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
    use crate::atomic::temp_name;
    use crate::layout::Layout;
    use crate::os::Os;
    use crate::os::clock::ManualClock;
    use std::sync::Arc;

    #[derive(Debug)]
    struct Oracle {
        alive: Vec<u32>,
    }

    impl ProcessOracle for Oracle {
        fn liveness(&self, pid: u32, _: Option<&str>) -> Liveness {
            if self.alive.contains(&pid) {
                Liveness::Alive
            } else {
                Liveness::Dead
            }
        }
    }

    #[test]
    fn f64_sweeps_old_temps_of_dead_writers_only() {
        let tmp = tempfile::tempdir().unwrap();
        let wall_now = crate::os::clock::Clock::wall_ms(&crate::os::clock::SystemClock);
        let clock = Arc::new(ManualClock::new(wall_now));
        let root = TrustedRoot::open(
            &Layout::new(tmp.path().join("root")),
            Os::system().with_clock(clock.clone()).shared(),
        )
        .unwrap();
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
