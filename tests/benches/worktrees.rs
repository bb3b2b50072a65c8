//! What a managed worktree adds to a launch. Measured in the same run, interleaved round by
//! round, in a repository of 200 files: `git worktree add` of a new branch by itself (the
//! floor a checkout costs), `sublaunch run --agent shell --task true` without a worktree, the
//! same with `--worktree` (the checks, the record, the `git worktree add`), and both again
//! with `--wait` (the worktree run also reads its worktree at the step's end).
//!
//! Run: `scripts/bench-worktrees.sh` (builds the release binaries, then
//! `cargo bench -p sublaunch-tests --bench worktrees`). `SUBLAUNCH_BENCH_ROUNDS` sets the
//! rounds (default 30); medians are printed as a Markdown table.

use std::time::{Duration, Instant};
use sublaunch_tests::bench::{self, median, ms};
use sublaunch_tests::cli::git;
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
    let scratch = Scratch::new("bench-worktrees");
    let work = scratch.init_repo();
    for i in 0..200 {
        std::fs::write(work.join(format!("file-{i}.txt")), format!("line {i}\n").repeat(20)).unwrap();
    }
    git(&work, &["add", "-A"]);
    git(&work, &["commit", "-qm", "base"]);
    let plain = ["run", "--agent", "shell", "--task", "true"];
    let worktree = ["run", "--agent", "shell", "--task", "true", "--worktree"];
    let plain_wait = ["run", "--agent", "shell", "--task", "true", "--wait"];
    let worktree_wait = ["run", "--agent", "shell", "--task", "true", "--worktree", "--wait"];
    // One of each first: caches (the planner's artifact cache, git's) warm up.
    timed(&scratch, &plain);
    timed(&scratch, &worktree);
    let mut samples: [Vec<Duration>; 5] = Default::default();
    let floor_dir = scratch.path().join("floor");
    for round in 0..rounds {
        let path = floor_dir.join(round.to_string());
        let started = Instant::now();
        git(
            &work,
            &[
                "worktree",
                "add",
                "--quiet",
                "-b",
                &format!("floor/{round}"),
                path.to_str().unwrap(),
                "HEAD",
            ],
        );
        samples[0].push(started.elapsed());
        samples[1].push(timed(&scratch, &plain));
        samples[2].push(timed(&scratch, &worktree));
        samples[3].push(timed(&scratch, &plain_wait));
        samples[4].push(timed(&scratch, &worktree_wait));
    }
    let [add, plain, worktree, plain_wait, worktree_wait] = samples.map(median);
    let ratio = |d: Duration, floor: Duration| format!("{:.2}", d.as_secs_f64() / floor.as_secs_f64());
    let floor = add + plain;
    println!("| measurement | median | × floor |\n|---|---|---|");
    println!("| `git worktree add -b` alone, 200 files | {} | |", ms(add));
    println!("| `run --agent shell --task true` | {} | |", ms(plain));
    println!("| floor: the two above added | {} | 1.00 |", ms(floor));
    println!("| `run … --worktree` | {} | {} |", ms(worktree), ratio(worktree, floor));
    println!("| `run … --wait` | {} | |", ms(plain_wait));
    println!(
        "| floor: `git worktree add` + `run … --wait` | {} | 1.00 |",
        ms(add + plain_wait)
    );
    println!(
        "| `run … --worktree --wait` | {} | {} |",
        ms(worktree_wait),
        ratio(worktree_wait, add + plain_wait)
    );
}
