//! The run-file protocol of sublaunch, shared by the host (`sublaunch`) and the detached
//! runner (`sublaunch-shim`) without linking wasmtime into the runner.
//!
//! Rule ids (A3, S7, I6 …) refer to `spec/host-and-shim.md`; fault ids (F37 …) to
//! `spec/fault-matrix.md`. Everything here is synchronous and small: the host and the shim
//! wrap these calls in their own event loops (waits, timers, spawning).

#![warn(missing_docs)]

pub mod atomic;
pub mod clock;
pub mod dir;
pub mod errors;
pub mod fs;
pub mod random;
pub mod retry;
pub mod seams;
#[cfg(any(test, feature = "test-hooks"))]
pub mod testing;
