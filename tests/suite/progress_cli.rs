//! Progress of `run --wait` and `wait` through the real binaries: plain lines per step state
//! change when stderr is not a terminal, JSON lines with `--json`, and the live per-step block
//! on a terminal (through a pty made by `script(1)`).

use serde_json::Value;
use std::process::{Command, Output};
use std::time::Duration;
use sublaunch_tests::cli::{ok, text, write};
use sublaunch_tests::launch_harness::{Scratch, wait_terminal};

#[test]
fn run_wait_prints_plain_step_lines_when_stderr_is_not_a_terminal() {
    let scratch = Scratch::new("progress-plain");
    // The README's run command.
    let output = scratch
        .cli(&["run", "--agent", "shell", "--task", "echo hi", "--wait"])
        .output()
        .unwrap();
    // stdout is the answer alone; the id and the outcome frame the progress on stderr.
    assert_eq!(ok(&output), "hi\n");
    let stderr = text(&output.stderr);
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(
        lines.last().copied(),
        Some(format!("{}: complete", lines[0]).as_str()),
        "{stderr}"
    );
    assert!(!stderr.contains('\u{1b}'), "no escape sequences: {stderr:?}");
    assert!(stderr.contains("step 1 shell: complete after "), "{stderr}");
    assert!(stderr.contains("1 step: 1 complete in "), "{stderr}");
}

#[test]
fn chain_progress_reports_each_step_in_order() {
    let scratch = Scratch::new("progress-chain");
    let chain = scratch.work().join("chain.yaml");
    write(
        &chain,
        "steps:\n  - {agent: shell, task: 'sleep 0.3; echo one'}\n  - {agent: shell, task: 'echo two'}\n",
    );
    let output = scratch
        .cli(&["run", "--chain", &chain.to_string_lossy(), "--wait"])
        .output()
        .unwrap();
    ok(&output);
    let stderr = text(&output.stderr);
    let first = stderr.find("step 1 shell: complete").expect(&stderr);
    let second = stderr.find("step 2 shell: complete").expect(&stderr);
    assert!(first < second, "{stderr}");
    assert!(
        stderr.contains("step 1 shell: running"),
        "the sleeping step was seen running: {stderr}"
    );
    assert!(stderr.contains("2 steps: 2 complete in "), "{stderr}");
}

#[test]
fn json_progress_is_json_lines_and_the_end_one_object() {
    let scratch = Scratch::new("progress-json");
    let output = scratch
        .cli(&[
            "run",
            "--agent",
            "shell",
            "--task",
            "echo hi; exit 4",
            "--wait",
            "--json",
        ])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let end: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(end["state"], "failed");
    assert_eq!(end["steps"][0]["agent"], "shell");
    assert_eq!(end["steps"][0]["state"], "failed");
    assert_eq!(end["steps"][0]["exitCode"], 4);
    let stderr = text(&output.stderr);
    let events: Vec<Value> = stderr
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let last = events.last().unwrap_or_else(|| panic!("no JSON lines: {stderr}"));
    assert_eq!(last["runId"], end["runId"]);
    assert_eq!(last["step"], "1");
    assert_eq!(last["state"], "failed");
}

#[test]
fn wait_shows_the_progress_of_a_run_launched_elsewhere() {
    let scratch = Scratch::new("progress-wait");
    let launched = ok(&scratch
        .cli(&["run", "--agent", "shell", "--task", "sleep 0.5; echo late"])
        .output()
        .unwrap());
    let id = launched.trim();
    let output = scratch.cli(&["wait", id]).output().unwrap();
    assert_eq!(text(&output.stdout), format!("{id}: complete\n"));
    let stderr = text(&output.stderr);
    assert!(stderr.contains("step 1 shell: complete"), "{stderr}");

    let json = scratch.cli(&["wait", id, "--json"]).output().unwrap();
    let end: Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(end["state"], "complete");
    assert_eq!(end["steps"][0]["state"], "complete");
    wait_terminal(&scratch.run_dir(id), Duration::from_secs(5));
}

/// Runs the CLI inside a pty (`script -qec`), returning everything written to the terminal.
fn in_terminal(scratch: &Scratch, args: &str) -> Output {
    let sublaunch = sublaunch_tests::bin("sublaunch");
    let command = format!("{} {args}", sublaunch.display());
    Command::new("script")
        .args(["-q", "-e", "-c", &command, "/dev/null"])
        .current_dir(scratch.work())
        .env_clear()
        .envs(scratch.cli_env())
        .env("TERM", "xterm")
        .env("COLUMNS", "100")
        .env("NO_COLOR", "1")
        .output()
        .unwrap()
}

#[test]
fn a_terminal_gets_a_live_block_per_step() {
    let scratch = Scratch::new("progress-tty");
    let chain = scratch.work().join("chain.yaml");
    write(
        &chain,
        "mode: parallel\nsteps:\n  - {agent: shell, task: 'echo first-output; sleep 1.2; echo alpha-done'}\n  - {agent: shell, task: 'echo beta-done'}\n",
    );
    let output = in_terminal(&scratch, &format!("run --chain {} --wait", chain.display()));
    let screen = text(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{screen}");
    assert!(screen.contains("\u{1b}[2K"), "lines are redrawn: {screen:?}");
    let moves_up = screen.match_indices("\u{1b}[").any(|(at, _)| {
        let rest = &screen[at + 2..];
        let digits = rest.chars().take_while(char::is_ascii_digit).count();
        digits > 0 && rest[digits..].starts_with('A')
    });
    assert!(moves_up, "the block moves up over itself: {screen:?}");
    assert!(
        screen.contains("first-output"),
        "a running step shows its last output line: {screen:?}"
    );
    // The final frame: both tasks complete with their last lines, then the summary.
    for line in ["✓ 1.1  shell  complete", "✓ 1.2  shell  complete"] {
        assert!(screen.contains(line), "{line}: {screen:?}");
    }
    assert!(
        screen.contains("alpha-done") && screen.contains("beta-done"),
        "{screen:?}"
    );
    assert!(screen.contains("2 steps: 2 complete in "), "{screen:?}");
}
