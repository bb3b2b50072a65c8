//! Time os (§T): a monotonic clock for deadlines and durations, a wall clock (epoch ms) for
//! JSON timestamps. Deadlines never use the wall clock (K13, X2, W3), so a wall jump cannot
//! shorten or extend a wait (F56, F57).

use std::fmt::Debug;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// The clock seam: `monotonic()` for deadlines, `wall_ms()` for timestamps written to files.
pub trait Clock: Send + Sync + Debug {
    /// A monotonic instant (never jumps).
    fn monotonic(&self) -> Instant;
    /// Wall-clock time in epoch milliseconds (`Date.now()` equivalent).
    fn wall_ms(&self) -> u64;
}

/// The real clocks of the OS.
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn monotonic(&self) -> Instant {
        Instant::now()
    }

    fn wall_ms(&self) -> u64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
    }
}

/// A clock whose wall time can be shifted while its monotonic time stays the inner clock's (the
/// shim fault `wallclock:<±ms>`, F57, which may fire at any point of a run).
#[derive(Debug)]
pub struct ShiftedClock {
    inner: Arc<dyn Clock>,
    shift_ms: AtomicI64,
}

impl ShiftedClock {
    /// Wraps `inner`, shifting its wall clock by `shift_ms` (may be negative).
    pub fn new(inner: Arc<dyn Clock>, shift_ms: i64) -> Self {
        Self {
            inner,
            shift_ms: AtomicI64::new(shift_ms),
        }
    }

    /// Shifts the wall clock by `delta_ms` more (cumulative).
    pub fn shift_wall(&self, delta_ms: i64) {
        self.shift_ms.fetch_add(delta_ms, Ordering::Relaxed);
    }
}

impl Clock for ShiftedClock {
    fn monotonic(&self) -> Instant {
        self.inner.monotonic()
    }

    fn wall_ms(&self) -> u64 {
        shift(self.inner.wall_ms(), self.shift_ms.load(Ordering::Relaxed))
    }
}

/// The system clock with its wall time shifted by the number of milliseconds in a file, read at
/// each look (test-hooks builds; a missing or unreadable file shifts nothing).
#[cfg(feature = "test-hooks")]
#[derive(Debug)]
pub struct FileShiftedClock {
    file: std::path::PathBuf,
}

#[cfg(feature = "test-hooks")]
impl FileShiftedClock {
    /// The clock shifted by the number in `file`.
    pub fn new(file: std::path::PathBuf) -> Self {
        Self { file }
    }
}

#[cfg(feature = "test-hooks")]
impl Clock for FileShiftedClock {
    fn monotonic(&self) -> Instant {
        SystemClock.monotonic()
    }

    fn wall_ms(&self) -> u64 {
        let by = std::fs::read_to_string(&self.file)
            .ok()
            .and_then(|text| text.trim().parse::<i64>().ok())
            .unwrap_or(0);
        shift(SystemClock.wall_ms(), by)
    }
}

fn shift(ms: u64, by: i64) -> u64 {
    if by >= 0 {
        ms.saturating_add(by.unsigned_abs())
    } else {
        ms.saturating_sub(by.unsigned_abs())
    }
}

/// Milliseconds between two monotonic instants (saturating at 0).
pub fn elapsed_ms(from: Instant, to: Instant) -> u64 {
    u64::try_from(to.saturating_duration_since(from).as_millis()).unwrap_or(u64::MAX)
}

/// A hand-driven clock for tests: time moves only through [`ManualClock::advance`] (both clocks)
/// and [`ManualClock::jump_wall`] (wall only).
#[derive(Debug)]
pub struct ManualClock {
    base: Instant,
    state: Mutex<(Duration, u64)>,
}

impl ManualClock {
    /// A clock at monotonic `base + 0` and wall time `wall_ms`.
    pub fn new(wall_ms: u64) -> Self {
        Self {
            base: Instant::now(),
            state: Mutex::new((Duration::ZERO, wall_ms)),
        }
    }

    /// Moves both clocks forward by `by`.
    pub fn advance(&self, by: Duration) {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        state.0 += by;
        state.1 = state
            .1
            .saturating_add(u64::try_from(by.as_millis()).unwrap_or(u64::MAX));
    }

    /// Jumps only the wall clock by `delta_ms` (a clock adjustment; the monotonic clock stays).
    pub fn jump_wall(&self, delta_ms: i64) {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        state.1 = shift(state.1, delta_ms);
    }
}

impl Clock for ManualClock {
    fn monotonic(&self) -> Instant {
        self.base + self.state.lock().unwrap_or_else(|p| p.into_inner()).0
    }

    fn wall_ms(&self) -> u64 {
        self.state.lock().unwrap_or_else(|p| p.into_inner()).1
    }
}

/// A deadline on the monotonic clock (K4, K9, X1, R12).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Deadline {
    at: Instant,
    budget: Duration,
}

impl Deadline {
    /// The deadline `budget` from now on `clock`'s monotonic time.
    pub fn after(clock: &dyn Clock, budget: Duration) -> Self {
        Self {
            at: clock.monotonic() + budget,
            budget,
        }
    }

    /// Time left, zero once expired.
    pub fn remaining(&self, clock: &dyn Clock) -> Duration {
        self.at.saturating_duration_since(clock.monotonic())
    }

    /// Whether the deadline has passed.
    pub fn expired(&self, clock: &dyn Clock) -> bool {
        clock.monotonic() >= self.at
    }

    /// The instant the deadline expires.
    pub fn instant(&self) -> Instant {
        self.at
    }

    /// The budget the deadline was created with (for messages like `Timed out after <ms>ms`).
    pub fn budget(&self) -> Duration {
        self.budget
    }
}

/// Formats epoch milliseconds as ISO 8601 UTC with milliseconds (`2026-11-30T00:38:59.064Z`,
/// the `acquiredAt` of a lease owner, K2).
pub fn iso8601_utc(epoch_ms: u64) -> String {
    let secs = epoch_ms / 1000;
    let millis = epoch_ms % 1000;
    let days = secs / 86_400;
    let rem = secs % 86_400;
    let (year, month, day) = civil_from_days(i64::try_from(days).unwrap_or(i64::MAX));
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{millis:03}Z",
        rem / 3600,
        (rem % 3600) / 60,
        rem % 60
    )
}

/// Days since 1970-01-01 → (year, month, day) in the proleptic Gregorian calendar.
pub fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = u32::try_from(doy - (153 * mp + 2) / 5 + 1).unwrap_or(1);
    let month = u32::try_from(if mp < 10 { mp + 3 } else { mp - 9 }).unwrap_or(1);
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// (year, month, day) in the proleptic Gregorian calendar → days since 1970-01-01 (the
/// inverse of [`civil_from_days`]).
pub fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let yoe = year.rem_euclid(400);
    let mp = i64::from(if month > 2 { month - 3 } else { month + 9 });
    let doy = (153 * mp + 2) / 5 + i64::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// A calendar period of local time: what `usage` groups by and spend limits count over.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Period {
    /// A day.
    Day,
    /// A week, from Monday.
    Week,
    /// A calendar month.
    Month,
}

impl Period {
    /// The first day (days since 1970-01-01, local) of the period holding `epoch_ms` in a
    /// time zone `utc_offset_s` east of UTC.
    pub fn first_day(self, epoch_ms: u64, utc_offset_s: i64) -> i64 {
        let local_s = i64::try_from(epoch_ms / 1000).unwrap_or(i64::MAX) + utc_offset_s;
        let days = local_s.div_euclid(86_400);
        match self {
            Self::Day => days,
            // 1970-01-01 was a Thursday: its Monday is 3 days before.
            Self::Week => days - (days + 3).rem_euclid(7),
            Self::Month => days - i64::from(civil_from_days(days).2) + 1,
        }
    }

    /// When (epoch ms) the period holding `epoch_ms` began.
    pub fn start_ms(self, epoch_ms: u64, utc_offset_s: i64) -> u64 {
        local_midnight_ms(self.first_day(epoch_ms, utc_offset_s), utc_offset_s)
    }

    /// When (epoch ms) the period holding `epoch_ms` ends (the next one begins).
    pub fn end_ms(self, epoch_ms: u64, utc_offset_s: i64) -> u64 {
        let first = self.first_day(epoch_ms, utc_offset_s);
        let next = match self {
            Self::Day => first + 1,
            Self::Week => first + 7,
            Self::Month => {
                let (year, month, _) = civil_from_days(first);
                let (year, month) = if month == 12 { (year + 1, 1) } else { (year, month + 1) };
                days_from_civil(year, month, 1)
            }
        };
        local_midnight_ms(next, utc_offset_s)
    }
}

/// The epoch ms of local midnight starting `days` (since 1970-01-01, local).
pub fn local_midnight_ms(days: i64, utc_offset_s: i64) -> u64 {
    u64::try_from((days * 86_400 - utc_offset_s).saturating_mul(1000)).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn periods_start_and_end_at_local_midnights() {
        // 2026-12-05 21:00 UTC, a Saturday; UTC+3 it is already the 6th.
        let at = 1_796_504_400_000;
        let day = 86_400_000;
        assert_eq!(Period::Day.start_ms(at, 0), at - 21 * 3_600_000);
        assert_eq!(Period::Day.end_ms(at, 0), at + 3 * 3_600_000);
        assert_eq!(Period::Day.start_ms(at, 3 * 3600), at);
        assert_eq!(Period::Week.start_ms(at, 0), at - 21 * 3_600_000 - 5 * day);
        assert_eq!(civil_from_days(Period::Month.first_day(at, 0)), (2026, 12, 1));
        assert_eq!(
            Period::Month.end_ms(at, 0),
            local_midnight_ms(days_from_civil(2027, 1, 1), 0)
        );
    }

    #[test]
    fn civil_dates_round_trip() {
        for days in [-1, 0, 59, 365, 11_016, 20_792, 20_793] {
            let (y, m, d) = civil_from_days(days);
            assert_eq!(days_from_civil(y, m, d), days);
        }
        assert_eq!(civil_from_days(20_792), (2026, 12, 5));
    }

    #[test]
    fn f56_monotonic_deadline_ignores_a_wall_jump_back() {
        let clock = ManualClock::new(1_795_999_000_000);
        let deadline = Deadline::after(&clock, Duration::from_millis(300));
        clock.advance(Duration::from_millis(100));
        clock.jump_wall(-3_600_000);
        assert_eq!(deadline.remaining(&clock), Duration::from_millis(200));
        assert!(!deadline.expired(&clock));
        clock.advance(Duration::from_millis(200));
        assert!(
            deadline.expired(&clock),
            "fires after 300 ms of monotonic time despite the wall jump"
        );
        assert_eq!(clock.wall_ms(), 1_795_999_000_000 + 300 - 3_600_000);
    }

    #[test]
    fn f57_wall_jump_forward_does_not_expire_a_deadline() {
        let clock = ManualClock::new(1_000);
        let deadline = Deadline::after(&clock, Duration::from_millis(5_000));
        clock.jump_wall(3_600_000);
        assert!(!deadline.expired(&clock));
        assert_eq!(deadline.budget(), Duration::from_millis(5_000));
    }

    #[test]
    fn shifted_clock_moves_only_the_wall() {
        let inner = Arc::new(ManualClock::new(10_000));
        let shifted = ShiftedClock::new(inner.clone(), 3_600_000);
        assert_eq!(shifted.wall_ms(), 3_610_000);
        assert_eq!(shifted.monotonic(), inner.monotonic());
        shifted.shift_wall(-3_600_000);
        assert_eq!(shifted.wall_ms(), 10_000, "shifts add up");
        let back = ShiftedClock::new(inner, -20_000);
        assert_eq!(back.wall_ms(), 0, "saturates at the epoch");
    }

    #[test]
    fn iso_formatting_matches_the_peer_sample() {
        assert_eq!(iso8601_utc(1_795_999_139_064), "2026-11-30T00:38:59.064Z");
        assert_eq!(iso8601_utc(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso8601_utc(951_782_400_000), "2000-02-29T00:00:00.000Z");
    }
}
