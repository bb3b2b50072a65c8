//! What budgets and the checkpoint add to a real agent run: `sublaunch run --agent X --task T
//! --wait` with the real pi and Claude Code (behind the test suite's fake model server), plain
//! (the floor), with a usage and a tool budget (the runner counts every event), and with a
//! checkpoint (pi in RPC mode, Claude Code reading streamed input), interleaved round by
//! round in the same run.
//!
//! Run: `scripts/bench-limits.sh`. `SUBLAUNCH_BENCH_ROUNDS` sets the rounds (default 9);
//! medians are printed as a Markdown table.

use std::time::{Duration, Instant};
use sublaunch_tests::bench::{self, median};
use sublaunch_tests::launch_harness::Scratch;
use sublaunch_tests::model_server::{ModelServer, Reply};
use sublaunch_tests::real_agents::{self, PiApi};

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1e3)
}

fn main() {
    let Some(rounds) = bench::rounds(9) else {
        return;
    };
    real_agents::require_installed();
    let server = ModelServer::shared();
    let scratch = Scratch::new("bench-limits");
    let registry = bench::fake_registry(scratch.path());
    let variants: [(&str, &[&str]); 3] = [
        ("plain", &[]),
        (
            "--max-tokens 100000 --max-tool-calls 50",
            &["--max-tokens", "100000", "--max-tool-calls", "50"],
        ),
        (
            "--timeout 600 --checkpoint-before-deadline 60",
            &["--timeout", "600", "--checkpoint-before-deadline", "60"],
        ),
    ];
    println!("| measurement | median | × floor |\n|---|---|---|");
    for name in ["claude", "pi"] {
        let scope = server.scope(&format!("bench-limits-{name}"));
        scope.set_default(Reply::text("benchmark answer").usage(1000, 50, 0, 0));
        let agent = match name {
            "claude" => real_agents::claude(&scope),
            _ => real_agents::pi(&scope, PiApi::OpenAiCompletions),
        };
        let mut samples: Vec<Vec<Duration>> = vec![Vec::new(); variants.len()];
        for _ in 0..rounds {
            for (i, (_, extra)) in variants.iter().enumerate() {
                let mut args = vec!["run", "--agent", name, "--task", "say something", "--wait"];
                if name == "pi" {
                    args.extend(["--model", "fake/fake-model", "--models", &registry]);
                }
                args.extend_from_slice(extra);
                let mut command = scratch.cli(&args);
                for (key, value) in &agent.env {
                    if key != "HOME" {
                        command.env(key, value);
                    }
                }
                let started = Instant::now();
                let output = command.output().expect("sublaunch");
                samples[i].push(started.elapsed());
                assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
            }
        }
        let medians: Vec<Duration> = samples.into_iter().map(median).collect();
        for ((what, _), m) in variants.iter().zip(&medians) {
            let label = if *what == "plain" {
                format!("floor: `run --agent {name} --wait`")
            } else {
                format!("`run --agent {name} --wait {what}`")
            };
            println!(
                "| {label} | {} | {:.2} |",
                ms(*m),
                m.as_secs_f64() / medians[0].as_secs_f64()
            );
        }
    }
}
