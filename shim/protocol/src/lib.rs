//! The run-file protocol of sublaunch, shared by the host (`sublaunch`) and the detached
//! runner (`sublaunch-shim`) without linking wasmtime into the runner.
//!
//! Rule ids (A3, S7, I6 …) refer to `spec/host-and-shim.md`; fault ids (F37 …) to
//! `spec/fault-matrix.md`. Everything here is synchronous and small: the host and the shim
//! wrap these calls in their own event loops (waits, timers, spawning).
//!
//! Map of the crate, one folder per group:
//! * [`os`] — [`os::Os`] bundles the capabilities [`os::files::Files`],
//!   [`os::processes::Processes`], [`os::clock::Clock`], [`os::random::RandomSource`],
//!   [`os::retry::Sleeper`] and the [`os::retry::RetryPolicy`];
//! * [`files`] — how the records are kept: [`files::dir::Dir`] (fd-relative operations),
//!   [`files::atomic`] (A1–A8), [`files::doc`] (JSON, A11), [`files::durability`] (A4),
//!   [`files::lock`] (S1), [`files::layout`] and [`files::trust`] (paths, H3),
//!   [`files::placement`] (where the filesystem puts the runs);
//! * [`records`] — what a run is recorded as, one typed record each: [`records::config`]
//!   (H5/R2), [`records::handshake`] (K), [`records::status`] (S2–S5),
//!   [`records::step_record`] (the typed step fields of the status and the result),
//!   [`records::proof`] (S6–S9, S13), [`records::events`] (A10/S10), [`records::results`]
//!   (S11), [`records::index`] (I), [`records::lease`] (R6a), [`records::hook`] (completion
//!   hooks), [`records::capacity`] (the queue of runs over the cap of active runs),
//!   [`records::usage`] (tokens and cost);
//! * [`git`] — the git commands run over agents' worktrees: the repository named by its own
//!   record, no configured program started;
//! * maintenance — [`sweep`] (A12), [`deferred`] (A9), [`procinfo`] (X3), [`ids`] (session
//!   and group ids, H8), [`errors`];
//! * fault injection of test builds — [`os::faults`] (inert in production).

#![warn(missing_docs)]

pub mod acceptance;
pub mod deferred;
pub mod errors;
pub mod files;
pub mod git;
pub mod ids;
pub mod os;
pub mod procinfo;
pub mod records;
pub mod sweep;
#[cfg(any(test, feature = "test-hooks"))]
pub mod testing;
