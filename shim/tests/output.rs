//! Bounded output handling (R11, S10): the 16 MiB protocol line limit (F51), huge stdout
//! (F52) and huge stderr (F53), with the shim's peak memory read from `/proc/<shim>/status`.

mod support;

use std::time::Instant;
use support::*;

/// Holds the shim at `before-exit` (a `hang`), reads its peak RSS, then lets it exit.
fn peak_rss_at_exit(run: &mut Launched) -> u64 {
    wait_for("the final candidate", LONG, || {
        run.candidate()["expectedWriters"].is_object().then_some(())
    });
    let pid = run.pid;
    let hwm = wait_for("VmHWM", LONG, || proc_status_kb(pid, "VmHWM"));
    run.signal(libc::SIGTERM);
    assert_eq!(run.wait_exit(LONG).code(), Some(0), "{}", run.stderr());
    hwm
}

fn baseline_rss(run: &Launched) -> u64 {
    run.wait_event("subagent.step.started");
    proc_status_kb(run.pid, "VmHWM").unwrap()
}

/// F51: one stdout line > 16 MiB without a newline: protocol failure, the agent gets SIGTERM,
/// `results[0].protocolError` names the limit, and the shim's memory stays bounded (it keeps
/// at most 64 KiB of a line).
#[test]
fn f51_protocol_output_limit() {
    let root = Root::new();
    let mut run = root.launch(Spec::shell("head -c 17000000 /dev/zero | tr '\\0' x").fault("before-exit:hang"));
    run.proceed();
    let baseline = baseline_rss(&run);
    let peak = peak_rss_at_exit(&mut run);
    eprintln!("F51 shim VmHWM: baseline {baseline} kB, peak {peak} kB");
    assert!(peak < baseline + 64 * 1024, "spec bound: baseline + 64 MiB");
    assert!(
        peak < baseline + 4 * 1024,
        "bounded line buffer: {peak} kB vs {baseline} kB"
    );
    let st = run.status();
    assert_eq!(st["state"], "failed");
    let error = st["error"].as_str().unwrap();
    let prefix = "protocol_output_limit: child stdout line exceeded 16777216 bytes (observed at least ";
    assert!(
        error.starts_with(prefix) && error.ends_with(" bytes without a newline)."),
        "{error}"
    );
    let observed: u64 = error[prefix.len()..].split(' ').next().unwrap().parse().unwrap();
    assert!(observed > 16_777_216, "{observed}");
    let result = run.result().unwrap();
    assert_eq!(result["success"], false);
    assert_eq!(result["results"][0]["protocolError"]["code"], "protocol_output_limit");
    assert_eq!(result["results"][0]["protocolError"]["stream"], "stdout");
    let writer = &run.candidate()["writers"]["0"][0];
    assert_eq!(
        writer["signal"],
        "SIGTERM",
        "the agent got SIGTERM: {writer} {}",
        run.stderr()
    );
    assert_eq!(writer["processTree"]["state"], "observed");
}

/// F52: 20 MB of short stdout lines: diagnostic events stay within a 1 MiB budget with one
/// `subagent.events.truncated` line, lifecycle events are all there, `output-0.log` stops at
/// 4 MiB plus one truncation line, the agent is never blocked and completes.
#[test]
fn f52_huge_stdout_is_budgeted() {
    let root = Root::new();
    let mut run = root.launch(
        Spec::shell("yes | head -c 20000000")
            .env("SUBLAUNCH_ASYNC_EVENTS_MAX_BYTES", "1048576")
            .env("SUBLAUNCH_OUTPUT_LOG_MAX_BYTES", "4194304"),
    );
    run.proceed();
    let started = Instant::now();
    assert_eq!(run.wait_exit(LONG).code(), Some(0), "{}", run.stderr());
    eprintln!("F52 recorded after {:?}", started.elapsed());
    assert_eq!(run.status()["state"], "complete");
    assert_eq!(run.status()["steps"][0]["externalProcess"]["stdoutBytes"], 20_000_000);
    let text = std::fs::read_to_string(run.path("events.jsonl")).unwrap();
    let mut diagnostic = 0usize;
    let mut truncated = 0;
    for line in text.lines() {
        let event: serde_json::Value = serde_json::from_str(line).unwrap();
        let kind = event["type"].as_str().unwrap();
        if kind.starts_with("subagent.child.") || kind == "subagent.events.truncated" {
            diagnostic += line.len() + 1;
        }
        if kind == "subagent.events.truncated" {
            truncated += 1;
            assert_eq!(event["maxBytes"], 1_048_576);
            assert_eq!(event["droppedEventType"], "subagent.child.stdout");
        }
    }
    assert!(diagnostic <= 1_048_576, "{diagnostic}");
    assert_eq!(truncated, 1);
    for kind in [
        "subagent.run.started",
        "subagent.step.started",
        "subagent.step.completed",
        "subagent.run.completed",
    ] {
        assert!(text.contains(&format!("\"type\":\"{kind}\"")), "{kind}");
    }
    let log = std::fs::read(run.path("output-0.log")).unwrap();
    let marker = b"[output truncated after 4194304 bytes]\n";
    assert!(log.ends_with(marker));
    assert!(log.len() <= 4_194_304 + 1 + marker.len(), "{}", log.len());
}

/// F53: 100 MB of stderr: memory bounded (only a 128 KiB tail is kept), the run completes.
#[test]
fn f53_huge_stderr_keeps_memory_bounded() {
    let root = Root::new();
    let mut run = root.launch(Spec::shell("yes | head -c 100000000 1>&2").fault("before-exit:hang"));
    run.proceed();
    let baseline = baseline_rss(&run);
    let peak = peak_rss_at_exit(&mut run);
    eprintln!("F53 shim VmHWM: baseline {baseline} kB, peak {peak} kB");
    assert!(peak < baseline + 64 * 1024, "spec bound: baseline + 64 MiB");
    assert!(
        peak < baseline + 4 * 1024,
        "bounded buffers: {peak} kB vs {baseline} kB"
    );
    let st = run.status();
    assert_eq!(st["state"], "complete");
    assert_eq!(st["steps"][0]["externalProcess"]["stderrBytes"], 100_000_000);
}
