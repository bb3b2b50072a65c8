//! Stress: 100 concurrent library launches in one root, and 200 CLI hosts killed by SIGKILL at
//! random moments of their launch. Afterwards every run directory is absent or holds a valid
//! status, no temp file is left, and no run stays "running" once its shim is gone.

use serde_json::Value;
use std::process::Stdio;
use std::time::{Duration, Instant};
use sublaunch::launch::testing::{shell_plan, test_launch, test_options};
use sublaunch::launch::{launch, tokio};
use sublaunch_tests::bin;
use sublaunch_tests::launch_harness::{
    HOST_FAULT_ENV, Scratch, names_in, read_json, shims_under, status, temp_files, wait_for,
};

#[test]
fn one_hundred_concurrent_launches_all_complete() {
    let scratch = Scratch::new("stress100");
    let plan = shell_plan("echo $$", &scratch.work());
    let runtime = sublaunch::launch::runtime().unwrap();
    let started = Instant::now();
    let ids = runtime.block_on(async {
        let mut set = tokio::task::JoinSet::new();
        for _ in 0..100 {
            let opts = test_options(&scratch.root(), &bin("sublaunch-shim"));
            let plan = plan.clone();
            set.spawn(async move {
                let launched = launch(test_launch(&plan), opts).await.expect("started");
                launched.handle.committed().await.expect("committed");
                let finished = launched.handle.finished().await.expect("finalized");
                (launched.run_id, finished)
            });
        }
        let mut ids = Vec::new();
        while let Some(result) = set.join_next().await {
            let (id, finished) = result.unwrap();
            assert_eq!(
                serde_json::to_value(&finished.proof).unwrap()["state"],
                "observed",
                "{id}"
            );
            ids.push(id);
        }
        ids
    });
    eprintln!("100 concurrent launches finished in {:?}", started.elapsed());
    assert_eq!(ids.len(), 100);
    for id in &ids {
        let status = status(&scratch.run_dir(id)).expect("a valid status.json");
        assert_eq!(status["state"], "complete", "{id}: {status}");
    }
    let markers: Vec<String> = names_in(&scratch.runs().join(".active-runs"))
        .into_iter()
        .filter(|n| n != "tool-calls")
        .collect();
    assert!(markers.is_empty(), "index empty afterwards: {markers:?}");
    assert!(
        temp_files(&scratch.root()).is_empty(),
        "{:?}",
        temp_files(&scratch.root())
    );
}

/// A small deterministic generator (xorshift) for kill delays.
struct Xorshift(u64);

impl Xorshift {
    fn below(&mut self, bound: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % bound.max(1)
    }
}

#[test]
fn hosts_killed_at_random_moments_leave_no_torn_or_stuck_run() {
    let scratch = Scratch::new("sigkill200");
    // Short sleeps between the launch steps widen every window a kill can land in.
    let windows = "cfg:sleep:3;logs:sleep:3;status-initial:sleep:3;index:sleep:3;sidecar:sleep:3;capacity:sleep:3;proceed:sleep:3";
    let run_cli = || {
        scratch
            .cli(&["run", "--agent", "shell", "--task", "true"])
            .env(HOST_FAULT_ENV, windows)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap()
    };
    // The undisturbed duration of one CLI launch (warm planner cache) bounds the random kill
    // moments.
    let span = (0..4)
        .map(|_| {
            let start = Instant::now();
            assert!(run_cli().wait().unwrap().success());
            u64::try_from(start.elapsed().as_micros()).unwrap_or(u64::MAX)
        })
        .skip(1)
        .min()
        .unwrap_or(1);
    let mut random = Xorshift(0x9e37_79b9_7f4a_7c15);
    let mut killed = 0;
    for _ in 0..200 {
        let mut host = run_cli();
        let delay = Duration::from_micros(random.below(span));
        let deadline = Instant::now() + delay;
        // Kill at the chosen moment unless the host already finished.
        loop {
            if host.try_wait().unwrap().is_some() {
                break;
            }
            let now = Instant::now();
            if now >= deadline {
                host.kill().unwrap();
                killed += 1;
                break;
            }
            std::thread::sleep((deadline - now).min(Duration::from_millis(1)));
        }
        host.wait().unwrap();
    }
    eprintln!("{killed} of 200 hosts were killed mid-launch (span {span} µs)");
    wait_for("every shim of the root to exit", Duration::from_secs(120), || {
        shims_under(&scratch.root()).is_empty().then_some(())
    });
    let listed = scratch.cli(&["list", "--all", "--json"]).output().unwrap();
    assert!(listed.status.success(), "{}", String::from_utf8_lossy(&listed.stderr));
    let runs: Value = serde_json::from_slice(&listed.stdout).unwrap();
    let mut states = std::collections::BTreeMap::<String, usize>::new();
    for run in runs.as_array().unwrap() {
        *states
            .entry(run["state"].as_str().unwrap_or("none").to_owned())
            .or_default() += 1;
    }
    eprintln!(
        "final states of {} run directories: {states:?}",
        runs.as_array().unwrap().len()
    );
    let stuck: Vec<&Value> = runs
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| matches!(r["state"].as_str(), Some("running" | "queued") | None))
        .collect();
    assert!(stuck.is_empty(), "runs stuck active after their shim died: {stuck:#?}");
    let active = scratch.cli(&["list", "--json"]).output().unwrap();
    assert_eq!(
        serde_json::from_slice::<Value>(&active.stdout).unwrap(),
        Value::Array(vec![])
    );
    for name in names_in(&scratch.runs()) {
        if name.starts_with('.') {
            continue;
        }
        let run = scratch.run_dir(&name);
        let status = read_json(&run.join("status.json"));
        assert!(
            status.is_some(),
            "{name} has no valid status.json: {:?}",
            names_in(&run)
        );
    }
}
