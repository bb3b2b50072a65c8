//! The top layer: one run from start to end. Starting up ([`start`]), the startup handshake
//! and the commit ([`handshake`]), then after commit ([`after_commit`]) the capacity wait,
//! the first status and the steps in their groups ([`workflow`]), and how the run ends: the
//! end records and the completion hook ([`end`]). A run placed on a cluster is handed to
//! its engine after the commit, and started again as a job ([`cluster`]).

pub mod after_commit;
pub mod cluster;
pub mod end;
pub mod handshake;
pub mod start;
pub mod workflow;
