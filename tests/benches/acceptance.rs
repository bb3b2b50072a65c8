//! What a gate adds to a run (rules G77, G78): the same `sublaunch run --agent shell --task
//! true --wait` timed bare (the floor), with `--gate true` in a directory outside git, with
//! `--gate true` in a git repository of 100 and of 2 000 files (where the runner notes the
//! step's start and hashes the tree's state for the memo), and with `--accept checked` there
//! (the report parsed and checked against git). Batches are interleaved and every ratio is to
//! the floor measured in the same run.
//!
//! Run: `scripts/bench-acceptance.sh` (builds the release binaries, then
//! `cargo bench -p sublaunch-tests --bench acceptance`). `SUBLAUNCH_BENCH_ROUNDS` sets the
//! runs per case (default 60).

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};
use sublaunch_tests::bench::{self, median, ms};
use sublaunch_tests::cli::{git, write};
use sublaunch_tests::launch_harness::Scratch;

/// Runs per batch and case.
const BATCH: usize = 10;

/// A report block the `checked` case's shell step prints.
const REPORT: &str = r#"printf '%s\n' '```acceptance-report' '{"changedFiles": [], "commandsRun": [{"command": "true", "result": "passed", "summary": "ok"}], "noStagedFiles": true}' '```'"#;

/// A repository of `files` committed files under `dir`.
fn repository(dir: &Path, files: usize) {
    std::fs::create_dir_all(dir).unwrap();
    git(dir, &["init", "-q"]);
    for i in 0..files {
        write(&dir.join(format!("src/m{}/f{i}.txt", i % 20)), &format!("line {i}\n"));
    }
    // Files older than the index, as in a checkout of any age: git trusts their stat data
    // instead of reading each one again (files written in the index's own second are
    // "racily clean", and the runner's git never rewrites the index to settle them).
    let aged = Command::new("sh")
        .args([
            "-c",
            "find . -path ./.git -prune -o -type f -exec touch -d '2 minutes ago' {} +",
        ])
        .current_dir(dir)
        .status()
        .unwrap();
    assert!(aged.success());
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-qm", "base"]);
}

fn main() {
    let Some(rounds) = bench::rounds(60) else {
        return;
    };
    let scratch = Scratch::new("bench-acceptance");
    scratch.create_root();
    let plain = scratch.path().join("plain");
    std::fs::create_dir_all(&plain).unwrap();
    let small = scratch.path().join("repo-100");
    let large = scratch.path().join("repo-2000");
    repository(&small, 100);
    repository(&large, 2_000);
    let sublaunch = sublaunch_tests::bin("sublaunch");
    let time = |dir: &Path, extra: &[&str], task: &str| -> Duration {
        let started = Instant::now();
        let output = Command::new(&sublaunch)
            .args(["run", "--agent", "shell", "--task", task, "--wait"])
            .args(extra)
            .current_dir(dir)
            .env_clear()
            .envs(scratch.cli_env())
            .output()
            .unwrap();
        let elapsed = started.elapsed();
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        elapsed
    };
    let cases: [(&str, &Path, &[&str], &str); 6] = [
        ("bare run (floor)", &plain, &[], "true"),
        ("`--gate true`, outside git", &plain, &["--gate", "true"], "true"),
        (
            "`--gate true`, repository of 100 files",
            &small,
            &["--gate", "true"],
            "true",
        ),
        (
            "`--gate true`, repository of 2 000 files",
            &large,
            &["--gate", "true"],
            "true",
        ),
        (
            "`--accept checked`, repository of 100 files",
            &small,
            &["--accept", "checked"],
            REPORT,
        ),
        (
            "`--accept checked`, repository of 2 000 files",
            &large,
            &["--accept", "checked"],
            REPORT,
        ),
    ];
    // One run of each first: the planner's artifact cache and the page cache warm up.
    for (_, dir, extra, task) in &cases {
        time(dir, extra, task);
    }
    let mut samples: Vec<Vec<Duration>> = vec![Vec::new(); cases.len()];
    for _ in 0..rounds.div_ceil(BATCH) {
        for (case, all) in cases.iter().zip(samples.iter_mut()) {
            for _ in 0..BATCH {
                all.push(time(case.1, case.2, case.3));
            }
        }
    }
    let medians: Vec<Duration> = samples.into_iter().map(median).collect();
    let floor = medians[0];
    println!("| run | median | × floor | added |\n|---|---|---|---|");
    for ((name, ..), median) in cases.iter().zip(&medians) {
        println!(
            "| {name} | {} | {:.3} | {:+.2} ms |",
            ms(*median),
            median.as_secs_f64() / floor.as_secs_f64(),
            (median.as_secs_f64() - floor.as_secs_f64()) * 1e3
        );
    }
}
