//! What `sublaunch integrate` (G82) costs as the writers grow: a parallel group of 2, 8 and 32
//! shell writers in managed worktrees, each committing one file of its own, is integrated
//! with `--no-gate` and with `--gate true` (the merged tree checked out and a command run
//! after each merge), against the floor of the same branches merged by hand in the same
//! run: a fresh detached worktree, one `git merge --no-edit` per branch, then removed. The
//! integration branch is deleted between samples (untimed), so every sample does all merges.
//!
//! Run: `scripts/bench-integrate.sh` (builds the release binaries, then
//! `cargo bench -p sublaunch-tests --bench integrate`). `SUBLAUNCH_BENCH_ROUNDS` sets the
//! samples per case (default 20).

use serde_json::{Value, json};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};
use sublaunch_tests::bench::{self, median, ms};
use sublaunch_tests::cli::{git, waited_run_id, write};
use sublaunch_tests::launch_harness::Scratch;

/// The writers' counts measured.
const WRITERS: [usize; 3] = [2, 8, 32];

fn run(scratch: &Scratch, args: &[&str], dir: &Path) -> std::process::Output {
    let output = Command::new(sublaunch_tests::bin("sublaunch"))
        .args(args)
        .current_dir(dir)
        .env_clear()
        .envs(scratch.cli_env())
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    output
}

/// A run of `writers` shell writers in worktrees of `repo`; its id and its branches.
fn writers(scratch: &Scratch, repo: &Path, writers: usize) -> (String, Vec<String>) {
    let parallel: Vec<Value> = (0..writers)
        .map(|i| {
            json!({"agent": "shell", "task": format!(
                "echo {i} > w{i}.txt && git add -A && git -c user.name=w -c user.email=w@example.invalid commit -qm w{i}"
            )})
        })
        .collect();
    let chain = write(
        &scratch.path().join(format!("writers-{writers}.json")),
        &json!({"steps": [{"parallel": parallel, "worktree": true, "concurrency": 8}]}).to_string(),
    );
    let output = run(scratch, &["run", "--chain", chain.to_str().unwrap(), "--wait"], repo);
    let id = waited_run_id(&output);
    let branches = (1..=writers).map(|i| format!("sublaunch/{id}/1-{i}")).collect();
    (id, branches)
}

fn main() {
    let Some(rounds) = bench::rounds(20) else {
        return;
    };
    let scratch = Scratch::trusting("bench-integrate");
    let repo = scratch.init_repo();
    write(&repo.join("README"), "base\n");
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-qm", "base"]);
    let by_hand = scratch.path().join("by-hand");
    println!("| writers | case | median | × floor | per writer |\n|---|---|---|---|---|");
    for count in WRITERS {
        let (id, branches) = writers(&scratch, &repo, count);
        let integration = format!("sublaunch/{id}/integration");
        let floor = || {
            let started = Instant::now();
            git(
                &repo,
                &["worktree", "add", "-q", "--detach", by_hand.to_str().unwrap(), "HEAD"],
            );
            for branch in &branches {
                git(&by_hand, &["merge", "-q", "--no-edit", branch]);
            }
            git(&repo, &["worktree", "remove", "--force", by_hand.to_str().unwrap()]);
            started.elapsed()
        };
        let integrate = |gate: &[&str]| {
            let started = Instant::now();
            let mut args = vec!["integrate", id.as_str()];
            args.extend(gate);
            run(&scratch, &args, &repo);
            let elapsed = started.elapsed();
            git(&repo, &["branch", "-q", "-D", &integration]);
            elapsed
        };
        let cases: [(&str, &dyn Fn() -> Duration); 3] = [
            ("`git merge` by hand (floor)", &floor),
            ("`integrate --no-gate`", &|| integrate(&["--no-gate"])),
            ("`integrate --gate true`", &|| integrate(&["--gate", "true"])),
        ];
        for (_, case) in &cases {
            case();
        }
        let mut samples: Vec<Vec<Duration>> = vec![Vec::new(); cases.len()];
        for _ in 0..rounds {
            for ((_, case), all) in cases.iter().zip(samples.iter_mut()) {
                all.push(case());
            }
        }
        let medians: Vec<Duration> = samples.into_iter().map(median).collect();
        for ((name, _), median) in cases.iter().zip(&medians) {
            println!(
                "| {count} | {name} | {} | {:.2} | {:.2} ms |",
                ms(*median),
                median.as_secs_f64() / medians[0].as_secs_f64(),
                median.as_secs_f64() * 1e3 / count as f64
            );
        }
    }
}
