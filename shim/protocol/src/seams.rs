//! The bundle of test seams (§T) every directory handle carries: filesystem, clock, random
//! source, sleeper, retry policy and the pid used in temp names.

use crate::clock::{Clock, SystemClock};
use crate::fs::{Fs, RealFs};
use crate::random::{OsRandom, RandomSource};
use crate::retry::{InvalidRetryTotal, RetryPolicy, Sleeper, ThreadSleeper};
use std::sync::{Arc, OnceLock};

/// The injectable environment of the run-file operations.
#[derive(Clone, Debug)]
pub struct Seams {
    /// Filesystem calls.
    pub fs: Arc<dyn Fs>,
    /// Monotonic and wall clocks.
    pub clock: Arc<dyn Clock>,
    /// Random values for temp names and ids.
    pub random: Arc<dyn RandomSource>,
    /// Sleeps between retries (A7).
    pub sleeper: Arc<dyn Sleeper>,
    /// Rename/mkdir retry policy (A7).
    pub retry: RetryPolicy,
    /// The pid written into temp names (A2).
    pub pid: u32,
}

impl Default for Seams {
    fn default() -> Self {
        Self::system()
    }
}

impl Seams {
    /// The real OS with the platform-default retry policy (no environment read).
    pub fn system() -> Self {
        Self {
            fs: Arc::new(RealFs),
            clock: Arc::new(SystemClock),
            random: Arc::new(OsRandom),
            sleeper: Arc::new(ThreadSleeper),
            retry: RetryPolicy::platform_default(),
            pid: std::process::id(),
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

    /// A shared, process-wide default used by [`crate::dir::Dir::open`].
    pub fn shared_default() -> Arc<Self> {
        static DEFAULT: OnceLock<Arc<Seams>> = OnceLock::new();
        DEFAULT.get_or_init(|| Arc::new(Self::system())).clone()
    }

    /// Replaces the filesystem.
    #[must_use]
    pub fn with_fs(mut self, fs: Arc<dyn Fs>) -> Self {
        self.fs = fs;
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
