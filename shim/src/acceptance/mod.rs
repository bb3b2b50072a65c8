//! The acceptance contract, the runner's side: what the runner itself finds out after an
//! agent's step ends, so that the agent's claims are checked against evidence rather than
//! taken at its word. [`tree`]: what git says the step changed.

pub mod tree;
