//! `steps[i].placement`: a step the plan placed on a Herdr machine runs through
//! `ssh` (placement-and-schemas.md §8, P-H5–P-H12).
//!
//! ```json
//! { "placement": {"machine": "workbox", "target": "workbox", "cwd": "~/src/app",
//!                 "controlDir": "/home/me/.local/state/sublaunch/ssh", "sshConfig": null} }
//! ```

use super::{ConfigError, invalid};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Where and how a placed step runs.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Placement {
    /// The machine's catalog id (named in errors and hints).
    pub machine: String,
    /// The ssh target (`alias`, `user@host`), already checked by the planner (P13).
    pub target: String,
    /// The working directory on the machine (`~`, `~/x` or absolute; P12).
    pub cwd: String,
    /// The private directory of ControlMaster sockets (0700), one master per machine (P-H5).
    pub control_dir: String,
    /// An ssh client configuration to use instead of `~/.ssh/config` (`ssh -F`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ssh_config: Option<String>,
}

/// R2 checks of `steps[i].placement`.
pub(super) fn check_placement(step: &Map<String, Value>) -> Result<(), ConfigError> {
    let Some(value) = step.get("placement").filter(|v| !v.is_null()) else {
        return Ok(());
    };
    let placement: Placement = serde_json::from_value(value.clone()).map_err(|_| {
        invalid("'steps[].placement' must be {machine, target, cwd, controlDir, sshConfig?} of strings.")
    })?;
    let target_ok = !placement.target.is_empty()
        && !placement.target.starts_with('-')
        && !placement.target.chars().any(|c| c.is_whitespace() || c.is_control());
    if !target_ok {
        return Err(invalid(
            "'steps[].placement.target' must be an ssh target without spaces or a leading '-'.",
        ));
    }
    if placement.cwd.is_empty() || placement.cwd.chars().any(char::is_control) {
        return Err(invalid("'steps[].placement.cwd' must be a directory on the machine."));
    }
    if !placement.control_dir.starts_with('/') {
        return Err(invalid("'steps[].placement.controlDir' must be an absolute path."));
    }
    Ok(())
}
