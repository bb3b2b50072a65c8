//! F33 (S13): the shim finishes after the CLI that launched it is gone, so nobody observes its
//! exit, and the next listing reconciles the proof to `unknown/observer-unavailable`.
//!
//! This suite makes its process the child subreaper, so the detached shim is re-parented here
//! rather than to pid 1. That decides who reaps it: once reaped, the pid is gone; left
//! unreaped (as under a pid 1 that never reaps, e.g. some containers' init), the shim stays a
//! zombie that still answers `kill(pid, 0)` and must still be judged dead (X3).

use rustix::process::{Pid, WaitOptions, set_child_subreaper, waitpid};
use std::time::Duration;
use sublaunch_tests::launch_harness::{Scratch, events_of, pid_alive, read_json, status, wait_for, wait_terminal};

/// Runs F33 with the exited shim reaped (`reap`) or left a zombie.
fn exit_nobody_observed_is_reconciled_by_the_next_listing(name: &str, reap: bool) {
    set_child_subreaper(Some(rustix::process::getpid())).expect("PR_SET_CHILD_SUBREAPER");
    let scratch = Scratch::new(name);
    let output = scratch
        .cli(&["run", "--agent", "shell", "--task", "sleep 1; echo ok"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let run_id = String::from_utf8(output.stdout).unwrap().trim().to_owned();
    let run = scratch.run_dir(&run_id);
    let status_done = wait_terminal(&run, Duration::from_secs(30));
    assert_eq!(status_done["state"], "complete", "the run continued without its host");
    let pid = u32::try_from(status_done["pid"].as_u64().unwrap()).unwrap();
    wait_for("the shim to exit", Duration::from_secs(30), || {
        (!pid_alive(pid)).then_some(())
    });
    let shim = Pid::from_raw(i32::try_from(pid).unwrap()).unwrap();
    if reap {
        let (reaped, _) = waitpid(Some(shim), WaitOptions::empty()).unwrap().unwrap();
        assert_eq!(reaped, shim);
    } else {
        assert!(
            std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| s.contains(") Z ")),
            "the shim is a zombie of this process"
        );
    }
    assert!(
        scratch.results().join(format!("{run_id}.json")).exists(),
        "result written"
    );
    assert_eq!(
        read_json(&run.join("process-terminal.json")).unwrap()["state"],
        "pending",
        "nobody observed the exit"
    );

    let list = scratch.cli(&["list", "--json"]).output().unwrap();
    assert!(list.status.success(), "{}", String::from_utf8_lossy(&list.stderr));
    let proof = read_json(&run.join("process-terminal.json")).unwrap();
    assert_eq!(proof["state"], "unknown");
    assert_eq!(proof["reason"], "observer-unavailable");
    let after = status(&run).unwrap();
    assert_eq!(after["state"], "complete", "a terminal state is kept");
    assert_eq!(after["processTerminal"], proof);
    assert_eq!(events_of(&run, "subagent.run.process_terminal").len(), 1);
    // A second listing changes nothing.
    scratch.cli(&["list"]).output().unwrap();
    assert_eq!(events_of(&run, "subagent.run.process_terminal").len(), 1);
    if !reap {
        waitpid(Some(shim), WaitOptions::empty()).unwrap();
    }
}

#[test]
fn f33_exit_after_the_cli_host_is_gone_is_reconciled_by_the_next_listing() {
    exit_nobody_observed_is_reconciled_by_the_next_listing("f33", true);
}

#[test]
fn f33_x3_an_unreaped_zombie_shim_is_judged_dead_by_the_listing() {
    exit_nobody_observed_is_reconciled_by_the_next_listing("f33-zombie", false);
}
