//! The run-file protocol of sublaunch, shared by the host (`sublaunch`) and the detached
//! runner (`sublaunch-shim`) without linking wasmtime into the runner.
//!
//! Rule ids (A3, S7, I6 …) refer to `spec/host-and-shim.md`; fault ids (F37 …) to
//! `spec/fault-matrix.md`. Everything here is synchronous and small: the host and the shim
//! wrap these calls in their own event loops (waits, timers, spawning).
//!
//! Map of the crate:
//! * os — [`os::Os`] bundles the capabilities [`os::files::Files`], [`os::processes::Processes`],
//!   [`os::clock::Clock`], [`os::random::RandomSource`], [`os::retry::Sleeper`] and the
//!   [`os::retry::RetryPolicy`];
//! * files — [`dir::Dir`] (fd-relative operations), [`atomic`] (A1–A8), [`doc`] (JSON,
//!   A11), [`durability`] (A4), [`lock`] (S1), [`layout`] and [`trust`] (paths, H3), [`placement`] (where the
//!   filesystem puts the runs);
//! * records — [`config`] (H5/R2), [`handshake`] (K), [`status`] (S2–S5), [`step_record`]
//!   (the typed step fields of the status and the result), [`proof`] (S6–S9,
//!   S13), [`events`] (A10/S10), [`results`] (S11), [`index`] (I), [`lease`] (R6a),
//!   [`hook`] (completion hooks: what runs when a run ends, and how it ended), [`capacity`]
//!   (the queue of runs over the cap of active runs);
//! * git — [`git`] (the git commands run over agents' worktrees: the repository named by
//!   its own record, no configured program started);
//! * maintenance — [`sweep`] (A12), [`deferred`] (A9), [`procinfo`] (X3), [`ids`] (session and group ids, H8);
//! * fault injection of test builds — [`os::faults`] (inert in production).

#![warn(missing_docs)]

pub mod atomic;
pub mod capacity;
pub mod config;
pub mod deferred;
pub mod dir;
pub mod doc;
pub mod durability;
pub mod errors;
pub mod events;
pub mod git;
pub mod handshake;
pub mod hook;
pub mod ids;
pub mod index;
pub mod layout;
pub mod lease;
pub mod lock;
pub mod os;
pub mod placement;
pub mod procinfo;
pub mod proof;
pub mod results;
pub mod status;
pub mod step_record;
pub mod sweep;
#[cfg(any(test, feature = "test-hooks"))]
pub mod testing;
pub mod trust;
pub mod usage;
