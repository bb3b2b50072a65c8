//! The shim's clock: the real monotonic clock for deadlines, and a wall clock for JSON
//! timestamps that the `wallclock:<±ms>` test hook can shift at any point of the run (F57).
//! Deadlines and durations never use the wall clock (R12, X2).

use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Instant;
use sublaunch_protocol::os::clock::{Clock, SystemClock};

/// The system clock with an adjustable wall-clock shift.
#[derive(Debug, Default)]
pub struct ShimClock {
    shift_ms: AtomicI64,
}

impl ShimClock {
    /// Shifts the wall clock by `delta_ms` more (cumulative).
    pub fn shift_wall(&self, delta_ms: i64) {
        self.shift_ms.fetch_add(delta_ms, Ordering::Relaxed);
    }
}

impl Clock for ShimClock {
    fn monotonic(&self) -> Instant {
        Instant::now()
    }

    fn wall_ms(&self) -> u64 {
        let wall = SystemClock.wall_ms();
        let shift = self.shift_ms.load(Ordering::Relaxed);
        if shift >= 0 {
            wall.saturating_add(shift.unsigned_abs())
        } else {
            wall.saturating_sub(shift.unsigned_abs())
        }
    }
}

/// Milliseconds between two monotonic instants (saturating at 0).
pub fn elapsed_ms(from: Instant, to: Instant) -> u64 {
    u64::try_from(to.saturating_duration_since(from).as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shift_moves_only_the_wall_clock() {
        let clock = ShimClock::default();
        let before = clock.wall_ms();
        clock.shift_wall(3_600_000);
        assert!(clock.wall_ms() >= before + 3_600_000);
        clock.shift_wall(-7_200_000);
        assert!(clock.wall_ms() < before);
    }
}
