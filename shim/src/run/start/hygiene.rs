//! Process hygiene at start (R3, H8, H9, K14), in this order:
//!
//! 1. **Doorbell placement.** Rust's `posix_spawn` path cannot place an extra descriptor, so
//!    the host passes its end of the doorbell socketpair as the shim's **stdin** and sets
//!    `SUBLAUNCH_STARTUP_FD=0`. Before anything else the shim duplicates it to **fd 3** with
//!    `O_CLOEXEC` (`dup3`) and puts `/dev/null` on fd 0, so `/proc/<shim>/fd` shows exactly
//!    0 1 2 3. `SUBLAUNCH_STARTUP_FD=3` (a host that placed fd 3 itself) is accepted too.
//!    Without the variable, or when the named descriptor is not a socket, there is no doorbell
//!    and the handshake falls back to polling (K13).
//! 2. **Session.** The host spawns the shim with `process_group(0)` so terminal signals never
//!    reach it; that makes the shim a process-group leader, and `setsid()` refuses a group
//!    leader (`EPERM`). So the shim ignores `SIGINT`/`SIGQUIT`/`SIGTSTP`/`SIGTTIN`/`SIGTTOU`/
//!    `SIGHUP`, rejoins its parent's process group for an instant
//!    (`setpgid(0, getpgid(getppid()))`, allowed because the parent is in the same session),
//!    calls `setsid()`, and only then installs its real dispositions (see [`crate::process::signals`]).
//!    Afterwards pgid = sid = shim pid and there is no controlling terminal (H8). When the
//!    host's group reads as 0 (its leader is outside this pid namespace) it cannot be named, so
//!    the host leaves the shim in its own group and setsid succeeds directly. If a step fails
//!    (the parent already gone, another session), the shim logs it to stderr and carries on as
//!    a process-group leader.
//! 3. **Signals.** Default dispositions except the handled ones, signal mask reset (the
//!    handled set is only unblocked inside waits, see [`crate::process::signals`]). The handled set is
//!    blocked before step 1, so a `SIGTERM` during start-up waits for its handler.
//! 4. **umask 077**: every run file is private.
//! 5. **Only 0, 1, 2 and the doorbell** (H9): every other inherited descriptor is closed
//!    (`close_range`, else a loop over `/proc/self/fd`), whatever the process that launched the
//!    shim left open (an embedder's sockets and pipes would otherwise stay open for the run's
//!    lifetime and reach the agent); the doorbell at fd 3 is CLOEXEC and usable by the shim
//!    until commit.
//! 6. **`PR_SET_CHILD_SUBREAPER`**: descendants that escape the agent's group are re-parented
//!    to the shim when their parent dies, so it can kill and reap them (X8).

use rustix::fd::{FromRawFd, OwnedFd};
use rustix::process::Pid;
use sublaunch_protocol::records::handshake::{STARTUP_FD, STARTUP_FD_ENV};

/// What [`prepare`] produced.
#[derive(Debug, Default)]
pub struct Prepared {
    /// The doorbell socket at fd 3, when the host passed one.
    pub doorbell: Option<OwnedFd>,
    /// Problems worth a line in `runner.stderr.log` (the run continues).
    pub notes: Vec<String>,
}

/// Runs steps 1–6 of the module doc.
pub fn prepare() -> Prepared {
    crate::process::signals::block_handled();
    let mut notes = Vec::new();
    let doorbell = place_doorbell(std::env::var(STARTUP_FD_ENV).ok().as_deref(), &mut notes);
    isolate_session(&mut notes);
    crate::process::signals::install();
    rustix::process::umask(rustix::fs::Mode::from_raw_mode(0o077));
    let first_free = if doorbell.is_some() {
        STARTUP_FD.unsigned_abs() + 1
    } else {
        3
    };
    close_inherited_from(first_free, &mut notes);
    // SAFETY: prctl(PR_SET_CHILD_SUBREAPER, 1) takes no pointers.
    if unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1 as libc::c_ulong, 0, 0, 0) } != 0 {
        notes.push(format!(
            "cannot become a child subreaper: {}",
            std::io::Error::last_os_error()
        ));
    }
    Prepared { doorbell, notes }
}

fn is_socket(fd: i32) -> bool {
    // SAFETY: fstat on a descriptor number into a local buffer; an invalid fd returns -1.
    unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        libc::fstat(fd, &raw mut st) == 0 && (st.st_mode & libc::S_IFMT) == libc::S_IFSOCK
    }
}

/// Step 1: the doorbell at fd 3 (CLOEXEC), `/dev/null` on fd 0 when stdin carried it.
fn place_doorbell(value: Option<&str>, notes: &mut Vec<String>) -> Option<OwnedFd> {
    let fd: i32 = value?.trim().parse().ok().filter(|fd| *fd >= 0)?;
    if !is_socket(fd) {
        notes.push(format!(
            "{STARTUP_FD_ENV}={fd} is not a socket; waiting for the host by polling"
        ));
        return None;
    }
    if fd == STARTUP_FD {
        // SAFETY: fcntl on an fd we verified to be open.
        unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) };
    } else {
        // SAFETY: dup3 onto fd 3 (closing whatever was there) with O_CLOEXEC.
        if unsafe { libc::dup3(fd, STARTUP_FD, libc::O_CLOEXEC) } < 0 {
            notes.push(format!(
                "cannot move the doorbell to fd 3: {}",
                std::io::Error::last_os_error()
            ));
            return None;
        }
        if fd == 0 {
            redirect_stdin_to_null(notes);
        } else {
            // SAFETY: the original descriptor is ours and no longer needed.
            unsafe { libc::close(fd) };
        }
    }
    // SAFETY: fd 3 is open (verified above) and owned by nobody else in this process.
    Some(unsafe { OwnedFd::from_raw_fd(STARTUP_FD) })
}

fn redirect_stdin_to_null(notes: &mut Vec<String>) {
    // SAFETY: open a path literal; dup2 onto fd 0; close the temporary descriptor.
    unsafe {
        let null = libc::open(c"/dev/null".as_ptr(), libc::O_RDWR | libc::O_CLOEXEC);
        if null < 0 {
            notes.push(format!("cannot open /dev/null: {}", std::io::Error::last_os_error()));
            libc::close(0);
            return;
        }
        if null != 0 {
            libc::dup2(null, 0);
            libc::close(null);
        }
    }
}

/// Step 2: become a session leader even though the host made us a group leader.
fn isolate_session(notes: &mut Vec<String>) {
    let me = std::process::id();
    if sublaunch_protocol::ids::own_session() == Some(me) {
        return;
    }
    for signal in [
        libc::SIGINT,
        libc::SIGQUIT,
        libc::SIGTSTP,
        libc::SIGTTIN,
        libc::SIGTTOU,
        libc::SIGHUP,
    ] {
        crate::process::signals::ignore(signal);
    }
    if sublaunch_protocol::ids::group_of(0) == Some(me) {
        // The parent's group may read as 0 (led from outside this pid namespace); setpgid
        // cannot name that group, so stay a group leader and let setsid decide.
        let parent_group = sublaunch_protocol::ids::group_of(std::os::unix::process::parent_id())
            .and_then(|pgid| i32::try_from(pgid).ok())
            .and_then(Pid::from_raw);
        match parent_group.map(|pgid| rustix::process::setpgid(None, Some(pgid))) {
            Some(Ok(())) => {}
            Some(Err(e)) => notes.push(format!("cannot rejoin the parent's process group: {e}")),
            None => notes.push("cannot rejoin the parent's process group: it is not visible here".into()),
        }
    }
    if let Err(e) = rustix::process::setsid() {
        notes.push(format!("setsid failed ({e}); continuing as a process-group leader"));
        if sublaunch_protocol::ids::group_of(0) != Some(me) {
            let _ = rustix::process::setpgid(None, None::<Pid>);
        }
    }
}

/// Step 5: closes every descriptor from `first` up. Nothing of the shim's own is open yet.
fn close_inherited_from(first: u32, notes: &mut Vec<String>) {
    // SAFETY: close_range closes descriptor numbers; the shim holds no OwnedFd above `first`.
    if unsafe { libc::close_range(first, u32::MAX, 0) } == 0 {
        return;
    }
    let Ok(entries) = std::fs::read_dir("/proc/self/fd") else {
        notes.push("cannot list /proc/self/fd to close inherited descriptors".into());
        return;
    };
    let fds: Vec<i32> = entries
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .filter(|fd| u32::try_from(*fd).is_ok_and(|fd| fd >= first))
        .collect();
    for fd in fds {
        // SAFETY: close on a descriptor number nothing in the shim owns; the listing's own
        // (already closed) fails harmlessly.
        unsafe { libc::close(fd) };
    }
}
