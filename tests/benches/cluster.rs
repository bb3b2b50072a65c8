//! What placing runs on Slurm costs, and how it grows with the runs (issue 38), against bare
//! Slurm commands measured in the same run on the same single-node test cluster
//! (tests/support/slurm.rs):
//!
//! 1. **Submissions per second**: N runs `sublaunch run --agent shell --machine slurm:debug`
//!    one after the other, against N bare `sbatch --parsable` of a one-line script. The
//!    partition is down, so every job stays queued and nothing runs.
//! 2. **`list` with N queued runs**: `sublaunch list` (which asks Slurm about every queued
//!    job at once) against the one `squeue` of the same jobs, at 50 and 500 runs.
//! 3. **From a job's end to the run's end**: `run --wait` of `true` against `sbatch` of the
//!    same polled with `squeue` until it completed; and a job killed outright (`scancel --batch --signal=KILL`) until `wait` says
//!    the run ended, against the same kill until `squeue` says the job ended.
//!
//! Run: `scripts/bench-cluster.sh` (builds the release binaries, then
//! `cargo bench -p sublaunch-tests --bench cluster`). `SUBLAUNCH_BENCH_ROUNDS` sets the
//! samples of part 3 (default 10); parts 1 and 2 use 500 runs.

use std::io::Write;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};
use sublaunch_tests::bench::{self, median, ms};
use sublaunch_tests::launch_harness::Scratch;
use sublaunch_tests::slurm::SlurmCluster;

/// Runs queued in parts 1 and 2.
const QUEUED: usize = 500;
/// The smaller count `list` is measured at.
const SMALL: usize = 50;

fn sublaunch(scratch: &Scratch, cluster: &SlurmCluster, args: &[&str]) -> Output {
    let output = scratch.cli(args).envs(cluster.env()).output().unwrap();
    assert!(
        output.status.success(),
        "sublaunch {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

fn sbatch(cluster: &SlurmCluster, extra: &[&str], script: &str) -> Output {
    let mut child = Command::new("sbatch")
        .args(["--parsable", "--no-requeue", "--output=/dev/null"])
        .args(extra)
        .env("SLURM_CONF", cluster.conf())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(script.as_bytes()).unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "sbatch: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

fn job_id(output: &Output) -> String {
    let printed: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    printed["jobId"].as_str().unwrap().to_owned()
}

/// The jobs of the queued runs `list --json` shows (every one waits for the down partition).
fn queued_jobs(scratch: &Scratch, cluster: &SlurmCluster) -> Vec<String> {
    let listed = sublaunch(scratch, cluster, &["list", "--json"]);
    let runs: serde_json::Value = serde_json::from_slice(&listed.stdout).unwrap();
    let runs = runs.as_array().unwrap();
    assert!(runs.iter().all(|r| r["queueReason"] == "PartitionDown"), "{runs:?}");
    runs.iter()
        .filter_map(|r| r["cluster"]["jobId"].as_str().map(str::to_owned))
        .collect()
}

/// Medians of `sublaunch list` and of one `squeue` of the same jobs, with `count` queued runs.
fn list_against_squeue(
    scratch: &Scratch,
    cluster: &SlurmCluster,
    count: usize,
    rounds: usize,
) -> (usize, Duration, Duration) {
    let jobs = queued_jobs(scratch, cluster);
    assert_eq!(jobs.len(), count, "every run is queued");
    let job_list = format!("--jobs={}", jobs.join(","));
    let args = ["--noheader", "--states=all", "--format=%i|%T|%r|%N", job_list.as_str()];
    let (mut list, mut squeue) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        let started = Instant::now();
        sublaunch(scratch, cluster, &["list"]);
        list.push(started.elapsed());
        let started = Instant::now();
        assert!(cluster.command("squeue", &args).status.success());
        squeue.push(started.elapsed());
    }
    (count, median(list), median(squeue))
}

fn per_second(count: usize, took: Duration) -> f64 {
    count as f64 / took.as_secs_f64()
}

fn main() {
    let Some(rounds) = bench::rounds(10) else {
        return;
    };
    let cluster = SlurmCluster::private();
    let scratch = Scratch::new("bench-cluster");
    let down = cluster.command("scontrol", &["update", "PartitionName=debug", "State=DOWN"]);
    assert!(down.status.success());

    // 1. Submissions, interleaved in tens so that a phase of the machine hits both alike.
    let (mut ours, mut bare) = (Duration::ZERO, Duration::ZERO);
    let mut bare_jobs = Vec::new();
    let mut lists = Vec::new();
    for batch in 0..QUEUED / 10 {
        if batch * 10 == SMALL {
            lists.push(list_against_squeue(&scratch, &cluster, SMALL, rounds));
        }
        let started = Instant::now();
        for _ in 0..10 {
            sublaunch(
                &scratch,
                &cluster,
                &[
                    "run",
                    "--agent",
                    "shell",
                    "--task",
                    "true",
                    "--machine",
                    "slurm:debug",
                    "--json",
                ],
            );
        }
        ours += started.elapsed();
        let started = Instant::now();
        for _ in 0..10 {
            let output = sbatch(&cluster, &["--partition=debug"], "#!/bin/sh\nexec true\n");
            bare_jobs.push(String::from_utf8_lossy(&output.stdout).trim().to_owned());
        }
        bare += started.elapsed();
    }
    println!("| case | runs | total | per run | per second | × floor |\n|---|---|---|---|---|---|");
    println!(
        "| bare `sbatch` (floor) | {QUEUED} | {} | {} | {:.0} | 1.00 |",
        ms(bare),
        ms(bare / QUEUED as u32),
        per_second(QUEUED, bare)
    );
    println!(
        "| `sublaunch run --machine slurm:debug` | {QUEUED} | {} | {} | {:.0} | {:.2} |",
        ms(ours),
        ms(ours / QUEUED as u32),
        per_second(QUEUED, ours),
        ours.as_secs_f64() / bare.as_secs_f64()
    );
    let cancelled = cluster.command("scancel", &bare_jobs.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(cancelled.status.success());

    // 2. `list` with the queued runs, against one `squeue` of their jobs, at 50 and 500.
    lists.push(list_against_squeue(&scratch, &cluster, QUEUED, rounds));
    println!("\n| case | queued runs | median | × floor |\n|---|---|---|---|");
    for (count, list, squeue) in &lists {
        println!(
            "| one `squeue` of their jobs (floor) | {count} | {} | 1.00 |",
            ms(*squeue)
        );
        println!(
            "| `sublaunch list` | {count} | {} | {:.2} |",
            ms(*list),
            list.as_secs_f64() / squeue.as_secs_f64()
        );
    }
    let jobs = queued_jobs(&scratch, &cluster);
    let stopped = cluster.command("scancel", &jobs.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(stopped.status.success());
    let up = cluster.command("scontrol", &["update", "PartitionName=debug", "State=UP"]);
    assert!(up.status.success());
    // Every run is settled (failed: its job was cancelled before it started) before part 3.
    sublaunch(&scratch, &cluster, &["list"]);

    // 3. From a job's end to the run's end.
    let (mut ours, mut bare, mut killed, mut killed_bare) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for _ in 0..rounds {
        let started = Instant::now();
        sublaunch(
            &scratch,
            &cluster,
            &[
                "run",
                "--agent",
                "shell",
                "--task",
                "true",
                "--machine",
                "slurm:debug",
                "--wait",
            ],
        );
        ours.push(started.elapsed());
        // `sbatch --wait` looks every 10 s: the floor polls the queue every 20 ms instead.
        let started = Instant::now();
        let output = sbatch(&cluster, &[], "#!/bin/sh\nexec true\n");
        let job = String::from_utf8_lossy(&output.stdout).trim().to_owned();
        while !matches!(cluster.job_state(&job).as_deref(), Some("COMPLETED") | None) {
            std::thread::sleep(Duration::from_millis(20));
        }
        bare.push(started.elapsed());

        let output = sublaunch(
            &scratch,
            &cluster,
            &[
                "run",
                "--agent",
                "shell",
                "--task",
                "sleep 300",
                "--machine",
                "slurm:debug",
                "--json",
            ],
        );
        let job = job_id(&output);
        let printed: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
        let run_id = printed["runId"].as_str().unwrap().to_owned();
        // Killed once its agent runs: a job Slurm calls RUNNING may not have started its
        // batch script yet, and a kill then reaches nothing.
        let dir = scratch.run_dir(&run_id);
        while sublaunch_tests::launch_harness::status(&dir).is_none_or(|s| s["steps"][0]["status"] != "running") {
            std::thread::sleep(Duration::from_millis(20));
        }
        let started = Instant::now();
        assert!(
            cluster
                .command("scancel", &["--batch", "--signal=KILL", &job])
                .status
                .success()
        );
        let waited = scratch.cli(&["wait", &run_id]).envs(cluster.env()).output().unwrap();
        killed.push(started.elapsed());
        assert_eq!(
            waited.status.code(),
            Some(1),
            "{}",
            String::from_utf8_lossy(&waited.stderr)
        );

        let up = scratch.path().join("up");
        let _ = std::fs::remove_file(&up);
        let script = format!("#!/bin/sh\necho up > {}\nexec sleep 300\n", up.display());
        let output = sbatch(&cluster, &[], &script);
        let job = String::from_utf8_lossy(&output.stdout).trim().to_owned();
        while !up.exists() {
            std::thread::sleep(Duration::from_millis(20));
        }
        let started = Instant::now();
        assert!(
            cluster
                .command("scancel", &["--batch", "--signal=KILL", &job])
                .status
                .success()
        );
        while !matches!(cluster.job_state(&job).as_deref(), Some("FAILED") | None) {
            std::thread::sleep(Duration::from_millis(20));
        }
        killed_bare.push(started.elapsed());
    }
    let (ours, bare) = (median(ours), median(bare));
    let (killed, killed_bare) = (median(killed), median(killed_bare));
    println!("\n| case | median | × floor |\n|---|---|---|");
    println!(
        "| `sbatch` of `true` until `squeue` says COMPLETED, polled every 20 ms (floor) | {} | 1.00 |",
        ms(bare)
    );
    println!(
        "| `sublaunch run --wait --machine slurm:debug` of `true` | {} | {:.2} |",
        ms(ours),
        ours.as_secs_f64() / bare.as_secs_f64()
    );
    println!(
        "| `scancel --batch -s KILL` until `squeue` says FAILED, polled every 20 ms (floor) | {} | 1.00 |",
        ms(killed_bare)
    );
    println!(
        "| `scancel --batch -s KILL` until `sublaunch wait` returns the run failed | {} | {:.2} |",
        ms(killed),
        killed.as_secs_f64() / killed_bare.as_secs_f64()
    );
}
