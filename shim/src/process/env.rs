//! The agent's environment (H10): the shim's own environment minus every
//! `SUBLAUNCH_RUNNER_*` variable, `SUBLAUNCH_STARTUP_FD` and the test-hook variables, plus the
//! step's `command.env` overrides. Removal uses `Command::env_remove` (not `env_clear`), so
//! `std` keeps its `posix_spawn` path unless an override changes `PATH`.

use std::ffi::OsString;

/// Test-hook variables never passed to the agent.
pub const TEST_HOOK_VARS: [&str; 5] = [
    "SUBLAUNCH_SHIM_FAULT",
    "SUBLAUNCH_HOST_FAULT",
    "SUBLAUNCH_TEST_PARENT_PID",
    "SUBLAUNCH_SHIM_CONTROL_TIMEOUT_MS",
    "SUBLAUNCH_RUNNER_STARTUP_TIMEOUT_MS",
];

/// Whether the shim's variable `key` is withheld from the agent.
pub fn withheld(key: &str) -> bool {
    key.starts_with("SUBLAUNCH_RUNNER_")
        || key == sublaunch_protocol::records::handshake::STARTUP_FD_ENV
        || key.starts_with("SUBLAUNCH_SHIM_TEST_")
        || TEST_HOOK_VARS.contains(&key)
}

/// The variables of the current environment to remove for the agent.
pub fn removals() -> Vec<OsString> {
    std::env::vars_os()
        .map(|(k, _)| k)
        .filter(|k| k.to_str().is_some_and(withheld))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn h10_runner_startup_and_test_hook_variables_are_withheld() {
        for key in [
            "SUBLAUNCH_RUNNER_CONFIG",
            "SUBLAUNCH_STARTUP_FD",
            "SUBLAUNCH_SHIM_FAULT",
            "SUBLAUNCH_TEST_PARENT_PID",
            "SUBLAUNCH_SHIM_CONTROL_TIMEOUT_MS",
            "SUBLAUNCH_SHIM_TEST_ENOSPC",
        ] {
            assert!(withheld(key), "{key}");
        }
        for key in ["PATH", "HOME", "SUBLAUNCH_ROOT", "SUBLAUNCH_ASYNC_EVENTS_MAX_BYTES"] {
            assert!(!withheld(key), "{key}");
        }
    }
}
