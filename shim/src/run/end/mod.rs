//! How a run ends: the end records and the exit code, then the completion hook.

pub mod hook;
pub mod record;
