//! Cluster placement (J1, J2, J3, J4) through the real binary: `slurm`, `slurm:PARTITION` and clusters
//! named in settings are planned as cluster placements with their options, a run split between
//! a cluster and anywhere else is refused, and a launch on a cluster is refused before anything
//! is written or started (this version plans cluster placements but does not submit them).
//! The test Slurm cluster itself (tests/support/slurm.rs) runs real jobs.

use serde_json::{Value, json};
use std::io::Write;
use std::process::{Command, Stdio};
use sublaunch::cluster::slurm::{ExitCode, JobRecord, JobState};
use sublaunch_tests::cli::text;
use sublaunch_tests::launch_harness::Scratch;
use sublaunch_tests::slurm::SlurmCluster;

fn planned(request: &Value) -> (Option<i32>, Value) {
    let cache = tempfile::tempdir().unwrap();
    let output = super::plan_cli::plan_with(&[], request.to_string().as_bytes(), cache.path());
    let document = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", text(&output.stdout), text(&output.stderr)));
    (output.status.code(), document)
}

fn request(steps: Value, settings: Value) -> Value {
    json!({
        "cwd": "/c",
        "mode": "chain",
        "agents": [{"name": "w"}],
        "steps": steps,
        "machineSettings": {"user": settings},
    })
}

#[test]
fn j1_j2_clusters_are_planned_with_their_options_and_no_catalog() {
    let settings = json!({"subagents": {"clusters": {"lab": {
        "engine": "slurm", "partition": "gpu", "account": "a1", "time": "1:30:00", "cpus": 4, "memory": "8G"
    }}}});
    let (code, plan) = planned(&request(
        json!([{"agent": "w", "task": "t", "machine": "lab"}, {"agent": "w", "task": "u", "machine": "lab"}]),
        settings.clone(),
    ));
    assert_eq!(code, Some(0), "{plan}");
    for step in plan["steps"].as_array().unwrap() {
        assert_eq!(
            step["cluster"],
            json!({"engine": "slurm", "name": "lab", "partition": "gpu", "account": "a1",
                   "timeLimitMinutes": 90, "cpus": 4, "memory": "8G"}),
            "{plan}"
        );
        assert!(step.get("machine").is_none(), "{plan}");
    }
    let (code, plan) = planned(&request(
        json!([{"agent": "w", "task": "t", "machine": " slurm:debug "}]),
        json!({}),
    ));
    assert_eq!(code, Some(0), "{plan}");
    assert_eq!(plan["steps"][0]["cluster"]["partition"], "debug", "{plan}");
    // A misspelt option is refused with where it is, not submitted to the default partition.
    let (code, refused) = planned(&request(
        json!([{"agent": "w", "task": "t", "machine": "lab"}]),
        json!({"subagents": {"clusters": {"lab": {"partiton": "gpu"}}}}),
    ));
    assert_eq!(code, Some(1));
    let message = refused["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("'clusters.lab'") && message.contains("partiton"),
        "{message}"
    );
}

#[test]
fn j3_a_run_split_between_a_cluster_and_anywhere_else_is_refused() {
    for second in [
        json!({"agent": "w", "task": "u"}),
        json!({"agent": "w", "task": "u", "machine": "slurm:other"}),
    ] {
        let (code, refused) = planned(&request(
            json!([{"agent": "w", "task": "t", "machine": "slurm:debug"}, second]),
            json!({}),
        ));
        assert_eq!(code, Some(1), "{refused}");
        let message = refused["error"]["message"].as_str().unwrap();
        assert!(message.contains("one cluster as a whole"), "{message}");
        assert!(message.contains("step 2"), "{message}");
    }
}

#[test]
fn j4_a_launch_on_a_cluster_is_refused_before_anything_is_written() {
    let scratch = Scratch::new("cluster-refused");
    let launch = ["run", "--agent", "shell", "--task", "echo hi", "--machine"];
    for place in [&["slurm:debug"][..], &["slurm", "--dry-run"]] {
        let args: Vec<&str> = launch.iter().chain(place).copied().collect();
        let output = scratch.cli(&args).output().unwrap();
        assert_eq!(output.status.code(), Some(2), "{}", text(&output.stderr));
        let stderr = text(&output.stderr);
        assert!(stderr.contains("placed on cluster"), "{stderr}");
        assert!(!stderr.contains("Herdr"), "a cluster needs no Herdr catalog: {stderr}");
    }
    let listed = scratch.cli(&["list", "--all", "--json"]).output().unwrap();
    assert_eq!(text(&listed.stdout).trim(), "[]", "{}", text(&listed.stderr));
}

/// The test cluster runs real jobs, and the host reads them (J5): a job's exit code, its state
/// while the controller knows it, and its line in the job-completion log, which outlives the
/// controller's memory.
#[test]
fn the_test_cluster_runs_a_job_to_its_recorded_end() {
    let cluster = SlurmCluster::shared();
    let submitted = Command::new("sbatch")
        .args([
            "--parsable",
            "--no-requeue",
            "--job-name=sublaunch-probe",
            "--output=/dev/null",
        ])
        .env("SLURM_CONF", cluster.conf())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            child
                .stdin
                .take()
                .unwrap()
                .write_all(b"#!/bin/sh\nexec sh -c 'exit 3'\n")?;
            child.wait_with_output()
        })
        .unwrap();
    assert!(
        submitted.status.success(),
        "{}\n{}",
        text(&submitted.stderr),
        cluster.logs()
    );
    let job = text(&submitted.stdout).trim().split(';').next().unwrap().to_owned();
    let started = std::time::Instant::now();
    let state = loop {
        let state = cluster.job_state(&job);
        if state
            .as_deref()
            .is_some_and(|s| !matches!(s, "PENDING" | "RUNNING" | "COMPLETING" | "CONFIGURING"))
        {
            break state.unwrap();
        }
        assert!(
            started.elapsed() < std::time::Duration::from_secs(60),
            "job {job} is {state:?}\n{}",
            cluster.logs()
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    assert_eq!(state, "FAILED");
    // J5: what the host reads of the job, from the controller and from the completion log.
    let shown = text(&cluster.command("scontrol", &["show", "job", "-o", &job]).stdout);
    let record = JobRecord::parse(&shown).unwrap_or_else(|| panic!("unreadable: {shown}"));
    assert_eq!(record.state, JobState::Failed, "{shown}");
    assert_eq!(record.exit_code, Some(ExitCode { status: 3, signal: 0 }), "{shown}");
    assert_eq!(record.reason.as_deref(), Some("NonZeroExitCode"), "{shown}");
    assert_eq!(record.node_list.as_deref(), Some(cluster.node()), "{shown}");
    let completions = std::fs::read_to_string(cluster.jobcomp()).unwrap();
    let ended = JobRecord::last_completion(&completions, &job)
        .unwrap_or_else(|| panic!("no completion line for {job}: {completions}"));
    assert_eq!((ended.state, ended.exit_code), (JobState::Failed, record.exit_code));
}
