//! Containment (G40–G47): every agent runs in a PID namespace of its own whose first process
//! (the *ns init*) is the shim's child and dies with the shim, so the kernel ends the agent's
//! whole tree — double-forked, `setsid`'d and signal-ignoring descendants included — when the
//! shim dies, even SIGKILLed with no host watching.
//!
//! Shape (no `exec` of a helper, G41):
//! ```text
//! shim ── clone(CLONE_NEWPID [| CLONE_NEWUSER] [| CLONE_NEWNET]) ──> ns init (pid 1, outer pid = our child)
//!                                   └─ clone(CLONE_VM | CLONE_VFORK) ──> agent (pid 2, own group) ── exec
//! ```
//! * **Why a raw `clone` and no re-exec'd helper:** the research measured ~2 ms for spawning
//!   `unshare(1)`; a fork that runs on in plain code costs one process creation. The init never
//!   execs, so it runs a copy of the shim's memory: everything it and the agent need (argv,
//!   environment, program candidates, uid maps) is built *before* the clone, and after it both
//!   only make async-signal-safe system calls — no allocation, no lock, no glibc `fork` (whose
//!   atfork handlers take malloc's locks). That stays correct even if a helper thread of the
//!   shim ([`crate::process::bounded`]) happened to hold a lock at the clone.
//! * **Unprivileged:** a new user namespace maps the user's own uid and gid 1:1 (`setgroups`
//!   denied), so files, `id` and permission checks look as before. As root (CI) a PID namespace
//!   alone: a user namespace would cost root its file access to other users' files (G42).
//! * **Dies with the shim:** the init asks for SIGKILL when its parent dies
//!   (`PR_SET_PDEATHSIG`); the kernel then kills everything in the namespace. The race of a
//!   shim that died before the request is closed by the init's first write to the status pipe:
//!   with the shim gone it fails (`EPIPE`) and the init leaves, taking the namespace with it.
//! * **Where the kernel refuses** (`EPERM`/`ENOSPC`/`EINVAL`/`EUSERS`: user namespaces off,
//!   AppArmor's restriction, a container) the caller falls back to process-group supervision
//!   and records it (G43), or fails the launch when containment is required (G44).
//! * **What the shim learns** through the init's status pipe ([`Message`]): the agent's pids
//!   (read by the agent itself from `NSpid`: the host's view for the records, which the host
//!   probes, and the shim's own namespace's view for its signals — they differ only for a shim
//!   that itself runs in a namespace, G45), a start error, and the agent's true end (exit code,
//!   or the signal as a signal).
//! * **Signals:** the agent leads its own process group, so the shim's ladders signal `-pgid`
//!   from outside as before. Signals sent to the init from inside its namespace are dropped
//!   unless it handles them: it forwards SIGTERM/SIGINT/SIGHUP to the agent's group (G46).
//!   The shim's X8 sweep signals the init's adopted children directly
//!   ([`crate::process::tree`]).
//! * **Leftovers:** the init reaps every orphan of the namespace; once the agent was reaped and
//!   nothing is left it exits, so an empty namespace goes away by itself.

use std::ffi::{CString, OsStr, OsString};
use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};

/// Which containment an agent got (recorded in the step's process record and the status).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Containment {
    /// A PID namespace of its own: the kernel ends the whole tree with the shim.
    PidNamespace,
    /// Today's supervision only: a process group, the subreaper and the X8 sweep.
    ProcessGroup,
}

impl Containment {
    /// The record value: `pid-namespace` or `process-group`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::PidNamespace => "pid-namespace",
            Self::ProcessGroup => "process-group",
        }
    }
}

/// Why a PID namespace could not be made: the kernel's refusal (a fallback is possible) or any
/// other failure.
#[derive(Debug)]
pub enum NamespaceError {
    /// The kernel refused the namespace (user namespaces disabled, AppArmor, a container,
    /// the namespace limit) or its uid map: `what` says which step.
    Refused {
        /// The step that failed (`clone`, `uid_map` …).
        what: &'static str,
        /// The errno.
        error: io::Error,
    },
    /// The agent could not be started (its program, its directory): a step failure as
    /// without containment.
    Start(io::Error),
}

impl std::fmt::Display for NamespaceError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Refused { what, error } => write!(f, "the kernel refused a PID namespace ({what}: {error})"),
            Self::Start(error) => error.fmt(f),
        }
    }
}

/// Where the init keeps the sandbox's ruleset for the agent (after its stdio and status pipe).
const RULESET_FD: libc::c_int = 4;

/// Everything the agent's start needs, built before the clone (the child may not allocate).
pub struct Prepared {
    /// Program candidates in `PATH` order (one when the program names a path).
    candidates: Vec<CString>,
    /// `argv` (kept alive for `argv_ptrs`).
    _argv: Vec<CString>,
    argv_ptrs: Vec<*const libc::c_char>,
    /// The environment (kept alive for `env_ptrs`).
    _env: Vec<CString>,
    env_ptrs: Vec<*const libc::c_char>,
    cwd: CString,
    umask: Option<u32>,
    /// The OS sandbox the agent enters right before exec (G28).
    sandbox: Option<super::child_setup::Entry>,
}

impl Prepared {
    /// Prepares `argv` (program first) with environment `env`, run in `cwd` with `umask`.
    pub fn new(
        argv: &[String],
        env: Vec<(OsString, OsString)>,
        cwd: &str,
        umask: Option<u32>,
        sandbox: Option<super::child_setup::Entry>,
    ) -> io::Result<Self> {
        let nul = |e: std::ffi::NulError| io::Error::new(io::ErrorKind::InvalidInput, e);
        let program = argv
            .first()
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "empty argv"))?;
        let path = env
            .iter()
            .find(|(k, _)| k == "PATH")
            .map(|(_, v)| v.clone())
            .or_else(|| std::env::var_os("PATH"))
            .unwrap_or_else(|| OsString::from("/usr/local/bin:/usr/bin:/bin"));
        let candidates = program_candidates(program, &path).map_err(nul)?;
        let argv: Vec<CString> = argv
            .iter()
            .map(|a| CString::new(a.as_bytes()))
            .collect::<Result<_, _>>()
            .map_err(nul)?;
        let env: Vec<CString> = env
            .into_iter()
            .map(|(k, v)| {
                let mut bytes = k.into_vec();
                bytes.push(b'=');
                bytes.extend_from_slice(v.as_bytes());
                CString::new(bytes)
            })
            .collect::<Result<_, _>>()
            .map_err(nul)?;
        let argv_ptrs = argv.iter().map(|a| a.as_ptr()).chain([std::ptr::null()]).collect();
        let env_ptrs = env.iter().map(|a| a.as_ptr()).chain([std::ptr::null()]).collect();
        Ok(Self {
            candidates,
            _argv: argv,
            argv_ptrs,
            _env: env,
            env_ptrs,
            cwd: CString::new(cwd.as_bytes()).map_err(nul)?,
            umask,
            sandbox,
        })
    }
}

/// `program` itself when it names a path, else `<dir>/<program>` for every directory of `path`
/// (what `execvp` tries, decided before the clone).
fn program_candidates(program: &str, path: &OsStr) -> Result<Vec<CString>, std::ffi::NulError> {
    if program.contains('/') {
        return Ok(vec![CString::new(program)?]);
    }
    let mut out = Vec::new();
    for dir in path.as_bytes().split(|b| *b == b':') {
        let dir = if dir.is_empty() { b".".as_slice() } else { dir };
        let mut full = dir.to_vec();
        full.push(b'/');
        full.extend_from_slice(program.as_bytes());
        out.push(CString::new(full)?);
    }
    if out.is_empty() {
        out.push(CString::new(program)?);
    }
    Ok(out)
}

/// The descriptors the agent gets as 0, 1 and 2 (the caller keeps the other ends).
pub struct Stdio {
    /// Standard input (a memfd, `/dev/null` or a pipe's read end).
    pub stdin: OwnedFd,
    /// Standard output (a pipe's write end).
    pub stdout: OwnedFd,
    /// Standard error (a pipe's write end).
    pub stderr: OwnedFd,
}

/// A started contained agent.
#[derive(Debug)]
pub struct Contained {
    /// The agent's pid in the shim's namespace (= its process group id there).
    pub agent: u32,
    /// The agent's pid in `/proc`'s (the host's) view, for the records (G45).
    pub host_pid: u32,
    /// The ns init's pid: the shim's child, reaped by the shim's reaper.
    pub init: u32,
    /// The read end of the init's status pipe (non-blocking): the agent's end arrives here.
    pub status: OwnedFd,
}

/// One record of the status pipe: a tag and a value, 8 bytes, written whole (a pipe write of
/// up to `PIPE_BUF` bytes is atomic).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Message {
    /// The agent was exec'd; its pid in the shim's namespace (what the shim signals and
    /// waits by; follows [`Message::HostPid`]).
    Started(u32),
    /// The agent's pid in `/proc`'s (the host's) namespace: what the records carry (G45). The
    /// same number as `Started` unless the shim itself runs inside a PID namespace (a run
    /// launched from inside another run's agent).
    HostPid(u32),
    /// Setting up the namespace failed with this errno (uid map, `/proc/self`).
    SetupFailed(i32),
    /// The agent could not be started (chdir or exec) with this errno.
    StartFailed(i32),
    /// The agent exited with this code.
    Exited(i32),
    /// A signal ended the agent.
    Signaled(i32),
}

const TAG_STARTED: u32 = 1;
const TAG_SETUP: u32 = 2;
const TAG_START: u32 = 3;
const TAG_EXITED: u32 = 4;
const TAG_SIGNALED: u32 = 5;
const TAG_HOST_PID: u32 = 6;

impl Message {
    fn encode(self) -> [u8; 8] {
        let (tag, value) = match self {
            Self::Started(pid) => (TAG_STARTED, pid.cast_signed()),
            Self::SetupFailed(e) => (TAG_SETUP, e),
            Self::StartFailed(e) => (TAG_START, e),
            Self::Exited(code) => (TAG_EXITED, code),
            Self::Signaled(signal) => (TAG_SIGNALED, signal),
            Self::HostPid(pid) => (TAG_HOST_PID, pid.cast_signed()),
        };
        let mut out = [0_u8; 8];
        out[..4].copy_from_slice(&tag.to_ne_bytes());
        out[4..].copy_from_slice(&value.to_ne_bytes());
        out
    }

    /// Decodes one record (`None`: an unknown tag).
    pub fn decode(bytes: [u8; 8]) -> Option<Self> {
        let tag = u32::from_ne_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
        let value = i32::from_ne_bytes([bytes[4], bytes[5], bytes[6], bytes[7]]);
        Some(match tag {
            TAG_STARTED => Self::Started(value.cast_unsigned()),
            TAG_SETUP => Self::SetupFailed(value),
            TAG_START => Self::StartFailed(value),
            TAG_EXITED => Self::Exited(value),
            TAG_SIGNALED => Self::Signaled(value),
            TAG_HOST_PID => Self::HostPid(value.cast_unsigned()),
            _ => return None,
        })
    }
}

/// The uid and gid maps of an unprivileged namespace (`"<id> <id> 1"`), built before the clone.
struct Maps {
    uid: [u8; 32],
    uid_len: usize,
    gid: [u8; 32],
    gid_len: usize,
}

fn one_to_one(id: u32) -> ([u8; 32], usize) {
    let text = format!("{id} {id} 1\n");
    let mut out = [0_u8; 32];
    let len = text.len().min(out.len());
    out[..len].copy_from_slice(&text.as_bytes()[..len]);
    (out, len)
}

/// The clone flags for this user: root gets a PID namespace alone (G42), everyone else a user
/// namespace too (an unprivileged PID namespace needs one).
fn flags_and_maps() -> (libc::c_int, Option<Maps>) {
    let euid = rustix::process::geteuid().as_raw();
    if euid == 0 {
        return (libc::CLONE_NEWPID, None);
    }
    let (uid, uid_len) = one_to_one(euid);
    let (gid, gid_len) = one_to_one(rustix::process::getegid().as_raw());
    (
        libc::CLONE_NEWPID | libc::CLONE_NEWUSER,
        Some(Maps {
            uid,
            uid_len,
            gid,
            gid_len,
        }),
    )
}

/// Whether `errno` from `clone`/the uid map means "the kernel does not allow it here" (fall
/// back) rather than a broken start.
fn is_refusal(errno: i32) -> bool {
    matches!(
        errno,
        libc::EPERM | libc::ENOSPC | libc::EINVAL | libc::EUSERS | libc::EACCES | libc::ENOSYS
    )
}

/// Starts `prepared` in a new PID namespace with `stdio` (G40). Blocks until the agent was
/// exec'd or failed to start (like `std::process::Command::spawn`). The caller spawns with an
/// empty signal mask ([`crate::process::signals::unblocked`]).
pub fn spawn(prepared: &Prepared, stdio: Stdio) -> Result<Contained, NamespaceError> {
    let (mut flags, maps) = flags_and_maps();
    if prepared.sandbox.is_some_and(|entry| entry.own_network()) {
        // G36: an offline agent's namespace has no network but a loopback that is down.
        flags |= libc::CLONE_NEWNET;
    }
    let (status_r, status_w) =
        rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC).map_err(|e| NamespaceError::Start(e.into()))?;
    // SAFETY: a raw clone without CLONE_VM and with a null stack behaves like fork: the child
    // continues on a copy-on-write copy of this stack, and runs only `init`, which never
    // returns and makes async-signal-safe system calls only.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_clone,
            libc::c_long::from(flags | libc::SIGCHLD),
            0 as libc::c_long,
            0 as libc::c_long,
            0 as libc::c_long,
            0 as libc::c_long,
        )
    };
    if rc == 0 {
        // SAFETY: in the freshly cloned child, which has one thread and ends in _exit.
        unsafe {
            init(
                prepared,
                maps.as_ref(),
                &stdio,
                status_r.as_raw_fd(),
                status_w.as_raw_fd(),
            )
        }
    }
    if rc < 0 {
        let error = io::Error::last_os_error();
        let errno = error.raw_os_error().unwrap_or(0);
        return Err(if is_refusal(errno) {
            NamespaceError::Refused { what: "clone", error }
        } else {
            NamespaceError::Start(error)
        });
    }
    let init_pid = u32::try_from(rc).unwrap_or(0);
    drop(status_w);
    drop(stdio);
    let mut first = read_message(&status_r);
    let mut host_pid = None;
    if let Some(Message::HostPid(pid)) = first {
        host_pid = Some(pid);
        first = read_message(&status_r);
    }
    match first {
        Some(Message::Started(agent)) => {
            rustix::io::ioctl_fionbio(&status_r, true).map_err(|e| NamespaceError::Start(e.into()))?;
            Ok(Contained {
                agent,
                host_pid: host_pid.unwrap_or(agent),
                init: init_pid,
                status: status_r,
            })
        }
        Some(Message::SetupFailed(errno)) => {
            let error = io::Error::from_raw_os_error(errno);
            Err(if is_refusal(errno) {
                NamespaceError::Refused { what: "uid map", error }
            } else {
                NamespaceError::Start(error)
            })
        }
        Some(Message::StartFailed(errno)) => Err(NamespaceError::Start(io::Error::from_raw_os_error(errno))),
        other => Err(NamespaceError::Start(io::Error::other(format!(
            "the PID namespace's first process ended before the agent started ({other:?})"
        )))),
    }
    // The init (our child) is reaped by the shim's reaper like every other child.
}

/// Reads one whole record from a raw descriptor with plain `read(2)` (the init's side, no
/// allocation); `None` at EOF or on error.
fn read_record(fd: RawFd) -> Option<Message> {
    let mut buf = [0_u8; 8];
    let mut got = 0;
    while got < buf.len() {
        // SAFETY: read(2) into the unread rest of a local buffer.
        let n = unsafe { libc::read(fd, buf.as_mut_ptr().add(got).cast(), buf.len() - got) };
        if n < 0 && errno() == libc::EINTR {
            continue;
        }
        if n <= 0 {
            return None;
        }
        got += n.cast_unsigned();
    }
    Message::decode(buf)
}

/// Reads one whole record, retrying on EINTR; `None` at EOF or on error.
pub fn read_message(fd: &OwnedFd) -> Option<Message> {
    let mut buf = [0_u8; 8];
    let mut got = 0;
    while got < buf.len() {
        match rustix::io::read(fd, &mut buf[got..]) {
            Ok(0) => return None,
            Ok(n) => got += n,
            Err(rustix::io::Errno::INTR) => {}
            Err(_) => return None,
        }
    }
    Message::decode(buf)
}

/// Writes one record; false when the reader is gone.
fn send(fd: RawFd, message: Message) -> bool {
    let bytes = message.encode();
    loop {
        // SAFETY: write(2) from a local buffer.
        let n = unsafe { libc::write(fd, bytes.as_ptr().cast(), bytes.len()) };
        if n == 8 {
            return true;
        }
        if n < 0 && errno() == libc::EINTR {
            continue;
        }
        return false;
    }
}

fn errno() -> i32 {
    io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO)
}

/// Signals the init forwards to the agent's group (G46).
const FORWARDED: [libc::c_int; 3] = [libc::SIGTERM, libc::SIGINT, libc::SIGHUP];

extern "C" fn ignore_signal(_: libc::c_int) {}

/// Writes `bytes` to `path` (a `/proc/self` file), returning the errno on failure.
unsafe fn write_proc(path: &std::ffi::CStr, bytes: &[u8]) -> Result<(), i32> {
    // SAFETY: open/write/close are async-signal-safe and touch only these buffers.
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return Err(errno());
        }
        let n = libc::write(fd, bytes.as_ptr().cast(), bytes.len());
        let result = if n < 0 { Err(errno()) } else { Ok(()) };
        libc::close(fd);
        result
    }
}

/// The ns init: pid 1 of the new namespace. Only async-signal-safe system calls from here on.
unsafe fn init(prepared: &Prepared, maps: Option<&Maps>, stdio: &Stdio, status_r: RawFd, status_w: RawFd) -> ! {
    // SAFETY: every call below is a plain system call on descriptors and buffers prepared
    // before the clone; nothing allocates or takes a lock.
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
        libc::close(status_r);
        // Descriptors: the agent's stdio to high numbers first (they may themselves be 0–3),
        // then to 0, 1, 2, the status pipe to 3, and everything else of the shim closed — the
        // init must hold nothing the shim counts on seeing closed (the doorbell, other agents'
        // pipes), and the agent gets exactly 0, 1, 2 (F63).
        let sources = [
            stdio.stdin.as_raw_fd(),
            stdio.stdout.as_raw_fd(),
            stdio.stderr.as_raw_fd(),
            status_w,
        ];
        let mut high = [-1; 4];
        for (slot, fd) in high.iter_mut().zip(sources) {
            *slot = libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 16);
            if *slot < 0 {
                libc::_exit(127);
            }
        }
        // The sandbox's ruleset (G28) is kept too, at RULESET_FD, close-on-exec: the agent
        // enters it before exec and never holds it after.
        let ruleset = match prepared.sandbox.and_then(super::child_setup::Entry::ruleset) {
            Some(fd) => {
                let moved = libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 16);
                if moved < 0 {
                    libc::_exit(127);
                }
                moved
            }
            None => -1,
        };
        for (target, fd) in high.iter().enumerate() {
            let flags = if target == 3 { libc::O_CLOEXEC } else { 0 };
            #[allow(clippy::cast_possible_wrap, clippy::cast_possible_truncation)]
            if libc::dup3(*fd, target as libc::c_int, flags) < 0 {
                libc::_exit(127);
            }
        }
        if ruleset >= 0 && libc::dup3(ruleset, RULESET_FD, libc::O_CLOEXEC) < 0 {
            libc::_exit(127);
        }
        #[allow(clippy::cast_sign_loss)]
        close_from(RULESET_FD as libc::c_uint + 1);
        let status = 3;
        if let Some(maps) = maps {
            for (path, bytes) in [
                (c"/proc/self/setgroups", b"deny".as_slice()),
                (c"/proc/self/uid_map", &maps.uid[..maps.uid_len]),
                (c"/proc/self/gid_map", &maps.gid[..maps.gid_len]),
            ] {
                if let Err(e) = write_proc(path, bytes) {
                    send(status, Message::SetupFailed(e));
                    libc::_exit(127);
                }
            }
        }
        // Signals: blocked and taken with sigwaitinfo; a handler (never run) keeps them from
        // being discarded as "default action on a namespace init".
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&raw mut set);
        for signal in FORWARDED.iter().chain(&[libc::SIGCHLD]) {
            libc::sigaddset(&raw mut set, *signal);
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = ignore_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
            libc::sigemptyset(&raw mut action.sa_mask);
            libc::sigaction(*signal, &raw const action, std::ptr::null_mut());
        }
        libc::sigprocmask(libc::SIG_BLOCK, &raw const set, std::ptr::null_mut());

        let mut report = [0 as libc::c_int; 2];
        if libc::pipe2(report.as_mut_ptr(), libc::O_CLOEXEC) != 0 {
            send(status, Message::SetupFailed(errno()));
            libc::_exit(127);
        }
        // The agent is started like posix_spawn starts a program: sharing the init's memory
        // (CLONE_VM) on a stack of its own, the init suspended until it execs (CLONE_VFORK).
        // No page table is copied a second time; the agent only writes to its own stack and
        // the descriptors it was given.
        let mut stack = [0_u8; AGENT_STACK];
        let mut start = AgentStart {
            prepared: std::ptr::from_ref(prepared),
            report: report[1],
        };
        let top = stack.as_mut_ptr().add(AGENT_STACK).cast::<libc::c_void>();
        let agent = libc::clone(
            agent_entry,
            top,
            libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD,
            std::ptr::from_mut(&mut start).cast(),
        );
        libc::close(report[1]);
        // The init keeps none of the agent's stdio: the shim must see EOF when the agent's
        // tree closes its pipes.
        for fd in 0..3 {
            libc::close(fd);
        }
        if agent < 0 {
            send(status, Message::SetupFailed(errno()));
            libc::_exit(127);
        }
        // The agent reports its pids, then a failure if it could not exec (EOF = exec'd).
        let (mut host, mut started, mut failure) = (None, None, None);
        while let Some(message) = read_record(report[0]) {
            match message {
                Message::HostPid(pid) => host = Some(pid),
                Message::Started(pid) => started = Some(pid),
                other => failure = Some(other),
            }
        }
        libc::close(report[0]);
        match (started, failure) {
            (Some(pid), None) => {
                // A failed write means the shim is gone (it died before PR_SET_PDEATHSIG took
                // effect): leave, taking the namespace with us.
                if !send(status, Message::HostPid(host.unwrap_or(pid))) || !send(status, Message::Started(pid)) {
                    libc::_exit(1);
                }
                supervise(agent, status);
            }
            (_, Some(failure)) => {
                libc::waitpid(agent, std::ptr::null_mut(), 0);
                send(status, failure);
                libc::_exit(127);
            }
            (None, None) => {}
        }
        // The agent died before reporting anything.
        libc::waitpid(agent, std::ptr::null_mut(), 0);
        send(status, Message::SetupFailed(libc::ECHILD));
        libc::_exit(127)
    }
}

/// The init's loop once the agent runs: reap every process of the namespace, report the
/// agent's end, forward stop signals to its group; exit when the agent was reaped and nothing
/// is left.
unsafe fn supervise(agent: libc::pid_t, status: RawFd) -> ! {
    // SAFETY: sigwaitinfo/waitpid/kill on a local set and our own children only.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&raw mut set);
        for signal in FORWARDED.iter().chain(&[libc::SIGCHLD]) {
            libc::sigaddset(&raw mut set, *signal);
        }
        let mut agent_done = false;
        loop {
            // Reap first: a SIGCHLD may have merged several exits, or come before the mask.
            loop {
                let mut wstatus = 0;
                let pid = libc::waitpid(-1, &raw mut wstatus, libc::WNOHANG);
                if pid > 0 {
                    if pid == agent {
                        agent_done = true;
                        let message = if libc::WIFSIGNALED(wstatus) {
                            Message::Signaled(libc::WTERMSIG(wstatus))
                        } else {
                            Message::Exited(libc::WEXITSTATUS(wstatus))
                        };
                        send(status, message);
                    }
                    continue;
                }
                if pid < 0 && errno() == libc::ECHILD && agent_done {
                    libc::_exit(0);
                }
                break;
            }
            let mut info: libc::siginfo_t = std::mem::zeroed();
            let signal = libc::sigwaitinfo(&raw const set, &raw mut info);
            if FORWARDED.contains(&signal) && !agent_done {
                libc::kill(-agent, signal);
            }
        }
    }
}

/// The agent's stack while it shares the init's memory (until its exec): the few frames of
/// [`agent_child`] and the libc calls it makes.
const AGENT_STACK: usize = 64 * 1024;

/// What the agent's start reads from the init's memory.
struct AgentStart {
    prepared: *const Prepared,
    report: RawFd,
}

/// The entry of the agent's clone.
extern "C" fn agent_entry(arg: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `arg` points to the init's `AgentStart`, alive while the init is suspended
    // (CLONE_VFORK) — until this child execs or exits, which `agent_child` always does.
    unsafe {
        let start = &*arg.cast::<AgentStart>();
        agent_child(&*start.prepared, start.report)
    }
}

/// The agent, in the namespace: its own group, the shim's umask, directory and signal state,
/// its outer pid reported, then exec. Failures are reported as `StartFailed(errno)`.
unsafe fn agent_child(prepared: &Prepared, report: RawFd) -> ! {
    // SAFETY: plain system calls on prepared, NUL-terminated buffers; ends in exec or _exit.
    unsafe {
        libc::setpgid(0, 0);
        if let Some(mask) = prepared.umask {
            libc::umask(mask & 0o777);
        }
        let empty: libc::sigset_t = {
            let mut s: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&raw mut s);
            s
        };
        for signal in 1..32 {
            if signal != libc::SIGKILL && signal != libc::SIGSTOP {
                libc::signal(signal, libc::SIG_DFL);
            }
        }
        libc::sigprocmask(libc::SIG_SETMASK, &raw const empty, std::ptr::null_mut());
        // Our pids: `NSpid` lists them from /proc's (the host's) namespace down to our own.
        // The first is what the records carry (G45); the one before our own namespace's is
        // the shim's view, which its signals and process-group checks use (they differ when
        // the shim itself runs inside a namespace: a run launched from inside an agent).
        let (host, shim_view) = own_pids();
        if host == 0 || shim_view == 0 {
            send(report, Message::SetupFailed(libc::EINVAL));
            libc::_exit(127);
        }
        send(report, Message::HostPid(host));
        send(report, Message::Started(shim_view));
        if libc::chdir(prepared.cwd.as_ptr()) != 0 {
            send(report, Message::StartFailed(errno()));
            libc::_exit(127);
        }
        // The OS sandbox (G28, G49), the last step before exec: no_new_privs and
        // landlock_restrict_self on the ruleset the init keeps at RULESET_FD (two system
        // calls; a refusal is reported like a failed exec).
        if let Some(entry) = prepared.sandbox
            && let Err(error) = super::child_setup::enter(&entry.ruleset_at(RULESET_FD))
        {
            send(
                report,
                Message::StartFailed(error.raw_os_error().unwrap_or(libc::EPERM)),
            );
            libc::_exit(127);
        }
        let mut last = libc::ENOENT;
        for candidate in &prepared.candidates {
            libc::execve(
                candidate.as_ptr(),
                prepared.argv_ptrs.as_ptr(),
                prepared.env_ptrs.as_ptr(),
            );
            let e = errno();
            // execvp's rule: keep looking past missing or inaccessible entries, remember EACCES.
            if e == libc::EACCES {
                last = e;
            } else if e != libc::ENOENT && e != libc::ENOTDIR {
                last = e;
                break;
            }
        }
        send(report, Message::StartFailed(last));
        libc::_exit(127)
    }
}

/// The calling process's pid in /proc's namespace and in its parent namespace, from the
/// `NSpid` line of `/proc/self/status` (0 when unreadable). Async-signal-safe: a stack
/// buffer and plain system calls.
fn own_pids() -> (u32, u32) {
    let mut buf = [0_u8; 4096];
    // SAFETY: open/read/close on a local buffer.
    let len = unsafe {
        let fd = libc::open(c"/proc/self/status".as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return (0, 0);
        }
        let mut len = 0;
        while len < buf.len() {
            let n = libc::read(fd, buf.as_mut_ptr().add(len).cast(), buf.len() - len);
            if n <= 0 {
                break;
            }
            len += n.cast_unsigned();
        }
        libc::close(fd);
        len
    };
    nspid(&buf[..len])
}

/// The first and the second-to-last number of the `NSpid:` line in a `/proc/<pid>/status`
/// text (the first twice when there is one level; `(0, 0)` without the line).
fn nspid(status: &[u8]) -> (u32, u32) {
    let key = b"NSpid:";
    let Some(at) = status.windows(key.len()).position(|w| w == key) else {
        return (0, 0);
    };
    let line = &status[at + key.len()..];
    let line = &line[..line.iter().position(|b| *b == b'\n').unwrap_or(line.len())];
    let mut numbers = [0_u32; 40];
    let mut count = 0;
    for field in line.split(|b| *b == b'\t' || *b == b' ').filter(|f| !f.is_empty()) {
        let mut n: u32 = 0;
        for b in field {
            if !b.is_ascii_digit() {
                return (0, 0);
            }
            n = n.saturating_mul(10).saturating_add(u32::from(b - b'0'));
        }
        if count < numbers.len() {
            numbers[count] = n;
            count += 1;
        }
    }
    match count {
        0 => (0, 0),
        1 => (numbers[0], numbers[0]),
        n => (numbers[0], numbers[n - 2]),
    }
}

/// Closes every descriptor from `first` up (close_range, or one by one on old kernels).
unsafe fn close_from(first: libc::c_uint) {
    // SAFETY: close_range/close on descriptor numbers only.
    unsafe {
        if libc::syscall(libc::SYS_close_range, first, libc::c_uint::MAX, 0) != 0 {
            #[allow(clippy::cast_possible_wrap)]
            for fd in first as libc::c_int..4096 {
                libc::close(fd);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// G46: every status record survives the pipe's 8-byte encoding, and an unknown tag is
    /// refused rather than misread.
    #[test]
    fn g46_status_messages_round_trip() {
        for message in [
            Message::Started(4_000_000),
            Message::SetupFailed(libc::EPERM),
            Message::StartFailed(libc::ENOENT),
            Message::Exited(0),
            Message::Exited(255),
            Message::Signaled(libc::SIGKILL),
        ] {
            assert_eq!(Message::decode(message.encode()), Some(message));
        }
        let mut unknown = Message::Exited(1).encode();
        unknown[..4].copy_from_slice(&99_u32.to_ne_bytes());
        assert_eq!(Message::decode(unknown), None);
    }

    /// G41: the program is looked up in `PATH` before the clone, as `execvp` would, and a
    /// program naming a path is used as it is.
    #[test]
    fn g41_program_candidates_follow_path() {
        let found = program_candidates("sh", OsStr::new("/a:/b/c::/d")).unwrap();
        let found: Vec<&str> = found.iter().map(|c| c.to_str().unwrap()).collect();
        assert_eq!(found, ["/a/sh", "/b/c/sh", "./sh", "/d/sh"]);
        let given = program_candidates("./bin/agent", OsStr::new("/a")).unwrap();
        assert_eq!(given[0].to_str().unwrap(), "./bin/agent");
        assert!(program_candidates("a\0b", OsStr::new("/a")).is_err());
    }

    /// G45: the host's pid is the first of `NSpid`, the shim's the one before the agent's own.
    #[test]
    fn g45_pids_come_from_nspid() {
        assert_eq!(nspid(b"Name:\tsh\nNSpid:\t500\t2\nNSsid:\t1\n"), (500, 500));
        assert_eq!(nspid(b"NSpid:\t900\t31\t2\n"), (900, 31));
        assert_eq!(nspid(b"Pid:\t7\n"), (0, 0));
    }

    /// G42: an unprivileged namespace maps exactly the user's own ids, one line each.
    #[test]
    fn g42_maps_are_one_to_one() {
        let (bytes, len) = one_to_one(4242);
        assert_eq!(&bytes[..len], b"4242 4242 1\n");
    }
}
