//! Helpers shared by the end-to-end suites in `tests/` and by the planner's native vector
//! test: locating the built binaries, and loading and matching the planner test vectors.

pub mod bench;
pub mod chaos;
pub mod cli;
pub mod launch_harness;
pub mod mcp_session;
pub mod model_server;
pub mod real_agents;
pub mod slurm;
pub mod sshd;
pub mod stop_flag;
pub mod vectors;

use std::path::PathBuf;

/// The path of a binary built by this workspace (`sublaunch`, `sublaunch-shim`), next to
/// the test executable's `deps/` directory. `cargo test --workspace` builds them.
pub fn bin(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("the test executable's path");
    let profile_dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("target/<profile>/deps/<test>");
    let path = profile_dir.join(name);
    assert!(
        path.is_file(),
        "{} is not built; run the tests with `cargo test --workspace`",
        path.display()
    );
    path
}

/// Asserts that `text` (an error message) starts with `prefix`, showing both when it does not.
#[track_caller]
pub fn assert_starts_with(text: &str, prefix: &str) {
    assert!(text.starts_with(prefix), "expected {prefix:?}…, got {text:?}");
}
