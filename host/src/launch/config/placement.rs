//! Placed steps (issue 7): a step the plan put on a Herdr machine runs `ssh` from the launch's
//! local directory, with the machine's directory in `steps[i].placement` (H3, H5).

use crate::agents::AdapterKind;
use std::path::Path;
use sublaunch_contract::PlanStep;
use sublaunch_runfiles::config::{Placement, StepConfig};

/// Overrides the directory of the ssh ControlMaster sockets.
pub const CONTROL_DIR_ENV: &str = "SUBLAUNCH_SSH_CONTROL_DIR";

/// An ssh client configuration used instead of `~/.ssh/config` (`ssh -F FILE`).
pub const SSH_CONFIG_ENV: &str = "SUBLAUNCH_SSH_CONFIG";

/// A socket path is at most 108 bytes and ssh adds a 17-byte suffix while it creates one;
/// `%C` is 40 hex characters. Roots longer than this get the short fallback directory.
const SOCKET_PATH_BUDGET: usize = 100;

/// What every placed step of a launch shares.
#[derive(Clone, Debug)]
pub struct Placer {
    local_cwd: String,
    control_dir: String,
    ssh_config: Option<String>,
}

impl Placer {
    /// Placement for a launch rooted at `root` whose local directory is `local_cwd`.
    pub fn new(root: &Path, local_cwd: String) -> Self {
        Self {
            local_cwd,
            control_dir: control_dir(root),
            ssh_config: std::env::var(SSH_CONFIG_ENV).ok().filter(|v| !v.is_empty()),
        }
    }

    /// Makes `config` (built for plan step `index`) run on its machine, or says why it cannot.
    pub fn place(
        &self,
        index: usize,
        step: &PlanStep,
        kind: AdapterKind,
        config: &mut StepConfig,
    ) -> Result<(), String> {
        let Some(machine) = &step.machine else { return Ok(()) };
        let placeable = matches!(
            kind,
            AdapterKind::Pi
                | AdapterKind::Shell
                | AdapterKind::ClaudeCode
                | AdapterKind::ClaudeCodeWriter
                | AdapterKind::CodexExec
                | AdapterKind::CodexExecWriter
                | AdapterKind::CursorAgent
                | AdapterKind::CursorAgentWriter
        );
        if !placeable {
            return Err(format!(
                "Subagent launch aborted: step {index} ('{}') uses the {} runner, which cannot run on machine '{}'.",
                step.agent,
                kind.id(),
                machine.id
            ));
        }
        config.cwd = Some(self.local_cwd.clone());
        if let Some(command) = &mut config.command {
            command.cwd = Some(self.local_cwd.clone());
        }
        config.set_placement(Some(&Placement {
            machine: machine.label.clone().unwrap_or_else(|| machine.id.clone()),
            target: machine.target.trim().to_owned(),
            cwd: machine.cwd.clone(),
            control_dir: self.control_dir.clone(),
            ssh_config: self.ssh_config.clone(),
        }));
        Ok(())
    }
}

/// `$SUBLAUNCH_SSH_CONTROL_DIR`, else `<root>/ssh` when its socket paths fit, else
/// `/tmp/sublaunch-ssh-<uid>` (the shim creates it 0700 and refuses one that is not ours).
pub fn control_dir(root: &Path) -> String {
    if let Some(dir) = std::env::var(CONTROL_DIR_ENV).ok().filter(|v| v.starts_with('/')) {
        return dir;
    }
    let beside_root = root.join("ssh").to_string_lossy().into_owned();
    if beside_root.len() + 1 + 40 + 17 <= SOCKET_PATH_BUDGET {
        beside_root
    } else {
        format!("/tmp/sublaunch-ssh-{}", rustix::process::geteuid().as_raw())
    }
}
