//! Asking a run to stop: the request file the shim watches (`<run>/control/stop.json`, R12).
//! The shim ends the run's whole process tree and records `stopped`; wait for that with
//! [`super::wait_terminal`].

use crate::Environment;
use serde_json::json;
use sublaunch_protocol::files::dir::Dir;
use sublaunch_protocol::files::durability::DocKind;
use sublaunch_protocol::files::layout::names;
use sublaunch_protocol::os::clock::{Clock, SystemClock};

/// Writes the stop request of `run_id` (`requested_by` names who asks, e.g. `sublaunch-cli`).
pub fn request_stop(run: &Dir, run_id: &str, requested_by: &str, env: &Environment) -> std::io::Result<()> {
    let request = json!({
        "version": 1,
        "action": "stop",
        "runId": run_id,
        "requestedAt": SystemClock.wall_ms(),
        "requestedBy": requested_by,
    });
    let control = run.ensure_child(names::CONTROL_DIR)?;
    control.write_doc(
        names::CONTROL_STOP,
        &request,
        env.durability().for_kind(DocKind::ControlFile),
    )
}
