//! Placed steps (placement-and-schemas.md §8 P-H5–P-H12): the adapter's command runs on
//! the machine through the local `ssh`, as if it ran here — same prompt delivery (argv,
//! standard input), same output parsing, same stop and exit records.
//!
//! * [`wrap`] turns the adapter's [`AgentCommand`] into `ssh <options> <target> "sh -c '…'"`
//!   with only the P-H6 variables in its environment ([`ssh_argv`], [`script`]);
//! * [`parser::RemoteParser`] drops everything before the READY marker (banners, rc-file
//!   noise), takes the process group, final-message and git lines out of the stream, and hands
//!   the rest to the adapter's own parser;
//! * [`stop::stop_remote`] ends the remote process group when the run is stopped;
//! * [`hint::failure_hint`] names the likely cause of a failure (unreachable machine, unknown
//!   host key, missing directory or CLI …);
//! * [`srun`] runs a step of a run that stays here on a cluster's node instead (J11).

pub mod hint;
pub mod parser;
pub mod script;
pub mod srun;
pub mod stop;

use crate::adapter::{ARG_LIMIT, AgentCommand};
use script::{Markers, RemoteFile};
use std::collections::BTreeMap;
use std::path::Path;
use sublaunch_protocol::records::config::AdapterId;
use sublaunch_protocol::records::config::Placement;

/// The host variables the `ssh` process gets (P-H6); nothing else, in particular no API keys.
pub const SSH_ENV: [&str; 6] = ["PATH", "HOME", "USER", "LOGNAME", "TMPDIR", "SSH_AUTH_SOCK"];

/// `ssh <options> <target> "sh -c Q(script)"` (P-H7), with the options of every connection
/// (P-H5, with P-H4's hardening).
pub fn ssh_argv(placement: &Placement, script: &str) -> Vec<String> {
    let mut argv = vec!["ssh".to_owned(), "-T".to_owned()];
    if let Some(config) = &placement.ssh_config {
        argv.extend(["-F".to_owned(), config.clone()]);
    }
    let control_path = format!("ControlPath={}/%C", placement.control_dir.trim_end_matches('/'));
    for option in [
        "BatchMode=yes",
        "NumberOfPasswordPrompts=0",
        "StrictHostKeyChecking=yes",
        "ConnectTimeout=10",
        "ConnectionAttempts=1",
        "ServerAliveInterval=15",
        "ServerAliveCountMax=4",
        "ControlMaster=auto",
        "ControlPersist=60",
        control_path.as_str(),
        "ForwardAgent=no",
        "SendEnv=-*",
    ] {
        argv.extend(["-o".to_owned(), option.to_owned()]);
    }
    argv.extend([placement.target.clone(), format!("sh -c {}", script::quote(script))]);
    argv
}

/// The `ssh` process environment: the P-H6 variables the shim has.
pub fn ssh_env() -> BTreeMap<String, String> {
    SSH_ENV
        .iter()
        .filter_map(|key| Some(((*key).to_owned(), std::env::var(key).ok()?)))
        .collect()
}

/// Creates the ControlMaster directory (0700) or checks the one that exists: a directory of
/// ours, not a symlink, that nobody else can enter (never loosened or tightened here: a
/// directory that was ever open to others may hold what they put there), holding no entry
/// of another user's — ssh would use a socket someone else made there as its connection.
pub fn prepare_control_dir(dir: &str) -> Result<(), String> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt};
    let path = Path::new(dir);
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(path)
        .map_err(|e| format!("Cannot create the ssh control directory {dir}: {e}."))?;
    let meta =
        std::fs::symlink_metadata(path).map_err(|e| format!("Cannot read the ssh control directory {dir}: {e}."))?;
    let me = rustix::process::geteuid().as_raw();
    if !meta.is_dir() || meta.uid() != me {
        return Err(format!(
            "The ssh control directory {dir} is not a directory of this user; remove it."
        ));
    }
    if meta.mode() & 0o077 != 0 {
        return Err(format!(
            "The ssh control directory {dir} can be reached by other users (mode {:04o}); remove it or make it private (chmod 700).",
            meta.mode() & 0o7777
        ));
    }
    let entries = std::fs::read_dir(path).map_err(|e| format!("Cannot read the ssh control directory {dir}: {e}."))?;
    for entry in entries.flatten() {
        if let Ok(meta) = entry.metadata()
            && meta.uid() != me
            && meta.uid() != 0
        {
            return Err(format!(
                "The ssh control directory {dir} holds {}, which belongs to uid {}; remove it.",
                entry.file_name().to_string_lossy(),
                meta.uid()
            ));
        }
    }
    Ok(())
}

/// The local files `argv` of adapter `adapter` names that must live on the machine.
fn remote_files(adapter: AdapterId, argv: &[String]) -> Result<Vec<RemoteFile>, String> {
    let after = |flag: &str| {
        argv.iter()
            .position(|a| a == flag)
            .and_then(|i| argv.get(i + 1))
            .cloned()
    };
    let mut files = Vec::new();
    if matches!(adapter, AdapterId::CodexExec | AdapterId::CodexExecWriter)
        && let Some(path) = after("--output-last-message")
    {
        files.push(RemoteFile::Capture(path));
    }
    let upload = match adapter {
        AdapterId::Pi => after("--append-system-prompt"),
        AdapterId::CodexExec | AdapterId::CodexExecWriter => after("--output-schema"),
        _ => None,
    };
    if let Some(path) = upload {
        let content = std::fs::read_to_string(&path).map_err(|e| format!("Cannot read {path}: {e}."))?;
        files.push(RemoteFile::Upload { path, content });
    }
    Ok(files)
}

/// The `ssh` command that runs `command` (built by adapter `adapter`) on the placed machine,
/// and the local file a captured final message goes to (Codex). The local working directory
/// stays the step's; the machine's is `placement.cwd`.
pub fn wrap(
    command: AgentCommand,
    placement: &Placement,
    adapter: AdapterId,
    markers: &Markers,
) -> Result<(AgentCommand, Option<String>), String> {
    prepare_control_dir(&placement.control_dir)?;
    let files = remote_files(adapter, &command.argv)?;
    // The values a shell step reads from its environment (`$SUBLAUNCH_PREVIOUS`, …) and
    // Claude Code's thinking budget must reach the remote shell too; ssh itself carries only
    // the P-H6 variables.
    let exports: Vec<(&str, &str)> = command
        .env
        .iter()
        .filter(|(name, _)| name.starts_with("SUBLAUNCH_") || name.as_str() == "MAX_THINKING_TOKENS")
        .map(|(name, value)| (name.as_str(), value.as_str()))
        .collect();
    let script = script::script(markers, &placement.cwd, &exports, &command.argv, &files);
    let argv = ssh_argv(placement, &script);
    let remote = argv.last().map_or(0, String::len);
    if remote > ARG_LIMIT {
        return Err(format!(
            "The command for machine '{}' is {remote} bytes; a remote command is at most 128 KiB (long tasks go on standard input for pi, claude and codex).",
            placement.machine
        ));
    }
    let capture = files.into_iter().find_map(|f| match f {
        RemoteFile::Capture(path) => Some(path),
        RemoteFile::Upload { .. } => None,
    });
    let wrapped = AgentCommand {
        argv,
        env: ssh_env(),
        cwd: command.cwd,
        stdin: command.stdin,
        clear_env: true,
        streamed_stdin: command.streamed_stdin,
    };
    Ok((wrapped, capture))
}

/// A placed child: its machine and what its output told about the remote side.
#[derive(Debug)]
pub struct RemoteChild {
    /// Where it runs.
    pub placement: Placement,
    /// READY, the remote process group, the git facts (filled by its parser).
    pub state: parser::SharedState,
    /// The remote stop was done (or tried).
    pub stop_sent: bool,
}

/// Places a step: the wrapped command, the adapter's parser behind the P-H10 filter, and the
/// supervisor's handle on the remote side.
pub fn place(
    command: AgentCommand,
    placement: Placement,
    adapter: AdapterId,
    parser: Box<dyn crate::adapter::OutputParser>,
) -> Result<(AgentCommand, Box<dyn crate::adapter::OutputParser>, RemoteChild), String> {
    crate::process::masters::register(&placement.control_dir);
    let markers = Markers::random().map_err(|e| format!("Cannot draw the marker token: {e}."))?;
    let (command, capture) = wrap(command, &placement, adapter, &markers)?;
    let state = parser::SharedState::default();
    let filtered = parser::RemoteParser::new(
        parser,
        markers,
        state.clone(),
        capture,
        &placement.machine,
        &placement.cwd,
    );
    let child = RemoteChild {
        placement,
        state,
        stop_sent: false,
    };
    Ok((command, Box::new(filtered), child))
}

#[cfg(test)]
mod tests {
    use super::prepare_control_dir;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn the_control_dir_is_created_private_and_a_loose_one_is_refused_unchanged() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("ssh");
        let dir_str = dir.to_str().unwrap();
        prepare_control_dir(dir_str).unwrap();
        assert_eq!(std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777, 0o700);
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        let error = prepare_control_dir(dir_str).unwrap_err();
        assert!(error.contains("can be reached by other users (mode 0755)"), "{error}");
        assert_eq!(
            std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777,
            0o755,
            "not chmodded"
        );
    }

    #[test]
    fn a_socket_of_another_user_in_the_control_dir_is_refused() {
        assert!(
            sublaunch_protocol::testing::running_as_root(),
            "chown needs root, as CI has"
        );
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("ssh");
        prepare_control_dir(dir.to_str().unwrap()).unwrap();
        let planted = dir.join("0123456789abcdef0123456789abcdef01234567");
        let _listener = std::os::unix::net::UnixListener::bind(&planted).unwrap();
        std::os::unix::fs::chown(&planted, Some(4242), Some(4242)).unwrap();
        let error = prepare_control_dir(dir.to_str().unwrap()).unwrap_err();
        assert!(
            error.contains("holds 0123456789abcdef0123456789abcdef01234567, which belongs to uid 4242; remove it"),
            "{error}"
        );
    }
}
