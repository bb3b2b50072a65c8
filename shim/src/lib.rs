//! The detached runner of sublaunch runs (placeholder; the runner arrives with issue 5).

/// Runs the shim and returns its exit code.
pub fn main() -> i32 {
    0
}
