//! What sublaunch adds to a real agent run: `sublaunch run --agent X --task T --wait` with
//! the real Claude Code, Codex and pi (from `target/agents`, behind the test suite's fake
//! model server), against the same CLI started directly with the same prompt and settings,
//! measured in the same run and interleaved round by round. Also `sublaunch result ID` and
//! `sublaunch logs ID` (rendering an event stream) against a bare `/bin/true` spawn.
//!
//! Run: `scripts/bench-real-agents.sh` (builds the release binaries, then
//! `cargo bench -p sublaunch-tests --bench real_agents`). `SUBLAUNCH_BENCH_ROUNDS` sets the
//! rounds (default 9); medians are printed as a Markdown table.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use sublaunch_tests::bench::{self, median};
use sublaunch_tests::launch_harness::Scratch;
use sublaunch_tests::model_server::{ModelServer, Reply};
use sublaunch_tests::real_agents::{self, Agent, PiApi};

/// Runs `command` to its end with `stdin`, which must succeed; returns the time it took.
fn timed(command: &mut Command, stdin: &str) -> Duration {
    use std::io::Write;
    let started = Instant::now();
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(stdin.as_bytes())
        .expect("stdin");
    let output = child.wait_with_output().expect("wait");
    let elapsed = started.elapsed();
    assert!(
        output.status.success(),
        "{command:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    elapsed
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1e3)
}

/// The direct command line of each CLI (what its adapter would run, without sublaunch).
fn direct(agent: &Agent, name: &str) -> Command {
    let args: &[&str] = match name {
        "claude" => &["-p", "--output-format", "stream-json", "--verbose"],
        "codex" => &["exec", "--json", "--skip-git-repo-check", "--sandbox", "read-only", "-"],
        _ => &["--mode", "json", "-p", "--no-session", "--model", "fake/fake-model"],
    };
    agent.command(args)
}

fn main() {
    let Some(rounds) = bench::rounds(9) else {
        return;
    };
    real_agents::require_installed();
    let server = ModelServer::shared();
    let scratch = Scratch::new("bench-real-agents");
    let registry = bench::fake_registry(scratch.path());
    println!("| measurement | median | × floor |\n|---|---|---|");
    let mut last_run = String::new();
    for name in ["claude", "codex", "pi"] {
        let scope = server.scope(&format!("bench-{name}"));
        scope.set_default(Reply::text("benchmark answer"));
        let agent = match name {
            "claude" => real_agents::claude(&scope),
            "codex" => real_agents::codex(&scope),
            _ => real_agents::pi(&scope, PiApi::OpenAiCompletions),
        };
        let (mut floor, mut through) = (Vec::new(), Vec::new());
        for _ in 0..rounds {
            floor.push(timed(&mut direct(&agent, name), "say something"));
            let mut args = vec!["run", "--agent", name, "--task", "say something", "--wait"];
            if name == "pi" {
                args.extend(["--model", "fake/fake-model", "--models", &registry]);
            }
            let mut command = scratch.cli(&args);
            for (key, value) in &agent.env {
                if key != "HOME" {
                    command.env(key, value);
                }
            }
            let started = Instant::now();
            let output = command.output().expect("sublaunch");
            through.push(started.elapsed());
            assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
            last_run = String::from_utf8_lossy(&output.stderr)
                .lines()
                .next()
                .unwrap_or_default()
                .to_owned();
        }
        let (floor, through) = (median(floor), median(through));
        println!("| floor: {name} run directly | {} | 1.00 |", ms(floor));
        println!(
            "| `sublaunch run --agent {name} --wait` | {} | {:.2} (+{}) |",
            ms(through),
            through.as_secs_f64() / floor.as_secs_f64(),
            ms(through.saturating_sub(floor))
        );
    }
    let (mut floor, mut result, mut logs) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..rounds * 5 {
        floor.push(timed(&mut Command::new("/bin/true"), ""));
        result.push(timed(&mut scratch.cli(&["result", &last_run]), ""));
        logs.push(timed(&mut scratch.cli(&["logs", &last_run]), ""));
    }
    let floor = median(floor);
    println!("| floor: `/bin/true` spawned | {} | 1.00 |", ms(floor));
    for (what, samples) in [
        ("`sublaunch result ID`", result),
        ("`sublaunch logs ID` (pi's events rendered)", logs),
    ] {
        let m = median(samples);
        println!("| {what} | {} | {:.2} |", ms(m), m.as_secs_f64() / floor.as_secs_f64());
    }
}
