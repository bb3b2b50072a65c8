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
fn j3_a_run_uses_one_cluster_with_one_set_of_options() {
    let (code, plan) = planned(&request(
        json!([{"agent": "w", "task": "t", "machine": "slurm:debug"}, {"agent": "w", "task": "u"}]),
        json!({}),
    ));
    assert_eq!(
        code,
        Some(0),
        "a chain may mix steps here with cluster steps (J11): {plan}"
    );
    assert!(plan["steps"][1]["cluster"].is_null(), "{plan}");
    let (code, refused) = planned(&request(
        json!([{"agent": "w", "task": "t", "machine": "slurm:debug"}, {"agent": "w", "task": "u", "machine": "slurm:other"}]),
        json!({}),
    ));
    assert_eq!(code, Some(1), "{refused}");
    let message = refused["error"]["message"].as_str().unwrap();
    assert!(message.contains("a run uses one cluster"), "{message}");
    assert!(message.contains("step 2"), "{message}");
}

/// The id of a run `run --json` printed.
fn run_id_of(output: &std::process::Output) -> String {
    let printed: Value = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", text(&output.stdout), text(&output.stderr)));
    printed["runId"].as_str().unwrap().to_owned()
}

/// J6, J7: a run on the cluster is submitted as a job whose runner runs it on the node: `run`
/// returns once Slurm accepted it, the status names the job, and `wait` gets its answer.
#[test]
fn j6_j7_a_run_on_slurm_is_a_job_that_runs_it_and_returns_its_answer() {
    let cluster = SlurmCluster::shared();
    let scratch = Scratch::new("cluster-run");
    let launched = scratch
        .cli(&[
            "run",
            "--agent",
            "shell",
            "--task",
            "echo from the node",
            "--machine",
            "slurm:debug",
            "--json",
        ])
        .envs(cluster.env())
        .output()
        .unwrap();
    assert_eq!(
        launched.status.code(),
        Some(0),
        "{}\n{}",
        text(&launched.stderr),
        cluster.logs()
    );
    let run_id = run_id_of(&launched);
    let status = sublaunch_tests::launch_harness::status(&scratch.run_dir(&run_id)).unwrap();
    let job = status["cluster"]["jobId"]
        .as_str()
        .unwrap_or_else(|| panic!("{status}"))
        .to_owned();
    assert_eq!(status["cluster"]["name"], "slurm:debug", "{status}");
    let waited = scratch
        .cli(&["wait", &run_id, "--json"])
        .envs(cluster.env())
        .output()
        .unwrap();
    assert_eq!(
        waited.status.code(),
        Some(0),
        "{}\n{}",
        text(&waited.stderr),
        text(&waited.stdout)
    );
    let result = scratch.answer_json(&run_id);
    assert!(result.to_string().contains("from the node"), "{result}");
    let status = sublaunch_tests::launch_harness::status(&scratch.run_dir(&run_id)).unwrap();
    assert_eq!(status["state"], "complete", "{status}");
    assert_eq!(status["cluster"]["node"], cluster.node(), "{status}");
    assert!(
        matches!(
            cluster.job_state(&job).as_deref(),
            Some("COMPLETED" | "COMPLETING") | None
        ),
        "{:?}",
        cluster.job_state(&job)
    );
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

/// Launches `task` with the shell agent on `cluster`'s `partition`; the run id and its job id.
fn launch_on(scratch: &Scratch, cluster: &SlurmCluster, partition: &str, task: &str) -> (String, String) {
    launch_on_machine(scratch, cluster, &format!("slurm:{partition}"), task)
}

/// Launches `task` with the shell agent with `--machine place`; the run id and its job id.
fn launch_on_machine(scratch: &Scratch, cluster: &SlurmCluster, place: &str, task: &str) -> (String, String) {
    let launched = scratch
        .cli(&["run", "--agent", "shell", "--task", task, "--machine", place, "--json"])
        .envs(cluster.env())
        .output()
        .unwrap();
    assert_eq!(
        launched.status.code(),
        Some(0),
        "{}\n{}",
        text(&launched.stderr),
        cluster.logs()
    );
    let printed: Value = serde_json::from_slice(&launched.stdout).unwrap();
    let job = printed["jobId"]
        .as_str()
        .unwrap_or_else(|| panic!("{printed}"))
        .to_owned();
    (printed["runId"].as_str().unwrap().to_owned(), job)
}

/// Waits until the run's runner started on the node (the run claimed, state `running`).
fn wait_running_on_node(scratch: &Scratch, run_id: &str) -> Value {
    let dir = scratch.run_dir(run_id);
    sublaunch_tests::launch_harness::wait_for("the job's runner to claim the run", LIMIT, || {
        let status = sublaunch_tests::launch_harness::status(&dir)?;
        let claimed = status["cluster"]["node"].is_string() && status["state"] == "running";
        let agent_started = status["steps"][0]["status"] == "running";
        (claimed && agent_started).then_some(status)
    })
}

/// How long a job may take to start, run a short task or be observed ended.
const LIMIT: std::time::Duration = std::time::Duration::from_secs(90);

/// `sublaunch wait RUN --json`, after which the run is terminal: its exit code and status.
fn waited(scratch: &Scratch, cluster: &SlurmCluster, run_id: &str) -> (Option<i32>, Value) {
    let output = scratch
        .cli(&["wait", run_id, "--timeout", "90s", "--json"])
        .envs(cluster.env())
        .output()
        .unwrap();
    let status = sublaunch_tests::launch_harness::status(&scratch.run_dir(run_id)).unwrap();
    assert!(
        sublaunch_tests::launch_harness::is_terminal(status["state"].as_str().unwrap_or("")),
        "{status}\n{}",
        text(&output.stderr)
    );
    (output.status.code(), status)
}

/// The run's proof once a listing finalized it with the engine's evidence (J8).
fn finalized_proof(scratch: &Scratch, cluster: &SlurmCluster, run_id: &str) -> Value {
    let proof = scratch.run_dir(run_id).join("process-terminal.json");
    sublaunch_tests::launch_harness::wait_for("the proof with the engine's evidence", LIMIT, || {
        let listed = scratch.cli(&["list", "--json"]).envs(cluster.env()).output().unwrap();
        assert!(listed.status.success(), "{}", text(&listed.stderr));
        let proof = sublaunch_tests::launch_harness::read_json(&proof)?;
        (proof["state"] != "pending").then_some(proof)
    })
}

/// J8: however Slurm kills a job, its run ends. `scancel --signal=KILL` on a job that runs no
/// steps of its own cancels it (Slurm sends its runner SIGTERM first), so the runner ends its
/// agent and records `stopped`. `scancel --batch --signal=KILL` kills the runner outright: it
/// records nothing, its agent dies with it, and the run ends `failed` with the engine's state,
/// exit and node in the failure; in both, the proof keeps the engine's evidence.
#[test]
fn j8_a_job_killed_by_slurm_ends_its_run_with_the_engines_evidence() {
    let cluster = SlurmCluster::shared();
    let scratch = Scratch::new("cluster-killed");
    for (how, state) in [
        (&["--signal=KILL"][..], "stopped"),
        (&["--batch", "--signal=KILL"], "failed"),
    ] {
        let (run_id, job) = launch_on(&scratch, cluster, "debug", "echo started; sleep 300");
        let status = wait_running_on_node(&scratch, &run_id);
        let agent = status["steps"][0]["externalProcess"]["pid"].as_u64();
        let args: Vec<&str> = how.iter().copied().chain([job.as_str()]).collect();
        let killed = cluster.command("scancel", &args);
        assert!(killed.status.success(), "{}", text(&killed.stderr));
        let (code, status) = waited(&scratch, cluster, &run_id);
        assert_ne!(code, Some(0), "{status}");
        assert_eq!(status["state"], state, "{how:?}: {status}");
        if state == "failed" {
            let error = status["error"].as_str().unwrap();
            let node = format!("on node {}", cluster.node());
            assert!(
                error.starts_with(&format!("Slurm job {job} ended FAILED"))
                    && error.contains(&node)
                    && error.contains("exit 0:9"),
                "{error}"
            );
        }
        let proof = finalized_proof(&scratch, cluster, &run_id);
        assert_eq!(proof["cluster"]["jobId"], job.as_str(), "{proof}");
        assert_eq!(proof["cluster"]["source"], "scontrol", "{proof}");
        if let Some(pid) = agent {
            assert!(
                !std::path::Path::new(&format!("/proc/{pid}")).exists(),
                "the agent {pid} outlived its job"
            );
        }
    }
}

/// J6: a job Slurm refuses (an unknown partition) fails the launch with Slurm's reason, and
/// the run records it; nothing runs.
#[test]
fn j6_a_job_slurm_refuses_fails_the_launch_with_slurms_reason() {
    let cluster = SlurmCluster::shared();
    let scratch = Scratch::new("cluster-refused");
    let output = scratch
        .cli(&[
            "run",
            "--agent",
            "shell",
            "--task",
            "echo never",
            "--machine",
            "slurm:nosuch",
            "--json",
        ])
        .envs(cluster.env())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1), "{}", text(&output.stdout));
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains("could not be submitted")
            && stderr.contains("Slurm refused the job")
            && stderr.contains("partition"),
        "{stderr}"
    );
    let listed = scratch.cli(&["list", "--all", "--json"]).output().unwrap();
    let runs: Value = serde_json::from_slice(&listed.stdout).unwrap();
    assert_eq!(runs[0]["state"], "failed", "{runs}");
    assert!(
        runs[0]["error"].as_str().unwrap().contains("Slurm refused the job"),
        "{runs}"
    );
}

/// J7, J9: a job waiting in Slurm's queue shows as `queued` with Slurm's reason in `list` and
/// `status`; `stop` cancels it and records `stopped` although its runner never started; a
/// running job is stopped through its runner, which ends the agent and records `stopped`.
#[test]
fn j7_j9_queued_jobs_show_slurms_reason_and_stop_ends_queued_and_running_jobs() {
    let cluster = SlurmCluster::private();
    let scratch = Scratch::new("cluster-stop");
    let (running, _) = launch_on(&scratch, &cluster, "debug", "echo started; sleep 300");
    let status = wait_running_on_node(&scratch, &running);
    let agent = status["steps"][0]["externalProcess"]["pid"].as_u64();
    let down = cluster.command("scontrol", &["update", "PartitionName=debug", "State=DOWN"]);
    assert!(down.status.success(), "{}", text(&down.stderr));
    let (queued, job) = launch_on(&scratch, &cluster, "debug", "echo never");
    let listed = sublaunch_tests::launch_harness::wait_for("Slurm's reason in list", LIMIT, || {
        let listed = scratch.cli(&["list"]).envs(cluster.env()).output().unwrap();
        let table = text(&listed.stdout);
        table.contains("queued (slurm: PartitionDown)").then_some(table)
    });
    assert!(listed.contains(&queued), "{listed}");
    let status = scratch
        .cli(&["status", &queued, "--json"])
        .envs(cluster.env())
        .output()
        .unwrap();
    let status: Value = serde_json::from_slice(&status.stdout).unwrap();
    assert_eq!(status["queueReason"], "PartitionDown", "{status}");
    let stopped = scratch.cli(&["stop", &queued]).envs(cluster.env()).output().unwrap();
    assert!(stopped.status.success(), "{}", text(&stopped.stderr));
    assert!(text(&stopped.stdout).contains("stopped"), "{}", text(&stopped.stdout));
    assert!(
        matches!(cluster.job_state(&job).as_deref(), Some("CANCELLED") | None),
        "{:?}",
        cluster.job_state(&job)
    );
    let stopped = scratch.cli(&["stop", &running]).envs(cluster.env()).output().unwrap();
    assert!(stopped.status.success(), "{}", text(&stopped.stderr));
    let status = sublaunch_tests::launch_harness::status(&scratch.run_dir(&running)).unwrap();
    assert_eq!(status["state"], "stopped", "{status}");
    if let Some(pid) = agent {
        assert!(
            !std::path::Path::new(&format!("/proc/{pid}")).exists(),
            "the agent {pid} outlived the stop"
        );
    }
    let proof = finalized_proof(&scratch, &cluster, &queued);
    assert_eq!(proof["cluster"]["state"], "CANCELLED", "{proof}");
    // The job never started: its configuration, which holds the runner's environment, goes
    // with the run's end.
    let left = scratch.run_dir(&queued).join("scheduled-runner.json");
    assert!(!left.exists(), "{} was left behind", left.display());
}

/// J10: a run whose cluster job reaches its time limit (`time` in the cluster's settings) is
/// warned by Slurm before the limit and ends itself timed out, naming the job's limit; its
/// agent is ended, not left for Slurm to kill.
#[test]
fn j10_a_job_at_its_time_limit_ends_its_run_timed_out_naming_the_limit() {
    let cluster = SlurmCluster::shared();
    let scratch = Scratch::new("cluster-time-limit");
    sublaunch_tests::cli::write(
        &scratch.path().join("home/.config/sublaunch/settings.json"),
        r#"{"subagents": {"clusters": {"short": {"engine": "slurm", "partition": "debug", "time": "1"}}}}"#,
    );
    let (run_id, _) = launch_on_machine(&scratch, cluster, "short", "echo started; sleep 600");
    let status = wait_running_on_node(&scratch, &run_id);
    let agent = status["steps"][0]["externalProcess"]["pid"].as_u64();
    let (code, status) = waited(&scratch, cluster, &run_id);
    assert_ne!(code, Some(0), "{status}");
    let error = status["error"].as_str().unwrap_or_default();
    assert!(
        error.contains("timed out") && error.contains("the cluster job's time limit of 1 min"),
        "{status}"
    );
    if let Some(pid) = agent {
        assert!(
            !std::path::Path::new(&format!("/proc/{pid}")).exists(),
            "the agent {pid} outlived the limit"
        );
    }
}

/// SIGKILL to `pid` (gone already: nothing to do).
fn kill(pid: i32) {
    if let Some(pid) = rustix::process::Pid::from_raw(pid) {
        let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
    }
}

/// Kills with SIGKILL every process whose command line mentions `needle`.
fn kill_matching(needle: &str) {
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else {
            continue;
        };
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        if String::from_utf8_lossy(&cmdline).contains(needle) {
            kill(pid);
        }
    }
}

/// J8: a node that dies under a running job — its `slurmd` killed, the node set down, the
/// job's processes gone with it — ends the run `failed` with Slurm's `NODE_FAIL` and the node
/// in its failure; no run stays `running`.
#[test]
fn j8_a_node_that_dies_under_a_job_ends_its_run_failed_naming_the_node() {
    let cluster = SlurmCluster::private();
    let scratch = Scratch::new("cluster-node-fail");
    let (run_id, job) = launch_on(&scratch, &cluster, "debug", "echo started; sleep 600");
    wait_running_on_node(&scratch, &run_id);
    let pids = cluster.job_pids(&job);
    assert!(!pids.is_empty(), "scontrol listpids {job} named no process");
    cluster.kill_node_daemon();
    let node = format!("NodeName={}", cluster.node());
    let down = cluster.command("scontrol", &["update", &node, "State=DOWN", "Reason=sublaunch-test"]);
    assert!(down.status.success(), "{}", text(&down.stderr));
    kill_matching(&format!("slurmstepd: [{job}."));
    for pid in pids {
        kill(pid as i32);
    }
    let (code, status) = waited(&scratch, &cluster, &run_id);
    assert_eq!(code, Some(21), "{status}");
    assert_eq!(status["state"], "failed", "{status}");
    let error = status["error"].as_str().unwrap();
    assert!(
        error.starts_with(&format!("Slurm job {job} ended NODE_FAIL")) && error.contains(cluster.node()),
        "{error}"
    );
    let proof = finalized_proof(&scratch, &cluster, &run_id);
    assert_eq!(proof["cluster"]["state"], "NODE_FAIL", "{proof}");
}

/// J7, J8: a job that ended while nobody looked and that the controller has since forgotten
/// (a launching machine that was off for a while) is found in the job-completion log: its run
/// ends with that evidence, never stays `running`.
#[test]
fn j8_a_job_the_controller_forgot_is_read_from_the_completion_log() {
    let cluster = SlurmCluster::private_with(&[("MinJobAge", "2")]);
    let scratch = Scratch::new("cluster-purged");
    let (run_id, job) = launch_on(&scratch, &cluster, "debug", "echo started; sleep 600");
    wait_running_on_node(&scratch, &run_id);
    let killed = cluster.command("scancel", &["--batch", "--signal=KILL", &job]);
    assert!(killed.status.success(), "{}", text(&killed.stderr));
    sublaunch_tests::launch_harness::wait_for("the controller to forget the job", LIMIT, || {
        let shown = cluster.command("scontrol", &["show", "job", &job]);
        (!shown.status.success() && text(&shown.stderr).contains("Invalid job id")).then_some(())
    });
    let (code, status) = waited(&scratch, &cluster, &run_id);
    assert_eq!(code, Some(19), "{status}");
    assert!(
        status["error"]
            .as_str()
            .unwrap()
            .starts_with(&format!("Slurm job {job} ended FAILED")),
        "{status}"
    );
    let proof = finalized_proof(&scratch, &cluster, &run_id);
    assert_eq!(proof["cluster"]["source"], "jobcomp", "{proof}");
}

/// The launching process is killed while its run waits on the cluster and a new one takes
/// over: the job goes on, and `wait` from the new process gets its end. Listers running all
/// the while never see a run end twice or end otherwise than as its runner recorded it.
#[test]
fn a_launcher_killed_mid_run_loses_nothing_and_listers_racing_the_end_agree() {
    let cluster = SlurmCluster::shared();
    let scratch = Scratch::new("cluster-launcher-killed");
    let mut waiting = scratch
        .cli(&[
            "run",
            "--agent",
            "shell",
            "--task",
            "sleep 3; echo survived",
            "--machine",
            "slurm:debug",
            "--wait",
        ])
        .envs(cluster.env())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let runs = scratch.runs();
    let run_id = sublaunch_tests::launch_harness::wait_for("the run's directory", LIMIT, || {
        std::fs::read_dir(&runs)
            .ok()?
            .flatten()
            .filter_map(|e| e.file_name().into_string().ok())
            .find(|name| name.starts_with("shell-"))
    });
    wait_running_on_node(&scratch, &run_id);
    waiting.kill().unwrap();
    waiting.wait().unwrap();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let listers: Vec<_> = (0..2)
        .map(|_| {
            let (stop, env, cli) = (stop.clone(), cluster.env(), scratch.cli(&["list", "--all", "--json"]));
            let program = cli.get_program().to_owned();
            let args: Vec<_> = cli.get_args().map(ToOwned::to_owned).collect();
            let base: Vec<_> = cli
                .get_envs()
                .filter_map(|(k, v)| Some((k.to_owned(), v?.to_owned())))
                .collect();
            let cwd = cli.get_current_dir().map(ToOwned::to_owned);
            std::thread::spawn(move || {
                let mut states = Vec::new();
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let mut list = Command::new(&program);
                    list.args(&args)
                        .env_clear()
                        .envs(base.iter().cloned())
                        .envs(env.clone());
                    if let Some(cwd) = &cwd {
                        list.current_dir(cwd);
                    }
                    let output = list.output().unwrap();
                    if let Ok(runs) = serde_json::from_slice::<Value>(&output.stdout) {
                        states.extend(runs.as_array().into_iter().flatten().map(|r| r["state"].clone()));
                    }
                }
                states
            })
        })
        .collect();
    let (code, status) = waited(&scratch, cluster, &run_id);
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    assert_eq!(code, Some(0), "{status}");
    assert_eq!(status["state"], "complete", "{status}");
    assert!(scratch.answer_json(&run_id).to_string().contains("survived"));
    for lister in listers {
        let seen = lister.join().unwrap();
        let ended: Vec<_> = seen
            .iter()
            .filter(|s| !matches!(s.as_str(), Some("queued" | "running")))
            .collect();
        assert!(ended.iter().all(|s| s.as_str() == Some("complete")), "{seen:?}");
    }
    let proof = finalized_proof(&scratch, cluster, &run_id);
    assert_eq!(proof["state"], "observed", "{proof}");
    assert_eq!(proof["cluster"]["state"], "COMPLETED", "{proof}");
}

/// A parallel group of 8 runs as one job on the cluster, its tasks side by side on the node.
#[test]
fn a_parallel_group_of_8_runs_as_one_job() {
    let cluster = SlurmCluster::shared();
    let scratch = Scratch::new("cluster-group");
    let tasks: Vec<String> = (1..=8)
        .map(|i| format!("  - {{agent: shell, machine: 'slurm:debug', task: 'echo task {i}'}}"))
        .collect();
    let chain = scratch.work().join("group.yaml");
    sublaunch_tests::cli::write(&chain, &format!("mode: parallel\nsteps:\n{}\n", tasks.join("\n")));
    let output = scratch
        .cli(&["run", "--chain", &chain.to_string_lossy(), "--wait", "--json"])
        .envs(cluster.env())
        .output()
        .unwrap();
    let printed: Value = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", text(&output.stdout), text(&output.stderr)));
    assert_eq!(printed["state"], "complete", "{printed}");
    let answer = printed["result"].to_string();
    for i in 1..=8 {
        assert!(answer.contains(&format!("task {i}")), "{answer}");
    }
    let status = sublaunch_tests::launch_harness::status(&scratch.run_dir(printed["runId"].as_str().unwrap())).unwrap();
    assert!(status["cluster"]["jobId"].is_string(), "{status}");
}

/// J11: a chain whose middle step runs on the cluster and whose other steps run here: the
/// run's runner stays here and runs the cluster step through `srun` on the node (it sees its
/// Slurm job), `{previous}` passes through it both ways, and nothing of its job is left.
#[test]
fn j11_a_chain_runs_its_steps_here_and_on_slurm_passing_previous_through() {
    let cluster = SlurmCluster::shared();
    let scratch = Scratch::new("cluster-mixed");
    let chain = scratch.work().join("mixed.yaml");
    sublaunch_tests::cli::write(
        &chain,
        "steps:\n  - {agent: shell, task: 'echo here first'}\n  - {agent: shell, machine: 'slurm:debug', task: 'echo \"job $SLURM_JOB_ID on $(hostname) saw: {previous}\"'}\n  - {agent: shell, task: 'echo \"back here with: {previous}\"'}\n",
    );
    let output = scratch
        .cli(&["run", "--chain", &chain.to_string_lossy(), "--wait", "--json"])
        .envs(cluster.env())
        .output()
        .unwrap();
    let printed: Value = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", text(&output.stdout), text(&output.stderr)));
    assert_eq!(printed["state"], "complete", "{printed}\n{}", text(&output.stderr));
    let answer = printed["result"].to_string();
    let job = answer
        .split("job ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("the cluster step saw no Slurm job: {answer}"))
        .to_owned();
    assert!(job.chars().all(|c| c.is_ascii_digit()) && !job.is_empty(), "{answer}");
    assert!(
        answer.contains(&format!("back here with: job {job} on")) && answer.contains("saw: here first"),
        "{answer}"
    );
    let run_id = printed["runId"].as_str().unwrap();
    let status = sublaunch_tests::launch_harness::status(&scratch.run_dir(run_id)).unwrap();
    assert!(status["cluster"].is_null(), "the run stayed here: {status}");
    let shown = cluster.command("scontrol", &["show", "job", "--oneliner", &job]);
    let shown = text(&shown.stdout);
    assert!(shown.contains(&format!("JobName=sl-{run_id}-1 ")), "{shown}");
}

/// J11: `stop` of a chain whose cluster step runs reaches the agent on the node through
/// `srun`, and the step's job ends with it.
#[test]
fn j11_stop_ends_a_cluster_step_of_a_run_that_stays_here() {
    let cluster = SlurmCluster::shared();
    let scratch = Scratch::new("cluster-mixed-stop");
    let chain = scratch.work().join("mixed.yaml");
    sublaunch_tests::cli::write(
        &chain,
        "steps:\n  - {agent: shell, task: 'echo here first'}\n  - {agent: shell, machine: 'slurm:debug', task: 'echo started; sleep 600'}\n",
    );
    let launched = scratch
        .cli(&["run", "--chain", &chain.to_string_lossy(), "--json"])
        .envs(cluster.env())
        .output()
        .unwrap();
    assert!(launched.status.success(), "{}", text(&launched.stderr));
    let run_id = run_id_of(&launched);
    let job_name = format!("sl-{run_id}-1");
    let job = sublaunch_tests::launch_harness::wait_for("the cluster step's job to run", LIMIT, || {
        let listed = cluster.command(
            "squeue",
            &[
                "--noheader",
                "--states=RUNNING",
                &format!("--name={job_name}"),
                "--format=%i",
            ],
        );
        let id = text(&listed.stdout).trim().to_owned();
        (!id.is_empty()).then_some(id)
    });
    let stopped = scratch.cli(&["stop", &run_id]).envs(cluster.env()).output().unwrap();
    assert!(stopped.status.success(), "{}", text(&stopped.stderr));
    let status = sublaunch_tests::launch_harness::status(&scratch.run_dir(&run_id)).unwrap();
    assert_eq!(status["state"], "stopped", "{status}");
    sublaunch_tests::launch_harness::wait_for("the step's job to end", LIMIT, || {
        let state = cluster.job_state(&job);
        (!matches!(state.as_deref(), Some("RUNNING" | "PENDING" | "COMPLETING"))).then_some(())
    });
}

/// J12: a writer on the cluster works in its managed worktree, made here on the file system
/// the nodes share: its commit comes back as the step's branch, with its base, as for a
/// local writer.
#[test]
fn j12_a_writer_on_the_cluster_commits_on_its_worktrees_branch() {
    let cluster = SlurmCluster::shared();
    let scratch = Scratch::trusting("cluster-writer");
    let repo = scratch.init_repo();
    sublaunch_tests::cli::write(&repo.join("README"), "base\n");
    sublaunch_tests::cli::git(&repo, &["add", "-A"]);
    sublaunch_tests::cli::git(&repo, &["commit", "-qm", "base"]);
    let task = "echo from the node > made.txt && git add -A && git -c user.name=w -c user.email=w@example.invalid commit -qm 'made on the node'";
    let output = scratch
        .cli(&[
            "run",
            "--agent",
            "shell",
            "--task",
            task,
            "--worktree",
            "--machine",
            "slurm:debug",
            "--wait",
            "--json",
        ])
        .current_dir(&repo)
        .envs(cluster.env())
        .output()
        .unwrap();
    let printed: Value = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", text(&output.stdout), text(&output.stderr)));
    assert_eq!(printed["state"], "complete", "{printed}\n{}", text(&output.stderr));
    let run_id = printed["runId"].as_str().unwrap();
    let result = scratch.result_json(run_id);
    let worktree = &result["steps"][0]["worktree"];
    assert_eq!(worktree["commitCount"], 1, "{result}");
    assert_eq!(worktree["commits"][0]["subject"], "made on the node", "{result}");
    let branch = worktree["branch"].as_str().unwrap();
    let shown = sublaunch_tests::cli::git(&repo, &["show", &format!("{branch}:made.txt")]);
    assert_eq!(shown.trim(), "from the node");
    let status = sublaunch_tests::launch_harness::status(&scratch.run_dir(run_id)).unwrap();
    assert_eq!(status["cluster"]["node"], cluster.node(), "{status}");
}

/// J8: a job over its memory limit (`memory` in the cluster's settings) is killed by Slurm's
/// memory enforcement, runner and agent alike; the run ends `failed` with the engine's state
/// and signal, and Slurm's own words in the runner's log tail, never `running`.
#[test]
fn j8_a_job_over_its_memory_limit_ends_its_run_failed() {
    let cluster = SlurmCluster::private_with(&[
        ("JobAcctGatherParams", "OverMemoryKill"),
        ("JobAcctGatherFrequency", "task=1"),
    ]);
    let scratch = Scratch::new("cluster-memory");
    sublaunch_tests::cli::write(
        &scratch.path().join("home/.config/sublaunch/settings.json"),
        r#"{"subagents": {"clusters": {"small": {"engine": "slurm", "partition": "debug", "memory": "64M"}}}}"#,
    );
    let task = "echo started; python3 -c 'import time; x = bytearray(400 * 1024 * 1024); time.sleep(600)'";
    let (run_id, job) = launch_on_machine(&scratch, &cluster, "small", task);
    let (code, status) = waited(&scratch, &cluster, &run_id);
    assert_ne!(code, Some(0), "{status}");
    assert_eq!(status["state"], "failed", "{status}");
    let error = status["error"].as_str().unwrap_or_default();
    assert!(
        error.starts_with(&format!("Slurm job {job} ended FAILED")) && error.contains("exceeded memory limit"),
        "{status}"
    );
    let proof = finalized_proof(&scratch, &cluster, &run_id);
    assert_eq!(proof["cluster"]["jobId"], job.as_str(), "{proof}");
    assert!(
        matches!(
            proof["cluster"]["state"].as_str(),
            Some("FAILED" | "OUT_OF_MEMORY" | "CANCELLED")
        ),
        "{proof}\n{}",
        cluster.logs()
    );
}

/// J8: a job preempted by a job of a higher-priority partition (preemption by cancel) ends
/// its run: Slurm ends the runner with SIGTERM, the runner ends its agent and records the
/// stop, and the proof keeps `PREEMPTED`.
#[test]
fn j8_a_preempted_job_ends_its_run_with_preempted_in_its_proof() {
    let cluster = SlurmCluster::private_with_lines(
        &[("PreemptType", "preempt/partition_prio"), ("PreemptMode", "CANCEL")],
        &[
            "PartitionName=lo Nodes={node} MaxTime=INFINITE State=UP OverSubscribe=NO PriorityTier=1 PreemptMode=CANCEL",
            "PartitionName=hi Nodes={node} MaxTime=INFINITE State=UP OverSubscribe=NO PriorityTier=5 PreemptMode=OFF",
        ],
    );
    let scratch = Scratch::new("cluster-preempted");
    let cpus = cluster_cpus(&cluster);
    sublaunch_tests::cli::write(
        &scratch.path().join("home/.config/sublaunch/settings.json"),
        &format!(
            r#"{{"subagents": {{"clusters": {{"low": {{"engine": "slurm", "partition": "lo", "cpus": {cpus}}}}}}}}}"#
        ),
    );
    let (run_id, job) = launch_on_machine(&scratch, &cluster, "low", "echo started; sleep 600");
    let status = wait_running_on_node(&scratch, &run_id);
    let agent = status["steps"][0]["externalProcess"]["pid"].as_u64();
    let urgent = cluster.command(
        "sbatch",
        &[
            "--partition=hi",
            &format!("--cpus-per-task={cpus}"),
            "--output=/dev/null",
            "--wrap=sleep 1",
        ],
    );
    assert!(urgent.status.success(), "{}", text(&urgent.stderr));
    let (code, status) = waited(&scratch, &cluster, &run_id);
    assert_ne!(code, Some(0), "{status}");
    assert_ne!(status["state"], "running", "{status}");
    let proof = finalized_proof(&scratch, &cluster, &run_id);
    assert_eq!(proof["cluster"]["jobId"], job.as_str(), "{proof}");
    assert_eq!(proof["cluster"]["state"], "PREEMPTED", "{proof}\n{}", cluster.logs());
    if let Some(pid) = agent {
        assert!(
            !std::path::Path::new(&format!("/proc/{pid}")).exists(),
            "the agent {pid} outlived its job"
        );
    }
}

/// The node's CPUs, as Slurm counts them.
fn cluster_cpus(cluster: &SlurmCluster) -> String {
    let shown = cluster.command("sinfo", &["--noheader", "--Node", "--format=%c"]);
    text(&shown.stdout).lines().next().unwrap_or("1").trim().to_owned()
}

/// J8: a queued job that can no longer start before its deadline is ended by Slurm
/// (`DEADLINE`): its run, whose runner never started, ends `failed` with that evidence.
#[test]
fn j8_a_queued_job_past_its_deadline_ends_its_run_failed() {
    let cluster = SlurmCluster::private();
    let scratch = Scratch::new("cluster-deadline");
    sublaunch_tests::cli::write(
        &scratch.path().join("home/.config/sublaunch/settings.json"),
        r#"{"subagents": {"clusters": {"minute": {"engine": "slurm", "partition": "debug", "time": "1"}}}}"#,
    );
    let down = cluster.command("scontrol", &["update", "PartitionName=debug", "State=DOWN"]);
    assert!(down.status.success(), "{}", text(&down.stderr));
    let (run_id, job) = launch_on_machine(&scratch, &cluster, "minute", "echo never");
    // A deadline 70 s away leaves room for the job's one minute now, and none 11 s later.
    let set = std::time::Instant::now();
    let deadline = cluster.command("scontrol", &["update", &format!("JobId={job}"), "Deadline=now+70"]);
    assert!(deadline.status.success(), "{}", text(&deadline.stderr));
    sublaunch_tests::launch_harness::wait_for("the deadline to come too close", LIMIT, || {
        (set.elapsed() > std::time::Duration::from_secs(11)).then_some(())
    });
    let up = cluster.command("scontrol", &["update", "PartitionName=debug", "State=UP"]);
    assert!(up.status.success(), "{}", text(&up.stderr));
    let (code, status) = waited(&scratch, &cluster, &run_id);
    assert_eq!(code, Some(13), "{status}");
    assert_eq!(status["state"], "failed", "{status}");
    assert!(
        status["error"]
            .as_str()
            .unwrap()
            .starts_with(&format!("Slurm job {job} ended DEADLINE")),
        "{status}"
    );
    let proof = finalized_proof(&scratch, &cluster, &run_id);
    assert_eq!(proof["cluster"]["state"], "DEADLINE", "{proof}");
}
