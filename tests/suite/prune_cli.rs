//! `sublaunch prune`: ended runs are removed whole (directory, result file, index entry) or
//! not at all, active runs never, the filters hold, and pruning racing new launches leaves
//! every run either intact or entirely gone.

use std::path::Path;
use sublaunch_tests::cli::{ok, text};
use sublaunch_tests::launch_harness::{Scratch, wait_for};

/// `run --agent shell --task TASK --wait`: the run id.
fn run(scratch: &Scratch, task: &str) -> String {
    let output = scratch
        .cli(&["run", "--agent", "shell", "--task", task, "--wait"])
        .output()
        .unwrap();
    text(&output.stderr).lines().next().unwrap().to_owned()
}

/// Whether anything of run `id` is left: its directory, its result, its index entry.
fn traces(scratch: &Scratch, id: &str) -> [bool; 3] {
    [
        scratch.run_dir(id).exists(),
        scratch.results().join(format!("{id}.json")).exists(),
        scratch
            .results()
            .join("result-index/runs")
            .join(format!("{id}.json"))
            .exists(),
    ]
}

fn hidden_dirs(runs: &Path) -> Vec<String> {
    std::fs::read_dir(runs)
        .unwrap()
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| n.starts_with('.') && n.ends_with(".removing"))
        .collect()
}

#[test]
fn ended_runs_are_removed_whole_and_filters_and_dry_runs_hold() {
    let scratch = Scratch::new("prune");
    let done = run(&scratch, "echo done");
    let failed = run(&scratch, "exit 3");
    assert_eq!(traces(&scratch, &done), [true, true, true]);

    let dry = ok(&scratch.cli(&["prune", "--dry-run"]).output().unwrap());
    assert!(dry.contains(&format!("would remove {done} (complete")), "{dry}");
    assert!(dry.contains("would remove 2 runs, "), "{dry}");
    assert_eq!(traces(&scratch, &done), [true, true, true], "a dry run removes nothing");

    let recent = ok(&scratch.cli(&["prune", "--older-than", "1h"]).output().unwrap());
    assert!(recent.starts_with("removed 0 runs"), "{recent}");

    let only_failed = ok(&scratch.cli(&["prune", "--state", "failed"]).output().unwrap());
    assert!(
        only_failed.contains(&format!("removed {failed} (failed")),
        "{only_failed}"
    );
    assert_eq!(traces(&scratch, &failed), [false, false, false]);
    assert_eq!(traces(&scratch, &done), [true, true, true]);

    let json: serde_json::Value =
        serde_json::from_str(&ok(&scratch.cli(&["prune", "--yes", "--json"]).output().unwrap())).unwrap();
    assert_eq!(json["removed"][0]["runId"], done.as_str());
    assert!(json["freedBytes"].as_u64().unwrap() > 0, "{json}");
    assert_eq!(traces(&scratch, &done), [false, false, false]);
    assert!(hidden_dirs(&scratch.runs()).is_empty());
    let status = scratch.cli(&["status", &done]).output().unwrap();
    assert_eq!(
        status.status.code(),
        Some(3),
        "the run is gone: {}",
        text(&status.stderr)
    );

    let bad = scratch.cli(&["prune", "--state", "running"]).output().unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert!(text(&bad.stderr).contains("active"), "{}", text(&bad.stderr));
}

#[test]
fn an_active_run_is_never_pruned() {
    let scratch = Scratch::new("prune-active");
    let fifo = scratch.path().join("gate");
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let task = format!("read line < {}; echo released", fifo.display());
    let launched = scratch
        .cli(&["run", "--agent", "shell", "--task", &task])
        .output()
        .unwrap();
    let id = ok(&launched).trim().to_owned();
    let pruned = ok(&scratch.cli(&["prune", "--yes"]).output().unwrap());
    assert!(pruned.starts_with("removed 0 runs"), "{pruned}");
    assert!(scratch.run_dir(&id).exists());
    std::fs::write(&fifo, "go\n").unwrap();
    ok(&scratch.cli(&["wait", &id]).output().unwrap());
    // Its shim may still be finishing (result, proof): prune takes it once it is gone.
    wait_for("the run to be pruned", std::time::Duration::from_secs(20), || {
        let out = ok(&scratch.cli(&["prune", "--yes"]).output().unwrap());
        out.contains(&format!("removed {id}")).then_some(())
    });
    assert_eq!(traces(&scratch, &id), [false, false, false]);
}

#[test]
fn pruning_racing_new_launches_leaves_each_run_whole_or_gone() {
    let scratch = Scratch::new("prune-race");
    let stop = sublaunch_tests::stop_flag::StopFlag::new();
    let ids = std::thread::scope(|threads| {
        let stop_pruner = stop.raise_on_drop();
        let pruner = threads.spawn(|| {
            let mut rounds = 0;
            while !stop.raised() {
                let out = scratch.cli(&["prune", "--yes"]).output().unwrap();
                assert!(out.status.success(), "{}", text(&out.stderr));
                rounds += 1;
            }
            rounds
        });
        let ids: Vec<String> = (0..6).map(|i| run(&scratch, &format!("echo {i}"))).collect();
        drop(stop_pruner);
        assert!(pruner.join().unwrap() > 0);
        ids
    });
    for id in &ids {
        let left = traces(&scratch, id);
        assert!(
            left == [true, true, true] || left == [false, false, false],
            "{id} is neither whole nor gone: {left:?}"
        );
        if left[0] {
            let status = ok(&scratch.cli(&["status", id, "--json"]).output().unwrap());
            assert!(status.contains("\"complete\""), "{status}");
        }
    }
    assert!(hidden_dirs(&scratch.runs()).is_empty());
}
