//! The operating system as host and shim see it (§T), split by capability as wasmtime-wasi
//! splits WASI: files, processes, clocks, randomness and the sleeps between retries. Every
//! directory handle carries one [`Os`]. Tests swap a capability for a scripted one, and the
//! fault hooks of test builds ([`faults`]) are implementations of the same capabilities: a
//! host errno fault is a [`files::Files`] that fails one document's write, a shifted wall
//! clock is a [`clock::Clock`].

pub mod clock;
pub mod faults;
pub mod files;
pub mod memfd;
pub mod processes;
pub mod random;
pub mod retry;

use self::clock::{Clock, SystemClock};
use self::files::{Files, RealFiles};
use self::processes::{Processes, RealProcesses};
use self::random::{OsRandom, RandomSource};
use self::retry::{InvalidRetryTotal, RetryPolicy, Sleeper, ThreadSleeper};
use std::sync::{Arc, OnceLock};

/// The capabilities the run-file operations use, plus the pid written into temp names.
#[derive(Clone, Debug)]
pub struct Os {
    /// Filesystem calls.
    pub files: Arc<dyn Files>,
    /// Signals to processes.
    pub processes: Arc<dyn Processes>,
    /// Monotonic and wall clocks.
    pub clock: Arc<dyn Clock>,
    /// Random values for temp names and ids.
    pub random: Arc<dyn RandomSource>,
    /// Sleeps between retries (A7).
    pub sleeper: Arc<dyn Sleeper>,
    /// Rename/mkdir retry policy (A7).
    pub retry: RetryPolicy,
    /// The pid written into temp names (A2), as `/proc` names it (G45): a writer inside a
    /// contained agent's pid namespace (a nested run) is then judged by the pid a sweeper
    /// outside can probe, not by its namespace's small number.
    pub pid: u32,
}

impl Default for Os {
    fn default() -> Self {
        Self::system()
    }
}

impl Os {
    /// The real OS with the platform-default retry policy (no environment read).
    pub fn system() -> Self {
        Self {
            files: Arc::new(RealFiles),
            processes: Arc::new(RealProcesses),
            clock: Arc::new(SystemClock),
            random: Arc::new(OsRandom),
            sleeper: Arc::new(ThreadSleeper),
            retry: RetryPolicy::platform_default(),
            pid: crate::procinfo::own_host_pid(),
        }
    }

    /// The real OS with the retry policy from `SUBLAUNCH_FS_RETRY_MAX_TOTAL_MS` (A7). Host and
    /// shim call this once at start; an invalid value is a start error (F41).
    pub fn from_env() -> Result<Self, InvalidRetryTotal> {
        Ok(Self {
            retry: RetryPolicy::from_env()?,
            ..Self::system()
        })
    }

    /// The real OS with the retry policy from a `SUBLAUNCH_FS_RETRY_MAX_TOTAL_MS` value.
    pub fn with_retry_setting(value: Option<&std::ffi::OsStr>) -> Result<Self, InvalidRetryTotal> {
        Ok(Self {
            retry: RetryPolicy::from_setting(value)?,
            ..Self::system()
        })
    }

    /// A shared, process-wide default used by [`crate::files::dir::Dir::open`].
    pub fn shared_default() -> Arc<Self> {
        static DEFAULT: OnceLock<Arc<Os>> = OnceLock::new();
        DEFAULT.get_or_init(|| Arc::new(Self::system())).clone()
    }

    /// Replaces the filesystem.
    #[must_use]
    pub fn with_files(mut self, files: Arc<dyn Files>) -> Self {
        self.files = files;
        self
    }

    /// Replaces the processes capability.
    #[must_use]
    pub fn with_processes(mut self, processes: Arc<dyn Processes>) -> Self {
        self.processes = processes;
        self
    }

    /// Replaces the clock.
    #[must_use]
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// Replaces the random source.
    #[must_use]
    pub fn with_random(mut self, random: Arc<dyn RandomSource>) -> Self {
        self.random = random;
        self
    }

    /// Replaces the sleeper.
    #[must_use]
    pub fn with_sleeper(mut self, sleeper: Arc<dyn Sleeper>) -> Self {
        self.sleeper = sleeper;
        self
    }

    /// Replaces the retry policy.
    #[must_use]
    pub fn with_retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self
    }

    /// Replaces the pid used in temp names.
    #[must_use]
    pub fn with_pid(mut self, pid: u32) -> Self {
        self.pid = pid;
        self
    }

    /// Wraps in an `Arc` for handing to directory handles.
    pub fn shared(self) -> Arc<Self> {
        Arc::new(self)
    }
}
