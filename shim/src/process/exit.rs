//! R14 exit codes. The host reports them and never branches on them.

/// The run was supervised and recorded (whatever the agent's outcome).
pub const RECORDED: i32 = 0;
/// J6: the run was handed to a cluster job, which records it.
pub const HANDED_OVER: i32 = 0;
/// A failure after commit prevented recording (status and result both failed), a committed
/// startup failure (R16), or the test parent vanished (R4).
pub const RECORDING_FAILED: i32 = 1;
/// Invalid or unreadable configuration (R2), or an invalid test-hook specification.
pub const INVALID_CONFIG: i32 = 2;
/// A pre-commit handshake failure (R7).
pub const HANDSHAKE_FAILED: i32 = 3;
/// The host vanished before commit (R8).
pub const HOST_VANISHED: i32 = 4;

/// Prints `Subagent runner error: <message>` (the stderr line of every non-zero exit).
pub fn report(message: &str) {
    eprintln!("Subagent runner error: {message}");
}
