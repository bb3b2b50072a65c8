//! Reaping (R3, X3, X8). The shim is a child subreaper, so besides the agent it inherits every
//! orphaned descendant. Everything is reaped here with `waitid(P_ALL, WEXITED|WNOHANG)` — never
//! through `std::process::Child` or a per-pid waiter, which would race with adopting orphans.
//! The agent's status is kept; adopted processes are just reaped.
//!
//! A contained agent (G40, G46) is not the shim's child: its PID namespace's init is. Its end
//! arrives on the init's status pipe ([`crate::process::namespace::Message`]), which the
//! supervisor polls ([`Reaper::pollfds`]); an init reaped without having reported the agent's
//! end took the agent with it (the kernel ends a namespace with its init), so the agent counts
//! as killed by SIGKILL.

use crate::process::namespace::{Message, read_message};
use rustix::fd::{AsRawFd, OwnedFd};
use std::collections::BTreeMap;
use sublaunch_protocol::procinfo::ProcStat;

/// How a child ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExitInfo {
    /// Exit code when it exited.
    pub code: Option<i32>,
    /// Signal number when a signal killed it.
    pub signal: Option<i32>,
}

impl ExitInfo {
    /// The signal's name (`SIGKILL`), if any.
    pub fn signal_name(&self) -> Option<String> {
        self.signal.map(crate::process::signals::name)
    }
}

/// The reaper of one shim: the agents it watches (several at once in a parallel group) and
/// how each ended.
#[derive(Debug, Default)]
pub struct Reaper {
    agents: BTreeMap<u32, Option<ExitInfo>>,
    inits: BTreeMap<u32, NsInit>,
}

/// The init of a contained agent's PID namespace.
#[derive(Debug)]
struct NsInit {
    /// Its pid (the shim's child).
    pid: u32,
    /// Its status pipe, until the agent's end was read.
    status: Option<OwnedFd>,
    /// Reaped by the shim: the namespace is empty.
    reaped: bool,
}

impl Reaper {
    /// Starts watching a new agent.
    pub fn watch(&mut self, pid: u32) {
        self.agents.insert(pid, None);
    }

    /// Starts watching a contained agent `pid` through its namespace's init `init` and the
    /// init's status pipe.
    pub fn watch_contained(&mut self, pid: u32, init: u32, status: OwnedFd) {
        self.agents.insert(pid, None);
        self.inits.insert(
            pid,
            NsInit {
                pid: init,
                status: Some(status),
                reaped: false,
            },
        );
    }

    /// Stops tracking an agent whose end was recorded.
    pub fn forget(&mut self, pid: u32) {
        self.agents.remove(&pid);
        self.inits.remove(&pid);
    }

    /// The init of agent `pid`'s namespace while it is not reaped (the namespace still holds
    /// processes, or is being torn down).
    pub fn init_of(&self, pid: u32) -> Option<u32> {
        self.inits.get(&pid).filter(|i| !i.reaped).map(|i| i.pid)
    }

    /// The inits of the live agents' namespaces (spared by the X8 sweep like the agents).
    pub fn live_inits(&self) -> Vec<u32> {
        self.inits
            .iter()
            .filter(|(agent, init)| !init.reaped && self.exit_of(**agent).is_none())
            .map(|(_, init)| init.pid)
            .collect()
    }

    /// The status pipes to wait on: a contained agent's end arrives there.
    pub fn pollfds(&self) -> Vec<libc::pollfd> {
        self.inits
            .values()
            .filter_map(|i| i.status.as_ref())
            .map(|fd| libc::pollfd {
                fd: fd.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            })
            .collect()
    }

    /// Ends agent `pid`, whose group is gone but whose end is not known, with SIGKILL: the
    /// shim's own child directly (unreaped, so the pid cannot have been reused). A contained
    /// agent is its namespace init's child: signalled through a pidfd only while it is still
    /// that init's live child (it left its group); once the init reaped it, its end is on the
    /// way through the status pipe and nothing is signalled (G46) — killing the init then could
    /// lose the agent's true end.
    pub fn kill_hard(&self, pid: u32) {
        let Some(raw) = i32::try_from(pid).ok().and_then(rustix::process::Pid::from_raw) else {
            return;
        };
        let Some(init) = self.inits.get(&pid) else {
            let _ = rustix::process::kill_process(raw, rustix::process::Signal::KILL);
            return;
        };
        if init.reaped {
            return;
        }
        let Ok(fd) = rustix::process::pidfd_open(raw, rustix::process::PidfdFlags::empty()) else {
            return;
        };
        if parent_of(pid) == Some(init.pid) && proc_stat(pid).is_some_and(|st| !st.is_zombie()) {
            let _ = rustix::process::pidfd_send_signal(&fd, rustix::process::Signal::KILL);
        }
    }

    /// Reads what the contained agents' inits reported.
    fn read_inits(&mut self) {
        for (agent, init) in &mut self.inits {
            let Some(fd) = &init.status else { continue };
            let mut end = None;
            let closed;
            loop {
                match read_message(fd) {
                    Some(Message::Exited(code)) => {
                        end = Some(ExitInfo {
                            code: Some(code),
                            signal: None,
                        });
                    }
                    Some(Message::Signaled(signal)) => {
                        end = Some(ExitInfo {
                            code: None,
                            signal: Some(signal),
                        });
                    }
                    Some(_) => {}
                    None => {
                        // EOF (the init is gone) or nothing more for now.
                        closed = init.reaped;
                        break;
                    }
                }
            }
            if let Some(end) = end {
                if let Some(slot) = self.agents.get_mut(agent) {
                    slot.get_or_insert(end);
                }
                init.status = None;
            } else if closed {
                // The init died without reporting the agent's end: the kernel ended the
                // namespace, the agent included, with SIGKILL.
                if let Some(slot) = self.agents.get_mut(agent) {
                    slot.get_or_insert(ExitInfo {
                        code: None,
                        signal: Some(libc::SIGKILL),
                    });
                }
                init.status = None;
            }
        }
    }

    /// How the watched agent `pid` ended, once reaped.
    pub fn exit_of(&self, pid: u32) -> Option<&ExitInfo> {
        self.agents.get(&pid).and_then(Option::as_ref)
    }

    /// Watched agents not yet reaped (their pids are also their process groups).
    pub fn live_agents(&self) -> Vec<u32> {
        self.agents
            .iter()
            .filter(|(_, exit)| exit.is_none())
            .map(|(pid, _)| *pid)
            .collect()
    }

    /// Reaps every child that has exited, keeping how the watched agents ended.
    pub fn reap(&mut self) {
        loop {
            // SAFETY: waitid into a zeroed local siginfo_t; si_pid/si_status read the union
            // members waitid fills for CLD_* codes.
            let (pid, code, status) = unsafe {
                let mut info: libc::siginfo_t = std::mem::zeroed();
                let rc = libc::waitid(libc::P_ALL, 0, &raw mut info, libc::WEXITED | libc::WNOHANG);
                if rc != 0 {
                    if std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
                        continue;
                    }
                    break;
                }
                (info.si_pid(), info.si_code, info.si_status())
            };
            let Ok(pid) = u32::try_from(pid) else { break };
            if pid == 0 {
                break;
            }
            if let Some(init) = self.inits.values_mut().find(|i| i.pid == pid) {
                init.reaped = true;
            } else if let Some(slot) = self.agents.get_mut(&pid) {
                let exited = code == libc::CLD_EXITED;
                *slot = Some(ExitInfo {
                    code: exited.then_some(status),
                    signal: (!exited).then_some(status),
                });
            }
        }
        self.read_inits();
    }
}

/// The parent of process `pid` (field 4 of `/proc/<pid>/stat`), if it can be read.
pub fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.get(stat.rfind(')')? + 1..)?
        .split_ascii_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// The children of process `pid` (none when they cannot be listed).
pub fn children_of_pid(pid: u32) -> Vec<u32> {
    children_of(&pid.to_string()).unwrap_or_default()
}

/// Every live (non-zombie) descendant of process `pid`, breadth first.
pub fn descendants_of(pid: u32) -> Vec<u32> {
    let mut seen = children_of(&pid.to_string()).unwrap_or_default();
    let mut next = 0;
    while let Some(&p) = seen.get(next) {
        next += 1;
        for child in children_of(&p.to_string()).unwrap_or_default() {
            if !seen.contains(&child) {
                seen.push(child);
            }
        }
    }
    seen.retain(|p| proc_stat(*p).is_some_and(|st| !st.is_zombie()));
    seen
}

/// The shim's current children (`/proc/self/task/*/children`).
pub fn children_of_self() -> Vec<u32> {
    children_of("self").unwrap_or_default()
}

/// The children of process `pid` (`/proc/<pid>/task/*/children`); `None` when they cannot be
/// listed (the process is gone, or the kernel lacks the `children` files). A thread that
/// ends during the listing takes only its own entry with it.
fn children_of(pid: &str) -> Option<Vec<u32>> {
    let mut out = Vec::new();
    let mut listed = false;
    for task in std::fs::read_dir(format!("/proc/{pid}/task"))
        .ok()?
        .filter_map(Result::ok)
    {
        if let Ok(text) = std::fs::read_to_string(task.path().join("children")) {
            listed = true;
            out.extend(text.split_ascii_whitespace().filter_map(|p| p.parse::<u32>().ok()));
        }
    }
    if !listed {
        return None;
    }
    out.sort_unstable();
    out.dedup();
    Some(out)
}

/// `/proc/<pid>/stat` of `pid`, if it can be read.
pub fn proc_stat(pid: u32) -> Option<ProcStat> {
    ProcStat::read(pid).ok().flatten()
}

/// Every live (non-zombie) process whose session is `session` or whose group is `pgrp`,
/// except `except`.
///
/// Only the shim's descendants are looked at: the shim leads its session and is a child
/// subreaper, so a process re-parented when its parent died comes to it, and members of its
/// session or of its agents' groups (both inherited only through fork) are all below it.
/// The walk costs what the tree holds, where a scan of `/proc` costs every process of the
/// machine. Where the `children` files are missing it falls back to that scan.
pub fn members(session: Option<u32>, pgrp: Option<u32>, except: u32) -> Vec<u32> {
    let matches = |pid: u32| {
        pid != except
            && proc_stat(pid)
                .is_some_and(|st| !st.is_zombie() && (Some(st.session) == session || Some(st.pgrp) == pgrp))
    };
    let mut out: Vec<u32> = match descendants_of_self() {
        Some(tree) => tree.into_iter().filter(|pid| matches(*pid)).collect(),
        None => std::fs::read_dir("/proc")
            .map(|entries| {
                entries
                    .filter_map(Result::ok)
                    .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
                    .filter(|pid| matches(*pid))
                    .collect()
            })
            .unwrap_or_default(),
    };
    out.sort_unstable();
    out
}

/// Every descendant of the shim, breadth first; `None` when the shim's own children cannot be
/// listed. A process that exits during the walk takes its subtree's listing with it, but its
/// children are re-parented to the shim, whose listing is read again at the end.
fn descendants_of_self() -> Option<Vec<u32>> {
    let mut seen = children_of("self")?;
    let mut next = 0;
    while let Some(&pid) = seen.get(next) {
        next += 1;
        for child in children_of(&pid.to_string()).unwrap_or_default() {
            if !seen.contains(&child) {
                seen.push(child);
            }
        }
    }
    for child in children_of("self").unwrap_or_default() {
        if !seen.contains(&child) {
            seen.push(child);
        }
    }
    Some(seen)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_stat_is_readable() {
        let st = proc_stat(std::process::id()).unwrap();
        assert!(!st.is_zombie());
    }

    /// X8: session members are found among this process's descendants, grandchildren
    /// included, and a process of the same session that is not below it (its parent) is not
    /// looked at.
    #[test]
    fn x8_members_are_the_descendants_in_the_session() {
        let me = std::process::id();
        let session = proc_stat(me).unwrap().session;
        let mut child = std::process::Command::new("sh")
            .args(["-c", "sleep 30 & echo $!; wait"])
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufRead::read_line(&mut std::io::BufReader::new(child.stdout.take().unwrap()), &mut line).unwrap();
        let grandchild: u32 = line.trim().parse().unwrap();
        let found = members(Some(session), None, me);
        let _ = rustix::process::kill_process(
            rustix::process::Pid::from_raw(i32::try_from(grandchild).unwrap()).unwrap(),
            rustix::process::Signal::KILL,
        );
        child.wait().unwrap();
        assert!(found.contains(&child.id()) && found.contains(&grandchild), "{found:?}");
        let parent = rustix::process::getppid().map_or(0, |p| p.as_raw_nonzero().get().cast_unsigned());
        if proc_stat(parent).is_some_and(|st| st.session == session) {
            assert!(!found.contains(&parent), "the parent is not a descendant: {found:?}");
        }
    }
}
