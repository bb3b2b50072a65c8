//! The rename/mkdir retry policy (A7) and the sleep seam it uses.
//!
//! Retries happen only for `EPERM`, `EBUSY`, `EACCES` and only when enabled — off by default on
//! Linux and the other Unixes, where these errors are real permission problems and not
//! transient locks. The ladder is 10, 25, 50, 100, 200, 500, 1000, 2000, 4000 ms;
//! `SUBLAUNCH_FS_RETRY_MAX_TOTAL_MS` clamps its total while keeping its nine entries.

use rustix::io::Errno;
use std::fmt::Debug;
use std::sync::Mutex;
use std::time::Duration;

/// The environment variable that clamps the total retry sleep (A7; honoured in production).
pub const MAX_TOTAL_ENV: &str = "SUBLAUNCH_FS_RETRY_MAX_TOTAL_MS";

/// The default ladder of waits in milliseconds (A7).
pub const DEFAULT_LADDER_MS: [u64; 9] = [10, 25, 50, 100, 200, 500, 1000, 2000, 4000];

/// Blocking sleep seam, so retry tests never sleep.
pub trait Sleeper: Send + Sync + Debug {
    /// Sleeps for `duration`.
    fn sleep(&self, duration: Duration);
}

/// Sleeps the calling thread. Only reached when retries are enabled (never by default on
/// Unix); callers on an async runtime run writes on a blocking thread.
#[derive(Clone, Copy, Debug, Default)]
pub struct ThreadSleeper;

impl Sleeper for ThreadSleeper {
    fn sleep(&self, duration: Duration) {
        std::thread::sleep(duration);
    }
}

/// Records the requested sleeps instead of sleeping (tests).
#[derive(Debug, Default)]
pub struct RecordingSleeper {
    waits: Mutex<Vec<u64>>,
}

impl RecordingSleeper {
    /// The waits requested so far, in milliseconds.
    pub fn waits_ms(&self) -> Vec<u64> {
        self.waits.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

impl Sleeper for RecordingSleeper {
    fn sleep(&self, duration: Duration) {
        self.waits
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(u64::try_from(duration.as_millis()).unwrap_or(u64::MAX));
    }
}

/// The error for an invalid `SUBLAUNCH_FS_RETRY_MAX_TOTAL_MS` (F41).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{MAX_TOTAL_ENV} must be a non-negative integer number of milliseconds.")]
pub struct InvalidRetryTotal;

/// When and how long renames and mkdirs are retried (A7).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RetryPolicy {
    enabled: bool,
    ladder_ms: Vec<u64>,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self::platform_default()
    }
}

impl RetryPolicy {
    /// The platform default: enabled only on Windows (upstream `retryRenameErrors`), with the
    /// full ladder.
    pub fn platform_default() -> Self {
        Self {
            enabled: cfg!(windows),
            ladder_ms: DEFAULT_LADDER_MS.to_vec(),
        }
    }

    /// The platform default with the total clamped by `SUBLAUNCH_FS_RETRY_MAX_TOTAL_MS` when
    /// set (an empty value counts as unset). Hosts call this at start and fail with the error.
    pub fn from_env() -> Result<Self, InvalidRetryTotal> {
        Self::from_setting(std::env::var_os(MAX_TOTAL_ENV).as_deref())
    }

    /// The platform default with the total clamped by a `SUBLAUNCH_FS_RETRY_MAX_TOTAL_MS`
    /// value (`None` or empty: unset).
    pub fn from_setting(value: Option<&std::ffi::OsStr>) -> Result<Self, InvalidRetryTotal> {
        let policy = Self::platform_default();
        match value {
            None => Ok(policy),
            Some(value) => {
                let value = value.to_str().ok_or(InvalidRetryTotal)?;
                if value.trim().is_empty() {
                    return Ok(policy);
                }
                Ok(policy.with_max_total_ms(parse_max_total(value)?))
            }
        }
    }

    /// The same policy with retries switched on or off.
    #[must_use]
    pub fn enabled(mut self, enabled: bool) -> Self {
        self.enabled = enabled;
        self
    }

    /// The same policy with an explicit ladder (tests: `[1, 2, 3]`).
    #[must_use]
    pub fn with_ladder(mut self, ladder_ms: Vec<u64>) -> Self {
        self.ladder_ms = ladder_ms;
        self
    }

    /// The same policy with the ladder's total clamped to `max_total_ms`, keeping its length.
    #[must_use]
    pub fn with_max_total_ms(mut self, max_total_ms: u64) -> Self {
        self.ladder_ms = clamp_ladder(&self.ladder_ms, max_total_ms);
        self
    }

    /// Whether retries are enabled.
    pub fn is_enabled(&self) -> bool {
        self.enabled
    }

    /// The ladder of waits in milliseconds.
    pub fn ladder_ms(&self) -> &[u64] {
        &self.ladder_ms
    }

    /// The wait before retry number `attempt` (0-based) after `errno`, or `None` to give up.
    pub fn wait_before_retry(&self, errno: Errno, attempt: usize) -> Option<Duration> {
        if !self.enabled || !is_retryable(errno) {
            return None;
        }
        self.ladder_ms.get(attempt).map(|ms| Duration::from_millis(*ms))
    }

    /// Runs `op` with this policy: EINTR is retried transparently, EPERM/EBUSY/EACCES up to the
    /// ladder length when enabled, sleeping through `sleeper`.
    pub fn run<T>(&self, sleeper: &dyn Sleeper, mut op: impl FnMut() -> Result<T, Errno>) -> Result<T, Errno> {
        let mut attempt = 0;
        loop {
            match op() {
                Err(Errno::INTR) => {}
                Err(errno) => match self.wait_before_retry(errno, attempt) {
                    Some(wait) => {
                        sleeper.sleep(wait);
                        attempt += 1;
                    }
                    None => return Err(errno),
                },
                Ok(value) => return Ok(value),
            }
        }
    }
}

/// The errors A7 retries (Windows-lock style).
pub fn is_retryable(errno: Errno) -> bool {
    matches!(errno, Errno::PERM | Errno::BUSY | Errno::ACCESS)
}

/// Parses a `SUBLAUNCH_FS_RETRY_MAX_TOTAL_MS` value: ASCII digits only (surrounding whitespace
/// allowed).
pub fn parse_max_total(value: &str) -> Result<u64, InvalidRetryTotal> {
    let trimmed = value.trim();
    if trimmed.is_empty() || !trimmed.bytes().all(|b| b.is_ascii_digit()) {
        return Err(InvalidRetryTotal);
    }
    trimmed.parse().map_err(|_| InvalidRetryTotal)
}

/// Scales `ladder` so its sum is exactly `max_total` (when it exceeds it), keeping the number
/// of entries and their proportions (largest-remainder rounding).
pub fn clamp_ladder(ladder: &[u64], max_total: u64) -> Vec<u64> {
    let total: u128 = ladder.iter().map(|v| u128::from(*v)).sum();
    if total <= u128::from(max_total) || total == 0 {
        return ladder.to_vec();
    }
    let max = u128::from(max_total);
    let mut scaled: Vec<u64> = Vec::with_capacity(ladder.len());
    let mut remainders: Vec<(u128, usize)> = Vec::with_capacity(ladder.len());
    for (i, v) in ladder.iter().enumerate() {
        let exact = u128::from(*v) * max;
        scaled.push(u64::try_from(exact / total).unwrap_or(u64::MAX));
        remainders.push((exact % total, i));
    }
    let assigned: u128 = scaled.iter().map(|v| u128::from(*v)).sum();
    let mut left = max - assigned;
    // Largest remainder first; ties go to the later (larger) entry.
    remainders.sort_by(|a, b| b.0.cmp(&a.0).then(b.1.cmp(&a.1)));
    for (_, i) in remainders {
        if left == 0 {
            break;
        }
        scaled[i] += 1;
        left -= 1;
    }
    scaled
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn f41_invalid_totals_are_rejected_with_the_exact_message() {
        for bad in ["abc", "-1", "1.5", "1e3", "+3", "0x10"] {
            assert_eq!(parse_max_total(bad), Err(InvalidRetryTotal), "{bad}");
        }
        assert_eq!(
            InvalidRetryTotal.to_string(),
            "SUBLAUNCH_FS_RETRY_MAX_TOTAL_MS must be a non-negative integer number of milliseconds."
        );
        assert_eq!(parse_max_total(" 30 "), Ok(30));
    }

    #[test]
    fn f41_clamped_ladder_keeps_nine_entries_summing_to_the_total() {
        for total in [0u64, 1, 7, 30, 1000, 7884] {
            let ladder = clamp_ladder(&DEFAULT_LADDER_MS, total);
            assert_eq!(ladder.len(), 9);
            assert_eq!(ladder.iter().sum::<u64>(), total, "{ladder:?}");
            assert!(
                ladder.windows(2).all(|w| w[0] <= w[1]),
                "stays non-decreasing: {ladder:?}"
            );
        }
        assert_eq!(
            clamp_ladder(&DEFAULT_LADDER_MS, 100_000),
            DEFAULT_LADDER_MS.to_vec(),
            "a larger total changes nothing"
        );
    }

    #[test]
    fn a7_only_permission_style_errors_are_retried_and_only_when_enabled() {
        let off = RetryPolicy::platform_default();
        assert!(!off.is_enabled(), "off by default on Unix");
        assert_eq!(off.wait_before_retry(Errno::PERM, 0), None);
        let on = off.enabled(true);
        assert_eq!(on.wait_before_retry(Errno::PERM, 0), Some(Duration::from_millis(10)));
        assert_eq!(on.wait_before_retry(Errno::BUSY, 8), Some(Duration::from_millis(4000)));
        assert_eq!(on.wait_before_retry(Errno::ACCESS, 9), None, "ladder exhausted");
        assert_eq!(on.wait_before_retry(Errno::NOENT, 0), None, "ENOENT is never retried");
    }

    #[test]
    fn a7_run_retries_with_the_ladder_and_eintr_transparently() {
        let sleeper = RecordingSleeper::default();
        let policy = RetryPolicy::platform_default().enabled(true).with_ladder(vec![1, 2, 3]);
        let mut script = vec![Err(Errno::PERM), Err(Errno::INTR), Err(Errno::BUSY), Ok(7)].into_iter();
        let mut calls = 0;
        let result = policy.run(&sleeper, || {
            calls += 1;
            script.next().unwrap()
        });
        assert_eq!(result, Ok(7));
        assert_eq!(calls, 4);
        assert_eq!(sleeper.waits_ms(), vec![1, 2], "EINTR does not consume the ladder");

        let sleeper = RecordingSleeper::default();
        let exhausted: Result<(), Errno> = policy.run(&sleeper, || Err(Errno::PERM));
        assert_eq!(exhausted, Err(Errno::PERM));
        assert_eq!(sleeper.waits_ms(), vec![1, 2, 3]);
    }
}
