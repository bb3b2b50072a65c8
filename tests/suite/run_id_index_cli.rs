//! Naming a run by a prefix of its id through the run-id index (I14): the index answers from
//! the buckets that can hold such ids, is built once from the run directories of a root an
//! older version wrote, forgets pruned runs, and a prefix it knows nothing of still finds a
//! run listed only in `<runs>`.

use std::path::Path;
use std::process::Output;
use sublaunch_tests::cli::{ok, text};
use sublaunch_tests::launch_harness::{Scratch, wait_terminal};

const LIMIT: std::time::Duration = std::time::Duration::from_secs(30);

fn cli(scratch: &Scratch, args: &[&str]) -> Output {
    scratch.cli(args).output().unwrap()
}

fn finished(scratch: &Scratch, run_id: &str, task: &str) {
    let out = ok(&cli(
        scratch,
        &["run", "--agent", "shell", "--task", task, "--run-id", run_id],
    ));
    assert_eq!(out.trim(), run_id);
    wait_terminal(&scratch.run_dir(run_id), LIMIT);
}

/// The run `status ID-OR-PREFIX --json` shows, or its error.
fn named(scratch: &Scratch, text_given: &str) -> Result<String, String> {
    let output = cli(scratch, &["status", text_given, "--json"]);
    if output.status.success() {
        let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
        Ok(json["runId"].as_str().unwrap().to_owned())
    } else {
        Err(text(&output.stderr))
    }
}

/// A copy of run `from` as `to`, made the way an older version would: a directory only.
fn plant_copy(runs: &Path, from: &str, to: &str) {
    let target = runs.join(to);
    std::fs::create_dir(&target).unwrap();
    for entry in std::fs::read_dir(runs.join(from)).unwrap() {
        let entry = entry.unwrap();
        if entry.file_type().unwrap().is_file() {
            let bytes = std::fs::read(entry.path()).unwrap();
            let copied = String::from_utf8_lossy(&bytes).replace(from, to);
            std::fs::write(target.join(entry.file_name()), copied).unwrap();
        }
    }
}

#[test]
fn i14_a_prefix_is_answered_by_the_index_built_once_for_an_older_root() {
    let scratch = Scratch::new("id-index");
    finished(&scratch, "idx-a1", "echo a");
    finished(&scratch, "idx-b1", "echo b");
    let runs = scratch.runs();
    let bucket = runs.join(".ids/idx-/a1");
    assert!(
        std::fs::read_to_string(&bucket).unwrap().lines().any(|l| l == "idx-a1"),
        "a launch records its id"
    );

    // A root an older version wrote has no index: the first prefix builds it from <runs>.
    std::fs::remove_dir_all(runs.join(".ids")).unwrap();
    assert_eq!(named(&scratch, "idx-b").as_deref(), Ok("idx-b1"));
    assert!(runs.join(".ids/.built").is_file(), "the walk marks the index built");
    assert!(
        std::fs::read_to_string(runs.join(".ids/idx-/b1"))
            .unwrap()
            .contains("idx-b1\n")
    );

    // Built, the index answers: a run directory it never heard of does not make a prefix it
    // knows ambiguous (the listing of <runs> is not read) …
    plant_copy(&runs, "idx-a1", "idx-a2");
    assert_eq!(named(&scratch, "idx-a").as_deref(), Ok("idx-a1"));
    // … but is found by its exact id, and by a prefix the index knows nothing of.
    assert_eq!(named(&scratch, "idx-a2").as_deref(), Ok("idx-a2"));
    plant_copy(&runs, "idx-a1", "idx-z1");
    assert_eq!(named(&scratch, "idx-z").as_deref(), Ok("idx-z1"));

    // A pruned run's line stays, but names nothing.
    ok(&cli(&scratch, &["prune", "--yes"]));
    assert_eq!(
        named(&scratch, "idx-b"),
        Err("sublaunch status: unknown run 'idx-b'\n".to_owned())
    );
    assert_eq!(
        named(&scratch, "idx-"),
        Err("sublaunch status: unknown run 'idx-'\n".to_owned())
    );
}
