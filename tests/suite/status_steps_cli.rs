//! `status` of a run whose steps are running: a line per step, named as progress and `logs`
//! name it (`2.1 codex (lexer)`), and for an agent with a JSON event stream its last words or
//! tool call as `logs` renders them, not the raw event. The agents here are stand-ins for the
//! codex and pi CLIs that print events recorded from the real CLIs (`codex exec --json`,
//! `pi --mode json`) and then wait on a FIFO, so the run can be looked at mid-step for as long
//! as the test needs: a real CLI behind the fake model server cannot be paused mid-step.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use sublaunch_tests::cli::{executable, ok, text, write};
use sublaunch_tests::launch_harness::Scratch;

/// Events of `codex exec --json` up to a command it has started.
const CODEX_EVENTS: &[&str] = &[
    r#"{"type":"thread.started","thread_id":"0199a1b2-thread"}"#,
    r#"{"type":"turn.started"}"#,
    r#"{"type":"item.completed","item":{"id":"item_0","type":"agent_message","text":"Running the tests now."}}"#,
    r#"{"type":"item.started","item":{"id":"item_1","type":"command_execution","command":"/bin/bash -lc 'cargo test'","aggregated_output":"","exit_code":null,"status":"in_progress"}}"#,
];

/// Events of `pi --mode json` up to a tool it is running.
const PI_EVENTS: &[&str] = &[
    r#"{"type":"session","id":"pi-session-1","version":3}"#,
    r#"{"type":"message_end","message":{"role":"assistant","content":[{"type":"toolCall","id":"call_1","name":"bash","arguments":{"command":"sleep 2"}}]}}"#,
    r#"{"type":"tool_execution_start","toolCallId":"call_1","toolName":"bash","args":{"command":"sleep 2"}}"#,
    r#"{"type":"tool_execution_update","toolCallId":"call_1","toolName":"bash","partialResult":{"content":[]}}"#,
];

/// A stand-in CLI: prints `events`, waits for a line on the FIFO `gate`, then prints `last`.
fn stand_in(dir: &Path, name: &str, events: &[&str], gate: &Path, last: &[&str]) -> PathBuf {
    let script = format!(
        "#!/bin/sh\ncat <<'EVENTS'\n{}\nEVENTS\nread line < '{}'\ncat <<'EVENTS'\n{}\nEVENTS\n",
        events.join("\n"),
        gate.display(),
        last.join("\n")
    );
    executable(&dir.join(name), &script)
}

/// Stops the run when the test ends, passed or not: its stand-ins may still wait on a FIFO.
struct StopOnDrop<'a>(&'a Scratch, String);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        let _ = self.0.cli(&["stop", &self.1]).output();
    }
}

fn fifo(path: &Path) -> PathBuf {
    let made = std::process::Command::new("mkfifo").arg(path).status().unwrap();
    assert!(made.success());
    path.to_owned()
}

/// Opens the FIFO for writing (the stand-in is blocked reading it) and writes a line.
fn release(gate: &Path) {
    std::fs::write(gate, "go\n").unwrap();
}

/// `status RUN` until `done` says it shows what is awaited (at most 30 s): the run's files
/// change as its agents write, so the test looks until they have.
fn status_until(scratch: &Scratch, id: &str, done: impl Fn(&str) -> bool) -> String {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let shown = ok(&scratch.cli(&["status", id]).output().unwrap());
        if done(&shown) {
            return shown;
        }
        assert!(Instant::now() < deadline, "status never showed it:\n{shown}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn status_shows_a_line_per_step_with_the_agents_words_while_they_run() {
    let scratch = Scratch::trusting("status-steps");
    let work = scratch.work();
    let codex_gate = fifo(&work.join("codex-gate"));
    let pi_gate = fifo(&work.join("pi-gate"));
    let codex = stand_in(
        &work,
        "fake-codex",
        CODEX_EVENTS,
        &codex_gate,
        &[
            r#"{"type":"item.completed","item":{"id":"item_2","type":"agent_message","text":"All tests pass."}}"#,
            r#"{"type":"turn.completed","usage":{"input_tokens":10,"cached_input_tokens":0,"output_tokens":2}}"#,
        ],
    );
    let pi = stand_in(
        &work,
        "fake-pi",
        PI_EVENTS,
        &pi_gate,
        &[
            r#"{"type":"message_end","message":{"role":"assistant","content":[{"type":"text","text":"Waited."}],"model":"m","stopReason":"stop"}}"#,
            r#"{"type":"agent_end","messages":[]}"#,
        ],
    );
    write(
        &work.join(".sublaunch/agents/coder.md"),
        &format!(
            "---\nname: coder\nrunner: {{type: external-cli, adapter: codex-exec, command: {}}}\n---\nCode.\n",
            codex.display()
        ),
    );
    write(
        &work.join(".sublaunch/agents/helper.md"),
        &format!(
            "---\nname: helper\nrunner: {{type: native, command: {}}}\n---\nHelp.\n",
            pi.display()
        ),
    );
    let chain = write(
        &work.join("chain.yaml"),
        "steps:\n  - {agent: shell, task: 'echo first step done'}\n  - parallel:\n      - {agent: coder, label: lexer, task: test the lexer}\n      - {agent: helper, task: wait a bit}\n",
    );
    let launched = scratch
        .cli(&["run", "--chain", &chain.to_string_lossy()])
        .output()
        .unwrap();
    let id = ok(&launched).trim().to_owned();
    let _stop = StopOnDrop(&scratch, id.clone());

    let shown = status_until(&scratch, &id, |s| {
        s.contains("$ /bin/bash -lc 'cargo test'") && s.contains("→ bash sleep 2")
    });
    // One line per step, labelled `1`, `2.1`, `2.2`, after the run's state.
    let lines: Vec<&str> = shown.lines().collect();
    let at = lines.iter().position(|l| l.starts_with("steps    3")).expect(&shown);
    assert!(lines[at + 1].starts_with("  ✓ 1    shell          complete"), "{shown}");
    assert!(lines[at + 2].starts_with("  ⠿ 2.1  coder (lexer)  running"), "{shown}");
    assert!(lines[at + 2].ends_with("$ /bin/bash -lc 'cargo test'"), "{shown}");
    assert!(lines[at + 3].starts_with("  ⠿ 2.2  helper         running"), "{shown}");
    assert!(lines[at + 3].ends_with("→ bash sleep 2"), "{shown}");
    assert!(!shown.contains("{\"type\""), "no raw event: {shown}");
    assert!(lines[at - 1].starts_with("state    running"), "{shown}");

    // The running steps' entries name their adapter already.
    let json: Value = serde_json::from_str(&ok(&scratch.cli(&["status", &id, "--json"]).output().unwrap())).unwrap();
    assert_eq!(json["steps"][1]["status"], "running");
    assert_eq!(json["steps"][1]["adapter"], "codex-exec");
    assert_eq!(json["steps"][2]["adapter"], "pi");

    release(&codex_gate);
    release(&pi_gate);
    let waited = scratch.cli(&["wait", &id]).output().unwrap();
    assert_eq!(
        text(&waited.stdout),
        format!("{id}: complete\n"),
        "{}",
        text(&waited.stderr)
    );
    // `logs` shows pi's tool call once.
    let logs = ok(&scratch.cli(&["logs", &id]).output().unwrap());
    assert_eq!(logs.matches("→ bash sleep 2").count(), 1, "{logs}");
    assert!(logs.contains("[2.1 coder (lexer)] Running the tests now.\n"), "{logs}");
    assert!(logs.contains("[2.2 helper] Waited.\n"), "{logs}");
}

#[test]
fn status_shows_a_failed_hook_and_a_detached_run_without_a_fault() {
    let scratch = Scratch::new("status-hook");
    let launched = scratch
        .cli(&[
            "run",
            "--agent",
            "shell",
            "--task",
            "echo done",
            "--on-end",
            "echo hook-said; exit 7",
        ])
        .output()
        .unwrap();
    let id = ok(&launched).trim().to_owned();
    ok(&scratch.cli(&["wait", &id]).output().unwrap());
    // The hook runs after the run's end is recorded, and the proof is written once the
    // runner has exited.
    let shown = status_until(&scratch, &id, |s| s.contains("\nhook ") && s.contains("\nproof    not"));
    let log = scratch.run_dir(&id).join("hook-end.log");
    assert!(
        shown.contains(&format!("hook     exit 7 (see {})", log.display())),
        "{shown}"
    );
    assert!(std::fs::read_to_string(&log).unwrap().contains("hook-said"));
    // Nothing waited for this run's runner: said so, not as a fault.
    assert!(
        shown.contains("proof    not observed (launched detached; nothing waited for it)"),
        "{shown}"
    );
    assert!(!shown.contains("observer-unavailable"), "{shown}");
}
