//! The flag that tells a test's observer threads to stop. It is raised when its guard drops,
//! also while the test unwinds from a failed assertion: an observer in a `thread::scope`
//! would otherwise loop forever and the failed test would hang instead of failing.

use std::sync::atomic::{AtomicBool, Ordering};

/// A stop flag for observer threads.
#[derive(Debug, Default)]
pub struct StopFlag(AtomicBool);

impl StopFlag {
    /// A flag not raised yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether the observers should stop.
    pub fn raised(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }

    /// A guard that raises the flag when it drops (at the end of the scope or on a panic).
    pub fn raise_on_drop(&self) -> Raise<'_> {
        Raise(self)
    }
}

/// Raises its [`StopFlag`] when dropped.
#[derive(Debug)]
pub struct Raise<'a>(&'a StopFlag);

impl Drop for Raise<'_> {
    fn drop(&mut self) {
        self.0.0.store(true, Ordering::Relaxed);
    }
}
