//! The torture run: concurrent launchers (single runs, chains, parallel groups, revivals),
//! concurrent `list`/`status`/`wait` loops, random `stop`s and SIGKILLs at random moments of
//! hosts, shims, agents and listers, all through the real CLI, in a project whose completion
//! hook is approved, revoked and replaced by one nobody approved while the runs go on (and
//! whose `sublaunch trust` is killed mid-write); then the invariants every run must satisfy
//! whatever died when, and that no hook nobody approved ever ran. Driven by `tests/suite/chaos.rs` (bounded, in CI) and
//! `scripts/torture.sh` (long runs). A seed is printed so a failure replays the same choices
//! (the timing of the machine still varies).

use crate::launch_harness::{Scratch, pid_alive, processes_under, processes_with, read_json, shims_under};
use serde_json::Value;
use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How hard to torture.
#[derive(Clone, Debug)]
pub struct TortureConfig {
    /// The seed of every random choice.
    pub seed: u64,
    /// Stop launching after this many runs …
    pub runs: usize,
    /// … or after this long.
    pub duration: Duration,
    /// Concurrent launchers.
    pub launchers: usize,
    /// Concurrent `list`/`status`/`wait` loops.
    pub observers: usize,
}

/// What happened, and what was wrong afterwards.
#[derive(Debug, Default)]
pub struct TortureReport {
    /// Counts by kind (`runs`, `kills-host`, `kills-shim`, `stops`, `proofs-observed` …).
    pub counts: BTreeMap<String, usize>,
    /// Invariant violations, each naming the run or file.
    pub violations: Vec<String>,
}

impl TortureReport {
    fn add(&mut self, what: &str, n: usize) {
        *self.counts.entry(what.to_owned()).or_default() += n;
    }
}

/// xorshift64*: small, seedable, good enough to pick actions.
#[derive(Debug)]
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// The mark every agent of one torture run carries in its command line.
fn agent_mark(seed: u64) -> String {
    format!("chaos{seed:x}")
}

/// What the launchers record about the runs they started.
#[derive(Debug, Default)]
struct Ledger {
    /// `run --wait` hosts that ended on their own, by run id (their host saw the exit).
    watched: Vec<String>,
    /// Run ids something was done to (a kill of its host, shim or agent, or a stop).
    disturbed: Vec<String>,
    /// Every host process started (for the killer).
    hosts: Vec<u32>,
    /// Runs of writers in worktrees that `integrate` was run (and killed) on.
    integrated: Vec<String>,
}

struct Shared {
    scratch: Scratch,
    mark: String,
    chain: PathBuf,
    parallel: PathBuf,
    stop: AtomicBool,
    launched: AtomicUsize,
    ledger: Mutex<Ledger>,
    counts: Mutex<BTreeMap<String, usize>>,
    /// Where the project's completion hooks write which of them ran.
    hook_log: PathBuf,
    /// A chain of writers in worktrees of `writers_repo`, for `integrate`.
    writers: PathBuf,
    /// The repository the writers work in.
    writers_repo: PathBuf,
    /// Where integration gates append the commit they passed.
    verified: PathBuf,
    /// A chain of one step in `writers_repo` whose checked contract a reviewer agent reviews.
    reviewed: PathBuf,
    /// The test Slurm cluster's configuration: some single runs are its jobs.
    slurm_conf: PathBuf,
}

impl Shared {
    fn count(&self, what: &str) {
        *self.counts.lock().unwrap().entry(what.to_owned()).or_default() += 1;
    }

    fn cli(&self, args: &[&str]) -> Command {
        let mut command = self.scratch.cli(args);
        command
            .env("SLURM_CONF", &self.slurm_conf)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        command
    }

    fn run_ids(&self) -> Vec<String> {
        std::fs::read_dir(self.scratch.runs())
            .map(|entries| {
                entries
                    .flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .filter(|n| !n.starts_with('.'))
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// Runs the torture and checks the invariants.
pub fn torture(config: &TortureConfig) -> TortureReport {
    eprintln!(
        "torture: seed {} (replay with SUBLAUNCH_TORTURE_SEED={})",
        config.seed, config.seed
    );
    let scratch = Scratch::new("torture");
    scratch.create_root();
    let mark = agent_mark(config.seed);
    let chain = crate::cli::write(
        &scratch.work().join("chain.yaml"),
        &format!(
            "steps:\n  - {{agent: shell, task: 'sleep 0.1 # {mark}'}}\n  - {{agent: shell, task: 'sleep 0.2 # {mark}'}}\n"
        ),
    );
    let parallel = crate::cli::write(
        &scratch.work().join("parallel.yaml"),
        &format!(
            "steps:\n  - parallel:\n      - {{agent: shell, task: 'sleep 0.3 # {mark}'}}\n      - {{agent: shell, task: 'sleep 0.1 # {mark}'}}\n"
        ),
    );
    scratch.init_repo();
    let hook_log = scratch.path().join("hooks.log");
    let (writers, writers_repo) = writers_chain(&scratch);
    let verified = scratch.path().join("verified.log");
    let reviewed = reviewed_chain(&scratch, &mark);
    let slurm_conf = crate::slurm::SlurmCluster::shared().conf();
    let shared = Arc::new(Shared {
        scratch,
        mark,
        chain,
        parallel,
        stop: AtomicBool::new(false),
        launched: AtomicUsize::new(0),
        ledger: Mutex::new(Ledger::default()),
        counts: Mutex::new(BTreeMap::new()),
        hook_log,
        writers,
        writers_repo,
        verified,
        reviewed,
        slurm_conf,
    });
    settings_with_hook(&shared, "approved");
    seed_spend_history(&shared.scratch);
    let _ = shared.cli(&["trust"]).output();
    let deadline = Instant::now() + config.duration;
    let mut threads = Vec::new();
    for i in 0..config.launchers {
        let (shared, seed, runs) = (shared.clone(), config.seed.wrapping_add(i as u64 * 7919), config.runs);
        threads.push(std::thread::spawn(move || {
            launcher(&shared, Rng(seed | 1), runs, deadline)
        }));
    }
    for i in 0..config.observers {
        let (shared, seed) = (shared.clone(), config.seed.wrapping_add(1_000_003 + i as u64));
        threads.push(std::thread::spawn(move || observer(&shared, Rng(seed | 1))));
    }
    {
        let (shared, seed) = (shared.clone(), config.seed.wrapping_add(77));
        threads.push(std::thread::spawn(move || killer(&shared, Rng(seed | 1))));
    }
    {
        let (shared, seed) = (shared.clone(), config.seed.wrapping_add(131));
        threads.push(std::thread::spawn(move || truster(&shared, Rng(seed | 1))));
    }
    {
        let (shared, seed) = (shared.clone(), config.seed.wrapping_add(173));
        threads.push(std::thread::spawn(move || integrator(&shared, Rng(seed | 1))));
    }
    while Instant::now() < deadline && shared.launched.load(Ordering::Relaxed) < config.runs {
        std::thread::sleep(Duration::from_millis(50));
    }
    shared.stop.store(true, Ordering::Relaxed);
    for thread in threads {
        let _ = thread.join();
    }
    settle(&shared);
    check(&shared)
}

/// One launcher: single runs (detached or watched), chains, parallel groups and revivals.
fn launcher(shared: &Shared, mut rng: Rng, runs: usize, deadline: Instant) {
    while !shared.stop.load(Ordering::Relaxed)
        && Instant::now() < deadline
        && shared.launched.fetch_add(1, Ordering::Relaxed) < runs
    {
        // Each single run also leaves a descendant that escapes its group and session and
        // would run 5 minutes: it must end with its run, whatever kills what (G40).
        let sleep = format!("(setsid sleep 300 &); sleep 0.{} # {}", 1 + rng.below(8), shared.mark);
        let wait = rng.below(2) == 0;
        let (chain, parallel) = (shared.chain.to_string_lossy(), shared.parallel.to_string_lossy());
        let mut args: Vec<String> = match rng.below(10) {
            0..=3 => vec!["run", "--agent", "shell", "--task", &sleep]
                .into_iter()
                .map(String::from)
                .collect(),
            4 => {
                // G60: the agent launches a run of its own inside its run (detached, so it
                // may outlive it, or be killed with it mid-launch); the nested run is in the
                // same root and holds the same invariants.
                shared.count("nested");
                let inner = format!(
                    "{} run --agent shell --task '{}'; {sleep}",
                    crate::bin("sublaunch").display(),
                    sleep.replace('\'', r"'\''")
                );
                vec!["run".into(), "--agent".into(), "shell".into(), "--task".into(), inner]
            }
            5 => vec!["run".into(), "--chain".into(), chain.into_owned()],
            6 => {
                shared.count("reviewed");
                vec![
                    "run".into(),
                    "--chain".into(),
                    shared.reviewed.to_string_lossy().into_owned(),
                ]
            }
            7 | 8 => vec!["run".into(), "--chain".into(), parallel.into_owned()],
            _ => match shared.run_ids().get(rng.below(64) as usize) {
                Some(source) => vec!["resume".into(), source.clone()],
                None => continue,
            },
        };
        if wait {
            args.push("--wait".into());
        }
        // J6–J9: a quarter of the single runs are jobs of the test Slurm cluster: the
        // killer's SIGKILLs reach their agents on the node and the hosts that launched them,
        // the observers stop them, and every one must end as any run does.
        if args[0] == "run" && args[1] == "--agent" && rng.below(4) == 0 {
            args.extend(["--machine".into(), "slurm:debug".into()]);
            shared.count("on-cluster");
        }
        // G78: a quarter of the single runs are verified by a gate, which the killer's SIGKILLs
        // and the observers' stops reach as they reach agents (its command line has the mark).
        if args[0] == "run" && args[1] == "--agent" && rng.below(4) == 0 {
            args.extend([
                "--gate".into(),
                format!("sleep 0.{} # {}", 1 + rng.below(4), shared.mark),
            ]);
            shared.count("gated");
        }
        // A third of the launches run in the OS sandbox: the same invariants hold for them.
        // Half of those are `offline`, whose agents also get a network namespace (G36).
        if args[0] == "run" && rng.below(3) == 0 {
            let profile = if rng.below(2) == 0 { "workspace" } else { "offline" };
            args.extend(["--sandbox".into(), profile.into()]);
            shared.count("sandboxed");
        }
        let kind = if args[0] == "resume" { "revivals" } else { "launches" };
        shared.count(kind);
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let Ok(child) = shared.cli(&refs).spawn() else { continue };
        shared.ledger.lock().unwrap().hosts.push(child.id());
        let output = child.wait_with_output();
        let Ok(output) = output else { continue };
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        // The run id is the first line of stdout (detached) or of stderr (--wait).
        let first = if wait {
            stderr.lines().next()
        } else {
            stdout.lines().next()
        };
        let killed = output.status.code().is_none();
        if wait
            && !killed
            && let Some(id) = first.map(str::trim).filter(|l| !l.contains(' '))
        {
            shared.ledger.lock().unwrap().watched.push(id.to_owned());
        }
    }
}

/// A repository of its own (`work/writers`, one commit) and a chain of three writers in
/// worktrees there, each committing a file of its own.
fn writers_chain(scratch: &Scratch) -> (PathBuf, PathBuf) {
    let repo = scratch.work().join("writers");
    crate::cli::write(&repo.join("README"), "base\n");
    let git = |args: &[&str]| {
        let status = Command::new("git")
            .arg("-C")
            .arg(&repo)
            .args(["-c", "user.name=t", "-c", "user.email=t@example.invalid"])
            .args(args)
            .stdout(Stdio::null())
            .status()
            .expect("git");
        assert!(status.success(), "git {args:?}");
    };
    git(&["init", "-q"]);
    git(&["add", "-A"]);
    git(&["commit", "-qm", "base"]);
    let task = |n: u32| {
        format!(
            "{{agent: shell, task: 'echo {n} > w{n}.txt && git add -A && git -c user.name=a -c user.email=a@example.invalid commit -qm w{n}'}}"
        )
    };
    let chain = crate::cli::write(
        &scratch.work().join("writers.yaml"),
        &format!(
            "cwd: writers\nsteps:\n  - worktree: true\n    parallel:\n      - {}\n      - {}\n      - {}\n",
            task(1),
            task(2),
            task(3)
        ),
    );
    (chain, repo)
}

/// G81: a chain of one shell step in the writers' repository, its contract `checked` and
/// reviewed (required) by `chaos-critic`, a command agent that takes a moment and then
/// accepts; the reviewer's shell carries the mark, so the killer and the stops reach it.
fn reviewed_chain(scratch: &Scratch, mark: &str) -> PathBuf {
    // The mark is in the script's name, so in the reviewer's command line.
    let critic = crate::cli::write(
        &scratch.path().join(format!("chaos-critic-{mark}.sh")),
        r#"sleep 0.1
printf '%s\n' '```review-findings' '{"findings": [], "verdict": "accept"}' '```'
"#,
    );
    crate::cli::write(
        &scratch.path().join("home/.config/sublaunch/agents/chaos-critic.md"),
        &format!(
            "---\nrunner:\n  type: command\n  command: [sh, {}]\n---\n",
            critic.display()
        ),
    );
    let task =
        format!(r#"sleep 0.1; printf '%s\n' done '```acceptance-report' '{{"changedFiles": []}}' '```' # {mark}"#);
    crate::cli::write(
        &scratch.work().join("reviewed.json"),
        &serde_json::json!({
            "cwd": "writers",
            "steps": [{"agent": "shell", "task": task, "acceptance": {
                "level": "checked", "evidence": ["changed-files"], "review": {"agent": "chaos-critic"}
            }}]
        })
        .to_string(),
    )
}

/// G82: writers' runs, then `integrate` of each, SIGKILLed at random moments (in a gate,
/// between merges) and run again; its gates carry the mark, so the killer and the final
/// checks reach them, and append the commit they passed to `verified.log` only once passed.
fn integrator(shared: &Shared, mut rng: Rng) {
    while !shared.stop.load(Ordering::Relaxed) {
        let chain = shared.writers.to_string_lossy().into_owned();
        let Ok(output) = shared.cli(&["run", "--chain", &chain, "--wait"]).output() else {
            continue;
        };
        let stderr = String::from_utf8_lossy(&output.stderr);
        // The run id is the first line of its own; notes (a project hook the trust thread
        // just changed) may come before it.
        let Some(id) = stderr
            .lines()
            .map(str::trim)
            .find(|l| !l.is_empty() && !l.contains(' '))
        else {
            continue;
        };
        shared.count("writer-runs");
        shared.ledger.lock().unwrap().integrated.push(id.to_owned());
        for _ in 0..1 + rng.below(3) {
            let gate = format!(
                "sleep 0.0{} && git rev-parse HEAD >> {} && : {}",
                1 + rng.below(9),
                shared.verified.display(),
                shared.mark
            );
            let Ok(child) = shared.cli(&["integrate", id, "--gate", &gate]).spawn() else {
                continue;
            };
            if rng.below(2) == 0 {
                std::thread::sleep(Duration::from_millis(rng.below(250)));
                kill(child.id());
                shared.count("kills-integrate");
            }
            let _ = finish(child);
            shared.count("integrations");
        }
    }
}

/// G82 after the torture: every integration branch is at a commit a gate passed, and one more
/// integration of each run (not killed) works, leaving no scratch worktree behind.
fn check_integrations(shared: &Shared, runs: &[String], report: &mut TortureReport) {
    let repo = &shared.writers_repo;
    let tip = |id: &str| {
        let out = Command::new("git")
            .arg("-C")
            .arg(repo)
            .args([
                "rev-parse",
                "--verify",
                "--quiet",
                &format!("refs/heads/sublaunch/{id}/integration"),
            ])
            .output()
            .ok()?;
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
    };
    let verified = || std::fs::read_to_string(&shared.verified).unwrap_or_default();
    for id in runs {
        let gate = format!("git rev-parse HEAD >> {}", shared.verified.display());
        for round in ["killed", "final"] {
            if let Some(tip) = tip(id)
                && !verified().lines().any(|l| l == tip)
            {
                report.violations.push(format!(
                    "{id}: after the {round} integration its branch is at {tip}, which no gate passed"
                ));
            }
            if round == "final" {
                break;
            }
            let output = shared.cli(&["integrate", id, "--gate", &gate, "--json"]).output();
            let answered = output
                .as_ref()
                .ok()
                .and_then(|o| serde_json::from_slice::<Value>(&o.stdout).ok())
                .is_some_and(|v| v["entries"].is_array());
            // A writers' run that did not complete (its launch or its runner was killed: no
            // result, or steps without worktrees) is refused with a reason, never reported on;
            // so is one whose runner was killed between its final status and its result (S5
            // writes the status first).
            let complete = read_json(&shared.scratch.run_dir(id).join("status.json"))
                .is_some_and(|status| status["state"] == "complete")
                && shared.scratch.results().join(format!("{id}.json")).exists();
            let refused = output.as_ref().is_ok_and(|o| {
                o.status.code() == Some(1) && String::from_utf8_lossy(&o.stderr).starts_with("sublaunch integrate: ")
            });
            if !complete && refused {
                report.add("integrations-refused", 1);
            } else if !answered {
                report.violations.push(format!(
                    "{id}: integrate after the torture gave no report: {}",
                    output
                        .map(|o| String::from_utf8_lossy(&o.stderr).into_owned())
                        .unwrap_or_default()
                ));
            }
            report.add("integrations-checked", 1);
        }
    }
    let listed = Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(["worktree", "list", "--porcelain"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    if listed.contains(".integrate-") {
        report
            .violations
            .push(format!("a scratch worktree of an integration is left:\n{listed}"));
    }
}

/// One observer: `list`, `list --all`, `status`, `wait --timeout`, and random `stop`s.
fn observer(shared: &Shared, mut rng: Rng) {
    while !shared.stop.load(Ordering::Relaxed) {
        let ids = shared.run_ids();
        let id = ids.get(rng.below(ids.len() as u64) as usize).cloned();
        let args: Vec<String> = match (rng.below(14), id) {
            (0..=3, _) | (_, None) => vec!["list".into()],
            (4, _) => vec!["list".into(), "--all".into()],
            (5, _) => vec!["list".into(), "--all".into(), "--limit".into(), "5".into()],
            (12, _) => {
                // I12: the history rebuilt while runs end around it.
                let _ = std::fs::remove_dir_all(shared.scratch.runs().join(".history"));
                shared.count("history-dropped");
                vec!["list".into(), "--all".into(), "--limit".into(), "3".into()]
            }
            (13, Some(id)) => vec!["status".into(), id[..id.len() - 2].to_owned()],
            (6..=8, Some(id)) => vec!["status".into(), id],
            (9 | 10, Some(id)) => vec!["wait".into(), id, "--timeout".into(), "1".into()],
            (_, Some(id)) => {
                shared.count("stops");
                shared.ledger.lock().unwrap().disturbed.push(id.clone());
                vec!["stop".into(), id, "--timeout".into(), "2".into()]
            }
        };
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        if let Ok(child) = shared.cli(&refs).spawn() {
            if rng.below(25) == 0 {
                // A lister killed at a random moment of its work.
                std::thread::sleep(Duration::from_millis(rng.below(40)));
                kill(child.id());
                shared.count("kills-lister");
            }
            let _ = finish(child);
        }
    }
}

/// Replaces the project's settings (atomically) with a completion hook that appends `which`
/// to the hook log.
fn settings_with_hook(shared: &Shared, which: &str) {
    settings_with(shared, which, SPEND_LIMIT_USD);
}

/// The daily spend limit every run is held to: never reached (each run reserves a cent, the
/// shell agent's past average), so that every run takes, settles and releases a reservation
/// under the kills (U9).
const SPEND_LIMIT_USD: f64 = 1000.0;

/// The project's settings: the completion hook appending `which`, and a daily spend limit.
fn settings_with(shared: &Shared, which: &str, limit_usd: f64) {
    let settings = shared.scratch.work().join(".sublaunch/settings.json");
    let hook = format!("echo {which} >> {}", shared.hook_log.display());
    let temp = settings.with_extension("tmp");
    let value = serde_json::json!({"subagents": {
        "onEnd": hook,
        "limits": [{"per": "day", "costUsd": limit_usd}],
    }});
    crate::cli::write(&temp, &value.to_string());
    std::fs::rename(&temp, &settings).unwrap();
}

/// The shell agent's past: steps of a cent each, so that every run reserves a cent.
fn seed_spend_history(scratch: &Scratch) {
    use sublaunch_protocol::records::ledger::{Ledger, LedgerEntry};
    let at = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
        .saturating_sub(2 * 86_400_000);
    for i in 0..4 {
        let entry = LedgerEntry {
            at: at + i,
            run: format!("history-{i}"),
            agent: Some("shell".into()),
            usage: sublaunch_protocol::records::usage::Usage {
                cost_usd: Some(0.01),
                ..Default::default()
            },
            ..LedgerEntry::default()
        };
        Ledger::under(&scratch.root()).append(&entry).unwrap();
    }
}

/// U9 after the kills: no reservation outlives its runner. Under a limit that room for one
/// run's cent and no more, a run that asks not to queue still starts — the reservations of
/// killed runners were released — and afterwards none is left.
fn check_reservations(shared: &Shared, report: &mut TortureReport) {
    settings_with(shared, "approved", 0.015);
    let _ = shared.cli(&["trust"]).output();
    let run = |args: &[&str]| shared.cli(args).output().ok();
    match run(&["run", "--no-queue", "--wait", "--agent", "shell", "--task", "true"]) {
        Some(out) if out.status.success() => report.add("reservations-checked", 1),
        Some(out) => report.violations.push(format!(
            "a run under a one-run spend limit was not admitted after the kills: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )),
        None => report.violations.push("cannot run the reservation check".into()),
    }
    // The limit is in force: beside a live run's cent there is no room for another.
    let holder = run(&[
        "run",
        "--agent",
        "shell",
        "--task",
        &format!("sleep 2 # {}", shared.mark),
    ]);
    let holder = holder.filter(|out| out.status.success()).map(|out| {
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .next()
            .unwrap_or_default()
            .to_owned()
    });
    if let Some(id) = holder {
        match run(&["run", "--no-queue", "--agent", "shell", "--task", "true"]) {
            Some(out) if !out.status.success() => {}
            _ => report
                .violations
                .push("a second run fitted beside a live one under a one-run spend limit".into()),
        }
        // Queued behind a dead runner's reservation, it would never start: bounded, then
        // stopped.
        match run(&["wait", "--timeout", "60", &id]) {
            Some(out) if out.status.success() => {}
            _ => {
                report
                    .violations
                    .push(format!("{id}: a one-cent run under the check's limit did not complete"));
                let _ = run(&["stop", &id]);
            }
        }
    }
    let left: Vec<String> = std::fs::read_dir(shared.scratch.root().join("usage/reservations"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    if !left.is_empty() {
        report
            .violations
            .push(format!("reservations left after every run ended: {left:?}"));
    }
    settings_with_hook(shared, "approved");
}

/// The one user who decides what the project may run: trusts it with the `approved` hook,
/// swaps in a hook nobody approves, revokes, and has `sublaunch trust` killed mid-write. Only
/// ever trusts right after putting the approved hook back, so the unapproved one is never
/// approved by anyone.
fn truster(shared: &Shared, mut rng: Rng) {
    while !shared.stop.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(30 + rng.below(120)));
        match rng.below(4) {
            0 => {
                settings_with_hook(shared, "approved");
                let _ = shared.cli(&["trust"]).output();
                shared.count("trust-approved");
            }
            1 => {
                settings_with_hook(shared, "unapproved");
                shared.count("trust-unapproved-hook");
            }
            2 => {
                let _ = shared.cli(&["trust", "--revoke", "."]).output();
                shared.count("trust-revoked");
            }
            _ => {
                settings_with_hook(shared, "approved");
                if let Ok(child) = shared.cli(&["trust"]).spawn() {
                    std::thread::sleep(Duration::from_millis(rng.below(15)));
                    kill(child.id());
                    let _ = finish(child);
                    shared.count("kills-trust");
                }
            }
        }
    }
}

/// SIGKILLs hosts, shims and agents at random moments.
fn killer(shared: &Shared, mut rng: Rng) {
    while !shared.stop.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(20 + rng.below(150)));
        match rng.below(3) {
            0 => {
                let host = {
                    let ledger = shared.ledger.lock().unwrap();
                    ledger.hosts.iter().rev().take(6).copied().collect::<Vec<_>>()
                };
                if let Some(pid) = host
                    .get(rng.below(host.len() as u64) as usize)
                    .filter(|p| pid_alive(**p))
                {
                    kill(*pid);
                    shared.count("kills-host");
                }
            }
            1 => {
                let shims = shims_under(&shared.scratch.root());
                if let Some(pid) = shims.get(rng.below(shims.len() as u64) as usize) {
                    note_disturbed(shared, *pid);
                    kill(*pid);
                    shared.count("kills-shim");
                }
            }
            _ => {
                let agents = processes_with(&shared.mark);
                if let Some(pid) = agents.get(rng.below(agents.len() as u64) as usize) {
                    if let Some(shim) = session_of(*pid) {
                        note_disturbed(shared, shim);
                    }
                    kill(*pid);
                    shared.count("kills-agent");
                }
            }
        }
    }
}

/// Records the run whose shim is `shim_pid` as disturbed.
fn note_disturbed(shared: &Shared, shim_pid: u32) {
    for id in shared.run_ids() {
        let status = read_json(&shared.scratch.run_dir(&id).join("status.json"));
        if status.is_some_and(|s| s["pid"].as_u64() == Some(u64::from(shim_pid))) {
            shared.ledger.lock().unwrap().disturbed.push(id);
        }
    }
}

fn kill(pid: u32) {
    let _ = Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .stderr(Stdio::null())
        .status();
}

fn finish(child: Child) -> Option<std::process::Output> {
    child.wait_with_output().ok()
}

/// The session id of `pid` (the shim's pid for an agent).
fn session_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat[stat.rfind(')')? + 1..].split_whitespace().nth(3)?.parse().ok()
}

/// After the torture: `list` (which reconciles) until no run is active, within a bound.
fn settle(shared: &Shared) {
    let bound = Instant::now() + Duration::from_secs(60);
    while Instant::now() < bound {
        let _ = shared.cli(&["list"]).output();
        // `list` reconciles: it ends what died, and writes the proofs nobody observed.
        let active = shared.run_ids().into_iter().any(|id| {
            let run = shared.scratch.run_dir(&id);
            let status = read_json(&run.join("status.json"));
            let proof = read_json(&run.join("process-terminal.json"));
            status.is_none_or(|s| matches!(s["state"].as_str(), Some("queued" | "running")))
                || proof.is_some_and(|p| p["state"] == "pending")
        });
        if !active && shims_under(&shared.scratch.root()).is_empty() {
            return;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The invariants, over every run and every file under the root.
fn check(shared: &Shared) -> TortureReport {
    let mut report = TortureReport {
        counts: shared.counts.lock().unwrap().clone(),
        ..TortureReport::default()
    };
    let ledger = shared.ledger.lock().unwrap();
    let scratch = &shared.scratch;
    let ids = shared.run_ids();
    report.add("runs", ids.len());
    // I12/I13: the history answers with exactly the runs on disk, whatever the kills did to
    // it (a torn line, a release cut short), and paging by cursor walks the same set.
    let listed = |args: &[&str]| -> Option<(Vec<String>, Option<String>)> {
        let output = shared.cli(args).output().ok()?;
        let rows: Vec<serde_json::Value> = serde_json::from_slice(&output.stdout).ok()?;
        let ids = rows
            .iter()
            .filter_map(|r| r["runId"].as_str().map(str::to_owned))
            .collect();
        let cursor = String::from_utf8_lossy(&output.stderr)
            .lines()
            .find_map(|line| line.split("--cursor ").nth(1).map(|c| c.trim().to_owned()));
        Some((ids, cursor))
    };
    let mut on_disk = ids.clone();
    on_disk.sort();
    match listed(&["list", "--all", "--json"]) {
        Some((mut all, _)) => {
            all.sort();
            if all != on_disk {
                report.violations.push(format!(
                    "list --all shows {} runs, the root holds {}",
                    all.len(),
                    on_disk.len()
                ));
            }
        }
        None => report.violations.push("list --all --json gave no JSON array".into()),
    }
    let mut paged = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..=on_disk.len() {
        let mut args = vec!["list", "--all", "--json", "--limit", "7"];
        if let Some(at) = cursor.as_deref() {
            args.extend(["--cursor", at]);
        }
        let Some((page, next)) = listed(&args) else {
            report.violations.push("a page of list --all gave no JSON array".into());
            break;
        };
        paged.extend(page);
        cursor = next;
        if cursor.is_none() {
            break;
        }
    }
    paged.sort();
    paged.dedup();
    if paged != on_disk {
        report.violations.push(format!(
            "list --all paged by 7 shows {} runs, the root holds {}",
            paged.len(),
            on_disk.len()
        ));
    }
    // I14: a prefix of every run's id names it (or, shared, lists it), whatever launches
    // were killed between recording an id and making its directory.
    for id in ids.iter().take(40) {
        let prefix = &id[..id.len() - 2];
        let Ok(output) = shared.cli(&["status", prefix, "--json"]).output() else {
            continue;
        };
        let named = serde_json::from_slice::<serde_json::Value>(&output.stdout)
            .ok()
            .is_some_and(|status| status["runId"] == id.as_str());
        if !named && !String::from_utf8_lossy(&output.stderr).contains(id.as_str()) {
            report
                .violations
                .push(format!("{id}: status {prefix} does not name it"));
        }
    }
    for id in &ids {
        let run = scratch.run_dir(id);
        let Some(status) = read_json(&run.join("status.json")) else {
            report.violations.push(format!("{id}: status.json missing or not JSON"));
            continue;
        };
        let state = status["state"].as_str().unwrap_or("?").to_owned();
        report.add(&format!("state-{state}"), 1);
        if matches!(state.as_str(), "queued" | "running") {
            report
                .violations
                .push(format!("{id}: still {state} after the settle bound"));
        }
        let proof = read_json(&run.join("process-terminal.json"));
        let proof_state = proof
            .as_ref()
            .and_then(|p| p["state"].as_str())
            .unwrap_or("missing")
            .to_owned();
        report.add(&format!("proof-{proof_state}"), 1);
        if proof_state == "pending" || proof_state == "missing" {
            let error = status["error"].as_str().unwrap_or_default();
            report.violations.push(format!(
                "{id}: proof {proof_state} after the run ended ({state}: {error})\n{}",
                run_evidence(scratch, id)
            ));
        }
        let watched = ledger.watched.contains(id) && !ledger.disturbed.contains(id);
        let reason = proof
            .as_ref()
            .and_then(|p| p["reason"].as_str())
            .unwrap_or_default()
            .to_owned();
        // A revival's proof may be unknown for its session lease (another revival of the same
        // session held it): that is what happened, not a missed observation.
        let lease_state = reason.starts_with("canonical-session");
        if watched && state == "complete" && proof_state != "observed" && !lease_state {
            report.violations.push(format!(
                "{id}: its host saw it end, yet the proof is {proof_state} ({reason})"
            ));
        }
        // I9: once a run's proof is final, its unfinalized-run entry is gone (the settle's
        // `list` removed it, or whoever finalized the run did).
        if scratch.runs().join(".unfinalized").join(id).exists() && proof_state != "pending" {
            report
                .violations
                .push(format!("{id}: unfinalized-run entry left for a {proof_state} proof"));
        }
        if scratch.runs().join(".active-runs").join(id).exists() && state != "queued" && state != "running" {
            report
                .violations
                .push(format!("{id}: active-run marker left for a {state} run"));
        }
        // G81: a step whose required review did not pass (stopped, killed, never run) never
        // makes a run complete.
        if state == "complete"
            && let Some(result) = read_json(&scratch.results().join(format!("{id}.json")))
        {
            for step in result["results"].as_array().into_iter().flatten() {
                let acceptance = &step["acceptance"];
                if acceptance["review"].is_object() && acceptance["status"] != "reviewed" {
                    report.violations.push(format!(
                        "{id}: complete, yet its review is {} and its acceptance {}",
                        acceptance["review"]["status"], acceptance["status"]
                    ));
                }
                if acceptance["review"]["status"] == "passed" {
                    report.add("reviews-passed", 1);
                }
            }
        }
        let never_committed = proof_state == "not-started";
        if never_committed && scratch.results().join(format!("{id}.json")).exists() {
            report.violations.push(format!(
                "{id}: a launch that never committed left a result\n{}",
                run_evidence(scratch, id)
            ));
        }
    }
    check_integrations(shared, &ledger.integrated, &mut report);
    check_reservations(shared, &mut report);
    check_stream(shared, &ids, &mut report);
    for pid in processes_with(&shared.mark) {
        report.violations.push(format!("agent process {pid} still alive"));
    }
    // A runner may still be finishing after its run's terminal status (its completion hook,
    // the last flush): it has a bounded while to exit, then it is a violation.
    let finishing_until = Instant::now() + Duration::from_secs(20);
    let mut shims = shims_under(&scratch.root());
    while !shims.is_empty() && Instant::now() < finishing_until {
        std::thread::sleep(Duration::from_millis(100));
        shims = shims_under(&scratch.root());
    }
    for pid in shims {
        report.violations.push(format!("shim {pid} still alive"));
    }
    // G40: nothing any run started outlives it (the escaped `sleep 300` of each single run
    // included), with no help from the lister's repairs, which only end agents' groups.
    for pid in processes_under(&scratch.root()) {
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        report.violations.push(format!(
            "process {pid} of a run still alive: {}",
            String::from_utf8_lossy(&cmdline).replace('\0', " ").trim_end()
        ));
    }
    check_files(&scratch.root(), &mut report);
    let hooks = std::fs::read_to_string(&shared.hook_log).unwrap_or_default();
    for line in hooks.lines() {
        report.add(&format!("hooks-{line}"), 1);
        if line != "approved" {
            report
                .violations
                .push(format!("a completion hook nobody approved ran: {line}"));
        }
    }
    // Trust records are whole, private documents whatever was killed while writing them.
    let records = scratch.path().join("home/.config/sublaunch/trusted");
    for entry in std::fs::read_dir(&records).into_iter().flatten().flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') {
            continue;
        }
        let parses = std::fs::read(&path).is_ok_and(|b| serde_json::from_slice::<Value>(&b).is_ok());
        let mode = entry.metadata().map(|m| m.permissions().mode() & 0o777).unwrap_or(0);
        if !parses || mode != 0o600 {
            report.violations.push(format!(
                "{}: trust record does not parse or is mode {mode:o}",
                path.display()
            ));
        }
    }
    report
}

/// D6, D7: after the settle, `sublaunch deliver` leaves nothing in the outbox; the event
/// stream's cursors are dense; every ended run has its end in the stream exactly once, with
/// its final state; no end was delivered to its hook twice.
fn check_stream(shared: &Shared, ids: &[String], report: &mut TortureReport) {
    use sublaunch_protocol::records::stream::{Stream, What};
    let root = shared.scratch.root();
    match shared.cli(&["deliver"]).output() {
        Ok(output) if output.status.success() => {}
        Ok(output) => report.violations.push(format!(
            "deliver left ends undelivered: {}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )),
        Err(e) => report.violations.push(format!("cannot run deliver: {e}")),
    }
    for entry in std::fs::read_dir(root.join("outbox")).into_iter().flatten().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.ends_with(".json") {
            report.violations.push(format!("outbox/{name} left after deliver"));
        }
    }
    let batch = match Stream::under(&root).read(None, usize::MAX) {
        Ok(batch) => batch,
        Err(e) => {
            report.violations.push(format!("the event stream cannot be read: {e}"));
            return;
        }
    };
    report.add("stream-events", batch.events.len());
    report.add(
        "stream-damaged-lines",
        usize::try_from(batch.damaged).unwrap_or(usize::MAX),
    );
    for (at, pair) in batch.events.windows(2).enumerate() {
        if pair[1].cursor != pair[0].cursor + 1 {
            report.violations.push(format!(
                "stream: cursor {} follows {} (event {at})",
                pair[1].cursor, pair[0].cursor
            ));
        }
    }
    let mut ends: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
    let mut delivered: BTreeMap<String, usize> = BTreeMap::new();
    for event in &batch.events {
        match &event.what {
            What::Ended { delivery_id, state, .. } => ends
                .entry(event.run_id.clone())
                .or_default()
                .push((delivery_id.clone(), state.clone())),
            What::Delivered { delivery_id, .. } => *delivered.entry(delivery_id.clone()).or_default() += 1,
            _ => {}
        }
    }
    for (key, n) in &delivered {
        report.add("stream-delivered", 1);
        if *n > 1 {
            report
                .violations
                .push(format!("{key}: delivered to its hook {n} times"));
        }
    }
    for id in ids {
        let run = shared.scratch.run_dir(id);
        let Some(status) = read_json(&run.join("status.json")) else {
            continue;
        };
        let state = status["state"].as_str().unwrap_or("?");
        if matches!(state, "queued" | "running") {
            continue;
        }
        let recorded = ends.get(id).cloned().unwrap_or_default();
        let Some(marker) = read_json(&run.join("end.json")) else {
            report
                .violations
                .push(format!("{id}: {state}, and its end is not recorded (no end.json)"));
            continue;
        };
        let key = marker["deliveryId"].as_str().unwrap_or_default();
        let matching: Vec<&(String, String)> = recorded.iter().filter(|(k, _)| k == key).collect();
        match matching.as_slice() {
            [(_, said)] if said == state => {}
            [(_, said)] => report
                .violations
                .push(format!("{id}: its end says {said}, its status {state}")),
            [] => report
                .violations
                .push(format!("{id}: {state}, and its end {key} is not in the stream")),
            more => report
                .violations
                .push(format!("{id}: its end {key} is in the stream {} times", more.len())),
        }
    }
}

/// What a violation's reader needs to tell how a run got there: its files, its status and
/// proof, its index entries, its events and its result.
fn run_evidence(scratch: &Scratch, id: &str) -> String {
    let run = scratch.run_dir(id);
    let mut files: Vec<String> = std::fs::read_dir(&run)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    let read = |path: PathBuf| std::fs::read_to_string(path).unwrap_or_else(|e| format!("({e})"));
    let runs = scratch.runs();
    format!(
        "  files: {files:?}\n  unfinalized entry: {}, active marker: {}\n  status: {}\n  proof: {}\n  events: {}\n  result: {}",
        runs.join(".unfinalized").join(id).exists(),
        runs.join(".active-runs").join(id).exists(),
        read(run.join("status.json")),
        read(run.join("process-terminal.json")),
        read(run.join("events.jsonl")),
        read(scratch.results().join(format!("{id}.json"))),
    )
}

/// Every file parses and is 0600, every directory 0700; temp files are counted, and only
/// those of a live writer are violations (a killed writer's are swept by A12 later).
fn check_files(dir: &Path, report: &mut TortureReport) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        let mode = meta.permissions().mode() & 0o777;
        let name = entry.file_name().to_string_lossy().into_owned();
        if meta.is_dir() {
            // Under `<root>/worktrees` are git checkouts made for agents (and for integration
            // gates): the user's files, with git's modes. Only the records beside them are ours.
            if dir.file_name().is_some_and(|n| n == "worktrees") {
                continue;
            }
            if mode != 0o700 {
                report
                    .violations
                    .push(format!("{}: directory mode {mode:o}", path.display()));
            }
            check_files(&path, report);
            continue;
        }
        if mode != 0o600 {
            report
                .violations
                .push(format!("{}: file mode {mode:o}", path.display()));
        }
        if name.starts_with('.') && name.ends_with(".tmp") {
            report.add("temp-files-of-killed-writers", 1);
            // `.<name>.<pid>.<ms>.<random>.tmp`
            let inner = name
                .strip_prefix('.')
                .and_then(|n| n.strip_suffix(".tmp"))
                .unwrap_or_default();
            let writer = inner.rsplit('.').nth(2).and_then(|p| p.parse().ok());
            if writer.is_some_and(pid_alive) {
                report
                    .violations
                    .push(format!("{}: temp file of a live writer", path.display()));
            }
            continue;
        }
        let parses = if name.ends_with(".json") {
            std::fs::read(&path).is_ok_and(|b| serde_json::from_slice::<Value>(&b).is_ok())
        } else if name.ends_with(".jsonl") {
            std::fs::read_to_string(&path).is_ok_and(|t| t.lines().all(|l| serde_json::from_str::<Value>(l).is_ok()))
        } else {
            true
        };
        if !parses {
            report.violations.push(format!("{}: does not parse", path.display()));
        }
    }
}
