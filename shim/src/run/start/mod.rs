//! Starting up: process hygiene and the invocation (where the configuration comes from).

pub mod hygiene;
pub mod invocation;
