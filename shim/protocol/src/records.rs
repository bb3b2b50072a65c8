//! What a run is recorded as: one typed record per document of the run directory and the
//! state root (the runner configuration, the handshake, the status, the proofs, the events,
//! the result and its indexes, the history of ended runs, the lease, the completion hook, the
//! capacity queue, the active-run, unfinalized-run and run-id indexes). Writers and readers use these
//! fields; unknown fields of other writers are kept beside them (W9).

pub mod acceptance;
pub mod capacity;
pub mod cluster;
pub mod config;
pub mod cooldown;
pub mod events;
pub mod failure;
pub mod handshake;
pub mod history;
pub mod hook;
pub mod index;
pub mod lease;
pub mod ledger;
pub mod outbox;
pub mod partial;
pub mod proof;
pub mod results;
pub mod run_id_index;
pub mod sandbox;
pub mod spend;
pub mod status;
pub mod step_record;
pub mod stream;
pub mod unfinalized;
pub mod usage;
pub mod waiting;
