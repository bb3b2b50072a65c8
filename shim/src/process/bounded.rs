//! Running a short helper process (the structured-output validator, the remote stop over
//! ssh) to its end within a deadline, without polling: a thread feeds its stdin, another
//! reads its stdout and reaps it, and the caller waits on a channel with a timeout. Past the
//! deadline the helper is killed through a pidfd, which cannot hit a reused pid.

use std::io::{Read, Write};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// How a helper ended.
#[derive(Debug)]
pub struct Finished {
    /// Its exit status.
    pub status: ExitStatus,
    /// Everything it wrote to stdout.
    pub stdout: Vec<u8>,
    /// Everything it wrote to stderr, when asked for ([`run_capturing`]).
    pub stderr: Vec<u8>,
}

/// Runs `command` with `stdin` (or `/dev/null`), stdout captured and stderr discarded; the
/// error says why it did not finish within `deadline`.
pub fn run(command: Command, stdin: Option<Vec<u8>>, deadline: Duration) -> Result<Finished, String> {
    run_helper(command, stdin, deadline, false)
}

/// [`run`] with stderr captured too (a helper whose complaint is worth quoting).
pub fn run_capturing(command: Command, stdin: Option<Vec<u8>>, deadline: Duration) -> Result<Finished, String> {
    run_helper(command, stdin, deadline, true)
}

fn run_helper(
    mut command: Command,
    stdin: Option<Vec<u8>>,
    deadline: Duration,
    capture_stderr: bool,
) -> Result<Finished, String> {
    command
        .stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(if capture_stderr { Stdio::piped() } else { Stdio::null() });
    let mut child = crate::process::signals::unblocked(|| command.spawn()).map_err(|e| format!("cannot start: {e}"))?;
    let pidfd = i32::try_from(child.id())
        .ok()
        .and_then(rustix::process::Pid::from_raw)
        .and_then(|pid| rustix::process::pidfd_open(pid, rustix::process::PidfdFlags::empty()).ok());
    if let (Some(bytes), Some(mut pipe)) = (stdin, child.stdin.take()) {
        // A helper that stops reading early makes this write fail; its verdict still counts.
        std::thread::spawn(move || pipe.write_all(&bytes));
    }
    let mut stdout = child.stdout.take().ok_or("has no stdout")?;
    // Read on its own thread, so a helper filling its stderr pipe never blocks on it.
    let stderr = child.stderr.take().map(|mut pipe| {
        std::thread::spawn(move || {
            let mut err = Vec::new();
            let _ = pipe.read_to_end(&mut err);
            err
        })
    });
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut out = Vec::new();
        let read = stdout.read_to_end(&mut out);
        let _ = tx.send(child.wait().map(|status| (status, out, read)));
    });
    let ended = match rx.recv_timeout(deadline) {
        Ok(ended) => ended,
        Err(_) => {
            if let Some(fd) = &pidfd {
                let _ = rustix::process::pidfd_send_signal(fd, rustix::process::Signal::KILL);
            }
            return Err(format!("took longer than {} s and was killed", deadline.as_secs()));
        }
    };
    let (status, stdout, read) = ended.map_err(|e| format!("cannot be waited for: {e}"))?;
    read.map_err(|e| format!("output cannot be read: {e}"))?;
    let stderr = stderr.and_then(|reader| reader.join().ok()).unwrap_or_default();
    Ok(Finished { status, stdout, stderr })
}
