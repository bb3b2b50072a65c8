//! What the OS sandbox adds to a launch and to `run --wait` (issue 36's goal: under 1 ms and
//! 5 %). Measured in the same run, interleaved round by round: `sublaunch run --agent shell
//! --task true` without a sandbox and with `--sandbox workspace` (the planner's resolution,
//! the runner's ruleset, the agent's entry into it), each until committed and with `--wait`
//! (the sandboxed step also makes and removes its temporary directory), and `--sandbox offline
//! --wait`, whose agent also gets a network namespace of its own (G36). Printed as a Markdown
//! table of medians with the sandboxed run's ratio to the unsandboxed one.
//!
//! Run: `scripts/bench-sandbox.sh` (builds the release binaries, then
//! `cargo bench -p sublaunch-tests --bench sandbox`). `SUBLAUNCH_BENCH_ROUNDS` sets the
//! rounds (default 30).

use std::time::{Duration, Instant};
use sublaunch_tests::bench::{self, median, ms};
use sublaunch_tests::launch_harness::Scratch;

fn timed(scratch: &Scratch, args: &[&str]) -> Duration {
    let started = Instant::now();
    let output = scratch.cli(args).output().unwrap();
    let elapsed = started.elapsed();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    elapsed
}

fn main() {
    let Some(rounds) = bench::rounds(30) else {
        return;
    };
    let scratch = Scratch::new("bench-sandbox");
    std::fs::create_dir_all(scratch.path().join("home")).unwrap();
    let run = |extra: &[&'static str]| [&["run", "--agent", "shell", "--task", "true"][..], extra].concat();
    let plain = run(&[]);
    let sandboxed = run(&["--sandbox", "workspace"]);
    let plain_wait = run(&["--wait"]);
    let sandboxed_wait = run(&["--sandbox", "workspace", "--wait"]);
    // G36: `offline` also gives the agent an empty network namespace.
    let offline_wait = run(&["--sandbox", "offline", "--wait"]);
    // One of each first: the planner's artifact cache warms up.
    timed(&scratch, &plain);
    timed(&scratch, &sandboxed_wait);
    timed(&scratch, &offline_wait);
    let mut samples: [Vec<Duration>; 5] = Default::default();
    for _ in 0..rounds {
        samples[0].push(timed(&scratch, &plain));
        samples[1].push(timed(&scratch, &sandboxed));
        samples[2].push(timed(&scratch, &plain_wait));
        samples[3].push(timed(&scratch, &sandboxed_wait));
        samples[4].push(timed(&scratch, &offline_wait));
    }
    let [plain, sandboxed, plain_wait, sandboxed_wait, offline_wait] = samples.map(median);
    let ratio = |d: Duration, base: Duration| format!("{:.3}", d.as_secs_f64() / base.as_secs_f64());
    let added = |d: Duration, base: Duration| {
        let delta = d.as_secs_f64() - base.as_secs_f64();
        format!("{:+.2} ms", delta * 1000.0)
    };
    println!("| measurement | median | × unsandboxed | added |\n|---|---|---|---|");
    println!("| `run --agent shell --task true` | {} | 1.000 | |", ms(plain));
    println!(
        "| `run … --sandbox workspace` | {} | {} | {} |",
        ms(sandboxed),
        ratio(sandboxed, plain),
        added(sandboxed, plain)
    );
    println!("| `run … --wait` | {} | 1.000 | |", ms(plain_wait));
    println!(
        "| `run … --sandbox workspace --wait` | {} | {} | {} |",
        ms(sandboxed_wait),
        ratio(sandboxed_wait, plain_wait),
        added(sandboxed_wait, plain_wait)
    );
    println!(
        "| `run … --sandbox offline --wait` | {} | {} | {} |",
        ms(offline_wait),
        ratio(offline_wait, plain_wait),
        added(offline_wait, plain_wait)
    );
}
