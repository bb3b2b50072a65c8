//! Starting up: process hygiene, signals, the invocation and its context, the parent monitor, the
//! fault points of test builds and the agents' environment.

pub mod context;
pub mod env;
pub mod faults;
pub mod hygiene;
pub mod invocation;
pub mod parent;
pub mod signals;
