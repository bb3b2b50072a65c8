//! Helpers shared by the end-to-end suites in `tests/` and by the planner's native vector
//! test: loading the planner test vectors and matching outcomes against them.

pub mod vectors;
