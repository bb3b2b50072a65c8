//! Signal handling without a signal fd (R3, X9, H9).
//!
//! The handled signals (`SIGTERM`, `SIGINT`, `SIGHUP`, `SIGUSR1`, `SIGUSR2`, `SIGCHLD`) get a handler that
//! only counts them in an atomic. They are *blocked* while the shim works and delivered only
//! inside [`wait`], which is `ppoll(2)` with an empty signal mask — the race-free pselect
//! pattern: a signal that arrives while the shim checks a file stays pending and interrupts the
//! next wait at once. So no self-pipe or signalfd exists, and before commit the shim holds no
//! descriptor but 0–3 (H9). The agent is always spawned with an empty mask ([`unblocked`]).
//!
//! Every other disposition is reset to the default, except `SIGPIPE`, which stays ignored (the
//! Rust runtime's choice, kept so a vanished reader can never kill the shim; the agent gets the
//! default back from `std::process::Command`).

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

/// The signals the shim handles.
pub const HANDLED: [i32; 6] = [
    libc::SIGTERM,
    libc::SIGINT,
    libc::SIGHUP,
    libc::SIGUSR1,
    libc::SIGUSR2,
    libc::SIGCHLD,
];

/// Signals that mean "stop" (X9): before commit R7, after commit a stop request.
pub const STOP_SIGNALS: [i32; 3] = [libc::SIGTERM, libc::SIGINT, libc::SIGHUP];

static COUNTS: [AtomicU32; 32] = [const { AtomicU32::new(0) }; 32];

extern "C" fn on_signal(signal: libc::c_int) {
    if let Some(slot) = usize::try_from(signal).ok().and_then(|i| COUNTS.get(i)) {
        slot.fetch_add(1, Ordering::Relaxed);
    }
}

/// Signals received since the last [`take`], with their counts, in a fixed order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Received {
    counts: [u32; 32],
}

impl Received {
    /// How often `signal` arrived.
    pub fn count(&self, signal: i32) -> u32 {
        usize::try_from(signal)
            .ok()
            .and_then(|i| self.counts.get(i))
            .copied()
            .unwrap_or(0)
    }

    /// The stop signals that arrived, one entry per delivery, in `STOP_SIGNALS` order.
    pub fn stops(&self) -> Vec<i32> {
        STOP_SIGNALS
            .iter()
            .flat_map(|s| std::iter::repeat_n(*s, self.count(*s) as usize))
            .collect()
    }

    /// Whether nothing arrived.
    pub fn is_empty(&self) -> bool {
        self.counts.iter().all(|c| *c == 0)
    }
}

/// Takes (and clears) the signals received so far.
pub fn take() -> Received {
    let mut received = Received::default();
    for (i, slot) in COUNTS.iter().enumerate() {
        received.counts[i] = slot.swap(0, Ordering::Relaxed);
    }
    received
}

/// Puts a stop signal back as if it had just arrived (a hook that consumed it while hanging
/// hands it on to the caller this way).
pub fn requeue(signal: i32) {
    if let Some(slot) = usize::try_from(signal).ok().and_then(|i| COUNTS.get(i)) {
        slot.fetch_add(1, Ordering::Relaxed);
    }
}

fn set_of(signals: &[i32]) -> libc::sigset_t {
    // SAFETY: sigemptyset/sigaddset initialise and fill a local sigset_t.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&raw mut set);
        for s in signals {
            libc::sigaddset(&raw mut set, *s);
        }
        set
    }
}

fn set_disposition(signal: i32, handler: libc::sighandler_t, flags: libc::c_int) -> std::io::Result<()> {
    // SAFETY: a zeroed sigaction with a valid handler value (SIG_DFL, SIG_IGN or an
    // async-signal-safe extern "C" fn that only touches atomics) and an empty mask.
    let rc = unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = handler;
        action.sa_flags = flags;
        libc::sigemptyset(&raw mut action.sa_mask);
        libc::sigaction(signal, &raw const action, std::ptr::null_mut())
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Ignores `signal` (the session dance of `hygiene`, the `hang-noterm` test hook).
pub fn ignore(signal: i32) {
    let _ = set_disposition(signal, libc::SIG_IGN, 0);
}

/// R3: resets every disposition to the default, keeps `SIGPIPE` ignored, installs the counting
/// handler for [`HANDLED`] and sets the mask to exactly the handled set (see the module doc).
pub fn install() {
    for signal in 1..=64 {
        let skip = signal == libc::SIGKILL
            || signal == libc::SIGSTOP
            || (32..libc::SIGRTMIN()).contains(&signal)
            || HANDLED.contains(&signal);
        if skip {
            continue;
        }
        let disposition = if signal == libc::SIGPIPE {
            libc::SIG_IGN
        } else {
            libc::SIG_DFL
        };
        let _ = set_disposition(signal, disposition, 0);
    }
    let handler = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
    for signal in HANDLED {
        let flags = libc::SA_RESTART | if signal == libc::SIGCHLD { libc::SA_NOCLDSTOP } else { 0 };
        if let Err(e) = set_disposition(signal, handler, flags) {
            eprintln!("sublaunch-shim: cannot handle signal {}: {e}", name(signal));
        }
    }
    block_handled();
}

/// Blocks the handled signals (the first thing the shim does, so a stop signal that arrives
/// during start-up stays pending until the handlers exist instead of killing the shim).
pub fn block_handled() {
    let set = set_of(&HANDLED);
    // SAFETY: sets this (single) thread's mask from a valid sigset_t.
    unsafe {
        libc::pthread_sigmask(libc::SIG_SETMASK, &raw const set, std::ptr::null_mut());
    }
}

/// Runs `f` with an empty signal mask (spawning the agent: it must not inherit blocked
/// signals). Signals delivered meanwhile are counted as usual.
pub fn unblocked<T>(f: impl FnOnce() -> T) -> T {
    let empty = set_of(&[]);
    // SAFETY: valid sigset_t; restored right after.
    unsafe {
        libc::pthread_sigmask(libc::SIG_SETMASK, &raw const empty, std::ptr::null_mut());
    }
    let value = f();
    block_handled();
    value
}

/// Waits until one of `fds` is ready, a handled signal arrives, or `timeout` passes
/// (`None` = no limit). Returns the number of ready descriptors (0 on timeout or signal).
pub fn wait(fds: &mut [libc::pollfd], timeout: Option<Duration>) -> usize {
    let ts = timeout.map(|t| libc::timespec {
        tv_sec: libc::time_t::try_from(t.as_secs()).unwrap_or(libc::time_t::MAX),
        tv_nsec: libc::c_long::from(t.subsec_nanos().min(999_999_999) as i32),
    });
    let empty = set_of(&[]);
    let ts_ptr = ts.as_ref().map_or(std::ptr::null(), std::ptr::from_ref);
    let nfds = libc::nfds_t::try_from(fds.len()).unwrap_or(0);
    // SAFETY: `fds` is a valid pollfd slice, `ts_ptr` null or a local timespec, `empty` a valid
    // sigset_t; ppoll installs it only for the duration of the call.
    let rc = unsafe { libc::ppoll(fds.as_mut_ptr(), nfds, ts_ptr, &raw const empty) };
    usize::try_from(rc).unwrap_or(0)
}

/// Sleeps for `duration` while still letting signals be counted (test-hook sleeps).
pub fn sleep(duration: Duration) {
    let until = std::time::Instant::now() + duration;
    loop {
        let left = until.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            return;
        }
        wait(&mut [], Some(left));
    }
}

pub use sublaunch_protocol::os::processes::signal_name as name;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_conventional() {
        assert_eq!(name(libc::SIGTERM), "SIGTERM");
        assert_eq!(name(libc::SIGKILL), "SIGKILL");
        assert_eq!(name(40), "SIG40");
    }

    #[test]
    fn stops_lists_each_delivery() {
        let mut r = Received::default();
        r.counts[libc::SIGTERM as usize] = 2;
        r.counts[libc::SIGHUP as usize] = 1;
        assert_eq!(r.stops(), vec![libc::SIGTERM, libc::SIGTERM, libc::SIGHUP]);
        assert!(!r.is_empty());
    }
}
