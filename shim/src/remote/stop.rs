//! `stop` on a placed step ends the remote process tree, not just the local `ssh`: a second
//! ssh (through the machine's ControlMaster, so it costs one round trip) sends SIGTERM to the
//! remote process group, then SIGKILL to what is left after the grace.

use std::os::unix::process::CommandExt as _;
use std::process::Command;
use std::time::Duration;
use sublaunch_protocol::records::config::Placement;

/// How long the remote group gets between SIGTERM and SIGKILL (tenths of a second, counted by
/// the remote shell).
const REMOTE_GRACE_TENTHS: u32 = 30;

/// The longest the shim waits for the stop connection.
const STOP_DEADLINE: Duration = Duration::from_secs(15);

/// The remote script: TERM the group, wait for it to empty, KILL the rest.
pub fn stop_script(pgid: u32) -> String {
    format!(
        "kill -TERM -{pgid} 2>/dev/null; pi_i=0; while kill -0 -{pgid} 2>/dev/null; do \
         pi_i=$((pi_i+1)); if [ $pi_i -gt {REMOTE_GRACE_TENTHS} ]; then kill -KILL -{pgid} 2>/dev/null; break; fi; \
         sleep 0.1; done; true"
    )
}

/// Ends remote process group `pgid` of `placement`'s machine; waits (at most 15 s) for the
/// stop connection. The error says why it could not.
pub fn stop_remote(placement: &Placement, pgid: u32) -> Result<(), String> {
    let argv = super::ssh_argv(placement, &stop_script(pgid));
    let mut command = Command::new(&argv[0]);
    command
        .args(&argv[1..])
        .env_clear()
        .envs(super::ssh_env())
        .process_group(0);
    let machine = &placement.machine;
    let finished = crate::process::bounded::run(command, None, STOP_DEADLINE)
        .map_err(|why| format!("Stopping the agent on '{machine}' failed: ssh {why}."))?;
    if finished.status.success() {
        Ok(())
    } else {
        Err(format!(
            "Stopping the agent on '{machine}' failed: ssh ended with {}.",
            finished.status
        ))
    }
}
