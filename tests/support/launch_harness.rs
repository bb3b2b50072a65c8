//! Helpers for the launch suites (`tests/launch_*.rs`, `tests/faults_host_*.rs`): private
//! scratch roots, the CLI with a test environment, plans as JSON, run-file readers, and
//! waiting for observables with deadlines (never a sleep standing in for synchronisation).
//!
//! Only std and serde_json are available here (this is the support library's code); the
//! suites convert the JSON into the library's types themselves.

use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// The shim's fault-injection variable (§T).
pub const SHIM_FAULT_ENV: &str = "SUBLAUNCH_SHIM_FAULT";
/// The host's fault-injection variable (§T).
pub const HOST_FAULT_ENV: &str = "SUBLAUNCH_HOST_FAULT";
/// The shim's test-parent monitor (R4): stray shims exit when the test dies.
pub const TEST_PARENT_ENV: &str = "SUBLAUNCH_TEST_PARENT_PID";
/// The host's K13 override (test-hooks builds).
pub const STARTUP_TIMEOUT_ENV: &str = "SUBLAUNCH_RUNNER_STARTUP_TIMEOUT_MS";
/// The shim's K13 override (test-hooks builds).
pub const CONTROL_TIMEOUT_ENV: &str = "SUBLAUNCH_SHIM_CONTROL_TIMEOUT_MS";

static NEXT: AtomicUsize = AtomicUsize::new(0);

/// A private directory holding a root (`root/`) and a working directory (`work/`), removed
/// when dropped.
#[derive(Debug)]
pub struct Scratch {
    path: PathBuf,
    /// Whether the user this scratch plays trusts the work directory's project.
    trusting: bool,
}

impl Scratch {
    /// A fresh scratch directory named after `name`.
    pub fn new(name: &str) -> Self {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let path = std::env::temp_dir().join(format!(
            "sublaunch-{name}-{}-{}-{nanos:08x}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(path.join("work")).expect("scratch directory");
        Self { path, trusting: false }
    }

    /// A scratch whose user trusts the project of `work/` and approves its programs as they
    /// are at each command (`sublaunch trust` runs before every [`Scratch::cli`]): for suites
    /// about what project configuration does once trusted, not about trust itself.
    pub fn trusting(name: &str) -> Self {
        let mut scratch = Self::new(name);
        scratch.trusting = true;
        scratch
    }

    /// Trusts the project of `work/` as it is now, through the CLI.
    pub fn trust_work(&self) {
        let output = self.trust_output();
        assert!(
            output.status.success(),
            "sublaunch trust failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }

    /// [`Scratch::trust_work`] before a command of a trusting scratch: a project whose files
    /// are broken cannot be trusted, and the command that follows reports them itself.
    fn trust_quietly(&self) {
        let _ = self.trust_output();
    }

    fn trust_output(&self) -> std::process::Output {
        Command::new(crate::bin("sublaunch"))
            .args(["trust", "--json"])
            .current_dir(self.work())
            .env_clear()
            .envs(self.cli_env())
            .output()
            .expect("sublaunch trust")
    }

    /// The scratch directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// `<scratch>/root`, the `SUBLAUNCH_ROOT` of the test.
    pub fn root(&self) -> PathBuf {
        self.path.join("root")
    }

    /// `<root>/runs`.
    pub fn runs(&self) -> PathBuf {
        self.root().join("runs")
    }

    /// `<root>/results`.
    pub fn results(&self) -> PathBuf {
        self.root().join("results")
    }

    /// `<root>/runs/<id>`.
    pub fn run_dir(&self, run_id: &str) -> PathBuf {
        self.runs().join(run_id)
    }

    /// A working directory for the agents.
    pub fn work(&self) -> PathBuf {
        self.path.join("work")
    }

    /// Makes `work/` a git repository (real `git init`), so project files in it
    /// (`.sublaunch/agents`, settings, registries) are found from directories below it: the
    /// search for them stops at the repository root.
    pub fn init_repo(&self) -> PathBuf {
        let status = std::process::Command::new("git")
            .args(["init", "-q"])
            .arg(self.work())
            .status()
            .expect("git is needed for project tests");
        assert!(status.success(), "git init failed");
        self.work()
    }

    /// Creates the root the way the host would (0700), for tests that plant files first.
    pub fn create_root(&self) {
        use std::os::unix::fs::PermissionsExt;
        for dir in [self.root(), self.runs(), self.results()] {
            std::fs::create_dir_all(&dir).expect("root");
            std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).expect("chmod root");
        }
    }

    /// The `sublaunch` CLI with a clean test environment: this root, the test-parent monitor,
    /// a shared planner cache, the work directory as cwd.
    pub fn cli(&self, args: &[&str]) -> Command {
        if self.trusting {
            self.trust_quietly();
        }
        let mut command = Command::new(crate::bin("sublaunch"));
        command
            .args(args)
            .current_dir(self.work())
            .env_clear()
            .envs(self.cli_env());
        command
    }

    /// `run --agent shell --task TASK --wait`, which must succeed: the run id.
    pub fn finished_shell_run(&self, task: &str) -> String {
        let output = self
            .cli(&["run", "--agent", "shell", "--task", task, "--wait"])
            .output()
            .expect("sublaunch run");
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        crate::cli::waited_run_id(&output)
    }

    /// [`Scratch::cli`] run by an ordinary user, so permission bits bind: when the tests run
    /// as root (as CI does), the scratch tree is given to [`UNPRIVILEGED_UID`] and the CLI (a copy with its shim,
    /// which that user can reach) runs under `setpriv` as that user, with a copy of the shared
    /// planner cache. Call it after preparing the tree.
    pub fn cli_unprivileged(&self, args: &[&str]) -> Command {
        if !running_as_root() {
            return self.cli(args);
        }
        if self.trusting {
            self.trust_quietly();
        }
        let bin = self.path.join("user-bin");
        std::fs::create_dir_all(&bin).expect("user bin");
        for name in ["sublaunch", "sublaunch-shim"] {
            copy_executable(&crate::bin(name), &bin.join(name));
        }
        let cache = self.path.join("user-cache");
        copy_tree(&cache_dir(), &cache);
        give_tree(&self.path, UNPRIVILEGED_UID);
        let uid = UNPRIVILEGED_UID;
        let mut command = Command::new("setpriv");
        command
            .args([
                format!("--reuid={uid}"),
                format!("--regid={uid}"),
                "--clear-groups".into(),
                "--".into(),
            ])
            .arg(bin.join("sublaunch"))
            .args(args)
            .current_dir(self.work())
            .env_clear()
            .envs(self.cli_env())
            .env("SUBLAUNCH_CACHE_DIR", &cache);
        command
    }

    /// `sublaunch result ID --json` of a run that completed, parsed.
    pub fn result_json(&self, run_id: &str) -> Value {
        serde_json::from_str(&crate::cli::ok(
            &self
                .cli(&["result", run_id, "--json"])
                .output()
                .expect("sublaunch result"),
        ))
        .expect("result --json prints JSON")
    }

    /// `sublaunch result ID --json` of an ended run, whatever its outcome (`result` exits 1
    /// for a failed run and still prints its answer).
    pub fn answer_json(&self, run_id: &str) -> Value {
        let output = self
            .cli(&["result", run_id, "--json"])
            .output()
            .expect("sublaunch result");
        serde_json::from_slice(&output.stdout)
            .unwrap_or_else(|e| panic!("result --json: {e}: {}", crate::cli::text(&output.stderr)))
    }

    /// `sublaunch ARGS` (a shell-quoted argument string) run from a shell that set `umask`
    /// first, with [`Scratch::cli`]'s environment and directory: the CLI sees the umask a
    /// user's terminal would give it.
    pub fn cli_under_umask(&self, umask: &str, args: &str) -> std::process::Output {
        Command::new("sh")
            .arg("-c")
            .arg(format!("umask {umask}; exec \"$0\" {args}"))
            .arg(crate::bin("sublaunch"))
            .current_dir(self.work())
            .env_clear()
            .envs(self.cli_env())
            .output()
            .expect("sh runs sublaunch")
    }

    /// The environment of [`Scratch::cli`].
    pub fn cli_env(&self) -> Vec<(String, String)> {
        let path = |p: PathBuf| p.to_string_lossy().into_owned();
        vec![
            ("PATH".into(), "/usr/bin:/bin".into()),
            ("HOME".into(), path(self.path.join("home"))),
            ("SUBLAUNCH_ROOT".into(), path(self.root())),
            ("SUBLAUNCH_CACHE_DIR".into(), path(cache_dir())),
            (TEST_PARENT_ENV.into(), std::process::id().to_string()),
        ]
    }

    /// Environment pairs the library launches of a test hand to the shim.
    pub fn shim_env(&self) -> Vec<(String, String)> {
        vec![(TEST_PARENT_ENV.into(), std::process::id().to_string())]
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// The ordinary user permission tests run as when the suite runs as root.
pub const UNPRIVILEGED_UID: u32 = 4242;

/// Gives `path` and everything under it to `uid` (without following links).
fn give_tree(path: &Path, uid: u32) {
    std::os::unix::fs::lchown(path, Some(uid), Some(uid)).expect("chown for the unprivileged user");
    if path.is_dir() && !path.is_symlink() {
        for entry in std::fs::read_dir(path).expect("list for chown").flatten() {
            give_tree(&entry.path(), uid);
        }
    }
}

/// Copies the regular files and directories under `from` to `to` (missing `from`: nothing).
fn copy_tree(from: &Path, to: &Path) {
    let Ok(entries) = std::fs::read_dir(from) else { return };
    std::fs::create_dir_all(to).expect("copy target");
    for entry in entries.flatten() {
        let target = to.join(entry.file_name());
        match entry.file_type() {
            Ok(t) if t.is_dir() => copy_tree(&entry.path(), &target),
            Ok(t) if t.is_file() => {
                let _ = std::fs::copy(entry.path(), &target);
            }
            _ => {}
        }
    }
}

/// Copies an executable to `to` in a `cp` process of its own. A copy written by the test
/// process itself holds a write descriptor that a child forked meanwhile by another test
/// thread inherits until it execs; running the copy in that moment fails with `ETXTBSY`.
pub fn copy_executable(from: &Path, to: &Path) {
    let status = std::process::Command::new("cp")
        .arg("--")
        .arg(from)
        .arg(to)
        .status()
        .expect("cp");
    assert!(status.success(), "cp {} {}", from.display(), to.display());
}

/// A planner artifact cache shared by every CLI run of the suites (compiling the planner
/// component once, not per test).
pub fn cache_dir() -> PathBuf {
    crate::bin("sublaunch")
        .parent()
        .map_or_else(std::env::temp_dir, Path::to_path_buf)
        .join("launch-test-cache")
}

/// A one-step `shell` LaunchPlan (JSON) running `task` in `cwd`.
pub fn shell_plan(task: &str, cwd: &Path) -> Value {
    json!({
        "steps": [{
            "agent": "shell",
            "stepIndex": 0,
            "task": task,
            "cwd": cwd,
            "requestedCwd": cwd,
            "structured": false,
        }]
    })
}

/// Reads a JSON file; `None` when absent or not JSON.
pub fn read_json(path: &Path) -> Option<Value> {
    serde_json::from_slice(&std::fs::read(path).ok()?).ok()
}

/// `<run>/status.json`.
pub fn status(run_dir: &Path) -> Option<Value> {
    read_json(&run_dir.join("status.json"))
}

/// `status.state` as a string.
pub fn state(run_dir: &Path) -> Option<String> {
    status(run_dir)?.get("state")?.as_str().map(str::to_owned)
}

/// Whether a state is terminal.
pub fn is_terminal(state: &str) -> bool {
    matches!(state, "complete" | "failed" | "paused" | "stopped" | "rejected")
}

/// The lines of `<run>/events.jsonl` that parse.
pub fn events(run_dir: &Path) -> Vec<Value> {
    std::fs::read_to_string(run_dir.join("events.jsonl"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// The events of `event_type`.
pub fn events_of(run_dir: &Path, event_type: &str) -> Vec<Value> {
    events(run_dir)
        .into_iter()
        .filter(|e| e.get("type").and_then(Value::as_str) == Some(event_type))
        .collect()
}

/// Polls `probe` every few milliseconds until it yields a value; panics naming `what` after
/// `limit`.
pub fn wait_for<T>(what: &str, limit: Duration, mut probe: impl FnMut() -> Option<T>) -> T {
    let start = Instant::now();
    loop {
        if let Some(value) = probe() {
            return value;
        }
        assert!(start.elapsed() < limit, "timed out after {limit:?} waiting for {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Waits until the run's status is terminal and returns it.
pub fn wait_terminal(run_dir: &Path, limit: Duration) -> Value {
    wait_for(&format!("a terminal status in {}", run_dir.display()), limit, || {
        let status = status(run_dir)?;
        is_terminal(status.get("state")?.as_str()?).then_some(status)
    })
}

/// Every `.*.tmp` file under `dir` (recursively).
pub fn temp_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        match entry.file_type() {
            Ok(t) if t.is_dir() => out.extend(temp_files(&path)),
            Ok(_) if name.starts_with('.') && name.ends_with(".tmp") => out.push(path),
            _ => {}
        }
    }
    out
}

/// Live processes whose command line carries `mark`.
pub fn processes_with(mark: &str) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| String::from_utf8_lossy(&c).contains(mark))
                && pid_alive(*pid)
        })
        .collect()
}

/// Whether `pid` names a live process that is not a zombie. Where pid 1 never reaps orphans
/// (CI's pid namespace may be such a place), an exited orphan stays a zombie for good.
pub fn pid_alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rfind(')')
            .and_then(|i| stat[i + 1..].split_whitespace().next())
            .is_some_and(|state| state != "Z" && state != "X"),
        Err(_) => false,
    }
}

/// The pids of `sublaunch-shim` processes whose `SUBLAUNCH_ROOT` is `root`.
pub fn shims_under(root: &Path) -> Vec<u32> {
    let needle = format!("SUBLAUNCH_ROOT={}", root.display());
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return out;
    };
    for entry in entries.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
            continue;
        };
        if !String::from_utf8_lossy(&cmdline).contains("sublaunch-shim") || !pid_alive(pid) {
            continue;
        }
        let Ok(environ) = std::fs::read(format!("/proc/{pid}/environ")) else {
            continue;
        };
        if environ.split(|b| *b == 0).any(|kv| kv == needle.as_bytes()) {
            out.push(pid);
        }
    }
    out
}

/// Every live process (any program) whose environment says `SUBLAUNCH_ROOT=<root>`: the
/// runners of that root, their agents and everything the agents started, which inherit it —
/// and the CLI processes of the test, which the caller has let end first.
pub fn processes_under(root: &Path) -> Vec<u32> {
    let needle = format!("SUBLAUNCH_ROOT={}", root.display());
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| entry.file_name().to_str().and_then(|n| n.parse::<u32>().ok()))
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .is_ok_and(|environ| environ.split(|b| *b == 0).any(|kv| kv == needle.as_bytes()))
                && pid_alive(*pid)
        })
        .collect()
}

/// This host's name (for lease owners).
pub fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_owned())
        .unwrap_or_default()
}

/// Whether the tests run as root (chmod-based rows skip: root bypasses permission checks).
pub fn running_as_root() -> bool {
    std::fs::read_to_string("/proc/self/status").is_ok_and(|s| {
        s.lines()
            .find(|l| l.starts_with("Uid:"))
            .and_then(|l| l.split_whitespace().nth(2))
            == Some("0")
    })
}

/// The entries of a directory (names), sorted; empty when absent.
pub fn names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}
