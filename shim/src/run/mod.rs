//! The top layer: one run from start to end. Starting up ([`start`]), the startup handshake
//! and the commit ([`handshake`]), then after commit ([`after_commit`]) the capacity wait,
//! the first status and the steps in their groups ([`workflow`]), and how the run ends: the
//! end records and the completion hook ([`end`]).

pub mod after_commit;
pub mod end;
pub mod handshake;
pub mod start;
pub mod workflow;
