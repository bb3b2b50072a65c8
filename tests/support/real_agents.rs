//! Running the real agent CLIs (Claude Code, Codex, pi; installed into `target/agents` by
//! `scripts/setup-agents.sh`) against a [`Scope`] of the fake model server, each in an
//! isolated scratch directory: its own HOME, config directory and working directory.
//!
//! [`Agent::env`] is the whole environment a CLI needs (PATH with the agents' `.bin` first,
//! HOME, the config directory and the API settings), so a test can run the CLI directly
//! ([`Agent::command`], [`Agent::run`]) or hand the same variables to `sublaunch` (the host
//! and the shim pass them through: they withhold only `SUBLAUNCH_*` runner variables, the
//! systemd activation variables and git routing variables).
//!
//! Facts the settings rely on (from runs of the pinned versions, target/cli-facts.md):
//! - Claude Code `-p` works as root; `--dangerously-skip-permissions` and
//!   `--permission-mode bypassPermissions` are refused as root unless `IS_SANDBOX=1`.
//! - Codex reads the key from the provider's `env_key`; `--skip-git-repo-check` is needed
//!   outside a repository; it warns on stderr that it will not create PATH aliases under /tmp.
//! - pi needs Node 22 (the `node` in the same `.bin`) and `PI_OFFLINE=1` to make no startup
//!   requests; its retries default to 2 s, 4 s, 8 s, so the settings here make them short.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use tempfile::TempDir;

use crate::model_server::Scope;

/// The API key every CLI is given (the fake server accepts anything).
pub const FAKE_API_KEY: &str = "sk-fake-test-key";

/// The default time a CLI run may take before it is killed.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// `target/agents/node_modules/.bin`: from `CARGO_MANIFEST_DIR`, else next to the test
/// executable (`target/<profile>/deps/<test>` → `target/agents/...`).
pub fn bin_dir() -> PathBuf {
    let from_manifest =
        std::env::var_os("CARGO_MANIFEST_DIR").map(|dir| PathBuf::from(dir).join("target/agents/node_modules/.bin"));
    if let Some(dir) = from_manifest.filter(|d| d.is_dir()) {
        return dir;
    }
    let exe = std::env::current_exe().expect("the test executable's path");
    let target = exe.ancestors().nth(3).expect("target/<profile>/deps/<test>");
    target.join("agents/node_modules/.bin")
}

/// Whether the three CLIs (and Node 22) are installed.
pub fn installed() -> bool {
    let dir = bin_dir();
    ["claude", "codex", "pi", "node"]
        .iter()
        .all(|name| dir.join(name).is_file())
}

/// Panics with the command to run when the CLIs are not installed.
#[track_caller]
pub fn require_installed() {
    assert!(
        installed(),
        "the agent CLIs are not installed in {}; run scripts/setup-agents.sh",
        bin_dir().display()
    );
}

/// The PATH a CLI runs with: the agents' `.bin` first (its `node` is Node 22), then this
/// process's PATH.
pub fn path_env() -> String {
    let mut path = bin_dir().display().to_string();
    if let Some(rest) = std::env::var_os("PATH") {
        path.push(':');
        path.push_str(&rest.to_string_lossy());
    }
    path
}

/// Which wire API pi's custom provider uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PiApi {
    /// `openai-completions`: `POST …/v1/chat/completions` (no cache-write figure).
    OpenAiCompletions,
    /// `openai-responses`: `POST …/v1/responses`.
    OpenAiResponses,
    /// `anthropic-messages`: `POST …/v1/messages` (the only one with cache-write tokens).
    AnthropicMessages,
}

impl PiApi {
    fn name(self) -> &'static str {
        match self {
            PiApi::OpenAiCompletions => "openai-completions",
            PiApi::OpenAiResponses => "openai-responses",
            PiApi::AnthropicMessages => "anthropic-messages",
        }
    }
}

/// pi's custom provider name in models.json: `--model fake/<id>`.
pub const PI_PROVIDER: &str = "fake";
/// A model of pi's provider with `"reasoning": false`.
pub const PI_MODEL: &str = "fake-model";
/// A model of pi's provider with `"reasoning": true` (thinking levels reach the request).
pub const PI_REASONING_MODEL: &str = "fake-reasoner";
/// The model Codex's config selects: one whose metadata Codex 0.169 knows (others print a
/// non-fatal "Model metadata … not found" error item).
pub const CODEX_MODEL: &str = "gpt-5.5";

/// One CLI set up against a scope: its program, scratch directories and environment.
pub struct Agent {
    /// The CLI's executable in the agents' `.bin`.
    pub program: PathBuf,
    /// The complete environment (PATH and HOME included): run with `env_clear` then these.
    pub env: Vec<(String, String)>,
    /// The PATH in `env`.
    pub path: String,
    /// The working directory to run the CLI in (empty; not a git repository).
    pub cwd: PathBuf,
    /// HOME.
    pub home: PathBuf,
    /// The CLI's config directory (CLAUDE_CONFIG_DIR, CODEX_HOME, PI_CODING_AGENT_DIR).
    pub config_dir: PathBuf,
    /// How long [`Agent::run`] waits before killing the CLI.
    pub timeout: Duration,
    scratch: TempDir,
}

/// What a CLI run printed and how it ended.
#[derive(Debug)]
pub struct RunOutput {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
}

impl RunOutput {
    /// The exit code (`None` when killed by a signal).
    pub fn code(&self) -> Option<i32> {
        self.status.code()
    }

    /// The JSON lines of stdout (lines that are not JSON are skipped).
    pub fn events(&self) -> Vec<Value> {
        self.stdout
            .lines()
            .filter_map(|line| serde_json::from_str(line).ok())
            .collect()
    }

    /// The events whose `type` is `kind`.
    pub fn events_of(&self, kind: &str) -> Vec<Value> {
        self.events().into_iter().filter(|e| e["type"] == kind).collect()
    }

    /// Everything, for assertion messages.
    pub fn describe(&self) -> String {
        format!(
            "exit {:?}\nstdout:\n{}\nstderr:\n{}",
            self.status.code(),
            self.stdout,
            self.stderr
        )
    }
}

fn scratch(prefix: &str) -> (TempDir, PathBuf, PathBuf) {
    let scratch = tempfile::Builder::new()
        .prefix(prefix)
        .tempdir()
        .expect("a scratch directory");
    let home = scratch.path().join("home");
    let cwd = scratch.path().join("work");
    std::fs::create_dir_all(&home).expect("HOME");
    std::fs::create_dir_all(&cwd).expect("the working directory");
    (scratch, home, cwd)
}

fn base_env(home: &Path, path: &str) -> Vec<(String, String)> {
    let mut env = vec![
        ("PATH".to_owned(), path.to_owned()),
        ("HOME".to_owned(), home.display().to_string()),
        ("LANG".to_owned(), "C.UTF-8".to_owned()),
        ("NO_COLOR".to_owned(), "1".to_owned()),
    ];
    if let Some(tmp) = std::env::var_os("TMPDIR") {
        env.push(("TMPDIR".to_owned(), tmp.to_string_lossy().into_owned()));
    }
    env
}

/// Claude Code against `scope`: `ANTHROPIC_BASE_URL` is the scope's base URL (Claude Code
/// appends `/v1/messages?beta=true`), an isolated `CLAUDE_CONFIG_DIR` and HOME, no telemetry,
/// no non-essential traffic, no auto-updater, and `CLAUDE_CODE_MAX_RETRIES=2` (default 10
/// retries with backoff). Run it as `claude -p --output-format stream-json --verbose
/// --model M` with the prompt on stdin.
pub fn claude(scope: &Scope) -> Agent {
    let (scratch, home, cwd) = scratch("claude-");
    let config_dir = scratch.path().join("claude-config");
    std::fs::create_dir_all(&config_dir).expect("CLAUDE_CONFIG_DIR");
    let path = path_env();
    let mut env = base_env(&home, &path);
    for (k, v) in [
        ("ANTHROPIC_BASE_URL", scope.base_url()),
        ("ANTHROPIC_API_KEY", FAKE_API_KEY.to_owned()),
        ("CLAUDE_CONFIG_DIR", config_dir.display().to_string()),
        ("DISABLE_TELEMETRY", "1".to_owned()),
        ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1".to_owned()),
        ("DISABLE_AUTOUPDATER", "1".to_owned()),
        ("DISABLE_ERROR_REPORTING", "1".to_owned()),
        ("CLAUDE_CODE_MAX_RETRIES", "2".to_owned()),
    ] {
        env.push((k.to_owned(), v));
    }
    Agent {
        program: bin_dir().join("claude"),
        env,
        path,
        cwd,
        home,
        config_dir,
        timeout: DEFAULT_TIMEOUT,
        scratch,
    }
}

/// Codex against `scope`: a `CODEX_HOME` whose config.toml selects the provider `fake`
/// (`base_url` = the scope's base URL + `/v1`, `wire_api = "responses"`, key from
/// `FAKE_API_KEY`, one HTTP retry and one stream reconnect) and the model [`CODEX_MODEL`].
/// Run it as `codex exec --json --skip-git-repo-check -` with the prompt on stdin.
pub fn codex(scope: &Scope) -> Agent {
    let (scratch, home, cwd) = scratch("codex-");
    let config_dir = scratch.path().join("codex-home");
    std::fs::create_dir_all(&config_dir).expect("CODEX_HOME");
    let config = format!(
        r#"model = "{CODEX_MODEL}"
model_provider = "fake"
check_for_update_on_startup = false

[analytics]
enabled = false

[model_providers.fake]
name = "Fake"
base_url = "{base}/v1"
env_key = "FAKE_API_KEY"
wire_api = "responses"
request_max_retries = 1
stream_max_retries = 1
stream_idle_timeout_ms = 20000
"#,
        base = scope.base_url()
    );
    std::fs::write(config_dir.join("config.toml"), config).expect("config.toml");
    let path = path_env();
    let mut env = base_env(&home, &path);
    env.push(("CODEX_HOME".to_owned(), config_dir.display().to_string()));
    env.push(("FAKE_API_KEY".to_owned(), FAKE_API_KEY.to_owned()));
    Agent {
        program: bin_dir().join("codex"),
        env,
        path,
        cwd,
        home,
        config_dir,
        timeout: DEFAULT_TIMEOUT,
        scratch,
    }
}

/// pi against `scope`: a `PI_CODING_AGENT_DIR` whose models.json has the provider
/// [`PI_PROVIDER`] (`api`, `baseUrl` into the scope, key `$FAKE_API_KEY`, models
/// [`PI_MODEL`] and [`PI_REASONING_MODEL`], with costs 3/15/0.3/3.75 per million) and whose
/// settings.json makes it the default and retries once after 50 ms; `PI_OFFLINE=1`.
/// Run it as `pi --mode json -p --no-session` with the prompt on stdin.
pub fn pi(scope: &Scope, api: PiApi) -> Agent {
    let (scratch, home, cwd) = scratch("pi-");
    let config_dir = scratch.path().join("pi-agent");
    std::fs::create_dir_all(&config_dir).expect("PI_CODING_AGENT_DIR");
    let base_url = match api {
        PiApi::AnthropicMessages => scope.base_url(),
        PiApi::OpenAiCompletions | PiApi::OpenAiResponses => format!("{}/v1", scope.base_url()),
    };
    let cost = serde_json::json!({"input": 3, "output": 15, "cacheRead": 0.3, "cacheWrite": 3.75});
    let models = serde_json::json!({
        "providers": {
            PI_PROVIDER: {
                "baseUrl": base_url,
                "api": api.name(),
                "apiKey": "$FAKE_API_KEY",
                "models": [
                    {"id": PI_MODEL, "reasoning": false, "cost": cost},
                    {"id": PI_REASONING_MODEL, "reasoning": true, "cost": cost},
                ],
            }
        }
    });
    let settings = serde_json::json!({
        "defaultProvider": PI_PROVIDER,
        "defaultModel": PI_MODEL,
        "retry": {"enabled": true, "maxRetries": 1, "baseDelayMs": 50},
    });
    std::fs::write(config_dir.join("models.json"), models.to_string()).expect("models.json");
    std::fs::write(config_dir.join("settings.json"), settings.to_string()).expect("settings.json");
    let path = path_env();
    let mut env = base_env(&home, &path);
    env.push(("PI_CODING_AGENT_DIR".to_owned(), config_dir.display().to_string()));
    env.push(("PI_OFFLINE".to_owned(), "1".to_owned()));
    env.push(("PI_SKIP_VERSION_CHECK".to_owned(), "1".to_owned()));
    env.push(("PI_TELEMETRY".to_owned(), "0".to_owned()));
    env.push(("FAKE_API_KEY".to_owned(), FAKE_API_KEY.to_owned()));
    Agent {
        program: bin_dir().join("pi"),
        env,
        path,
        cwd,
        home,
        config_dir,
        timeout: DEFAULT_TIMEOUT,
        scratch,
    }
}

impl Agent {
    /// The scratch directory holding HOME, the config directory and the working directory.
    pub fn scratch(&self) -> &Path {
        self.scratch.path()
    }

    /// Sets (or replaces) a variable of the environment.
    pub fn set_env(&mut self, key: &str, value: &str) -> &mut Self {
        self.env.retain(|(k, _)| k != key);
        self.env.push((key.to_owned(), value.to_owned()));
        self
    }

    /// The CLI with `args`, in [`Agent::cwd`], with exactly [`Agent::env`].
    pub fn command<I, S>(&self, args: I) -> Command
    where
        I: IntoIterator<Item = S>,
        S: AsRef<std::ffi::OsStr>,
    {
        let mut command = Command::new(&self.program);
        command
            .args(args)
            .current_dir(&self.cwd)
            .env_clear()
            .envs(self.env.iter().cloned());
        command
    }

    /// Runs the CLI with `args` and `stdin`; kills it (and its process group) after
    /// [`Agent::timeout`] and panics with what it printed.
    pub fn run<I, S>(&self, args: I, stdin: &str) -> RunOutput
    where
        I: IntoIterator<Item = S>,
        S: AsRef<std::ffi::OsStr>,
    {
        run_with_timeout(self.command(args), stdin, self.timeout)
    }
}

/// Runs `command` with `stdin` written to it, in a process group of its own; after `timeout`
/// the group is killed and the test fails showing the output so far.
pub fn run_with_timeout(mut command: Command, stdin: &str, timeout: Duration) -> RunOutput {
    use std::os::unix::process::CommandExt;
    command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let description = format!("{command:?}");
    let mut child = command
        .spawn()
        .unwrap_or_else(|e| panic!("spawning {description}: {e}"));
    let pid = child.id();
    let mut input = child.stdin.take().expect("stdin");
    let stdin = stdin.to_owned();
    let writer = std::thread::spawn(move || {
        let _ = input.write_all(stdin.as_bytes());
    });
    let reader = |mut source: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = source.read_to_end(&mut bytes);
            String::from_utf8_lossy(&bytes).into_owned()
        })
    };
    let stdout = reader(Box::new(child.stdout.take().expect("stdout")));
    let stderr = reader(Box::new(child.stderr.take().expect("stderr")));
    let deadline = Instant::now() + timeout;
    let (status, timed_out) = loop {
        if let Some(status) = child.try_wait().expect("waiting for the CLI") {
            break (status, false);
        }
        if Instant::now() >= deadline {
            kill_group(pid);
            let _ = child.kill();
            break (child.wait().expect("reaping the CLI"), true);
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    // Something the CLI left running in its group holds the pipes open: end it. (While it
    // lives, the group id is still this group's.)
    let settle = Instant::now() + Duration::from_secs(2);
    while !(stdout.is_finished() && stderr.is_finished()) && Instant::now() < settle {
        std::thread::sleep(Duration::from_millis(10));
    }
    if !(stdout.is_finished() && stderr.is_finished()) {
        kill_group(pid);
    }
    let _ = writer.join();
    let output = RunOutput {
        status,
        stdout: stdout.join().unwrap_or_default(),
        stderr: stderr.join().unwrap_or_default(),
    };
    assert!(
        !timed_out,
        "{description} did not finish in {timeout:?}; killed\n{}",
        output.describe()
    );
    output
}

/// SIGKILL to the process group `pgid` (the group of a CLI this module started, while a member
/// of it is known to be alive or unreaped).
fn kill_group(pgid: u32) {
    let _ = Command::new("kill")
        .args(["-KILL", "--", &format!("-{pgid}")])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}
