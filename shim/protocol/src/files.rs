//! How the records are kept on disk: directories opened once and used by descriptor, atomic
//! and durable writes, JSON documents, locks, the layout of the state root and who may own
//! it, and where the filesystem puts the runs.

pub mod atomic;
pub mod checked_lines;
pub mod dir;
pub mod doc;
pub mod durability;
pub mod layout;
pub mod lock;
pub mod placement;
pub mod trust;
