//! Facts about processes we did not spawn (X3): liveness by `kill(pid, 0)` (ESRCH = dead,
//! EPERM = alive; a zombie is dead), start identity `linux:<starttime>` from `/proc/<pid>/stat`
//! field 22 to detect pid reuse, and the pid-namespace scope (`/proc/self/ns/pid`). Our own
//! children are judged by the exit watcher of the host/shim, never by these.

use rustix::io::Errno;
use rustix::process::Pid;
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

/// The real liveness of `pid` (what [`crate::os::processes::Processes::liveness`] answers unless a test replaces
/// it); with `expected_identity`, a different current identity means `Dead`.
pub fn liveness(pid: u32, expected_identity: Option<&str>) -> Liveness {
    match (probe(pid), expected_identity) {
        // `/proc` read once serves both the zombie check and the identity.
        ((Liveness::Alive, Some(stat)), Some(expected)) if identity_of(&stat) != expected => Liveness::Dead,
        // Otherwise the probe decides; without `/proc` (non-Linux, hidepid) the kill
        // probe is all there is.
        ((liveness, _), _) => liveness,
    }
}

/// `kill(pid, 0)`: success or `EPERM` → alive, `ESRCH` → dead. A zombie answers the probe
/// but has exited: where pid 1 never reaps orphans (a container whose init is the test runner
/// or the agent), a dead shim or host would otherwise look alive forever, so `/proc` is asked
/// and a zombie counts as dead.
pub fn probe_pid(pid: u32) -> Liveness {
    probe(pid).0
}

/// [`probe_pid`], with the `/proc/<pid>/stat` it read for a live process (`None` when `/proc`
/// cannot tell).
fn probe(pid: u32) -> (Liveness, Option<ProcStat>) {
    let Some(raw) = i32::try_from(pid).ok().and_then(Pid::from_raw) else {
        return (Liveness::Unknown(format!("invalid pid {pid}")), None);
    };
    match rustix::process::test_kill_process(raw) {
        Ok(()) | Err(Errno::PERM) => match ProcStat::read(pid) {
            Ok(Some(stat)) if stat.is_zombie() => (Liveness::Dead, None),
            Ok(Some(stat)) => (Liveness::Alive, Some(stat)),
            // Reaped between the two looks.
            Ok(None) => (Liveness::Dead, None),
            Err(_) => (Liveness::Alive, None),
        },
        Err(Errno::SRCH) => (Liveness::Dead, None),
        Err(e) => (Liveness::Unknown(e.to_string()), None),
    }
}

/// The fields of `/proc/<pid>/stat` sublaunch reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProcStat {
    /// State letter (`R`, `S`, `Z` …), field 3.
    pub state: u8,
    /// Parent, field 4 (as `/proc`'s namespace names it).
    pub ppid: u32,
    /// Process group, field 5.
    pub pgrp: u32,
    /// Session, field 6.
    pub session: u32,
    /// Clock ticks after boot at which the process started, field 22.
    pub start_time: u64,
}

impl ProcStat {
    /// Parses one `/proc/<pid>/stat` line. The command name (field 2) is in parentheses and may
    /// itself contain spaces and parentheses, so fields are counted after the **last** `)`.
    pub fn parse(stat: &str) -> Option<Self> {
        // Field 3 (state) onwards.
        let mut fields = stat[stat.rfind(')')? + 1..].split_ascii_whitespace();
        let state = *fields.next()?.as_bytes().first()?;
        let ppid = fields.next()?.parse().ok()?;
        let pgrp = fields.next()?.parse().ok()?;
        let session = fields.next()?.parse().ok()?;
        // Fields 7–21 skipped; 22 is the start time.
        let start_time = fields.nth(15)?.parse().ok()?;
        Some(Self {
            state,
            ppid,
            pgrp,
            session,
            start_time,
        })
    }

    /// Reads `/proc/<pid>/stat`; `Ok(None)` when the process is gone. One `read` into a
    /// stack buffer: the line is a few hundred bytes, and this is called for every process a
    /// sweep looks at.
    pub fn read(pid: u32) -> io::Result<Option<Self>> {
        let gone =
            |e: &io::Error| e.kind() == io::ErrorKind::NotFound || e.raw_os_error() == Some(Errno::SRCH.raw_os_error());
        let path = format!("/proc/{pid}/stat");
        let mut file = match std::fs::File::open(&path) {
            Ok(file) => file,
            Err(e) if gone(&e) => return Ok(None),
            Err(e) => return Err(e),
        };
        let mut buf = [0_u8; 1024];
        let mut len = 0;
        while len < buf.len() {
            match io::Read::read(&mut file, &mut buf[len..]) {
                Ok(0) => break,
                Ok(n) => len += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if gone(&e) => return Ok(None),
                Err(e) => return Err(e),
            }
        }
        std::str::from_utf8(&buf[..len])
            .ok()
            .and_then(Self::parse)
            .map(Some)
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, format!("unparsable {path}")))
    }

    /// Reads `/proc/self/stat` (this process as `/proc`'s namespace names it); `None`
    /// without `/proc`.
    pub fn read_self() -> Option<Self> {
        std::fs::read_to_string("/proc/self/stat")
            .ok()
            .and_then(|line| Self::parse(&line))
    }

    /// Exited and not yet reaped (`Z`, or `X` while being reaped): it runs nothing any more.
    pub fn is_zombie(&self) -> bool {
        matches!(self.state, b'Z' | b'X')
    }
}

/// Test builds: a file whose contents stand in for the boot id (a "reboot" is a new file).
#[cfg(feature = "test-hooks")]
pub const TEST_BOOT_ID_FILE_ENV: &str = "SUBLAUNCH_TEST_BOOT_ID_FILE";

/// The kernel's id of this boot (`/proc/sys/kernel/random/boot_id`): a run recorded under
/// another one was interrupted by the machine going down (D1 `host-lost`). `None` without
/// `/proc`.
pub fn boot_id() -> Option<String> {
    #[cfg(feature = "test-hooks")]
    if let Some(file) = std::env::var_os(TEST_BOOT_ID_FILE_ENV) {
        return std::fs::read_to_string(file).ok().map(|id| id.trim().to_owned());
    }
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .ok()
        .map(|id| id.trim().to_owned())
        .filter(|id| !id.is_empty())
}

/// `linux:<starttime>` of `pid` from `/proc/<pid>/stat`; `Ok(None)` when the process is gone.
pub fn start_identity(pid: u32) -> io::Result<Option<String>> {
    Ok(ProcStat::read(pid)?.as_ref().map(identity_of))
}

/// The live processes of one agent's process group: group `pgid` in session `session`, started
/// no earlier than its leader (`since`, clock ticks after boot). A group id is the pid of the
/// process that made the group; once the group and that pid are gone, a new process may get the
/// same number and make a new group, but that group cannot be in the runner's session, and the
/// check on the start time rules out a session id reused the same way. Linux only (`/proc`);
/// elsewhere nothing is found.
pub fn group_members(pgid: u32, session: u32, since: u64) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            ProcStat::read(*pid).ok().flatten().is_some_and(|stat| {
                stat.pgrp == pgid && stat.session == session && stat.start_time >= since && !stat.is_zombie()
            })
        })
        .collect()
}

/// The clock ticks of a `linux:<starttime>` start identity.
pub fn start_ticks(identity: &str) -> Option<u64> {
    identity.strip_prefix("linux:")?.parse().ok()
}

/// The start identity a stat line gives: `linux:<starttime>`.
fn identity_of(stat: &ProcStat) -> String {
    format!("linux:{}", stat.start_time)
}

/// The start identity of this process (read through `/proc/self`, which names this process
/// also inside a nested PID namespace, where `getpid()` is the namespace's number).
pub fn own_start_identity() -> Option<String> {
    std::fs::read_to_string("/proc/self/stat")
        .ok()
        .and_then(|line| ProcStat::parse(&line))
        .as_ref()
        .map(identity_of)
}

/// This process's pid as `/proc` (the host's) names it (G45). Inside a contained agent's PID
/// namespace `getpid()` is the namespace's number, which means another process to anyone
/// outside; `/proc` stays the host's mount there, so its `self` link gives the pid the host
/// can probe. Falls back to `getpid()` without `/proc`.
pub fn own_host_pid() -> u32 {
    std::fs::read_link("/proc/self")
        .ok()
        .and_then(|link| link.to_str()?.parse().ok())
        .unwrap_or_else(std::process::id)
}

/// The pid `/proc` (the host's) gives this process's child `child` (G45): `child` itself
/// outside any nested namespace; inside one (a run launched by a contained agent) the child
/// among `/proc/<own host pid>/task/*/children` — numbered in `/proc`'s namespace — whose
/// `NSpid` ends with `child`, the number this process knows it by. `None` when that child
/// cannot be found there (it exited and was reaped, or `/proc` hides it).
pub fn host_view_of_child(child: u32) -> Option<u32> {
    let ns_pids = |pid: &str| -> Option<Vec<u32>> {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
        let line = status.lines().find(|l| l.starts_with("NSpid:"))?;
        Some(
            line.split_ascii_whitespace()
                .skip(1)
                .filter_map(|n| n.parse().ok())
                .collect(),
        )
    };
    if ns_pids("self").is_none_or(|pids| pids.len() <= 1) {
        return Some(child);
    }
    let own = own_host_pid();
    let innermost = |pid: u32| ns_pids(&pid.to_string())?.last().copied();
    let tasks = std::fs::read_dir(format!("/proc/{own}/task")).ok()?;
    tasks
        .flatten()
        .filter_map(|task| std::fs::read_to_string(task.path().join("children")).ok())
        .flat_map(|line| {
            line.split_ascii_whitespace()
                .filter_map(|p| p.parse::<u32>().ok())
                .collect::<Vec<_>>()
        })
        .find(|candidate| innermost(*candidate) == Some(child))
}

/// The pid-namespace scope that [`own_host_pid`] belongs to: the namespace of `/proc`'s
/// mount. Outside any nested namespace that is [`pid_namespace_scope`]; inside one (a run
/// launched by a contained agent, G45) it is the scope of the nearest ancestor that lives in
/// `/proc`'s namespace, so its records are judged by an outside `list` with the outer pid.
/// `None` when that ancestor's namespace cannot be read (another user's process, a sandbox
/// that denies it): a status without a scope is judged by pid and start identity alone.
pub fn host_pid_namespace_scope() -> Option<String> {
    let depth = |pid: &str| {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
        let line = status.lines().find(|l| l.starts_with("NSpid:"))?;
        Some(line.split_ascii_whitespace().count().saturating_sub(1))
    };
    if depth("self").is_none_or(|d| d <= 1) {
        return pid_namespace_scope();
    }
    let mut pid = own_host_pid();
    for _ in 0..64 {
        pid = parent_of(pid)?;
        if depth(&pid.to_string())? <= 1 {
            return std::fs::read_link(format!("/proc/{pid}/ns/pid"))
                .ok()
                .map(|p| p.to_string_lossy().into_owned());
        }
    }
    None
}

/// The parent of `pid` (field 4 of `/proc/<pid>/stat`); `None` for pid 1's parent or when
/// unreadable.
fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let ppid: u32 = stat[stat.rfind(')')? + 1..]
        .split_ascii_whitespace()
        .nth(1)?
        .parse()
        .ok()?;
    (ppid > 0).then_some(ppid)
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
    use crate::os::processes::{Processes, RealProcesses};

    #[test]
    fn x3_stat_parsing_survives_hostile_command_names() {
        let fields_after = "S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 987654 20 21";
        for comm in ["sh", "a b", "x) (y", ") 1 2 3 (", "(((", ""] {
            let line = format!("4242 ({comm}) {fields_after}");
            let stat = ProcStat::parse(&line).unwrap_or_else(|| panic!("{comm:?}"));
            assert_eq!(
                stat,
                ProcStat {
                    state: b'S',
                    ppid: 1,
                    pgrp: 2,
                    session: 3,
                    start_time: 987_654
                },
                "{comm:?}"
            );
        }
        assert_eq!(ProcStat::parse("garbage"), None);
        assert_eq!(ProcStat::parse("1 (x) S 1 2"), None);
    }

    #[test]
    fn x3_an_unreaped_child_is_dead() {
        // A zombie still answers kill(pid, 0); only /proc tells that it has exited.
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        let stat = loop {
            let stat = ProcStat::read(pid).unwrap().expect("not reaped yet");
            if stat.is_zombie() {
                break stat;
            }
            // Blocks until the child has exited, leaving it unreaped.
            let fd =
                rustix::process::pidfd_open(Pid::from_raw(pid as i32).unwrap(), rustix::process::PidfdFlags::empty())
                    .unwrap();
            let mut poll = [rustix::event::PollFd::new(&fd, rustix::event::PollFlags::IN)];
            rustix::event::poll(&mut poll, None).unwrap();
        };
        assert_eq!(stat.state, b'Z');
        assert_eq!(
            rustix::process::test_kill_process(Pid::from_raw(pid as i32).unwrap()),
            Ok(())
        );
        assert_eq!(probe_pid(pid), Liveness::Dead);
        assert_eq!(RealProcesses.liveness(pid, None), Liveness::Dead);
        child.wait().unwrap();
        assert_eq!(probe_pid(pid), Liveness::Dead);
    }

    #[test]
    fn x3_own_process_is_alive_with_its_identity() {
        let me = std::process::id();
        assert_eq!(probe_pid(me), Liveness::Alive);
        let identity = own_start_identity().expect("Linux /proc");
        assert!(identity.starts_with("linux:"));
        assert_eq!(RealProcesses.liveness(me, Some(&identity)), Liveness::Alive);
        assert_eq!(
            RealProcesses.liveness(me, Some("linux:1")),
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
