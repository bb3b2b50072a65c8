//! An engine command (`squeue`, `scontrol`, `scancel`) run to its end within a deadline,
//! with its output capped: a controller that hangs or floods never holds up a listing.

use std::ffi::OsString;
use std::io::Read;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// What an engine command printed, and whether it succeeded.
#[derive(Debug)]
pub struct Output {
    /// Exit status 0.
    pub success: bool,
    /// Its standard output (at most [`OUTPUT_CAP`] bytes).
    pub stdout: String,
    /// Its standard error (at most [`OUTPUT_CAP`] bytes).
    pub stderr: String,
}

/// Bytes kept of each stream.
pub const OUTPUT_CAP: u64 = 16 * 1024 * 1024;

/// Why a command gave no answer.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CommandError {
    /// It could not be started (missing, not executable).
    #[error("cannot run {program}: {reason}")]
    NotStarted {
        /// The program.
        program: String,
        /// Why.
        reason: String,
    },
    /// It did not end within the deadline and was killed.
    #[error("{program} did not answer within {seconds} s")]
    TimedOut {
        /// The program.
        program: String,
        /// The deadline.
        seconds: u64,
    },
}

/// Runs `program args` with `env` added to a cleared environment, at most `deadline`.
pub fn run(
    program: &str,
    args: &[String],
    env: &[(&str, OsString)],
    deadline: Duration,
) -> Result<Output, CommandError> {
    let mut command = Command::new(program);
    command
        .args(args)
        .env_clear()
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn().map_err(|e| CommandError::NotStarted {
        program: program.to_owned(),
        reason: e.to_string(),
    })?;
    let pidfd = i32::try_from(child.id())
        .ok()
        .and_then(rustix::process::Pid::from_raw)
        .and_then(|pid| rustix::process::pidfd_open(pid, rustix::process::PidfdFlags::empty()).ok());
    let read = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut text = Vec::new();
            if let Some(pipe) = pipe {
                let _ = pipe.take(OUTPUT_CAP).read_to_end(&mut text);
            }
            String::from_utf8_lossy(&text).into_owned()
        })
    };
    let stdout = read(child.stdout.take().map(|p| Box::new(p) as Box<dyn Read + Send>));
    let stderr = read(child.stderr.take().map(|p| Box::new(p) as Box<dyn Read + Send>));
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait());
    });
    let status = match rx.recv_timeout(deadline) {
        Ok(status) => status.ok(),
        Err(_) => {
            if let Some(fd) = &pidfd {
                let _ = rustix::process::pidfd_send_signal(fd, rustix::process::Signal::KILL);
            }
            return Err(CommandError::TimedOut {
                program: program.to_owned(),
                seconds: deadline.as_secs(),
            });
        }
    };
    Ok(Output {
        success: status.is_some_and(|s| s.success()),
        stdout: stdout.join().unwrap_or_default(),
        stderr: stderr.join().unwrap_or_default(),
    })
}
