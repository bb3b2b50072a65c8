//! Nothing outlives the runner (G40–G47): an agent's whole process tree — double-forked,
//! `setsid`'d descendants that ignore SIGTERM and SIGHUP included — ends with its runner,
//! even when the runner is SIGKILLed and no host watches (no later `list` or `status` runs);
//! when the agent exits leaving them; and on `sublaunch stop`. Where the kernel refuses a PID
//! namespace the run falls back to process-group supervision and records it.

use rustix::event::{PollFd, PollFlags, poll};
use rustix::fd::OwnedFd;
use rustix::process::{Pid, PidfdFlags, pidfd_open};
use serde_json::Value;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};
use sublaunch_tests::cli::ok;
use sublaunch_tests::launch_harness::{SHIM_FAULT_ENV, Scratch, read_json, status, wait_for, wait_terminal};

const LIMIT: Duration = Duration::from_secs(30);

/// Sets up `work/` for the agent: `child.sh` (one descendant: ignores SIGTERM and SIGHUP,
/// appends its pid as the host sees it to `pids`, starts `$2` more generations double-forked
/// with `setsid`, then sleeps) and the FIFO `block` the agent waits on.
fn prepare(scratch: &Scratch) {
    let work = scratch.work();
    // `cut`'s parent is the shell running the script: its pid in the host's /proc, which the
    // test can watch (inside a PID namespace `$$` is the namespace's number).
    std::fs::write(
        work.join("child.sh"),
        "trap '' TERM HUP\n\
         cut -d' ' -f4 /proc/self/stat >> \"$1\"\n\
         if [ \"$2\" -gt 0 ]; then ( setsid sh \"$0\" \"$1\" $(($2 - 1)) & ); fi\n\
         exec sleep 1000\n",
    )
    .unwrap();
    assert!(
        Command::new("mkfifo")
            .arg(work.join("block"))
            .status()
            .unwrap()
            .success()
    );
}

/// The agent's task: two double-forked, `setsid`'d lines of descendants (three processes),
/// then `end` (block on the FIFO, or exit).
fn task(end: &str) -> String {
    format!(
        "trap '' TERM HUP; \
         ( setsid sh child.sh \"$PWD/pids\" 1 & ); ( setsid sh child.sh \"$PWD/pids\" 0 & ); \
         while [ \"$(wc -l < pids)\" -lt 3 ]; do sleep 0.05; done; {end}"
    )
}

/// Waits for the three descendants' pids and opens a pidfd on each (before anything is
/// killed, so a pid cannot have been reused meanwhile).
fn descendants(scratch: &Scratch) -> Vec<(u32, OwnedFd)> {
    let pids = wait_for("the descendants' pids", LIMIT, || {
        let text = std::fs::read_to_string(scratch.work().join("pids")).ok()?;
        let pids: Vec<u32> = text.lines().filter_map(|l| l.trim().parse().ok()).collect();
        (pids.len() >= 3).then_some(pids)
    });
    pids.into_iter()
        .map(|pid| {
            let fd = pidfd_open(Pid::from_raw(i32::try_from(pid).unwrap()).unwrap(), PidfdFlags::empty())
                .unwrap_or_else(|e| panic!("descendant {pid} is not running: {e}"));
            (pid, fd)
        })
        .collect()
}

/// Waits on the pidfds until every process has exited; panics naming the survivors after
/// `limit`.
fn all_end(processes: &[(u32, OwnedFd)], limit: Duration) {
    let until = Instant::now() + limit;
    loop {
        let mut fds: Vec<PollFd<'_>> = processes.iter().map(|(_, fd)| PollFd::new(fd, PollFlags::IN)).collect();
        let _ = poll(
            &mut fds,
            Some(&rustix::time::Timespec {
                tv_sec: 0,
                tv_nsec: 200_000_000,
            }),
        );
        let alive: Vec<u32> = processes
            .iter()
            .zip(&fds)
            .filter(|(_, fd)| !fd.revents().contains(PollFlags::IN))
            .map(|((pid, _), _)| *pid)
            .collect();
        if alive.is_empty() {
            return;
        }
        assert!(Instant::now() < until, "still running after {limit:?}: {alive:?}");
    }
}

/// The shim's pid from the run's status.
fn shim_pid(run_dir: &Path) -> u32 {
    wait_for("the runner's pid", LIMIT, || {
        let st = status(run_dir)?;
        (st["state"] == "running").then_some(())?;
        st["pid"]
            .as_u64()
            .and_then(|p| u32::try_from(p).ok())
            .filter(|p| *p > 0)
    })
}

/// The first step's `externalProcess` once the agent started.
fn external_process(run_dir: &Path) -> Value {
    wait_for("the agent's process record", LIMIT, || {
        let process = status(run_dir)?["steps"][0]["externalProcess"].clone();
        process["containment"].is_string().then_some(process)
    })
}

fn launch(scratch: &Scratch, mut command: Command, run_id: &str) -> std::path::PathBuf {
    ok(&command.output().unwrap());
    scratch.run_dir(run_id)
}

fn sigkill(pid: u32) {
    rustix::process::kill_process(
        Pid::from_raw(i32::try_from(pid).unwrap()).unwrap(),
        rustix::process::Signal::KILL,
    )
    .unwrap();
}

/// A blocked agent with escaping descendants, launched through `cli` (as root or as an
/// ordinary user); its runner SIGKILLed while nobody watches; every one of them must end.
fn sigkilled_runner_takes_the_tree(name: &str, id: &str, cli: fn(&Scratch, &[&str]) -> Command) {
    let scratch = Scratch::new(name);
    prepare(&scratch);
    let task = task("cat block");
    let args = ["run", "--agent", "shell", "--task", &task, "--run-id", id];
    let run_dir = launch(&scratch, cli(&scratch, &args), id);
    let processes = descendants(&scratch);
    assert_eq!(external_process(&run_dir)["containment"], "pid-namespace");
    sigkill(shim_pid(&run_dir));
    all_end(&processes, LIMIT);
}

/// G40, G41: the runner SIGKILLed while nobody watches: the kernel ends the agent's whole tree
/// (the blocked agent and its double-forked, `setsid`'d, SIGTERM- and SIGHUP-ignoring
/// descendants) without any later `list` or `status`.
#[test]
fn g40_sigkilled_runner_takes_the_whole_tree_with_it() {
    sigkilled_runner_takes_the_tree("contain-kill", "g40", Scratch::cli);
}

/// G42: the same for an ordinary user (an unprivileged user and PID namespace) when the suite
/// runs as root.
#[test]
fn g42_unprivileged_runner_takes_the_whole_tree_with_it() {
    sigkilled_runner_takes_the_tree("contain-user", "g42", Scratch::cli_unprivileged);
}

/// G46: the agent exits normally leaving descendants that ignore SIGTERM: the sweep ends
/// them (SIGKILL after its grace) and counts them; the run completes, its tree `observed`.
#[test]
fn g46_descendants_left_by_an_exited_agent_are_swept() {
    let scratch = Scratch::new("contain-exit");
    prepare(&scratch);
    let run_dir = launch(
        &scratch,
        scratch.cli(&[
            "run",
            "--agent",
            "shell",
            "--task",
            &task("echo done"),
            "--run-id",
            "g46",
        ]),
        "g46",
    );
    let processes = descendants(&scratch);
    let st = wait_terminal(&run_dir, LIMIT);
    all_end(&processes, Duration::from_secs(1));
    assert_eq!(st["state"], "complete", "{st}");
    assert_eq!(
        st["steps"][0]["externalProcess"]["containment"], "pid-namespace",
        "{st}"
    );
    // The runner writes the candidate proof right after the terminal status.
    let tree = wait_for("the writer's process tree", LIMIT, || {
        let candidate = read_json(&run_dir.join("process-terminal-candidate.json"))?;
        let tree = candidate["writers"]["0"][0]["processTree"].clone();
        tree.is_object().then_some(tree)
    });
    assert_eq!(tree["state"], "observed", "{tree}");
    assert!(tree["adoptedDescendantsKilled"].as_u64().unwrap() >= 3, "{tree}");
}

/// G46: `sublaunch stop` ends the agent and every descendant, and records the stop.
#[test]
fn g46_stop_ends_everything_with_the_stop_recorded() {
    let scratch = Scratch::new("contain-stop");
    prepare(&scratch);
    let run_dir = launch(
        &scratch,
        scratch.cli(&[
            "run",
            "--agent",
            "shell",
            "--task",
            &task("cat block"),
            "--run-id",
            "g46s",
        ]),
        "g46s",
    );
    let processes = descendants(&scratch);
    external_process(&run_dir);
    ok(&scratch.cli(&["stop", "g46s"]).output().unwrap());
    let st = wait_terminal(&run_dir, LIMIT);
    all_end(&processes, Duration::from_secs(1));
    assert_eq!(st["state"], "stopped", "{st}");
    assert_eq!(st["error"], "Subagent stopped by user.", "{st}");
}

/// G43: where the kernel refuses a PID namespace (a test hook plays the refusal) the agent is
/// supervised by process group, and the status says so with the reason.
#[test]
fn g43_refused_namespace_falls_back_to_process_group_and_records_it() {
    let scratch = Scratch::new("contain-fallback");
    let mut command = scratch.cli(&[
        "run", "--agent", "shell", "--task", "echo ok", "--run-id", "g43", "--wait",
    ]);
    command.env(SHIM_FAULT_ENV, "before-agent-spawn:no-namespace");
    ok(&command.output().unwrap());
    let st = status(&scratch.run_dir("g43")).unwrap();
    assert_eq!(st["state"], "complete", "{st}");
    let process = &st["steps"][0]["externalProcess"];
    assert_eq!(process["containment"], "process-group", "{st}");
    assert!(
        process["containmentNote"]
            .as_str()
            .unwrap()
            .contains("refused a PID namespace"),
        "{st}"
    );
    let shown = ok(&scratch.cli(&["status", "g43"]).output().unwrap());
    assert!(shown.contains("process-group"), "{shown}");
}

/// G45, G46: a detached run launched from inside a contained agent lives in that agent's PID
/// namespace, so it ends with the agent — truthfully: the sweep's SIGTERM lets its runner
/// record the stop. Its records carry the pid and namespace scope of the host's view, so an
/// outside `status` reads and judges them.
#[test]
fn g45_a_nested_run_ends_with_its_parent_and_records_its_stop() {
    let scratch = Scratch::new("contain-nested");
    prepare(&scratch);
    let sublaunch = sublaunch_tests::bin("sublaunch");
    let inner_dir = scratch.run_dir("g45-inner");
    // The parent agent ends when the test opens this FIFO, after it read the nested record.
    let gate = scratch.work().join("gate");
    assert!(Command::new("mkfifo").arg(&gate).status().unwrap().success());
    let parent_task = format!(
        "'{}' run --agent shell --task 'cat block' --run-id g45-inner >/dev/null && \
         while ! grep -q externalProcess '{}/status.json' 2>/dev/null; do sleep 0.05; done; \
         read line < gate; echo launched",
        sublaunch.display(),
        inner_dir.display()
    );
    let parent_dir = launch(
        &scratch,
        scratch.cli(&["run", "--agent", "shell", "--task", &parent_task, "--run-id", "g45"]),
        "g45",
    );
    // While it runs, the nested runner's record names it as this (outside) process sees it.
    let (pid, scope) = wait_for("the nested runner's record", LIMIT, || {
        let st = status(&inner_dir)?;
        // The runner's own status (the launching host wrote the first one), once its agent runs.
        st["steps"][0]["externalProcess"].get("pid")?;
        let pid = st["pid"].as_u64().filter(|_| st["state"] == "running")?;
        // Read while it runs: the recorded pid names the nested runner in this view, a
        // process inside a PID namespace (two numbers in `NSpid`).
        let proc_status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
        let nspid = proc_status.lines().find(|l| l.starts_with("NSpid:"))?.to_owned();
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
        assert!(
            String::from_utf8_lossy(&cmdline).contains("sublaunch"),
            "pid {pid} is not the runner"
        );
        assert_eq!(nspid.split_whitespace().count(), 3, "{nspid}");
        Some((pid, st["pidNamespaceScope"].clone()))
    });
    std::fs::write(&gate, "go\n").unwrap();
    let parent = wait_terminal(&parent_dir, LIMIT);
    assert_eq!(parent["state"], "complete", "{parent}");
    assert_eq!(
        scope,
        std::fs::read_link("/proc/self/ns/pid")
            .unwrap()
            .to_string_lossy()
            .as_ref(),
        "the scope of this process's view"
    );
    let inner = wait_terminal(&inner_dir, LIMIT);
    assert_eq!(inner["state"], "stopped", "{inner}");
    assert_eq!(inner["error"], "Subagent stopped: runner received SIGTERM.", "{inner}");
    assert!(!sublaunch_tests::launch_harness::pid_alive(u32::try_from(pid).unwrap()));
    let shown = ok(&scratch.cli(&["status", "g45-inner"]).output().unwrap());
    assert!(shown.contains("stopped"), "{shown}");
}
