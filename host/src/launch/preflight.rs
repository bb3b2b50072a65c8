//! Preflight (H1–H3): nothing is written and nothing is started until the effective cwd is a
//! directory, the shim exists and the root is trusted. These errors carry no
//! `Failed to start async run` prefix.

use std::io;
use std::path::Path;
use sublaunch_protocol::files::layout::Layout;
use sublaunch_protocol::files::trust::{RootError, TrustedRoot};
use sublaunch_protocol::os::Os;

/// One cwd to check: the effective path and the one the caller asked for.
#[derive(Clone, Debug)]
pub(crate) struct CwdCheck {
    /// The effective (resolved) cwd.
    pub effective: String,
    /// The requested cwd, when it differs.
    pub requested: Option<String>,
}

/// H1: each cwd must exist and be a directory (followed through symlinks, as a process's
/// cwd is).
pub(crate) fn check_cwds(checks: &[CwdCheck]) -> Result<(), String> {
    checks.iter().try_for_each(check_cwd)
}

fn check_cwd(check: &CwdCheck) -> Result<(), String> {
    let resolved = match &check.requested {
        Some(requested) if *requested != check.effective => format!("\n(resolved from \"{requested}\")"),
        _ => String::new(),
    };
    let cwd = &check.effective;
    match std::fs::metadata(cwd) {
        Ok(meta) if meta.is_dir() => Ok(()),
        Ok(_) => Err(format!(
            "Subagent launch aborted: cwd is not a directory: {cwd}{resolved}"
        )),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            Err(format!("Subagent launch aborted: cwd does not exist: {cwd}{resolved}"))
        }
        Err(e) => Err(format!(
            "Subagent launch aborted: cwd could not be accessed: {cwd}{resolved}\n{e}"
        )),
    }
}

/// H2: the shim must exist (whether it is executable is the spawn's business, H11).
pub(crate) fn check_shim(shim: &Path) -> Result<(), String> {
    match std::fs::metadata(shim) {
        Ok(meta) if meta.is_file() => Ok(()),
        _ => Err(format!("Background runner shim not found: {}", shim.display())),
    }
}

/// H3: opens (creating 0700) and verifies the root, `runs/` and `results/`.
pub(crate) fn open_root(layout: &Layout, os: std::sync::Arc<Os>) -> Result<TrustedRoot, String> {
    TrustedRoot::open(layout, os).map_err(|e| match e {
        RootError::Untrusted(untrusted) => untrusted.to_string(),
        RootError::Io(e) => format!(
            "Cannot open the sublaunch state directory '{}': {e}",
            layout.root().display()
        ),
    })
}

/// A12: the first launch under a root in this process sweeps the temp files dead writers left
/// there, in the background (the launch does not wait for it), when the root's sweep stamp is
/// older than the orphan age ([`sublaunch_protocol::sweep::sweep_root_if_due`]). A process
/// that exits soon after waits for a sweep it started, so at most once per ten minutes.
pub(crate) fn sweep_once(root: &std::sync::Arc<TrustedRoot>) {
    static SWEPT: std::sync::Mutex<std::collections::BTreeSet<std::path::PathBuf>> =
        std::sync::Mutex::new(std::collections::BTreeSet::new());
    let path = root.root().path().to_owned();
    if !SWEPT
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .insert(path)
        || !sublaunch_protocol::sweep::sweep_due(root)
    {
        return;
    }
    let root = root.clone();
    tokio::task::spawn_blocking(move || {
        let oracle = sublaunch_protocol::procinfo::SystemProcesses;
        let errors = sublaunch_protocol::sweep::sweep_root_if_due(&root, &oracle).map(|r| r.errors);
        for error in errors.into_iter().flatten() {
            log::warn!("orphan temp sweep: {error}");
        }
    });
}

/// A deadline that has passed refuses the launch, and so does a checkpoint with no deadline
/// to count back from (neither a timeout nor `deadlineAt`) or no time before it.
pub(crate) fn check_deadline(
    plan: &sublaunch_contract::LaunchPlan,
    timeouts: &super::Timeouts,
    now: u64,
) -> Result<(), String> {
    if let Some(at) = timeouts.deadline_at
        && at <= now
    {
        return Err(format!(
            "cannot launch: the deadline {} has passed",
            sublaunch_protocol::os::clock::iso8601_utc(at)
        ));
    }
    let Some(checkpoint) = plan.steps.iter().find_map(|s| s.checkpoint_before_deadline_ms) else {
        return Ok(());
    };
    let until_deadline = [timeouts.run_ms, timeouts.deadline_at.map(|at| at - now)]
        .into_iter()
        .flatten()
        .min()
        .ok_or_else(|| {
            format!(
                "cannot launch: the agents are to be asked to wrap up {checkpoint} ms before the deadline, and the run has none: give it a timeout or a deadline"
            )
        })?;
    if checkpoint >= until_deadline {
        return Err(format!(
            "cannot launch: the agents are to be asked to wrap up {checkpoint} ms before the deadline, and the run has only {until_deadline} ms"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn h1_messages() {
        let tmp = tempfile::tempdir().unwrap();
        let missing = tmp.path().join("nope").to_string_lossy().into_owned();
        let check = |effective: &str, requested: Option<&str>| {
            check_cwds(&[CwdCheck {
                effective: effective.into(),
                requested: requested.map(Into::into),
            }])
        };
        assert_eq!(
            check(&missing, None).unwrap_err(),
            format!("Subagent launch aborted: cwd does not exist: {missing}")
        );
        assert_eq!(
            check(&missing, Some("nope")).unwrap_err(),
            format!("Subagent launch aborted: cwd does not exist: {missing}\n(resolved from \"nope\")")
        );
        let file = tmp.path().join("f");
        std::fs::write(&file, b"").unwrap();
        let file = file.to_string_lossy().into_owned();
        assert_eq!(
            check(&file, Some(&file)).unwrap_err(),
            format!("Subagent launch aborted: cwd is not a directory: {file}")
        );
        check(&tmp.path().to_string_lossy(), None).unwrap();
    }
}
