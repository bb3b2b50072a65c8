//! Termination decisions (§T): F58 (an already reaped shim is never signalled) and F27
//! (signals refused with EPERM and no exit), through the `ProcessControl` seam and through a
//! real launch whose `Os` refuses every signal.

use rustix::io::Errno;
use rustix::process::{Pid, Signal};
use std::io;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use sublaunch::launch::exit_watcher::ExitFuture;
use sublaunch::launch::testing::{RecordingHooks, block_on, shell_plan, test_launch, test_options};
use sublaunch::launch::{ProcessControl, RunnerExit, SignalOutcome, TermSignal, launch, terminate_runner};
use sublaunch_protocol::os::Os;
use sublaunch_protocol::os::faults::HostFaults;
use sublaunch_protocol::os::processes::Processes;
use sublaunch_tests::launch_harness::{CONTROL_TIMEOUT_ENV, Scratch, read_json, status, wait_for};
use sublaunch_tests::{assert_starts_with, bin};

/// A scripted shim: either already reaped, or alive forever with every signal refused.
#[derive(Debug)]
struct FakeControl {
    reaped: bool,
    signals: Mutex<Vec<TermSignal>>,
}

impl FakeControl {
    fn new(reaped: bool) -> Self {
        Self {
            reaped,
            signals: Mutex::new(Vec::new()),
        }
    }

    fn exit_record() -> RunnerExit {
        RunnerExit {
            exit_code: Some(0),
            signal: None,
            close_observed_at: 1,
        }
    }
}

impl ProcessControl for FakeControl {
    fn pid(&self) -> u32 {
        4_194_304
    }

    fn exit(&self) -> Option<RunnerExit> {
        self.reaped.then(Self::exit_record)
    }

    fn wait_exit(&self) -> ExitFuture<'_> {
        if self.reaped {
            Box::pin(std::future::ready(Self::exit_record()))
        } else {
            Box::pin(std::future::pending())
        }
    }

    fn signal(&self, signal: TermSignal) -> SignalOutcome {
        self.signals.lock().unwrap().push(signal);
        SignalOutcome::Failed(io::Error::from_raw_os_error(1))
    }
}

#[test]
fn f58_a_reaped_shim_is_never_signalled() {
    let control = FakeControl::new(true);
    let report = block_on(terminate_runner(&control, Duration::from_millis(50)));
    assert!(report.observed, "terminationObserved");
    assert!(
        control.signals.lock().unwrap().is_empty(),
        "no signal to any pid or group"
    );
    assert!(report.sent.is_empty());
}

#[test]
fn f27_refused_signals_and_no_exit_report_termination_unobserved() {
    let control = FakeControl::new(false);
    let report = block_on(terminate_runner(&control, Duration::from_millis(50)));
    assert!(!report.observed);
    assert_eq!(*control.signals.lock().unwrap(), [TermSignal::Term, TermSignal::Kill]);
    assert_eq!(report.errors.len(), 2, "{:?}", report.errors);
}

/// The real processes capability, except that every signal fails with EPERM and is counted.
#[derive(Debug, Default)]
struct Unsignallable {
    refused: Mutex<usize>,
}

impl Processes for Unsignallable {
    fn kill_group(&self, _group: Pid, _signal: Signal) -> Result<(), Errno> {
        *self.refused.lock().unwrap() += 1;
        Err(Errno::PERM)
    }

    fn kill(&self, _pid: Pid, _signal: Signal) -> Result<(), Errno> {
        *self.refused.lock().unwrap() += 1;
        Err(Errno::PERM)
    }
}

#[test]
fn f27_a_launch_whose_shim_cannot_be_signalled_still_fails_and_finalizes_later() {
    let scratch = Scratch::new("f27");
    let hooks = Arc::new(RecordingHooks::default());
    let processes = Arc::new(Unsignallable::default());
    let mut options = test_options(&scratch.root(), &bin("sublaunch-shim"))
        // The shim would otherwise give up waiting for proceed on its own.
        .with_env(CONTROL_TIMEOUT_ENV, "120000");
    options.faults = Some(HostFaults::parse("proceed:EACCES").unwrap());
    options.hooks = hooks.clone();
    options.timeouts.terminate_grace = Duration::from_millis(100);
    options.os = Some(Os::system().with_processes(processes.clone()).shared());
    let plan = shell_plan("echo never", &scratch.work());
    let runtime = sublaunch::launch::runtime().unwrap();
    let failure = runtime
        .block_on(launch(test_launch(&plan), options))
        .expect_err("the proceed write fails");
    assert_starts_with(
        &failure.error.to_string(),
        "Failed to authorize async runner startup: EACCES",
    );
    assert!(!failure.termination_observed(), "terminationObserved:false");
    assert_eq!(
        *processes.refused.lock().unwrap(),
        2,
        "SIGTERM then SIGKILL were attempted"
    );
    let run = scratch.run_dir(failure.run_id().unwrap());
    assert_eq!(status(&run).unwrap()["state"], "failed");
    assert_eq!(hooks.snapshot().capacity_used(), 0, "capacity rolled back");
    // The failure killed nothing (both signals were refused); the shim itself may already
    // have left on the doorbell's EOF (R8), which a loaded machine makes likely, so whether it
    // is still there is not asserted: the exit is checked below either way.
    let pid = failure.pid().unwrap();

    // The exit happens later: the test kills it, unless the shim saw the host close the
    // doorbell first and left on its own (R8, exit 4). Either way the host finalizes, and
    // the proof records the exit that really happened.
    let handle = failure.handle().cloned().unwrap();
    std::process::Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .status()
        .unwrap();
    let finished = runtime.block_on(handle.finished()).unwrap();
    let (code, signal) = (finished.exit.exit_code, finished.exit.signal.clone());
    assert!(
        signal.as_deref() == Some("SIGKILL") || code == Some(4),
        "killed, or gone on the doorbell's EOF: {code:?} {signal:?}"
    );
    let proof = wait_for("the proof", Duration::from_secs(5), || {
        read_json(&run.join("process-terminal.json")).filter(|p| p["state"] != "pending")
    });
    assert_eq!(proof["state"], "observed");
    assert_eq!(proof["instances"][0]["signal"], serde_json::json!(signal));
    assert_eq!(proof["instances"][0]["exitCode"], serde_json::json!(code));
}
