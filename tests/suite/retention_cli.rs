//! Retention (issue 34): ended runs older than the user's retention period are removed by
//! themselves — `sublaunch run` starts `prune --retention` in the background once a day — and
//! never an active run, a recent one, or one whose managed worktrees are still recorded; the
//! setting is the user's alone, a bad value is named with its file, and `"off"` keeps all.

use serde_json::{Value, json};
use std::process::Command;
use std::time::Duration;
use sublaunch_tests::cli::{ok, text, write};
use sublaunch_tests::launch_harness::{Scratch, wait_for};

const DAY_MS: u64 = 86_400_000;

fn now_ms() -> u64 {
    u64::try_from(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis(),
    )
    .unwrap()
}

/// Makes run `id` look as if it ended `days` ago (its status's `endedAt`). The history index
/// copied the real end when the run ended; rewriting the past, the test also drops the index,
/// which the next reader rebuilds from the run directories (I12).
fn age(scratch: &Scratch, id: &str, days: u64) {
    age_status(scratch, id, days);
    drop_history(scratch);
}

fn age_status(scratch: &Scratch, id: &str, days: u64) {
    let path = scratch.run_dir(id).join("status.json");
    let mut status: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    status["endedAt"] = json!(now_ms() - days * DAY_MS);
    std::fs::write(&path, serde_json::to_vec_pretty(&status).unwrap()).unwrap();
}

fn drop_history(scratch: &Scratch) {
    let _ = std::fs::remove_dir_all(scratch.runs().join(".history"));
}

/// The generation the history's manifest names.
fn generation(scratch: &Scratch) -> String {
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(scratch.runs().join(".history/manifest.json")).unwrap()).unwrap();
    manifest["generation"].as_str().unwrap().to_owned()
}

/// Every line of every segment of the history's current generation.
fn history_lines(scratch: &Scratch) -> Vec<Value> {
    let generation = generation(scratch);
    let mut lines = Vec::new();
    for entry in std::fs::read_dir(scratch.runs().join(".history")).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_str().unwrap().to_owned();
        if name.starts_with(&format!("{generation}-")) && name.ends_with(".jsonl") {
            for line in std::fs::read_to_string(&path).unwrap().lines() {
                lines.push(serde_json::from_str(line).unwrap());
            }
        }
    }
    lines
}

/// Sets the mtime of the root's retention stamp `days` ago (`touch -d`).
fn stamp_checked(scratch: &Scratch, days: u64) {
    let stamp = scratch.runs().join(".retention-checked");
    let when = format!("@{}", (now_ms() - days * DAY_MS) / 1000);
    let touched = Command::new("touch").args(["-d", &when]).arg(&stamp).status().unwrap();
    assert!(touched.success());
}

fn user_settings(scratch: &Scratch, settings: &Value) {
    write(
        &scratch.path().join("home/.config/sublaunch/settings.json"),
        &serde_json::to_string(settings).unwrap(),
    );
}

#[test]
fn runs_past_their_retention_go_by_themselves_and_the_others_stay() {
    let scratch = Scratch::new("retention");
    let old = scratch.finished_shell_run("echo old");
    let recent = scratch.finished_shell_run("echo recent");
    let with_worktree = scratch.finished_shell_run("echo kept for its worktree");
    // The first run in a root stamped it: nothing is due for a day, so nothing is removed.
    assert!(scratch.runs().join(".retention-checked").is_file());
    for id in [&old, &with_worktree] {
        age(&scratch, id, 40);
    }
    age(&scratch, &recent, 3);
    // A run whose managed worktrees are still recorded keeps its record until they are pruned.
    write(
        &scratch.root().join("worktrees").join(format!("{with_worktree}.json")),
        &json!({"version": 1, "runId": with_worktree, "createdAt": 1, "worktrees": []}).to_string(),
    );
    let quiet = scratch.finished_shell_run("echo no check yet");
    assert!(scratch.run_dir(&old).exists(), "not due within a day of the stamp");

    // A day later the next run starts the pruner in the background.
    stamp_checked(&scratch, 2);
    let trigger = scratch.finished_shell_run("echo trigger");
    wait_for("the retention pruner", Duration::from_secs(30), || {
        (!scratch.run_dir(&old).exists()).then_some(())
    });
    assert!(!scratch.results().join(format!("{old}.json")).exists(), "removed whole");
    for id in [&recent, &with_worktree, &quiet, &trigger] {
        assert!(scratch.run_dir(id).exists(), "{id} is kept");
    }
    // The check was stamped again: the next run starts nothing.
    let stamped = std::fs::metadata(scratch.runs().join(".retention-checked"))
        .unwrap()
        .modified()
        .unwrap();
    assert!(stamped.elapsed().unwrap() < Duration::from_secs(3600));
}

#[test]
fn the_retention_setting_is_the_users_and_bad_values_are_named() {
    let scratch = Scratch::new("retention-setting");
    let id = scratch.finished_shell_run("echo one");
    age(&scratch, &id, 5);

    // The default keeps it (30 days).
    let dry = ok(&scratch.cli(&["prune", "--retention", "--dry-run"]).output().unwrap());
    assert!(dry.contains("would remove 0 runs"), "{dry}");

    // A repository cannot shorten it: even a trusted project's settings do not count.
    write(
        &scratch.work().join(".sublaunch/settings.json"),
        &json!({"subagents": {"retention": "1d"}}).to_string(),
    );
    scratch.trust_work();
    let project = ok(&scratch.cli(&["prune", "--retention", "--dry-run"]).output().unwrap());
    assert!(project.contains("would remove 0 runs"), "{project}");

    user_settings(&scratch, &json!({"subagents": {"retention": "2d"}}));
    let dry = ok(&scratch.cli(&["prune", "--retention", "--dry-run"]).output().unwrap());
    assert!(dry.contains(&format!("would remove {id} (complete")), "{dry}");

    user_settings(&scratch, &json!({"subagents": {"retention": "off"}}));
    let off = ok(&scratch.cli(&["prune", "--retention"]).output().unwrap());
    assert!(off.contains("retention is off"), "{off}");
    assert!(scratch.run_dir(&id).exists());

    user_settings(&scratch, &json!({"subagents": {"retention": 30}}));
    let bad = scratch.cli(&["prune", "--retention"]).output().unwrap();
    assert_eq!(bad.status.code(), Some(2));
    let message = text(&bad.stderr);
    assert!(
        message.contains("settings.json: subagents.retention must be an age"),
        "{message}"
    );
    assert!(scratch.run_dir(&id).exists());
}

#[test]
fn i10_retention_takes_its_candidates_from_the_history_and_compacts_it() {
    let scratch = Scratch::new("retention-history");
    let known = scratch.finished_shell_run("echo known to the history");
    let unknown = scratch.finished_shell_run("echo ended by an older version");
    let kept = scratch.finished_shell_run("echo recent");
    for id in [&known, &unknown] {
        age_status(&scratch, id, 40);
    }
    // The history learns of `known`'s age (rebuilt from the directories); `unknown` is then
    // made young again in the index's eyes by an entry of the same run ended now, as a run
    // an older version ended after the index was built would be missing from it.
    drop_history(&scratch);
    ok(&scratch.cli(&["list", "--all"]).output().unwrap());
    let history = scratch.runs().join(".history");
    let newest = std::fs::read_dir(&history)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .max()
        .unwrap();
    let young =
        json!({"runId": unknown, "state": "complete", "agents": ["shell"], "startedAt": now_ms(), "endedAt": now_ms()});
    let mut segment = std::fs::OpenOptions::new().append(true).open(&newest).unwrap();
    std::io::Write::write_all(&mut segment, format!("{young}\n").as_bytes()).unwrap();

    let pruned = ok(&scratch.cli(&["prune", "--retention", "--json"]).output().unwrap());
    let report: Value = serde_json::from_str(&pruned).unwrap();
    let removed: Vec<&str> = report["removed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["runId"].as_str().unwrap())
        .collect();
    assert_eq!(removed, [known.as_str()], "only what the history says is old: {pruned}");
    assert!(scratch.run_dir(&unknown).exists() && scratch.run_dir(&kept).exists());

    // Dead lines past the threshold, more than the live runs: the pass rebuilds the index,
    // which then holds one line per live run and no tombstone.
    let before = generation(&scratch);
    let mut segment = std::fs::OpenOptions::new().append(true).open(&newest).unwrap();
    for i in 0..1200 {
        let tombstone = json!({"runId": format!("gone-{i:05}"), "pruned": true});
        std::io::Write::write_all(&mut segment, format!("{tombstone}\n").as_bytes()).unwrap();
    }
    ok(&scratch.cli(&["prune", "--retention"]).output().unwrap());
    assert_ne!(generation(&scratch), before, "compacted into a new generation");
    let mut ids: Vec<String> = history_lines(&scratch)
        .iter()
        .map(|line| {
            assert_ne!(line["pruned"], json!(true), "no tombstone survives: {line}");
            line["runId"].as_str().unwrap().to_owned()
        })
        .collect();
    ids.sort();
    let mut live = vec![unknown.clone(), kept.clone()];
    live.sort();
    assert_eq!(ids, live);
    // The rebuilt index read `unknown`'s directory: its real (old) end makes it due now.
    let report: Value =
        serde_json::from_str(&ok(&scratch.cli(&["prune", "--retention", "--json"]).output().unwrap())).unwrap();
    assert_eq!(report["removed"][0]["runId"], json!(unknown));
}
