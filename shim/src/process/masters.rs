//! The ssh ControlMasters of placed steps outlive the step that opened them, so that later
//! launches to the same machine reuse the connection (P-H5: expired only by `ControlPersist`).
//! The master daemonizes into its own session, but as an orphan it is reparented to the shim
//! (a subreaper), whose X8 sweep kills every child it does not know. This is the one
//! exception: a process in another session whose title is ssh's master title for one of this
//! shim's control directories (`ssh: <dir>/<hash> [mux]`).

use std::sync::Mutex;

static CONTROL_DIRS: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Remembers a control directory the shim's placed steps use.
pub fn register(control_dir: &str) {
    let dir = control_dir.trim_end_matches('/').to_owned();
    if let Ok(mut dirs) = CONTROL_DIRS.lock()
        && !dirs.contains(&dir)
    {
        dirs.push(dir);
    }
}

/// Whether `pid` is a ControlMaster of one of the registered directories, in a session that
/// is not the shim's.
pub fn is_kept_master(pid: u32) -> bool {
    let Ok(dirs) = CONTROL_DIRS.lock() else { return false };
    if dirs.is_empty() {
        return false;
    }
    let own_session = sublaunch_protocol::ids::own_session();
    let session = crate::process::reaper::proc_stat(pid).map(|st| st.session);
    if session.is_none() || session == own_session {
        return false;
    }
    let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
        return false;
    };
    let title = String::from_utf8_lossy(&cmdline).replace('\0', " ");
    let title = title.trim_end();
    title.ends_with("[mux]")
        && dirs.iter().any(|dir| {
            title
                .strip_prefix("ssh: ")
                .is_some_and(|rest| rest.starts_with(&format!("{dir}/")))
        })
}
