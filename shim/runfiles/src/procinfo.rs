//! Facts about processes we did not spawn (X3): liveness by `kill(pid, 0)` (ESRCH = dead,
//! EPERM = alive), start identity `linux:<starttime>` from `/proc/<pid>/stat` field 22 to detect
//! pid reuse, and the pid-namespace scope (`/proc/self/ns/pid`). Our own children are judged by
//! the exit watcher of the host/shim, never by these.

use rustix::io::Errno;
use rustix::process::Pid;
use std::fmt::Debug;
use std::io;

/// Whether a pid names a live process.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Liveness {
    /// Alive (and, when checked, with the expected start identity).
    Alive,
    /// Gone, or the pid now belongs to another process (identity changed).
    Dead,
    /// Cannot tell (invalid pid, unexpected errno, other pid namespace).
    Unknown(String),
}

/// Liveness oracle seam (§T `ProcessControl` for pids we did not spawn).
pub trait ProcessOracle: Send + Sync + Debug {
    /// Liveness of `pid`; with `expected_identity`, a different current identity means `Dead`.
    fn liveness(&self, pid: u32, expected_identity: Option<&str>) -> Liveness;
    /// The current start identity of `pid`, if it exists.
    fn start_identity(&self, pid: u32) -> Option<String>;
}

/// The real processes of this host.
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemProcesses;

impl ProcessOracle for SystemProcesses {
    fn liveness(&self, pid: u32, expected_identity: Option<&str>) -> Liveness {
        match probe_pid(pid) {
            Liveness::Alive => match expected_identity {
                None => Liveness::Alive,
                Some(expected) => match start_identity(pid) {
                    Ok(Some(current)) if current == expected => Liveness::Alive,
                    Ok(Some(_) | None) => Liveness::Dead,
                    // No /proc (non-Linux, hidepid): the kill probe is all we have.
                    Err(_) => Liveness::Alive,
                },
            },
            other => other,
        }
    }

    fn start_identity(&self, pid: u32) -> Option<String> {
        start_identity(pid).ok().flatten()
    }
}

/// `kill(pid, 0)`: success or `EPERM` → alive, `ESRCH` → dead.
pub fn probe_pid(pid: u32) -> Liveness {
    let Some(pid) = i32::try_from(pid).ok().and_then(Pid::from_raw) else {
        return Liveness::Unknown(format!("invalid pid {pid}"));
    };
    match rustix::process::test_kill_process(pid) {
        Ok(()) | Err(Errno::PERM) => Liveness::Alive,
        Err(Errno::SRCH) => Liveness::Dead,
        Err(e) => Liveness::Unknown(e.to_string()),
    }
}

/// `linux:<starttime>` of `pid` from `/proc/<pid>/stat`; `Ok(None)` when the process is gone.
pub fn start_identity(pid: u32) -> io::Result<Option<String>> {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(text) => parse_stat_start_time(&text)
            .map(|ticks| Some(format!("linux:{ticks}")))
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, format!("unparsable /proc/{pid}/stat"))),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) if e.raw_os_error() == Some(Errno::SRCH.raw_os_error()) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Field 22 (`starttime`) of a `/proc/<pid>/stat` line. The command name (field 2) is in
/// parentheses and may itself contain spaces and parentheses, so fields are counted after the
/// **last** `)`.
pub fn parse_stat_start_time(stat: &str) -> Option<u64> {
    let after_comm = &stat[stat.rfind(')')? + 1..];
    // after_comm starts with field 3 (state); starttime is field 22 → index 19.
    after_comm.split_ascii_whitespace().nth(19)?.parse().ok()
}

/// The start identity of this process.
pub fn own_start_identity() -> Option<String> {
    start_identity(std::process::id()).ok().flatten()
}

/// The target of `/proc/self/ns/pid` (`pid:[4026531836]`), Linux only (H13).
pub fn pid_namespace_scope() -> Option<String> {
    std::fs::read_link("/proc/self/ns/pid")
        .ok()
        .map(|p| p.to_string_lossy().into_owned())
}

/// This host's name (lease owner, R6a).
pub fn hostname() -> String {
    rustix::system::uname().nodename().to_string_lossy().into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn x3_stat_parsing_survives_hostile_command_names() {
        let fields_after = "S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 987654 20 21";
        for comm in ["sh", "a b", "x) (y", ") 1 2 3 (", "(((", ""] {
            let line = format!("4242 ({comm}) {fields_after}");
            assert_eq!(parse_stat_start_time(&line), Some(987_654), "{comm:?}");
        }
        assert_eq!(parse_stat_start_time("garbage"), None);
        assert_eq!(parse_stat_start_time("1 (x) S 1 2"), None);
    }

    #[test]
    fn x3_own_process_is_alive_with_its_identity() {
        let me = std::process::id();
        assert_eq!(probe_pid(me), Liveness::Alive);
        let identity = own_start_identity().expect("Linux /proc");
        assert!(identity.starts_with("linux:"));
        assert_eq!(SystemProcesses.liveness(me, Some(&identity)), Liveness::Alive);
        assert_eq!(
            SystemProcesses.liveness(me, Some("linux:1")),
            Liveness::Dead,
            "a changed identity means reuse"
        );
    }

    #[test]
    fn x3_reaped_child_is_dead() {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        assert_eq!(probe_pid(pid), Liveness::Dead);
        assert_eq!(start_identity(pid).unwrap(), None);
    }

    #[test]
    fn x3_init_is_alive_even_without_permission() {
        // pid 1 exists in every namespace; EPERM (non-root) also counts as alive.
        assert_eq!(probe_pid(1), Liveness::Alive);
        assert!(matches!(probe_pid(0), Liveness::Unknown(_) | Liveness::Alive));
        assert!(matches!(probe_pid(u32::MAX), Liveness::Unknown(_)));
    }

    #[test]
    fn h13_namespace_scope_and_hostname() {
        let scope = pid_namespace_scope().expect("Linux");
        assert!(scope.starts_with("pid:["), "{scope}");
        assert!(!hostname().is_empty());
    }
}
