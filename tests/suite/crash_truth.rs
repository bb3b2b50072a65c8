//! A runner killed after commit, with other observers running: the run ends `failed` with what
//! was seen, the agents it left do not outlive it (X8), its active-run marker goes (I4), and a
//! lister never pre-empts the proof of the host that launched the run (S13).

use serde_json::Value;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;
use sublaunch_tests::cli::text;
use sublaunch_tests::launch_harness::{Scratch, pid_alive, read_json, shims_under, status, wait_for};

/// `list` and `status` in a loop until stopped: the other observers of every test here.
struct Observers {
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<usize>>,
}

impl Observers {
    fn start(scratch: &Scratch, count: usize) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let threads = (0..count)
            .map(|i| {
                let (stop, env, work) = (stop.clone(), scratch.cli_env(), scratch.work());
                std::thread::spawn(move || {
                    let mut rounds = 0;
                    while !stop.load(Ordering::Relaxed) {
                        let args: &[&str] = if i % 2 == 0 { &["list"] } else { &["list", "--all"] };
                        let mut command = Command::new(sublaunch_tests::bin("sublaunch"));
                        command.args(args).current_dir(&work).env_clear().envs(env.clone());
                        let output = command.output().expect("list");
                        assert!(output.status.success(), "list failed: {}", text(&output.stderr));
                        rounds += 1;
                    }
                    rounds
                })
            })
            .collect();
        Self { stop, threads }
    }

    /// Stops the loops; returns how many listings they made.
    fn finish(self) -> usize {
        self.stop.store(true, Ordering::Relaxed);
        self.threads.into_iter().map(|t| t.join().expect("observer")).sum()
    }
}

fn agent_pids(run: &Path) -> Option<(u32, u32)> {
    let status = status(run)?;
    let agent = status["steps"][0]["externalProcess"]["pid"].as_u64()?;
    Some((u32::try_from(status["pid"].as_u64()?).ok()?, u32::try_from(agent).ok()?))
}

/// The pids of the agent's whole process group (the shell and what it started).
fn group_of(pgid: u32) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
                let fields: Vec<&str> = stat[stat.rfind(')').unwrap() + 1..].split_whitespace().collect();
                fields.get(2) == Some(&pgid.to_string().as_str()) && pid_alive(*pid)
            })
        })
        .collect()
}

fn only_run(scratch: &Scratch) -> std::path::PathBuf {
    let id = wait_for("the run directory", Duration::from_secs(10), || {
        std::fs::read_dir(scratch.runs())
            .ok()?
            .filter_map(Result::ok)
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .find(|n| !n.starts_with('.'))
    });
    scratch.run_dir(&id)
}

fn kill(pid: u32) {
    Command::new("kill").args(["-KILL", &pid.to_string()]).status().unwrap();
}

/// Kills the shim once the agent runs and its whole group (shell and sleep) is up.
fn kill_shim_when_running(run: &Path) -> (u32, Vec<u32>) {
    let (shim, agent) = wait_for("the agent", Duration::from_secs(20), || agent_pids(run));
    let group = wait_for("the agent's sleep", Duration::from_secs(10), || {
        Some(group_of(agent)).filter(|g| g.len() >= 2)
    });
    kill(shim);
    (shim, group)
}

fn assert_failed_by_death(run: &Path, shim: u32, group: &[u32]) {
    let status = status(run).unwrap();
    assert_eq!(status["state"], "failed", "{status:#}");
    let error = status["error"].as_str().unwrap_or_default();
    assert!(error.contains(&format!("Async runner process {shim} ")), "{error}");
    for pid in group {
        wait_for("the agent's processes to end", Duration::from_secs(10), || {
            (!pid_alive(*pid)).then_some(())
        });
    }
    let marker = run
        .parent()
        .unwrap()
        .join(".active-runs")
        .join(run.file_name().unwrap());
    assert!(!marker.exists(), "the active-run marker is released");
    let proof = read_json(&run.join("process-terminal.json")).unwrap();
    assert_ne!(proof["state"], "pending", "{proof:#}");
}

fn finish(child: Child) -> Output {
    child.wait_with_output().expect("sublaunch")
}

/// An agent that takes messages while it runs has a pipe for its input: the shim dying
/// closes it, and the agent still ends with its whole group.
#[test]
fn x8_a_shim_killed_while_its_agent_reads_streamed_input_fails_the_run_and_ends_the_agent() {
    let scratch = Scratch::new("crash-streamed");
    scratch.create_root();
    // pi in RPC mode (a checkpoint asks for it) that works on and never answers.
    let bin = scratch.path().join("bin");
    sublaunch_tests::cli::executable(&bin.join("pi"), "#!/bin/sh\nsleep 300\n");
    let observers = Observers::start(&scratch, 2);
    let waiting = scratch
        .cli(&[
            "run",
            "--agent",
            "pi",
            "--task",
            "work",
            "--timeout",
            "600",
            "--checkpoint-before-deadline",
            "60",
            "--wait",
        ])
        .env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (run, shim, group, _) = kill_shim_under_wait(&scratch, observers, waiting);
    assert_failed_by_death(&run, shim, &group);
}

/// Kills the shim of the one run under `waiting` (`run --wait`) once its agent runs; the run
/// directory, the shim, the agent's group and what the waiting host printed (it failed).
fn kill_shim_under_wait(
    scratch: &Scratch,
    observers: Observers,
    waiting: Child,
) -> (std::path::PathBuf, u32, Vec<u32>, Output) {
    let run = only_run(scratch);
    let (shim, group) = kill_shim_when_running(&run);
    let output = finish(waiting);
    assert!(observers.finish() > 0, "the observers listed while the run died");
    assert_eq!(output.status.code(), Some(19), "{}", text(&output.stderr));
    (run, shim, group, output)
}

#[test]
fn x8_a_shim_killed_under_run_wait_fails_the_run_and_ends_its_agent_while_listers_run() {
    let scratch = Scratch::new("crash-wait");
    scratch.create_root();
    let observers = Observers::start(&scratch, 2);
    let waiting = scratch
        .cli(&["run", "--agent", "shell", "--task", "sleep 300", "--wait"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (run, shim, group, output) = kill_shim_under_wait(&scratch, observers, waiting);
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains(&format!(
            "Async runner process {shim} was killed by SIGKILL before writing a result."
        )),
        "the waiting host says what it saw: {stderr}"
    );
    assert_failed_by_death(&run, shim, &group);
    let proof = read_json(&run.join("process-terminal.json")).unwrap();
    assert_eq!(
        proof["instances"][0]["signal"], "SIGKILL",
        "the host observed the exit: {proof:#}"
    );
}

#[test]
fn x8_stop_on_a_run_whose_shim_died_ends_its_agent_and_says_so() {
    let scratch = Scratch::new("crash-stop");
    scratch.create_root();
    let launched = scratch
        .cli(&["run", "--agent", "shell", "--task", "sleep 300"])
        .output()
        .unwrap();
    assert!(launched.status.success(), "{}", text(&launched.stderr));
    let run_id = text(&launched.stdout).trim().to_owned();
    let run = scratch.run_dir(&run_id);
    let observers = Observers::start(&scratch, 1);
    let (shim, group) = kill_shim_when_running(&run);
    let stopped = scratch.cli(&["stop", &run_id]).output().unwrap();
    observers.finish();
    let said = text(&stopped.stdout);
    assert!(stopped.status.success(), "{}", text(&stopped.stderr));
    // The stop repaired the run itself, or a lister did just before (then it had already
    // ended): either way the stop says how it ended.
    assert!(
        said.starts_with(&format!("{run_id}: failed: Async runner process {shim} "))
            || said.starts_with(&format!(
                "{run_id}: failed (already ended): Async runner process {shim} "
            )),
        "{said}"
    );
    // Whoever repaired the run first (the stop or a lister) ended the agent and said so —
    // unless the agent had a PID namespace of its own: then the kernel ended it with the
    // runner (G40) and a repair may find nothing left to end.
    let st = status(&run).unwrap();
    let error = st["error"].as_str().unwrap_or_default().to_owned();
    if st["steps"][0]["externalProcess"]["containment"] != "pid-namespace" {
        assert!(error.contains("agent process"), "{error}");
    }
    assert_failed_by_death(&run, shim, &group);
    assert!(shims_under(&scratch.root()).is_empty());
}

#[test]
fn s13_listers_never_pre_empt_the_proof_of_a_live_launching_host() {
    let scratch = Scratch::new("crash-listers");
    scratch.create_root();
    let observers = Observers::start(&scratch, 2);
    let runs: Vec<Output> = (0..8)
        .map(|_| {
            scratch
                .cli(&["run", "--agent", "shell", "--task", "sleep 0.05", "--wait"])
                .output()
                .unwrap()
        })
        .collect();
    assert!(observers.finish() > 0);
    for output in &runs {
        assert!(output.status.success(), "{}", text(&output.stderr));
    }
    let mut proofs: Vec<Value> = std::fs::read_dir(scratch.runs())
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
        .map(|e| read_json(&e.path().join("process-terminal.json")).unwrap())
        .collect();
    assert_eq!(proofs.len(), 8);
    proofs.retain(|p| p["state"] != "observed");
    assert!(proofs.is_empty(), "every proof is the launching host's: {proofs:#?}");
}

/// A4 and S12 from an observer's side: the terminal status is the first end record the shim
/// writes, the result comes after it. `wait` (and the MCP server's wait, which shares it)
/// reports the end only once the result is published and durable, never in between, where a
/// power loss would take back the result of a run the user was told had ended; `status
/// --json` of a run seen in between gives its result too. Each run's shim is held between the
/// two by a fault, with listers running.
#[test]
fn a4_wait_reports_an_end_only_once_its_result_is_recorded() {
    let scratch = Scratch::new("crash-wait-records");
    scratch.create_root();
    let observers = Observers::start(&scratch, 2);
    for command in [&["wait"][..], &["status", "--json"][..]] {
        let launched = scratch
            .cli(&["run", "--agent", "shell", "--task", "echo done"])
            .env(
                sublaunch_tests::launch_harness::SHIM_FAULT_ENV,
                "before-result:sleep:2000",
            )
            .output()
            .unwrap();
        assert!(launched.status.success(), "{}", text(&launched.stderr));
        let run_id = text(&launched.stdout).trim().to_owned();
        let run = scratch.run_dir(&run_id);
        let result = scratch.results().join(format!("{run_id}.json"));
        wait_for("the terminal status", Duration::from_secs(20), || {
            status(&run).filter(|s| s["state"] == "complete")
        });
        assert!(!result.exists(), "the shim is held before the result");
        let mut args = vec![command[0], run_id.as_str()];
        args.extend_from_slice(&command[1..]);
        let said = scratch.cli(&args).output().unwrap();
        assert!(said.status.success(), "{}", text(&said.stderr));
        let said = text(&said.stdout);
        assert!(said.contains("complete"), "{command:?}: {said}");
        assert!(result.exists(), "{command:?} returned before the result was published");
        let index = scratch.results().join(format!("result-index/runs/{run_id}.json"));
        assert!(index.exists(), "and its index");
        if command[0] == "status" {
            let json: Value = serde_json::from_str(&said).unwrap();
            assert_eq!(json["result"]["answer"], "done", "{json:#}");
        }
    }
    assert!(observers.finish() > 0);
}
