//! A simulated full disk for the A9/I7 fault rows (F42, F46), compiled only with the
//! `test-hooks` feature: no tmpfs is available to the tests, so the shim's filesystem seam
//! fails creating files with `ENOSPC` while a flag file exists.
//!
//! `SUBLAUNCH_SHIM_TEST_ENOSPC=<flag path>` enables it; `SUBLAUNCH_SHIM_TEST_ENOSPC_TARGETS`
//! (comma-separated, default `status,marker`) chooses what fails: `status` = the temp files of
//! `status.json` writes, `marker` = the active-run marker `<runs>/.active-runs/<runId>`.

use rustix::fd::{BorrowedFd, OwnedFd};
use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use sublaunch_protocol::os::files::{Files, RealFiles};

/// The flag-file variable.
pub const ENOSPC_ENV: &str = "SUBLAUNCH_SHIM_TEST_ENOSPC";
/// The targets variable.
pub const TARGETS_ENV: &str = "SUBLAUNCH_SHIM_TEST_ENOSPC_TARGETS";

/// The simulated full disk.
#[derive(Debug)]
pub struct DiskFullFs {
    flag: PathBuf,
    status: bool,
    marker: Option<String>,
}

/// The seam configured by the environment, if any.
pub fn from_env(run_id: &str) -> Option<Arc<dyn Files>> {
    let flag = std::env::var_os(ENOSPC_ENV).filter(|v| !v.is_empty())?;
    let targets = std::env::var(TARGETS_ENV).unwrap_or_else(|_| "status,marker".into());
    let has = |t: &str| targets.split(',').any(|x| x.trim() == t);
    Some(Arc::new(DiskFullFs {
        flag: PathBuf::from(flag),
        status: has("status"),
        marker: has("marker").then(|| run_id.to_owned()),
    }))
}

impl DiskFullFs {
    fn full_for(&self, name: &Path) -> bool {
        let Some(name) = name.to_str() else { return false };
        let hit = (self.status && name.starts_with(".status.json.")) || self.marker.as_deref() == Some(name);
        hit && std::fs::symlink_metadata(&self.flag).is_ok()
    }
}

impl Files for DiskFullFs {
    fn openat(&self, dir: BorrowedFd<'_>, name: &Path, flags: OFlags, mode: Mode) -> Result<OwnedFd, Errno> {
        if flags.contains(OFlags::CREATE) && self.full_for(name) {
            return Err(Errno::NOSPC);
        }
        RealFiles.openat(dir, name, flags, mode)
    }
}
