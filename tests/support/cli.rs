//! Small helpers of the CLI suites: reading a process's output, asserting it succeeded, and
//! writing the files (agents, chains, fake programs) a test sets up.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Output;

/// Bytes as text (lossy).
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The stdout of a command that must have succeeded; otherwise fails showing its exit code,
/// stdout and stderr.
pub fn ok(output: &Output) -> String {
    assert!(
        output.status.success(),
        "exit {:?}\nstdout: {}\nstderr: {}",
        output.status.code(),
        text(&output.stdout),
        text(&output.stderr)
    );
    text(&output.stdout)
}

/// The run id `run --wait` prints on the first line of its stderr.
pub fn waited_run_id(output: &Output) -> String {
    text(&output.stderr).lines().next().unwrap_or_default().to_owned()
}

/// The lines of the file at `path`; none when it does not exist (yet).
pub fn lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// Writes `content` to `path`, creating its directory; returns the path.
pub fn write(path: &Path, content: &str) -> PathBuf {
    std::fs::create_dir_all(path.parent().expect("a file path")).expect("the file's directory");
    std::fs::write(path, content).expect("writing the file");
    path.to_owned()
}

/// Writes an executable script.
pub fn executable(path: &Path, content: &str) -> PathBuf {
    write(path, content);
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).expect("chmod 755");
    path.to_owned()
}

/// Runs git in `dir` with an identity of its own (the tests' HOME has no git config); its
/// stdout, failing the test when git fails.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let output = std::process::Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["-c", "user.name=t", "-c", "user.email=t@example.invalid"])
        .args(args)
        .output()
        .expect("git is needed for the worktree tests");
    assert!(
        output.status.success(),
        "git {args:?} in {}: {}",
        dir.display(),
        text(&output.stderr)
    );
    text(&output.stdout)
}
