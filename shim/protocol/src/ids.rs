//! Session and process-group ids as the kernel reports them (H8, R3).
//!
//! A session or group whose leader lives outside this pid namespace reads as id 0 (CI
//! containers start tests that way). rustix models these ids as non-zero and asserts on 0, so
//! these helpers ask libc directly and keep 0 as an ordinary value.

/// The session id of this process (0 when its leader is outside the pid namespace).
pub fn own_session() -> Option<u32> {
    // SAFETY: getsid(0) only reads the calling process's session id.
    let sid = unsafe { libc::getsid(0) };
    u32::try_from(sid).ok()
}

/// The process-group id of `pid` (0 = this process); `None` when there is no such process.
pub fn group_of(pid: u32) -> Option<u32> {
    let pid = i32::try_from(pid).ok()?;
    // SAFETY: getpgid only reads a process's group id.
    let pgid = unsafe { libc::getpgid(pid) };
    u32::try_from(pgid).ok()
}

/// Whether a child could rejoin this process's group with `setpgid`: false when the group
/// reads as 0. A launcher uses this to decide whether the shim may start in a group of its own
/// (it rejoins the launcher's group for the instant it needs to call `setsid`, H8).
pub fn own_group_is_nameable() -> bool {
    group_of(0).is_some_and(|pgid| pgid != 0)
}

/// This process's umask, read from `/proc/self/status` (`umask(2)` can only be read by
/// setting it, which races with other threads creating files); `None` where the kernel does
/// not report it.
pub fn process_umask() -> Option<u32> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let value = status.lines().find_map(|line| line.strip_prefix("Umask:"))?;
    u32::from_str_radix(value.trim(), 8).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (pgrp, session) from `/proc/self/stat` fields 5 and 6.
    fn stat_ids() -> (u32, u32) {
        let stat = crate::procinfo::ProcStat::read(std::process::id()).unwrap().unwrap();
        (stat.pgrp, stat.session)
    }

    #[test]
    fn ids_match_proc_stat() {
        let (pgrp, session) = stat_ids();
        assert_eq!(own_session(), Some(session));
        assert_eq!(group_of(0), Some(pgrp));
        assert_eq!(group_of(std::process::id()), Some(pgrp));
        assert_eq!(own_group_is_nameable(), pgrp != 0);
    }

    #[test]
    fn a_missing_process_has_no_group() {
        assert_eq!(group_of(i32::MAX as u32), None);
    }
}
