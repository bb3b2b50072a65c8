//! The test host: it plays the sublaunch host against the real `sublaunch-shim` binary.
//!
//! It creates a private root (`SUBLAUNCH_ROOT` in a temp dir), writes what the host writes
//! before spawning (runner config, initial status, active-run marker, pending proof, initial
//! candidate, runner logs), spawns the shim exactly as the host does — `process_group(0)` when the test's own group is
//! nameable, its
//! end of an `AF_UNIX` socketpair as stdin with `SUBLAUNCH_STARTUP_FD=0`, the run logs as
//! stdout/stderr, `SUBLAUNCH_TEST_PARENT_PID` — writes proceed (and for revival answers
//! ready/acknowledged/confirmed), reaps the shim, and can run the host's finalization (H20, S7)
//! with the protocol library to check the proofs a real host would derive.
//!
//! Waits poll files with deadlines; nothing sleeps in place of synchronisation.

#![allow(dead_code)]

use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::fs::OpenOptions;
use std::io::{Read, Write};
use std::os::fd::OwnedFd;
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::net::UnixStream;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::Duration;
use sublaunch_protocol::files::atomic::Durability;
use sublaunch_protocol::files::dir::Dir;
use sublaunch_protocol::files::doc::ReadDoc;
use sublaunch_protocol::files::durability::{DocKind, DurabilityPolicy};
use sublaunch_protocol::files::layout::names;
use sublaunch_protocol::os::random::{OsRandom, uuid_v4};
use sublaunch_protocol::records::config::{CommandSpec, RevivalLease, RunnerConfig, StepConfig};
use sublaunch_protocol::records::handshake::{
    ControlAction, ControlMessage, Doorbell, DoorbellReader, exited_before_commit_message,
};
use sublaunch_protocol::records::index::ActiveRunIndex;
use sublaunch_protocol::records::lease::SessionLeases;
use sublaunch_protocol::records::proof::{Candidate, FinalizeContext, ProcessTerminal, RunnerInstance, finalize};
use sublaunch_protocol::records::status::{InitialStatus, StartupFailure, Status, persist_startup_failure};

/// The shim binary under test (built with `test-hooks` through the self dev-dependency).
pub const SHIM: &str = env!("CARGO_BIN_EXE_sublaunch-shim");

/// Generous deadline for things that normally take milliseconds (loaded 2-core machines).
pub const LONG: Duration = Duration::from_secs(20);

// Polling a probe and reading a JSON file that may not be there yet, as the end-to-end
// suites do.
pub use sublaunch_tests::launch_harness::{read_json, wait_for};

/// Wall-clock epoch ms.
pub fn wall_ms() -> u64 {
    u64::try_from(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis(),
    )
    .unwrap()
}

/// A random token for marking processes (`: <token>` in a shell command line).
pub fn token() -> String {
    format!(
        "tok{:016x}",
        sublaunch_protocol::os::random::RandomSource::next_u64(&OsRandom)
    )
}

/// Pids of live (non-zombie) processes whose command line contains `marker`.
pub fn processes_with(marker: &str) -> Vec<u32> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().filter_map(Result::ok) {
        let Some(pid) = entry.file_name().to_str().and_then(|p| p.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
            continue;
        };
        let zombie = std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|s| s.rfind(')').map(|i| s[i + 2..].starts_with('Z')))
            .unwrap_or(true);
        if !zombie && String::from_utf8_lossy(&cmdline).contains(marker) {
            out.push(pid);
        }
    }
    out
}

/// A kB field of `/proc/<pid>/status` (`VmRSS`, `VmHWM`).
pub fn proc_status_kb(pid: u32, field: &str) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = text.lines().find(|l| l.starts_with(&format!("{field}:")))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// H9, the host's duty: descriptors the test process inherited from its own parent (cargo's
/// jobserver pipe …) are marked CLOEXEC, so the shim inherits exactly 0, 1, 2 and the doorbell.
pub fn host_fd_hygiene() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // SAFETY: close_range with CLOSE_RANGE_CLOEXEC only sets descriptor flags.
        unsafe { libc::close_range(3, u32::MAX, libc::CLOSE_RANGE_CLOEXEC as libc::c_int) };
    });
}

/// Whether `pid` has a handler installed for `signal` (`SigCgt` of `/proc/<pid>/status`).
pub fn catches(pid: u32, signal: i32) -> bool {
    signal_mask_has(pid, "SigCgt:", signal)
}

/// Whether `pid` ignores `signal` (`SigIgn` of `/proc/<pid>/status`).
pub fn ignores(pid: u32, signal: i32) -> bool {
    signal_mask_has(pid, "SigIgn:", signal)
}

fn signal_mask_has(pid: u32, field: &str, signal: i32) -> bool {
    let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) else {
        return false;
    };
    status
        .lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| u64::from_str_radix(l.split_whitespace().nth(1)?, 16).ok())
        .is_some_and(|mask| mask & (1u64 << (signal - 1)) != 0)
}

/// A private root: `<tmp>/root` with `runs/` and `results/` (0700).
pub struct Root {
    _tmp: tempfile::TempDir,
    /// `<root>`.
    pub root: PathBuf,
}

impl Root {
    /// A fresh root.
    pub fn new() -> Self {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("root");
        Dir::create_private(&root.join("runs")).unwrap();
        Dir::create_private(&root.join("results")).unwrap();
        Self { _tmp: tmp, root }
    }

    /// `<root>/runs`.
    pub fn runs(&self) -> PathBuf {
        self.root.join("runs")
    }

    /// `<root>/results`.
    pub fn results(&self) -> PathBuf {
        self.root.join("results")
    }

    /// A scratch directory inside the temp dir (agent cwd, flags, session files).
    pub fn scratch(&self, name: &str) -> PathBuf {
        let path = self.root.parent().unwrap().join(name);
        std::fs::create_dir_all(&path).unwrap();
        path
    }

    /// Plays the host up to and including the spawn (H5–H14).
    pub fn launch(&self, spec: Spec) -> Launched {
        host_fd_hygiene();
        let id = spec.id.clone().unwrap_or_else(|| format!("run-{}", &token()[3..15]));
        let instance = uuid_v4(&OsRandom);
        let run = self.runs().join(&id);
        let run_dir = Dir::create_private(&run).unwrap();
        let cwd = spec.cwd.clone().unwrap_or_else(|| self.scratch("cwd"));
        let steps: Vec<StepConfig> = spec
            .steps
            .iter()
            .map(|task| {
                let mut step = StepConfig::shell(task, cwd.to_str().unwrap(), spec.agent_env.clone());
                if let Some(argv) = &spec.argv {
                    // A bare command runs as given (no adapter).
                    step.adapter = None;
                    step.command = Some(CommandSpec {
                        argv: argv.clone(),
                        env: spec.agent_env.clone(),
                        cwd: Some(cwd.to_str().unwrap().to_owned()),
                    });
                }
                step
            })
            .collect();
        let cfg = RunnerConfig {
            config_version: sublaunch_protocol::records::config::CONFIG_VERSION,
            id: id.clone(),
            steps,
            result_path: self.results().join(format!("{id}.json")).to_string_lossy().into_owned(),
            cwd: cwd.to_string_lossy().into_owned(),
            async_dir: run.to_string_lossy().into_owned(),
            session_id: spec.session_id.clone(),
            completion_owner_id: Some("owner-1".into()),
            tool_call_id: spec.tool_call_id.clone(),
            revival_lease: spec.revival.clone(),
            timeout_ms: spec.timeout_ms,
            deadline_at: None,
            command: None,
            runner_process_instance_id: instance.clone(),
            launch_barrier_token: spec.revival.is_none().then(|| instance.clone()),
            agent_umask: None,
            workflow: Default::default(),
            on_end: None,
            max_active: None,
            usage_budget: None,
            checkpoint_before_deadline_ms: None,
            project_config: Default::default(),
            containment_required: spec.containment_required,
            cluster: None,
            parent_run_id: None,
            tree_root_run_id: None,
            spend: None,
        };
        // H13/H14: initial status, marker, sidecars (as the host writes them before proceed).
        let policy = DurabilityPolicy::standard();
        let initial = Status::initial(&InitialStatus {
            run_id: id.clone(),
            runner_process_instance_id: instance.clone(),
            session_id: cfg.session_id.clone(),
            completion_owner_id: cfg.completion_owner_id.clone(),
            tool_call_id: cfg.tool_call_id.clone(),
            mode: if cfg.steps.len() > 1 { "chain" } else { "single" }.into(),
            steps: cfg.steps.iter().map(|s| (s.agent.clone().unwrap(), None)).collect(),
            pid: 0,
            pid_namespace_scope: None,
            pid_start_identity: None,
            now: wall_ms(),
        });
        run_dir
            .write_doc(names::STATUS, &initial, policy.for_kind(DocKind::InitialStatus))
            .unwrap();
        let runs = Dir::open(&self.runs()).unwrap();
        ActiveRunIndex::new(&runs, policy)
            .unwrap()
            .mark(&id, cfg.tool_call_id.as_deref())
            .unwrap();
        run_dir
            .write_doc(
                names::PROCESS_TERMINAL_CANDIDATE,
                &Candidate::initial(&id, &instance),
                policy.for_kind(DocKind::InitialCandidate),
            )
            .unwrap();
        run_dir
            .write_doc(
                names::PROCESS_TERMINAL,
                &ProcessTerminal::pending(&id, &instance),
                policy.for_kind(DocKind::PendingProof),
            )
            .unwrap();
        for planted in &spec.plant {
            planted(&run);
        }
        let cfg_path = self.root.join(names::runner_config(&id));
        Dir::open(&self.root)
            .unwrap()
            .write(&names::runner_config(&id), &cfg.to_bytes(), Durability::Atomic)
            .unwrap();
        let log = |name: &str| {
            OpenOptions::new()
                .append(true)
                .create(true)
                .mode(0o600)
                .custom_flags(libc::O_NOFOLLOW)
                .open(run.join(name))
                .unwrap()
        };
        let mut command = Command::new(SHIM);
        command
            .arg(&cfg_path)
            .stdout(log(names::RUNNER_STDOUT_LOG))
            .stderr(log(names::RUNNER_STDERR_LOG))
            .env("SUBLAUNCH_ROOT", &self.root)
            .env("SUBLAUNCH_RUNNER_CONFIG", &cfg_path)
            .env("SUBLAUNCH_TEST_PARENT_PID", std::process::id().to_string())
            .env("SUBLAUNCH_SHIM_CONTROL_TIMEOUT_MS", spec.control_timeout_ms.to_string())
            .env_remove("SUBLAUNCH_SHIM_FAULT");
        if sublaunch_protocol::ids::own_group_is_nameable() {
            command.process_group(0);
        }
        if let Some(fault) = &spec.fault {
            command.env("SUBLAUNCH_SHIM_FAULT", fault);
        }
        for (k, v) in &spec.shim_env {
            command.env(k, v);
        }
        let mut host = None;
        let mut holder = None;
        match spec.doorbell {
            DoorbellMode::Off => {
                command.stdin(Stdio::null());
            }
            DoorbellMode::Harness | DoorbellMode::HeldBySubprocess => {
                let (host_end, child_end) = UnixStream::pair().unwrap();
                command.stdin(Stdio::from(OwnedFd::from(child_end)));
                command.env("SUBLAUNCH_STARTUP_FD", "0");
                if spec.doorbell == DoorbellMode::HeldBySubprocess {
                    // The "host" is a separate process holding the host end (F31).
                    let sleeper = Command::new("sleep")
                        .arg("1000")
                        .stdin(Stdio::from(OwnedFd::from(host_end)))
                        .stdout(Stdio::null())
                        .stderr(Stdio::null())
                        .spawn()
                        .unwrap();
                    holder = Some(sleeper);
                } else {
                    host_end.set_nonblocking(true).unwrap();
                    host = Some(host_end);
                }
            }
        }
        let child = command.spawn().unwrap();
        drop(command);
        Launched {
            pid: child.id(),
            child,
            host,
            holder,
            reader: DoorbellReader::default(),
            run,
            root: self.root.clone(),
            cfg,
            exit: None,
        }
    }
}

/// How the doorbell is provided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DoorbellMode {
    /// The test holds the host end.
    Harness,
    /// A subprocess holds the host end (the test can SIGKILL the "host").
    HeldBySubprocess,
    /// No doorbell (legacy polling).
    Off,
}

type Plant = Box<dyn Fn(&Path)>;

/// What to launch.
pub struct Spec {
    /// Run id (random when `None`).
    pub id: Option<String>,
    /// One shell task per step.
    pub steps: Vec<String>,
    /// An explicit argv instead of `sh -c <task>`.
    pub argv: Option<Vec<String>>,
    /// The agent's cwd.
    pub cwd: Option<PathBuf>,
    /// `command.env` of every step.
    pub agent_env: BTreeMap<String, String>,
    /// Session id (`Some("test-session")` by default).
    pub session_id: Option<String>,
    /// Tool call id.
    pub tool_call_id: Option<String>,
    /// Revival lease.
    pub revival: Option<RevivalLease>,
    /// `timeoutMs`.
    pub timeout_ms: Option<u64>,
    /// `SUBLAUNCH_SHIM_FAULT`.
    pub fault: Option<String>,
    /// Extra environment of the shim.
    pub shim_env: Vec<(String, String)>,
    /// Doorbell mode.
    pub doorbell: DoorbellMode,
    /// `SUBLAUNCH_SHIM_CONTROL_TIMEOUT_MS` (test-hooks build).
    pub control_timeout_ms: u64,
    /// Things to plant in `<run>` just before the spawn.
    pub plant: Vec<Plant>,
    /// `containmentRequired` (G44).
    pub containment_required: bool,
}

impl Spec {
    /// A single `sh -c <task>` step.
    pub fn shell(task: &str) -> Self {
        Self {
            id: None,
            steps: vec![task.to_owned()],
            argv: None,
            cwd: None,
            agent_env: BTreeMap::new(),
            session_id: Some("test-session".into()),
            tool_call_id: None,
            revival: None,
            timeout_ms: None,
            fault: None,
            shim_env: Vec::new(),
            doorbell: DoorbellMode::Harness,
            control_timeout_ms: 20_000,
            plant: Vec::new(),
            containment_required: false,
        }
    }

    /// Sets the fault specification.
    pub fn fault(mut self, fault: &str) -> Self {
        self.fault = Some(fault.to_owned());
        self
    }

    /// Adds a shim environment variable.
    pub fn env(mut self, key: &str, value: &str) -> Self {
        self.shim_env.push((key.to_owned(), value.to_owned()));
        self
    }

    /// A revival launch of `session_file`.
    pub fn revival(mut self, session_file: &Path) -> Self {
        self.revival = Some(RevivalLease {
            session_file: session_file.to_string_lossy().into_owned(),
            run_id: "revived".into(),
            source_run_id: "source-run".into(),
            parent_session_id: Some("parent-session".into()),
        });
        self
    }
}

/// A spawned shim and its run.
pub struct Launched {
    /// The shim.
    pub child: Child,
    /// Its pid.
    pub pid: u32,
    /// The host end of the doorbell (harness mode).
    pub host: Option<UnixStream>,
    /// The subprocess holding the host end (F31).
    pub holder: Option<Child>,
    reader: DoorbellReader,
    /// `<run>`.
    pub run: PathBuf,
    /// `<root>`.
    pub root: PathBuf,
    /// The config the shim got.
    pub cfg: RunnerConfig,
    exit: Option<ExitStatus>,
}

impl Drop for Launched {
    fn drop(&mut self) {
        if self.exit.is_none() && self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
        if let Some(holder) = &mut self.holder {
            let _ = holder.kill();
            let _ = holder.wait();
        }
    }
}

impl Launched {
    /// `<run>/<name>`.
    pub fn path(&self, name: &str) -> PathBuf {
        self.run.join(name)
    }

    /// The token the controls carry: the barrier token (fresh) or T from `ready` (revival).
    pub fn barrier_token(&self) -> String {
        self.cfg.launch_barrier_token.clone().unwrap()
    }

    /// Writes a control file (atomic, 0600) and rings the doorbell (K6, K14).
    pub fn control(&mut self, action: ControlAction, token: &str) {
        Dir::open(&self.run)
            .unwrap()
            .write_doc(
                action.file_name(),
                &ControlMessage::new(action, token),
                DurabilityPolicy::standard().for_kind(DocKind::Proceed),
            )
            .unwrap();
        if let Some(host) = &mut self.host {
            let _ = host.write_all(&Doorbell::Action(action.as_str().into()).encode());
        }
    }

    /// Fresh launch: writes proceed with the barrier token (H16).
    pub fn proceed(&mut self) {
        let token = self.barrier_token();
        self.control(ControlAction::Proceed, &token);
    }

    /// Doorbell messages received so far (non-blocking).
    pub fn doorbell_messages(&mut self) -> Vec<Doorbell> {
        let Some(host) = &mut self.host else { return Vec::new() };
        let mut buf = [0u8; 1024];
        let mut out = Vec::new();
        loop {
            match host.read(&mut buf) {
                Ok(0) | Err(_) => return out,
                Ok(n) => out.extend(self.reader.push(&buf[..n])),
            }
        }
    }

    /// Waits for `runner-startup.json` to show `state`.
    pub fn wait_report(&self, state: &str) -> Value {
        let path = self.path(names::RUNNER_STARTUP);
        wait_for(&format!("runner-startup.json state {state}"), LONG, || {
            read_json(&path).filter(|v| v["state"] == state)
        })
    }

    /// Revival: answers ready → ack, acknowledged → confirm, confirmed → proceed (K3).
    pub fn complete_revival(&mut self) -> String {
        let ready = self.wait_report("ready");
        let token = ready["token"].as_str().unwrap().to_owned();
        self.control(ControlAction::Ack, &token);
        self.wait_report("acknowledged");
        self.control(ControlAction::Confirm, &token);
        self.wait_report("confirmed");
        self.control(ControlAction::Proceed, &token);
        let _ = std::fs::remove_file(self.path(names::RUNNER_STARTUP));
        token
    }

    /// Reaps the shim (waits up to `timeout`).
    pub fn wait_exit(&mut self, timeout: Duration) -> ExitStatus {
        if let Some(status) = self.exit {
            return status;
        }
        let child = &mut self.child;
        let status = wait_for("the shim to exit", timeout, || child.try_wait().unwrap());
        self.exit = Some(status);
        status
    }

    /// Whether the shim has exited (reaping it if so).
    pub fn exited(&mut self) -> bool {
        if self.exit.is_some() {
            return true;
        }
        match self.child.try_wait().unwrap() {
            Some(status) => {
                self.exit = Some(status);
                true
            }
            None => false,
        }
    }

    /// Sends `signal` to the shim.
    pub fn signal(&self, signal: i32) {
        // SAFETY: kill(2) on our own unreaped child.
        assert_eq!(unsafe { libc::kill(i32::try_from(self.pid).unwrap(), signal) }, 0);
    }

    /// `status.json`.
    pub fn status(&self) -> Value {
        read_json(&self.path(names::STATUS)).expect("status.json")
    }

    /// `process-terminal-candidate.json`.
    pub fn candidate(&self) -> Value {
        read_json(&self.path(names::PROCESS_TERMINAL_CANDIDATE)).expect("candidate")
    }

    /// The result file, if written.
    pub fn result(&self) -> Option<Value> {
        read_json(Path::new(&self.cfg.result_path))
    }

    /// The event lines.
    pub fn events(&self) -> Vec<Value> {
        std::fs::read_to_string(self.path(names::EVENTS))
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    /// The event types in order.
    pub fn event_types(&self) -> Vec<String> {
        self.events()
            .iter()
            .filter_map(|e| e["type"].as_str().map(str::to_owned))
            .collect()
    }

    /// Waits for an event of `kind`.
    pub fn wait_event(&self, kind: &str) -> Value {
        wait_for(&format!("event {kind}"), LONG, || {
            self.events().into_iter().find(|e| e["type"] == kind)
        })
    }

    /// `runner.stderr.log`.
    pub fn stderr(&self) -> String {
        std::fs::read_to_string(self.path(names::RUNNER_STDERR_LOG)).unwrap_or_default()
    }

    /// `output-<n>.log`.
    pub fn output(&self, step: usize) -> String {
        String::from_utf8_lossy(&std::fs::read(self.path(&names::output_log(step))).unwrap_or_default()).into_owned()
    }

    /// Whether `.active-runs/<id>` exists.
    pub fn marker_exists(&self) -> bool {
        self.root.join("runs/.active-runs").join(&self.cfg.id).exists()
    }

    /// The agent pid recorded in the status (`steps[i].externalProcess.pid`).
    pub fn agent_pid(&self, step: usize) -> Option<u32> {
        self.status()["steps"][step]["externalProcess"]["pid"]
            .as_u64()
            .map(|p| u32::try_from(p).unwrap())
    }

    /// Plays the host after the shim's exit was observed: H20 (a fresh launch that exited with
    /// proceed still present and no `subagent.run.started` is a startup failure), optionally a
    /// host-side startup error (K8), then S7 finalization.
    pub fn finalize(&mut self, host_error: Option<&str>) -> ProcessTerminal {
        let status = self.exit.expect("reap the shim first");
        let code = status.code();
        let signal = status.signal().map(sublaunch_shim::process::signals::name);
        let run = Dir::open(&self.run).unwrap();
        let policy = DurabilityPolicy::standard();
        let proceed_left = run.stat(names::RUNNER_STARTUP_PROCEED).unwrap().is_some();
        let started = sublaunch_protocol::records::events::has_run_started(&run, &self.cfg.id).unwrap();
        let error = match host_error {
            Some(e) => Some(e.to_owned()),
            None if self.cfg.revival_lease.is_none() && proceed_left && !started => {
                Some(exited_before_commit_message(code, signal.as_deref()))
            }
            None => None,
        };
        if let Some(error) = error {
            persist_startup_failure(
                &run,
                &StartupFailure {
                    run_id: self.cfg.id.clone(),
                    runner_process_instance_id: self.cfg.runner_process_instance_id.clone(),
                    session_id: self.cfg.session_id.clone(),
                    completion_owner_id: self.cfg.completion_owner_id.clone(),
                    error,
                    step_count: self.cfg.steps.len(),
                    session_file: None,
                    revival_lease_token: None,
                    now: wall_ms(),
                    keep_terminal_status: false,
                },
                policy,
            );
        }
        let root = Dir::open(&self.root).unwrap();
        let leases = SessionLeases::open(&root, policy).unwrap();
        let probe = |file: &str| leases.probe(file);
        let exists = |file: &str| Path::new(file).exists();
        let ctx = FinalizeContext {
            run_id: &self.cfg.id,
            runner_process_instance_id: &self.cfg.runner_process_instance_id,
            exit: RunnerInstance {
                process_instance_id: self.cfg.runner_process_instance_id.clone(),
                close_observed_at: wall_ms(),
                exit_code: code,
                signal,
            },
            lease_probe: &probe,
            session_file_exists: &exists,
            cluster: None,
        };
        let runs = Dir::open(&self.root.join("runs")).unwrap();
        let index = ActiveRunIndex::new(&runs, policy).unwrap();
        finalize(&run, &ctx, Some(&index), policy).unwrap().proof
    }

    /// What a later lister's reconciliation does with this run (S13), judging liveness by the
    /// real process table.
    pub fn reconcile(&self) -> Option<sublaunch_protocol::records::proof::OrphanOutcome> {
        let run = Dir::open(&self.run).unwrap();
        let runs = Dir::open(&self.root.join("runs")).unwrap();
        let index = ActiveRunIndex::new(&runs, DurabilityPolicy::standard()).unwrap();
        let oracle = sublaunch_protocol::os::processes::RealProcesses;
        let request = sublaunch_protocol::records::proof::OrphanRequest {
            spawned_here: false,
            oracle: &oracle,
            own_pid_namespace: None,
        };
        sublaunch_protocol::records::proof::repair_orphan(&run, &request, Some(&index), DurabilityPolicy::standard())
            .unwrap()
    }
}

/// The JSON of a proof.
pub fn proof_json(proof: &ProcessTerminal) -> Value {
    serde_json::to_value(proof).unwrap()
}

/// Reads `doc` of `dir` through the protocol reader (Absent/Corrupt/Present).
pub fn read_doc(dir: &Path, name: &str) -> ReadDoc<Value> {
    Dir::open(dir).unwrap().read_doc(name).unwrap()
}

/// `{}` helper for assertions on optional JSON.
pub fn null() -> Value {
    json!(null)
}

/// Resident kB per mapped file (and `[anon]`) of a process, largest first: what a memory
/// bound's failure message shows.
pub fn rss_by_mapping(pid: u32) -> String {
    let Ok(text) = std::fs::read_to_string(format!("/proc/{pid}/smaps")) else {
        return String::new();
    };
    let mut totals: std::collections::BTreeMap<String, u64> = Default::default();
    let mut current = String::new();
    for line in text.lines() {
        if let Some(kb) = line.strip_prefix("Rss:") {
            let kb: u64 = kb.trim().trim_end_matches(" kB").trim().parse().unwrap_or(0);
            *totals.entry(current.clone()).or_default() += kb;
        } else if line
            .split_whitespace()
            .next()
            .is_some_and(|f| f.contains('-') && !f.ends_with(':'))
        {
            current = line.split_whitespace().nth(5).unwrap_or("[anon]").to_owned();
        }
    }
    let mut rows: Vec<(String, u64)> = totals.into_iter().filter(|(_, kb)| *kb > 0).collect();
    rows.sort_by_key(|row| std::cmp::Reverse(row.1));
    rows.iter().map(|(name, kb)| format!("{kb:>6} kB {name}\n")).collect()
}
