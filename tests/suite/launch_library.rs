//! The launch library against the real shim: a fresh launch from plan to finalized proof, the
//! process placement and environment of the shim (H8, H10), the revival handshake (K3), the
//! legacy no-doorbell mode, and the active-run index under concurrency (F44).

use serde_json::Value;
use std::collections::BTreeSet;
use std::sync::Arc;
use sublaunch::launch::testing::{RecordingHooks, block_on, shell_plan, test_launch, test_options};
use sublaunch::launch::{HostEvent, LaunchOptions, launch, tokio};
use sublaunch_protocol::records::config::RevivalLease;
use sublaunch_tests::bin;
use sublaunch_tests::launch_harness::{Scratch, events_of, names_in, read_json, status, temp_files};

fn options(scratch: &Scratch, hooks: &Arc<RecordingHooks>) -> LaunchOptions {
    let mut options = test_options(&scratch.root(), &bin("sublaunch-shim"));
    options.hooks = hooks.clone();
    options
}

#[test]
fn a_fresh_launch_commits_runs_and_is_finalized_with_an_observed_proof() {
    let scratch = Scratch::new("fresh");
    let hooks = Arc::new(RecordingHooks::default());
    let plan = shell_plan("echo hello", &scratch.work());
    let (launched_id, pid, instance, finished) = block_on(async {
        let launched = launch(test_launch(&plan), options(&scratch, &hooks))
            .await
            .expect("started");
        launched.handle.committed().await.expect("committed");
        let finished = launched.handle.finished().await.unwrap();
        (
            launched.run_id,
            launched.pid,
            launched.runner_process_instance_id,
            finished,
        )
    });
    let run = scratch.run_dir(&launched_id);
    let status = status(&run).unwrap();
    assert_eq!(status["state"], "complete", "{status}");
    assert_eq!(finished.exit.exit_code, Some(0));
    let proof = read_json(&run.join("process-terminal.json")).unwrap();
    assert_eq!(proof["state"], "observed");
    assert_eq!(proof["runnerProcessInstanceId"], instance.as_str());
    assert_eq!(status["processTerminal"], proof);
    assert_eq!(events_of(&run, "subagent.run.process_terminal").len(), 1);
    assert!(scratch.results().join(format!("{launched_id}.json")).exists());
    assert!(!scratch.runs().join(".active-runs").join(&launched_id).exists());
    assert!(!scratch.root().join(format!("async-cfg-{launched_id}.json")).exists());
    for name in ["runner-startup-proceed.json", "runner-startup.json"] {
        assert!(!run.join(name).exists(), "{name} is gone");
    }
    assert!(run.join("launch-plan.json").exists(), "kept for resume");
    assert!(temp_files(&scratch.root()).is_empty());
    let recorded = hooks.snapshot();
    assert_eq!(recorded.marked, std::slice::from_ref(&instance));
    match &recorded.events[..] {
        [
            HostEvent::AsyncStarted {
                run_id,
                pid: event_pid,
                mode,
                agents,
                ..
            },
            HostEvent::ProcessTerminal { .. },
        ] => {
            assert_eq!(run_id, &launched_id);
            assert_eq!(*event_pid, pid);
            assert_eq!(mode, "single");
            assert_eq!(agents, &["shell".to_owned()]);
        }
        other => panic!("unexpected events {other:?}"),
    }
}

/// `(ppid, pgrp, session)` of a process from `/proc/<pid>/stat`.
fn placement(pid: u32) -> (u32, u32, u32) {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let fields: Vec<u32> = stat[stat.rfind(')').unwrap() + 2..]
        .split_whitespace()
        .skip(1)
        .take(3)
        .map(|f| f.parse().unwrap())
        .collect();
    (fields[0], fields[1], fields[2])
}

#[test]
fn h8_h10_the_shim_is_a_direct_child_in_its_own_session_with_a_clean_environment() {
    let scratch = Scratch::new("h8");
    let hooks = Arc::new(RecordingHooks::default());
    let plan = shell_plan("sleep 2", &scratch.work());
    let opts = options(&scratch, &hooks);
    let mut run = test_launch(&plan);
    run.caller.session_id = Some("parent-session".into());
    let runtime = sublaunch::launch::runtime().unwrap();
    let launched = runtime.block_on(launch(run, opts)).expect("started");
    runtime.block_on(launched.handle.committed()).expect("committed");
    let (ppid, pgrp, session) = placement(launched.pid);
    assert_eq!(ppid, std::process::id(), "a direct child of the host");
    assert_eq!(pgrp, launched.pid, "process-group leader");
    assert_eq!(session, launched.pid, "session leader");
    let environ = std::fs::read(format!("/proc/{}/environ", launched.pid)).unwrap();
    let vars: Vec<String> = environ
        .split(|b| *b == 0)
        .map(|kv| String::from_utf8_lossy(kv).into_owned())
        .collect();
    let has = |kv: &str| vars.iter().any(|v| v == kv);
    assert!(has("SUBLAUNCH_PARENT_SESSION=parent-session"), "{vars:?}");
    assert!(has(&format!(
        "SUBLAUNCH_RUNNER_CONFIG={}",
        scratch
            .root()
            .join(format!("async-cfg-{}.json", launched.run_id))
            .display()
    )));
    assert!(has("SUBLAUNCH_STARTUP_FD=0"));
    assert!(!vars.iter().any(|v| v.starts_with("NOTIFY_SOCKET=")));
    let finished = runtime.block_on(launched.handle.finished()).unwrap();
    assert_eq!(finished.exit.exit_code, Some(0));
}

#[test]
fn a_launch_without_the_doorbell_commits_by_polling() {
    let scratch = Scratch::new("nodoorbell");
    let hooks = Arc::new(RecordingHooks::default());
    let mut opts = options(&scratch, &hooks);
    opts.doorbell = false;
    let plan = shell_plan("echo legacy", &scratch.work());
    let (run_id, finished) = block_on(async {
        let launched = launch(test_launch(&plan), opts).await.expect("started");
        launched.handle.committed().await.expect("committed");
        (launched.run_id.clone(), launched.handle.finished().await.unwrap())
    });
    assert_eq!(status(&scratch.run_dir(&run_id)).unwrap()["state"], "complete");
    assert_eq!(serde_json::to_value(&finished.proof).unwrap()["state"], "observed");
}

#[test]
fn k3_a_revival_runs_the_full_handshake_and_releases_the_lease() {
    let scratch = Scratch::new("revival");
    let hooks = Arc::new(RecordingHooks::default());
    let session = scratch.work().join("session.json");
    std::fs::write(&session, b"{}").unwrap();
    let opts = options(&scratch, &hooks);
    let plan = shell_plan("echo revived", &scratch.work());
    let mut run = test_launch(&plan);
    run.caller.revival_lease = Some(RevivalLease {
        session_file: session.to_string_lossy().into_owned(),
        run_id: String::new(),
        source_run_id: "source-run".into(),
        parent_session_id: None,
    });
    let (run_id, finished) = block_on(async {
        let launched = launch(run, opts).await.expect("the handshake completes");
        launched.handle.committed().await.expect("committed");
        (launched.run_id.clone(), launched.handle.finished().await.unwrap())
    });
    let run = scratch.run_dir(&run_id);
    assert_eq!(status(&run).unwrap()["state"], "complete");
    let proof = serde_json::to_value(&finished.proof).unwrap();
    assert_eq!(proof["state"], "observed", "{proof}");
    assert_eq!(proof["canonicalSession"]["leaseDisposition"], "released");
    for name in [
        "runner-startup.json",
        "runner-startup-ack.json",
        "runner-startup-confirm.json",
        "runner-startup-proceed.json",
    ] {
        assert!(!run.join(name).exists(), "{name} removed after the commit");
    }
    let leases: Vec<String> = names_in(&scratch.root().join("session-leases"))
        .into_iter()
        .filter(|n| n.len() == 64)
        .collect();
    assert!(leases.is_empty(), "lease released: {leases:?}");
}

#[test]
fn f44_concurrent_launches_share_the_index_without_losing_entries() {
    let scratch = Scratch::new("f44");
    let go = scratch.work().join("go");
    let task = format!(
        "while [ ! -e '{}' ]; do sleep 0.05; done; sleep 0.$((RANDOM%9))",
        go.display()
    );
    let plan = shell_plan(&task, &scratch.work());
    let runtime = sublaunch::launch::runtime().unwrap();
    let handles = runtime.block_on(async {
        let mut set = tokio::task::JoinSet::new();
        for i in 0..32 {
            let opts = test_options(&scratch.root(), &bin("sublaunch-shim"));
            let mut run = test_launch(&plan);
            run.caller.tool_call_id = Some(if i % 2 == 0 {
                "shared-call".into()
            } else {
                format!("call-{i}")
            });
            set.spawn(async move { launch(run, opts).await });
        }
        let mut handles = Vec::new();
        while let Some(result) = set.join_next().await {
            let launched = result.unwrap().expect("started");
            launched.handle.committed().await.expect("committed");
            handles.push(launched);
        }
        handles
    });
    let ids: BTreeSet<String> = handles.iter().map(|l| l.run_id.clone()).collect();
    let active: BTreeSet<String> = names_in(&scratch.runs().join(".active-runs"))
        .into_iter()
        .filter(|n| n != "tool-calls")
        .collect();
    assert_eq!(active, ids, "32 markers while running");
    let shared = names_in(&scratch.runs().join(".active-runs/tool-calls/shared-call"));
    assert_eq!(shared.len(), 16, "{shared:?}");
    std::fs::write(&go, b"").unwrap();
    runtime.block_on(async {
        for launched in &handles {
            launched.handle.finished().await.unwrap();
        }
    });
    let markers: Vec<String> = names_in(&scratch.runs().join(".active-runs"))
        .into_iter()
        .filter(|n| n != "tool-calls")
        .collect();
    assert!(markers.is_empty(), "{markers:?}");
    let tool_calls = scratch.runs().join(".active-runs/tool-calls");
    let aliases: usize = names_in(&tool_calls)
        .iter()
        .map(|d| names_in(&tool_calls.join(d)).len())
        .sum();
    assert_eq!(aliases, 0, "no alias files");
    let terminal = names_in(&scratch.runs().join(".terminal-runs/test-session"));
    assert_eq!(terminal.len(), 32, "{terminal:?}");
    for id in &ids {
        let status = status(&scratch.run_dir(id)).expect("valid status");
        assert_eq!(status["state"], "complete", "{id}: {status}");
        let result: Value = read_json(&scratch.results().join(format!("{id}.json"))).expect("valid result");
        assert_eq!(result["success"], true);
    }
    assert!(temp_files(&scratch.root()).is_empty());
}

#[test]
fn an_embedder_waits_for_its_run_through_the_runs_module() {
    let scratch = Scratch::new("library-wait");
    let hooks = Arc::new(RecordingHooks::default());
    let plan = shell_plan("sleep 0.2; echo waited", &scratch.work());
    let layout = sublaunch_protocol::files::layout::Layout::new(scratch.root());
    let end = block_on(async {
        let launched = launch(test_launch(&plan), options(&scratch, &hooks))
            .await
            .expect("started");
        launched.handle.committed().await.expect("committed");
        let store = Arc::new(sublaunch::runs::RunStore::open(&layout, &sublaunch::Environment::default()).unwrap());
        let run = Arc::new(store.run_dir(&launched.run_id).unwrap().expect("the run"));
        let end = sublaunch::runs::wait_terminal(&store, &run, Some(std::time::Duration::from_secs(20))).await;
        launched.handle.finished().await.unwrap();
        end
    });
    match end {
        sublaunch::runs::WaitEnd::Terminal(status) => {
            assert_eq!(
                status.state,
                Some(sublaunch_protocol::records::status::RunState::Complete)
            );
        }
        sublaunch::runs::WaitEnd::TimedOut => panic!("the run did not end"),
    }
}

/// H9 for an embedder: a descriptor the embedding process holds without close-on-exec is not
/// kept by the shim (which would hold it open for the run's lifetime) nor passed to the agent.
#[test]
fn h9_an_embedders_inheritable_descriptor_does_not_reach_the_shim() {
    let scratch = Scratch::new("lib-h9");
    let marker = scratch.path().join("embedder-marker");
    let leaked = rustix::fs::open(
        &marker,
        rustix::fs::OFlags::CREATE | rustix::fs::OFlags::WRONLY,
        rustix::fs::Mode::from_raw_mode(0o600),
    )
    .unwrap();
    // Far above the shim's own numbers (the doorbell takes fd 3 over whatever was there).
    let leaked = rustix::io::fcntl_dupfd_cloexec(&leaked, 200).unwrap();
    rustix::io::fcntl_setfd(&leaked, rustix::io::FdFlags::empty()).unwrap();
    assert!(
        !rustix::io::fcntl_getfd(&leaked)
            .unwrap()
            .contains(rustix::io::FdFlags::CLOEXEC)
    );
    let hooks = Arc::new(RecordingHooks::default());
    let plan = shell_plan("sleep 2", &scratch.work());
    let links = block_on(async {
        let launched = launch(test_launch(&plan), options(&scratch, &hooks))
            .await
            .expect("started");
        launched.handle.committed().await.expect("committed");
        let links: Vec<String> = std::fs::read_dir(format!("/proc/{}/fd", launched.pid))
            .unwrap()
            .flatten()
            .filter_map(|e| std::fs::read_link(e.path()).ok())
            .map(|l| l.to_string_lossy().into_owned())
            .collect();
        launched.handle.finished().await.unwrap();
        links
    });
    drop(leaked);
    assert!(!links.is_empty());
    assert!(
        !links.iter().any(|l| l.contains("embedder-marker")),
        "the shim kept the embedder's descriptor: {links:?}"
    );
}

/// A12 at host start: the first launch under a root sweeps a temp file that a dead writer left
/// there more than ten minutes ago, and keeps a young one.
#[test]
fn a12_the_first_launch_under_a_root_sweeps_orphan_temp_files() {
    let scratch = Scratch::new("lib-a12");
    scratch.create_root();
    let mut dead = std::process::Command::new("true").spawn().unwrap();
    let dead_pid = dead.id();
    dead.wait().unwrap();
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis();
    let old_ms = u64::try_from(now_ms).unwrap() - 20 * 60 * 1000;
    let plant = |name: &str, epoch_ms: u64| {
        let path = scratch.runs().join(sublaunch_protocol::files::atomic::temp_name(
            name, dead_pid, epoch_ms, 7,
        ));
        let file = std::fs::File::create(&path).unwrap();
        let when = std::time::UNIX_EPOCH + std::time::Duration::from_millis(epoch_ms);
        file.set_modified(when).unwrap();
        path
    };
    let orphan = plant("status.json", old_ms);
    let young = plant("result.json", old_ms + 19 * 60 * 1000);
    let hooks = Arc::new(RecordingHooks::default());
    let plan = shell_plan("true", &scratch.work());
    block_on(async {
        let launched = launch(test_launch(&plan), options(&scratch, &hooks))
            .await
            .expect("started");
        launched.handle.finished().await.unwrap();
    });
    sublaunch_tests::launch_harness::wait_for("the sweep", std::time::Duration::from_secs(10), || {
        (!orphan.exists()).then_some(())
    });
    assert!(young.exists(), "a temp file younger than ten minutes stays");
}

/// A4 under a power loss: on a filesystem that keeps only what was fsynced, the run's name in
/// `<runs>` is durable before the proceed file can be seen (the commit point), and the initial
/// status and the proceed file are durable once the launch has committed.
#[test]
fn the_launch_commit_survives_a_power_loss() {
    use std::sync::Mutex;
    use sublaunch_protocol::os::Os;
    use sublaunch_protocol::testing::{Op, ScriptedFs};

    let scratch = Scratch::new("power-loss");
    // A first run makes the root's directories, whose creation fsyncs `<runs>` too.
    let plan = shell_plan("true", &scratch.work());
    let hooks = Arc::new(RecordingHooks::default());
    block_on(async {
        let launched = launch(test_launch(&plan), options(&scratch, &hooks))
            .await
            .expect("started");
        launched.handle.finished().await.unwrap();
    });
    let fs = ScriptedFs::new();
    let fsynced_before_proceed: Arc<Mutex<Option<Vec<std::path::PathBuf>>>> = Arc::default();
    {
        let fs_in_hook = Arc::downgrade(&fs);
        let seen = fsynced_before_proceed.clone();
        fs.set_hook(move |op, name| {
            if op == Op::Rename
                && name == std::path::Path::new("runner-startup-proceed.json")
                && let Some(fs) = fs_in_hook.upgrade()
            {
                seen.lock().unwrap().get_or_insert_with(|| fs.fsynced());
            }
        });
    }
    let mut options = options(&scratch, &hooks);
    options.os = Some(Os::system().with_files(fs.clone()).shared());
    let run_id = block_on(async {
        let launched = launch(test_launch(&plan), options).await.expect("started");
        launched.handle.committed().await.expect("committed");
        let durable = fs.durable();
        launched.handle.finished().await.unwrap();
        let run = launched.run_dir.canonicalize().unwrap();
        for name in ["status.json", "runner-startup-proceed.json"] {
            assert!(
                durable.contains(&run.join(name)),
                "{name} is durable at the commit: {durable:?}"
            );
        }
        launched.run_id
    });
    let runs = scratch.runs().canonicalize().unwrap();
    let before = fsynced_before_proceed
        .lock()
        .unwrap()
        .clone()
        .expect("proceed was written");
    assert!(
        before.contains(&runs),
        "<runs> is fsynced after the run directory {run_id} was made and before proceed: {before:?}"
    );
}
