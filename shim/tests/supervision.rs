//! Supervision: deadlines, stop and interrupt requests, signals to the shim, process-tree
//! termination and escaped descendants (R12, R13, X4–X9; F48, F49, F50, F54, F55, F57).

mod support;

use std::time::{Duration, Instant};
use support::*;

/// A `sleep` with a unique duration, so its processes can be found by command line.
fn unique_sleep() -> (String, String) {
    let n = 100_000 + u64::from_str_radix(&token()[3..11], 16).unwrap() % 800_000;
    (format!("sleep {n}"), n.to_string())
}

/// Live processes of process group `pgid`.
fn group_members(pgid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().filter_map(Result::ok) {
        let Some(pid) = entry.file_name().to_str().and_then(|p| p.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let fields: Vec<&str> = stat[stat.rfind(')').unwrap() + 2..].split_whitespace().collect();
        if fields[0] != "Z" && fields[2] == pgid.to_string() {
            out.push(pid);
        }
    }
    out
}

fn wait_agent(run: &Launched) -> u32 {
    run.wait_event("subagent.step.started");
    wait_for("the agent pid in status.json", LONG, || run.agent_pid(0))
}

/// Waits until the agent's `sleep` (found by its unique duration) runs, so the shell is
/// settled in its wait when a signal arrives.
fn wait_sleeping(run: &Launched, marker: &str) -> u32 {
    let pgid = wait_agent(run);
    wait_for("the agent's sleep", LONG, || {
        (!processes_with(marker).is_empty()).then_some(())
    });
    pgid
}

/// F48: an agent ignoring SIGTERM with `timeoutMs: 500`: SIGTERM to the group at ~500 ms,
/// SIGKILL 3 s later; status failed `Subagent timed out after 500ms.`, result `timedOut`,
/// writer tree `observed`, proof `observed`, recorded in < 5 s.
#[test]
fn f48_timeout_with_an_agent_ignoring_sigterm() {
    let root = Root::new();
    let mut spec = Spec::shell("trap '' TERM; while :; do sleep 1; done");
    spec.timeout_ms = Some(500);
    let mut run = root.launch(spec);
    run.proceed();
    let started = Instant::now();
    let pgid = wait_agent(&run);
    assert_eq!(run.wait_exit(LONG).code(), Some(0), "{}", run.stderr());
    let elapsed = started.elapsed();
    assert!(
        elapsed >= Duration::from_millis(3_400),
        "SIGKILL only after the 3 s grace: {elapsed:?}"
    );
    assert!(elapsed < Duration::from_secs(5), "recorded in < 5 s: {elapsed:?}");
    let st = run.status();
    assert_eq!(st["state"], "failed");
    assert_eq!(st["error"], "Subagent timed out after 500ms.");
    let result = run.result().unwrap();
    assert_eq!(result["timedOut"], true);
    assert_eq!(result["success"], false);
    assert_eq!(result["results"][0]["processSignal"], "SIGKILL");
    let writer = &run.candidate()["writers"]["0"][0];
    assert_eq!(writer["processTree"]["state"], "observed");
    assert_eq!(writer["processTree"]["processGroupId"], pgid);
    assert_eq!(writer["signal"], "SIGKILL");
    assert!(run.event_types().contains(&"subagent.run.timed_out".to_string()));
    assert!(group_members(pgid).is_empty());
    assert_eq!(proof_json(&run.finalize(None))["state"], "observed");
}

/// F49: grandchildren in the agent's group holding stdout after it exits 0: the X7 guard
/// closes the pipes, the cleanup ladder empties the group; complete, tree `observed`, ≤ 8 s.
#[test]
fn f49_group_members_outliving_the_agent() {
    let root = Root::new();
    let (sleep, marker) = unique_sleep();
    let mut run = root.launch(Spec::shell(&format!("{sleep} & {sleep} & echo done; exit 0")));
    run.proceed();
    let started = Instant::now();
    let pgid = wait_agent(&run);
    assert_eq!(run.wait_exit(LONG).code(), Some(0), "{}", run.stderr());
    assert!(started.elapsed() < Duration::from_secs(8), "{:?}", started.elapsed());
    assert!(
        group_members(pgid).is_empty(),
        "no member of the agent's group survives"
    );
    assert!(processes_with(&marker).is_empty());
    assert_eq!(run.status()["state"], "complete");
    assert_eq!(run.result().unwrap()["results"][0]["output"], "done");
    assert_eq!(run.candidate()["writers"]["0"][0]["processTree"]["state"], "observed");
    assert_eq!(proof_json(&run.finalize(None))["state"], "observed");
}

/// F50: a grandchild escapes with `setsid` and holds stdout: the subreaper shim kills and reaps
/// it (`adoptedDescendantsKilled ≥ 1`), tree `observed`, nothing left running.
#[test]
fn f50_escaped_descendant_is_killed_by_the_subreaper() {
    let root = Root::new();
    let (sleep, marker) = unique_sleep();
    let mut run = root.launch(Spec::shell(&format!("setsid sh -c '{sleep}; true' & exit 0")));
    run.proceed();
    wait_for("the escaped process", LONG, || {
        (!processes_with(&marker).is_empty()).then_some(())
    });
    assert_eq!(run.wait_exit(LONG).code(), Some(0), "{}", run.stderr());
    assert!(processes_with(&marker).is_empty(), "escaped descendant killed");
    let tree = &run.candidate()["writers"]["0"][0]["processTree"];
    assert_eq!(tree["state"], "observed", "{tree}");
    assert!(tree["adoptedDescendantsKilled"].as_u64().unwrap() >= 1, "{tree}");
    assert_eq!(run.status()["state"], "complete");
    assert_eq!(proof_json(&run.finalize(None))["state"], "observed");
}

/// F54 (X9): SIGTERM to the shim after commit stops the agent's group: status stopped,
/// `Subagent stopped: runner received SIGTERM.`, result stopped, candidate written, exit 0.
#[test]
fn f54_sigterm_to_the_shim_stops_the_run() {
    let root = Root::new();
    let (sleep, marker) = unique_sleep();
    let mut run = root.launch(Spec::shell(&sleep));
    run.proceed();
    let pgid = wait_sleeping(&run, &marker);
    run.signal(libc::SIGTERM);
    assert_eq!(run.wait_exit(LONG).code(), Some(0), "{}", run.stderr());
    let st = run.status();
    assert_eq!(st["state"], "stopped");
    assert_eq!(st["error"], "Subagent stopped: runner received SIGTERM.");
    let result = run.result().unwrap();
    assert_eq!(result["state"], "stopped");
    assert_eq!(result["success"], false);
    assert_eq!(result["stopped"], true);
    let writer = &run.candidate()["writers"]["0"][0];
    assert_eq!(writer["signal"], "SIGTERM");
    assert_eq!(writer["processTree"]["state"], "observed");
    assert!(group_members(pgid).is_empty() && processes_with(&marker).is_empty());
    assert!(run.event_types().contains(&"subagent.run.stopped".to_string()));
    assert_eq!(proof_json(&run.finalize(None))["state"], "observed");
}

/// X9: a second stop signal while stopping skips the SIGTERM grace (SIGKILL at once).
#[test]
fn x9_second_signal_skips_the_grace() {
    let root = Root::new();
    let mut run = root.launch(Spec::shell("trap '' TERM; while :; do sleep 1; done"));
    run.proceed();
    let agent = wait_agent(&run);
    // The shell must have run its `trap` before the first SIGTERM, or that one kills it.
    wait_for("the agent to ignore SIGTERM", LONG, || {
        ignores(agent, libc::SIGTERM).then_some(())
    });
    let started = Instant::now();
    run.signal(libc::SIGTERM);
    let pid = run.pid;
    // Wait until the first SIGTERM was delivered (not pending), so the two are not merged.
    wait_for("the first SIGTERM to be delivered", LONG, || {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
        let pending = |field: &str| {
            status
                .lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| u64::from_str_radix(l.split_whitespace().nth(1)?, 16).ok())
                .unwrap_or(0)
        };
        let term = 1u64 << (libc::SIGTERM - 1);
        ((pending("SigPnd:") | pending("ShdPnd:")) & term == 0).then_some(())
    });
    run.signal(libc::SIGTERM);
    assert_eq!(run.wait_exit(LONG).code(), Some(0));
    assert!(
        started.elapsed() < Duration::from_millis(2_500),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(run.status()["state"], "stopped");
    assert_eq!(run.candidate()["writers"]["0"][0]["signal"], "SIGKILL");
}

/// F55 (R12): `control/stop.json` stops the run with `Subagent stopped by user.` and is
/// consumed.
#[test]
fn f55_stop_request_through_the_control_inbox() {
    let root = Root::new();
    let (sleep, marker) = unique_sleep();
    let mut run = root.launch(Spec::shell(&sleep));
    run.proceed();
    wait_agent(&run);
    std::fs::write(run.path("control/stop.json"), b"{}").unwrap();
    assert_eq!(run.wait_exit(LONG).code(), Some(0));
    let st = run.status();
    assert_eq!(st["state"], "stopped");
    assert_eq!(st["error"], "Subagent stopped by user.");
    assert!(!run.path("control/stop.json").exists(), "consumed");
    assert!(processes_with(&marker).is_empty());
    assert_eq!(run.result().unwrap()["state"], "stopped");
}

/// R12: interrupts (SIGUSR2 or `control/interrupt.json`) pause the run through the X6 ladder
/// (SIGINT first) with `Interrupted. Waiting for explicit next action.`; `control/timeout.json`
/// acts as the deadline.
#[test]
fn r12_interrupt_and_timeout_controls() {
    let root = Root::new();
    for how in ["sigusr2", "interrupt.json"] {
        let (sleep, marker) = unique_sleep();
        let mut run = root.launch(Spec::shell(&sleep));
        run.proceed();
        wait_sleeping(&run, &marker);
        if how == "sigusr2" {
            run.signal(libc::SIGUSR2);
        } else {
            std::fs::write(run.path("control/interrupt.json"), b"{}").unwrap();
        }
        assert_eq!(run.wait_exit(LONG).code(), Some(0));
        let st = run.status();
        assert_eq!(st["state"], "paused", "{how}");
        assert_eq!(st["error"], "Interrupted. Waiting for explicit next action.");
        assert_eq!(run.candidate()["writers"]["0"][0]["signal"], "SIGINT", "{how}");
        assert!(run.event_types().contains(&"subagent.run.paused".to_string()));
    }
    let (sleep, _) = unique_sleep();
    let mut run = root.launch(Spec::shell(&sleep));
    run.proceed();
    wait_agent(&run);
    std::fs::write(run.path("control/timeout.json"), b"{}").unwrap();
    assert_eq!(run.wait_exit(LONG).code(), Some(0));
    let st = run.status();
    assert_eq!(st["state"], "failed");
    assert!(
        st["error"].as_str().unwrap().starts_with("Subagent timed out after "),
        "{st}"
    );
    assert_eq!(run.result().unwrap()["timedOut"], true);
}

/// R13: a signal nobody requested is "unexplained": status stopped, error naming it.
#[test]
fn r13_unexplained_signal() {
    let root = Root::new();
    let mut run = root.launch(Spec::shell("kill -KILL $$"));
    run.proceed();
    assert_eq!(run.wait_exit(LONG).code(), Some(0));
    let st = run.status();
    assert_eq!(st["state"], "stopped");
    assert_eq!(st["error"], "Subagent was terminated by signal SIGKILL.");
    assert_eq!(run.result().unwrap()["success"], false);
}

/// F57: the wall clock jumps forward 1 h right after commit during a run with `timeoutMs: 5000`:
/// the timeout does not fire early, durations follow the monotonic clock, and JSON timestamps
/// use the jumped wall clock.
#[test]
fn f57_wall_clock_jump_does_not_shorten_the_deadline() {
    let root = Root::new();
    let mut spec = Spec::shell("sleep 1; echo slept").fault("after-commit:wallclock:+3600000");
    spec.timeout_ms = Some(5_000);
    let mut run = root.launch(spec);
    let before = wall_ms();
    run.proceed();
    let started = Instant::now();
    assert_eq!(run.wait_exit(LONG).code(), Some(0));
    let real = u64::try_from(started.elapsed().as_millis()).unwrap();
    let st = run.status();
    assert_eq!(st["state"], "complete", "{st}");
    let started_at = st["startedAt"].as_u64().unwrap();
    assert!(
        started_at >= before + 3_600_000 && started_at <= wall_ms() + 3_600_000,
        "{started_at}"
    );
    let step = st["steps"][0]["durationMs"].as_u64().unwrap();
    assert!(
        (1_000..=1_100.max(real)).contains(&step),
        "step {step} ms, real {real} ms"
    );
    let run_ms = run.result().unwrap()["durationMs"].as_u64().unwrap();
    assert!(
        run_ms <= real && run_ms * 10 >= real * 9 - 1_000,
        "run {run_ms} ms vs real {real} ms"
    );
    let completed = run.wait_event("subagent.run.completed");
    assert!(completed["ts"].as_u64().unwrap() >= before + 3_600_000);
}

/// RSS of a shim supervising a sleeping agent stays ≤ 4 MiB (optimized build; the launch bench
/// records it). An unoptimized build maps far more of its own code (file-backed pages: 6.3 MiB
/// of the binary, 8.1 MiB in all since the runner appends to the event stream — 10 to 60 KiB
/// more in an optimized build, measured against the commit before), so debug test runs allow
/// 9 MiB; the shim's own memory (RssAnon, about 530 KiB) must stay under 1 MiB either way. Structured-output validation
/// (jsonschema) runs in `sublaunch-validate`, not in the shim, to keep it so.
#[test]
fn shim_rss_while_supervising_a_sleeping_agent() {
    let root = Root::new();
    let (sleep, _) = unique_sleep();
    let mut run = root.launch(Spec::shell(&sleep));
    run.proceed();
    wait_agent(&run);
    let rss = proc_status_kb(run.pid, "VmRSS").unwrap();
    let anon = proc_status_kb(run.pid, "RssAnon").unwrap();
    let hwm = proc_status_kb(run.pid, "VmHWM").unwrap();
    eprintln!("shim VmRSS {rss} kB, RssAnon {anon} kB, VmHWM {hwm} kB");
    let limit = if cfg!(debug_assertions) { 9 * 1024 } else { 4 * 1024 };
    assert!(rss <= limit, "VmRSS {rss} kB > {limit} kB\n{}", rss_by_mapping(run.pid));
    assert!(anon <= 1024, "RssAnon {anon} kB");
    // No libm: one `log10` in the cost formatting once mapped 300 KiB of it into every runner.
    let maps = std::fs::read_to_string(format!("/proc/{}/maps", run.pid)).unwrap();
    assert!(!maps.contains("/libm."), "the runner maps libm:\n{maps}");
    std::fs::write(run.path("control/stop.json"), b"{}").unwrap();
    assert_eq!(run.wait_exit(LONG).code(), Some(0));
}

/// G44: with containment required, a PID namespace the kernel refuses (played by the
/// `no-namespace` test hook) fails the agent's start instead of falling back: the agent never
/// runs and the step says why.
#[test]
fn g44_required_containment_fails_the_start_when_refused() {
    let root = Root::new();
    let mut spec = Spec::shell("echo ran").fault("before-agent-spawn:no-namespace");
    spec.containment_required = true;
    let mut run = root.launch(spec);
    run.proceed();
    assert_eq!(run.wait_exit(LONG).code(), Some(0), "{}", run.stderr());
    let st = run.status();
    assert_eq!(st["state"], "failed", "{st}");
    let error = st["error"].as_str().unwrap_or_default();
    assert!(
        error.contains("containment is required") && error.contains("refused a PID namespace"),
        "{st}"
    );
    assert!(!run.output(0).contains("ran"), "the agent never ran");
}
