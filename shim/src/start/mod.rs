//! Starting up: process hygiene, signals, the invocation and its context, the clock, the parent monitor, the test fault hooks and the agents' environment.

pub mod clock;
pub mod context;
pub mod env;
pub mod faults;
pub mod hygiene;
pub mod invocation;
pub mod parent;
pub mod signals;
#[cfg(feature = "test-hooks")]
pub mod testfs;
