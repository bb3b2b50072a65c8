//! Retention in the background: once a day per state root, `sublaunch run` starts
//! `sublaunch prune --retention` as a process of its own and does not wait for it, so no run
//! is slowed by the walk over old runs (see `sublaunch::runs::retention`).

use super::runs::{now_ms, open_store};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use sublaunch::runs::retention;

/// Starts the retention pruner when the root's check is due; any failure only skips it.
pub fn start_if_due() {
    let Ok(store) = open_store("run") else { return };
    if !retention::check_due(&store, now_ms()) {
        return;
    }
    let Ok(exe) = std::env::current_exe() else { return };
    // Its own process group: a Ctrl-C meant for the terminal's `run` does not cut the pruner
    // short (a cut is harmless too: each run is removed whole or not at all).
    let _ = Command::new(exe)
        .args(["prune", "--retention"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn();
}
