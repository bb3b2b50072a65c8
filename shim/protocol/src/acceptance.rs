//! The records of a step's acceptance contract that the runner and the host both read: what
//! the agent reports of its own work, in one typed shape with one parser, so neither side
//! guesses at the agent's answer on its own.

pub mod report;
pub mod review;
