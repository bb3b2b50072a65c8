//! The shim's environment (H10): the host's environment without the variables that must not
//! reach a detached runner, plus the runner's own settings, and the run depth one deeper than
//! the launcher's (the shim passes it on to the agents, so a `sublaunch mcp` an agent starts
//! knows how deep it runs).

use crate::environment::{RUN_DEPTH_VAR, run_depth};
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use sublaunch_protocol::files::layout::ROOT_ENV;
use sublaunch_protocol::records::handshake::STARTUP_FD_ENV;

/// `SUBLAUNCH_RUNNER_CONFIG`: the cfg path the shim reads (R1).
pub const RUNNER_CONFIG_ENV: &str = "SUBLAUNCH_RUNNER_CONFIG";
/// `SUBLAUNCH_PARENT_SESSION`: the launching session, removed when there is none.
pub const PARENT_SESSION_ENV: &str = "SUBLAUNCH_PARENT_SESSION";
/// The doorbell descriptor number handed to the shim: its stdin, which it moves to fd 3.
pub const DOORBELL_STDIN_FD: &str = "0";

/// Removed exactly (case-sensitive): extension bindings and the systemd readiness and socket
/// activation variables (so descendants cannot spoof a supervisor's readiness).
const REMOVED: &[&str] = &[
    "SUBLAUNCH_EXTENSION_BINDINGS",
    "NOTIFY_SOCKET",
    "LISTEN_FDS",
    "LISTEN_PID",
    "LISTEN_FDNAMES",
    "WATCHDOG_PID",
    "WATCHDOG_USEC",
    STARTUP_FD_ENV,
    RUNNER_CONFIG_ENV,
    PARENT_SESSION_ENV,
];

/// Git routing variables, matched case-insensitively (H10): the list the git commands of
/// sublaunch drop too.
const GIT_ROUTING: &[&str] = sublaunch_protocol::git::ROUTING;

/// What the launch adds to the environment.
pub(crate) struct ShimEnv<'a> {
    /// The cfg file (H5).
    pub cfg_path: &'a Path,
    /// The launching session.
    pub session_id: Option<&'a str>,
    /// Whether the doorbell is the shim's stdin.
    pub doorbell: bool,
    /// The absolute root, so the shim finds `session-leases/` whatever its cwd.
    pub root: &'a Path,
    /// Caller overrides, applied last.
    pub extra: &'a [(OsString, OsString)],
}

/// Whether the host must not pass `name` on (H10).
pub fn is_removed(name: &OsStr) -> bool {
    let bytes = name.as_bytes();
    if REMOVED.iter().any(|r| r.as_bytes() == bytes) {
        return true;
    }
    let upper = bytes.to_ascii_uppercase();
    if GIT_ROUTING.iter().any(|g| g.as_bytes() == upper.as_slice()) {
        return true;
    }
    ["GIT_CONFIG_KEY_", "GIT_CONFIG_VALUE_"].iter().any(|prefix| {
        upper
            .strip_prefix(prefix.as_bytes())
            .is_some_and(|n| !n.is_empty() && n.iter().all(u8::is_ascii_digit))
    })
}

/// The shim's environment from `base` (the launch's [`crate::Environment`]).
pub(crate) fn shim_environment(
    base: impl IntoIterator<Item = (OsString, OsString)>,
    settings: &ShimEnv<'_>,
) -> Vec<(OsString, OsString)> {
    let base: Vec<(OsString, OsString)> = base.into_iter().collect();
    let depth = run_depth(
        base.iter()
            .find(|(k, _)| k == RUN_DEPTH_VAR)
            .map(|(_, v)| v.as_os_str()),
    );
    let retention = base
        .iter()
        .find(|(k, _)| k == "SUBLAUNCH_CACHE_RETENTION")
        .map(|(_, v)| v.clone());
    let mut env: Vec<(OsString, OsString)> = base.into_iter().filter(|(k, _)| !is_removed(k)).collect();
    let mut set = |key: &str, value: OsString| {
        env.retain(|(k, _)| k != key);
        env.push((key.into(), value));
    };
    if let Some(retention) = retention {
        set("PI_CACHE_RETENTION", retention);
    }
    set(RUN_DEPTH_VAR, depth.saturating_add(1).to_string().into());
    if let Some(session) = settings.session_id {
        set(PARENT_SESSION_ENV, session.into());
    }
    set(RUNNER_CONFIG_ENV, settings.cfg_path.as_os_str().to_owned());
    set(ROOT_ENV, settings.root.as_os_str().to_owned());
    if settings.doorbell {
        set(STARTUP_FD_ENV, DOORBELL_STDIN_FD.into());
    }
    for (key, value) in settings.extra {
        env.retain(|(k, _)| k != key);
        env.push((key.clone(), value.clone()));
    }
    env
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(list: &[(&str, &str)]) -> Vec<(OsString, OsString)> {
        list.iter()
            .map(|(k, v)| (OsString::from(k), OsString::from(v)))
            .collect()
    }

    #[test]
    fn h10_routing_and_readiness_variables_are_removed() {
        let base = pairs(&[
            ("PATH", "/bin"),
            ("git_dir", "/x"),
            ("GIT_CONFIG_KEY_0", "a"),
            ("GIT_CONFIG_KEY_X", "kept"),
            ("NOTIFY_SOCKET", "/run/n"),
            ("SUBLAUNCH_STARTUP_FD", "9"),
            ("SUBLAUNCH_PARENT_SESSION", "old"),
            ("GIT_AUTHOR_NAME", "kept"),
        ]);
        let extra = pairs(&[("SUBLAUNCH_TEST_PARENT_PID", "1")]);
        let env = shim_environment(
            base,
            &ShimEnv {
                cfg_path: Path::new("/r/async-cfg-a.json"),
                session_id: None,
                doorbell: true,
                root: Path::new("/r"),
                extra: &extra,
            },
        );
        let get = |k: &str| env.iter().find(|(key, _)| key == k).map(|(_, v)| v.to_str().unwrap());
        assert_eq!(get("PATH"), Some("/bin"));
        assert_eq!(get("git_dir"), None);
        assert_eq!(get("GIT_CONFIG_KEY_0"), None);
        assert_eq!(get("GIT_CONFIG_KEY_X"), Some("kept"));
        assert_eq!(get("GIT_AUTHOR_NAME"), Some("kept"));
        assert_eq!(get("NOTIFY_SOCKET"), None);
        assert_eq!(get("SUBLAUNCH_STARTUP_FD"), Some("0"));
        assert_eq!(get("SUBLAUNCH_PARENT_SESSION"), None, "no session: removed");
        assert_eq!(get("SUBLAUNCH_RUNNER_CONFIG"), Some("/r/async-cfg-a.json"));
        assert_eq!(get("SUBLAUNCH_ROOT"), Some("/r"));
        assert_eq!(get("SUBLAUNCH_TEST_PARENT_PID"), Some("1"));
        assert_eq!(
            get("SUBLAUNCH_DEPTH"),
            Some("1"),
            "a top-level launch's runs are one deep"
        );
    }

    #[test]
    fn the_run_depth_grows_by_one_and_a_malformed_one_stays_deepest() {
        let depth_after = |base: &[(&str, &str)]| {
            let env = shim_environment(
                pairs(base),
                &ShimEnv {
                    cfg_path: Path::new("/r/c.json"),
                    session_id: None,
                    doorbell: false,
                    root: Path::new("/r"),
                    extra: &[],
                },
            );
            let depths: Vec<String> = env
                .iter()
                .filter(|(key, _)| key == RUN_DEPTH_VAR)
                .map(|(_, value)| value.to_string_lossy().into_owned())
                .collect();
            assert_eq!(depths.len(), 1, "set once: {depths:?}");
            depths[0].clone()
        };
        assert_eq!(depth_after(&[("SUBLAUNCH_DEPTH", "1")]), "2");
        assert_eq!(depth_after(&[("SUBLAUNCH_DEPTH", "")]), "1");
        assert_eq!(depth_after(&[("SUBLAUNCH_DEPTH", "x")]), u32::MAX.to_string());
    }
}
