//! `run --dry-run` makes every check a launch makes and starts nothing: a plan it prints is
//! one the launch accepts (issue 35).

use sublaunch_tests::cli::{ok, text, write};
use sublaunch_tests::launch_harness::Scratch;

fn runs_on_disk(scratch: &Scratch) -> usize {
    std::fs::read_dir(scratch.runs()).map_or(0, |dir| {
        dir.filter(|e| !e.as_ref().unwrap().file_name().to_string_lossy().starts_with('.'))
            .count()
    })
}

#[test]
fn a_dry_run_refuses_what_the_launch_would_refuse_and_starts_nothing() {
    let scratch = Scratch::new("dry-run");
    std::fs::create_dir_all(scratch.work()).unwrap();
    let chain = write(
        &scratch.work().join("chain.yaml"),
        "steps:\n  - agent: shell\n    task: echo hi\n    output: out/answer.txt\n",
    );
    let chain = chain.to_string_lossy().into_owned();
    // The chain plans, but the directory its answer goes to is missing: refused as the launch
    // refuses it.
    let dry = scratch.cli(&["run", "--chain", &chain, "--dry-run"]).output().unwrap();
    assert_eq!(
        dry.status.code(),
        Some(2),
        "refused before launch: {}",
        text(&dry.stdout)
    );
    let said = text(&dry.stderr);
    let why = "writes its answer to";
    assert!(said.contains(why) && said.contains("out does not exist"), "{said}");
    let launched = scratch.cli(&["run", "--chain", &chain]).output().unwrap();
    assert_eq!(launched.status.code(), dry.status.code());
    let reason = |text: &str| text[text.find(why).unwrap()..].lines().next().unwrap().to_owned();
    assert_eq!(
        reason(&text(&launched.stderr)),
        reason(&said),
        "the same refusal as the launch"
    );

    // With the directory there, the dry run prints the plan, and nothing ran.
    std::fs::create_dir_all(scratch.work().join("out")).unwrap();
    let plan = ok(&scratch.cli(&["run", "--chain", &chain, "--dry-run"]).output().unwrap());
    assert!(plan.contains("\"steps\""), "{plan}");
    assert_eq!(runs_on_disk(&scratch), 0, "a dry run starts nothing");
    // A working directory that is not one is refused too.
    let missing = scratch
        .cli(&[
            "run",
            "--agent",
            "shell",
            "--task",
            "true",
            "--cwd",
            "/nonexistent/dir",
            "--dry-run",
        ])
        .output()
        .unwrap();
    assert_eq!(missing.status.code(), Some(2));
    assert!(
        text(&missing.stderr).contains("/nonexistent/dir"),
        "{}",
        text(&missing.stderr)
    );
    assert_eq!(runs_on_disk(&scratch), 0);
}
