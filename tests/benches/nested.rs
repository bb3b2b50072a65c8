//! What finding the ceilings of the runs a launch comes from costs (rules G60, G66): the same
//! `sublaunch run --agent shell --task true` timed at the top level, from inside a run, and
//! from inside a run inside a run. At every depth the host walks its ancestors in `/proc`;
//! below the top it also checks each parent's status and reads its plan record, so the cost
//! should grow by a small step per level, not with the number of runs in the root.
//!
//! The timing happens in this same executable, started with `--inner ROUNDS OUT` as the
//! `shell` agent's task (so the measured launches really are nested), and printed as a
//! Markdown table of medians with each depth's ratio to the top level measured in the same
//! run, batch by batch interleaved.
//!
//! Run: `scripts/bench-nested.sh` (builds the release binaries, then
//! `cargo bench -p sublaunch-tests --bench nested`). `SUBLAUNCH_BENCH_ROUNDS` sets the
//! launches per depth (default 60).

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};
use sublaunch_tests::bench::{self, median, ms};
use sublaunch_tests::launch_harness::Scratch;

/// Launches per batch: one agent run per batch and depth, so its own cost stays out.
const BATCH: usize = 10;

/// `--inner ROUNDS OUT`: times ROUNDS launches with the environment this process has and
/// writes the nanoseconds, one a line, to OUT.
fn inner(rounds: usize, out: &Path) {
    let sublaunch = sublaunch_tests::bin("sublaunch");
    let mut lines = String::new();
    for _ in 0..rounds {
        let started = Instant::now();
        let output = Command::new(&sublaunch)
            .args(["run", "--agent", "shell", "--task", "true"])
            .output()
            .unwrap();
        let elapsed = started.elapsed();
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        lines.push_str(&format!("{}\n", elapsed.as_nanos()));
    }
    std::fs::write(out, lines).unwrap();
}

fn samples(out: &Path) -> Vec<Duration> {
    std::fs::read_to_string(out)
        .unwrap_or_else(|e| panic!("{}: {e}", out.display()))
        .lines()
        .map(|l| Duration::from_nanos(l.parse().unwrap()))
        .collect()
}

/// The shell command that runs `command` `depth` runs deep.
fn nested(command: String, depth: usize, sublaunch: &Path) -> String {
    (0..depth).fold(command, |inside, _| {
        format!(
            "{} run --agent shell --wait --task '{}'",
            sublaunch.display(),
            inside.replace('\'', r"'\''")
        )
    })
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(at) = args.iter().position(|a| a == "--inner") {
        inner(args[at + 1].parse().unwrap(), Path::new(&args[at + 2]));
        return;
    }
    let Some(rounds) = bench::rounds(60) else {
        return;
    };
    let scratch = Scratch::new("bench-nested");
    std::fs::create_dir_all(scratch.path().join("home")).unwrap();
    let me = std::env::current_exe().unwrap();
    let sublaunch = sublaunch_tests::bin("sublaunch");
    let out = scratch.path().join("samples.txt");
    let measure = |depth: usize, launches: usize| -> Vec<Duration> {
        let command = format!("{} --inner {launches} {}", me.display(), out.display());
        let status = Command::new("sh")
            .args(["-c", &nested(command, depth, &sublaunch)])
            .current_dir(scratch.work())
            .env_clear()
            .envs(scratch.cli_env())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .unwrap();
        assert!(status.success());
        samples(&out)
    };
    // One batch at each depth first: the planner's artifact cache warms up.
    for depth in 0..3 {
        measure(depth, 2);
    }
    let mut by_depth: [Vec<Duration>; 3] = Default::default();
    for _ in 0..rounds.div_ceil(BATCH) {
        for (depth, all) in by_depth.iter_mut().enumerate() {
            all.extend(measure(depth, BATCH));
        }
    }
    let [top, one, two] = by_depth.map(median);
    let ratio = |d: Duration| format!("{:.3}", d.as_secs_f64() / top.as_secs_f64());
    let added = |d: Duration| format!("{:+.2} ms", (d.as_secs_f64() - top.as_secs_f64()) * 1e3);
    println!("| launched from | median | × top level | added |\n|---|---|---|---|");
    println!("| the top level (floor) | {} | 1.000 | |", ms(top));
    println!("| inside a run | {} | {} | {} |", ms(one), ratio(one), added(one));
    println!(
        "| inside a run inside a run | {} | {} | {} |",
        ms(two),
        ratio(two),
        added(two)
    );
}
