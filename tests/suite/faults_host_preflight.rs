//! Host fault rows before and at the spawn (fault-matrix.md F01–F08): preflight refusals
//! (H1–H3), the cfg write (H5), the runner logs (H7) and the spawn itself (H11). Library
//! launches against the real shim binary, plus the CLI for the texts users see.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::Arc;
use sublaunch::launch::testing::{RecordingHooks, block_on, shell_plan, test_launch, test_options};
use sublaunch::launch::{LaunchFailure, LaunchOptions, launch};
use sublaunch_tests::launch_harness::{Scratch, names_in, running_as_root, temp_files};
use sublaunch_tests::{assert_starts_with, bin};

fn options(scratch: &Scratch) -> LaunchOptions {
    test_options(&scratch.root(), &bin("sublaunch-shim"))
}

fn fail(plan_cwd: &Path, options: LaunchOptions) -> LaunchFailure {
    fail_as(plan_cwd, None, options)
}

/// [`fail`] of a launch that asks for the run id `run_id`.
fn fail_as(plan_cwd: &Path, run_id: Option<String>, options: LaunchOptions) -> LaunchFailure {
    let mut run = test_launch(&shell_plan("true", plan_cwd));
    run.run_id = run_id;
    block_on(launch(run, options)).expect_err("the launch must fail")
}

/// Nothing under the root but (possibly) the empty root, runs and results directories.
fn assert_nothing_written(scratch: &Scratch) {
    assert_eq!(names_in(&scratch.runs()), Vec::<String>::new(), "no run directory");
    let root_entries: Vec<String> = names_in(&scratch.root())
        .into_iter()
        .filter(|n| n != "runs" && n != "results")
        .collect();
    assert!(root_entries.is_empty(), "no cfg file or other entry: {root_entries:?}");
}

#[test]
fn f01_missing_cwd_is_refused_before_anything_is_written() {
    let scratch = Scratch::new("f01");
    let cwd = scratch.path().join("nonexistent-dir");
    let failure = fail(&cwd, options(&scratch));
    assert!(failure.is_refusal());
    assert_eq!(
        failure.message(),
        format!("Subagent launch aborted: cwd does not exist: {}", cwd.display())
    );
    assert!(!scratch.root().exists(), "the root is not even created");

    let output = scratch
        .cli(&[
            "run",
            "--agent",
            "shell",
            "--task",
            "true",
            "--cwd",
            &cwd.to_string_lossy(),
        ])
        .output()
        .unwrap();
    // The CLI says it in the user's terms, with no run id (no run exists): a refusal, exit 2.
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(
        stderr,
        format!(
            "sublaunch run: the working directory {} does not exist\n",
            cwd.display()
        )
    );
    assert_nothing_written(&scratch);
}

#[test]
fn f02_cwd_that_is_a_file_is_refused() {
    let scratch = Scratch::new("f02");
    let file = scratch.work().join("a-file");
    std::fs::write(&file, b"x").unwrap();
    let failure = fail(&file, options(&scratch));
    assert!(failure.is_refusal());
    assert_eq!(
        failure.message(),
        format!("Subagent launch aborted: cwd is not a directory: {}", file.display())
    );
    assert_nothing_written(&scratch);
}

#[test]
fn f03_missing_shim_is_refused() {
    let scratch = Scratch::new("f03");
    let mut opts = options(&scratch);
    let missing = scratch.path().join("no-such-shim");
    opts.shim = Some(missing.clone());
    let failure = fail(&scratch.work(), opts);
    assert_eq!(
        failure.message(),
        format!("Background runner shim not found: {}", missing.display())
    );
    assert_nothing_written(&scratch);

    let output = scratch
        .cli(&["run", "--agent", "shell", "--task", "true"])
        .env("SUBLAUNCH_SHIM", &missing)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&output.stderr)
            .contains(&format!("Background runner shim not found: {}", missing.display())),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn f04_symlinked_root_is_refused_and_its_target_untouched() {
    let scratch = Scratch::new("f04a");
    let target = scratch.path().join("elsewhere");
    std::fs::create_dir(&target).unwrap();
    std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o700)).unwrap();
    let link = scratch.path().join("linked-root");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let failure = fail(&scratch.work(), test_options(&link, &bin("sublaunch-shim")));
    assert_eq!(
        failure.message(),
        format!(
            "Refusing untrusted temp root '{}': it is a symbolic link",
            link.display()
        )
    );
    assert!(names_in(&target).is_empty(), "the link target got no entries");

    let output = scratch
        .cli(&["run", "--agent", "shell", "--task", "true"])
        .env("SUBLAUNCH_ROOT", &link)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&output.stderr).contains("Refusing untrusted temp root"));
    assert!(names_in(&target).is_empty());
}

#[test]
fn f04_world_writable_root_is_refused() {
    let scratch = Scratch::new("f04b");
    std::fs::create_dir(scratch.root()).unwrap();
    std::fs::set_permissions(scratch.root(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let failure = fail(&scratch.work(), options(&scratch));
    assert_eq!(
        failure.message(),
        format!(
            "Refusing untrusted temp root '{}': it is writable by group or others (mode 0777)",
            scratch.root().display()
        )
    );
    assert!(names_in(&scratch.root()).is_empty());
}

#[test]
fn f04_root_owned_by_another_uid_is_refused() {
    if !running_as_root() {
        eprintln!("skipped: chown to another uid needs root");
        return;
    }
    let scratch = Scratch::new("f04c");
    std::fs::create_dir(scratch.root()).unwrap();
    std::fs::set_permissions(scratch.root(), std::fs::Permissions::from_mode(0o700)).unwrap();
    std::os::unix::fs::chown(scratch.root(), Some(65534), None).unwrap();
    let failure = fail(&scratch.work(), options(&scratch));
    assert!(
        failure.message().ends_with("it is owned by uid 65534, not 0"),
        "{}",
        failure.message()
    );
}

#[test]
fn f05_directory_planted_at_the_cfg_path_fails_the_launch_cleanly() {
    let scratch = Scratch::new("f05");
    scratch.create_root();
    std::fs::create_dir(scratch.root().join("async-cfg-shell-f05.json")).unwrap();
    let mut opts = options(&scratch);
    let hooks = Arc::new(RecordingHooks::default());
    opts.hooks = hooks.clone();
    let failure = fail_as(&scratch.work(), Some("shell-f05".into()), opts);
    let message = failure.message();
    assert!(message.contains("Failed to start async run"), "{message}");
    assert!(message.contains("async-cfg-"), "{message}");
    assert!(failure.pid().is_none(), "no process");
    assert!(
        !scratch.run_dir("shell-f05").exists(),
        "the created run directory is removed again"
    );
    assert!(
        temp_files(&scratch.root()).is_empty(),
        "clean dir: {:?}",
        temp_files(&scratch.root())
    );
    let recorded = hooks.snapshot();
    assert_eq!(recorded.rolled_back_before_proceed.len(), 1, "capacity rolled back");
    assert_eq!(recorded.capacity_used(), 0);
}

#[test]
fn f06_shim_that_cannot_be_executed_fails_with_the_os_error() {
    let scratch = Scratch::new("f06");
    for (name, mode, contents, errno) in [
        ("not-executable", 0o644, None, "EACCES"),
        ("not-a-program", 0o755, Some(b"\x7fELF garbage".to_vec()), "ENOEXEC"),
    ] {
        let shim = scratch.path().join(name);
        match contents {
            Some(bytes) => std::fs::write(&shim, bytes).unwrap(),
            None => {
                std::fs::copy(bin("sublaunch-shim"), &shim).unwrap();
            }
        }
        std::fs::set_permissions(&shim, std::fs::Permissions::from_mode(mode)).unwrap();
        let mut opts = options(&scratch);
        opts.shim = Some(shim.clone());
        let hooks = Arc::new(RecordingHooks::default());
        opts.hooks = hooks.clone();
        let failure = fail_as(&scratch.work(), Some(format!("shell-{name}")), opts);
        let expected = format!(
            "Failed to start async run 'shell-{name}': async runner did not produce a pid for cwd: {}: {errno}",
            scratch.work().display()
        );
        assert!(failure.message().starts_with(&expected), "{}", failure.message());
        assert!(failure.pid().is_none());
        let run = scratch.run_dir(&format!("shell-{name}"));
        assert!(!run.join("status.json").exists(), "no status.json");
        assert!(
            !scratch
                .runs()
                .join(".active-runs")
                .join(format!("shell-{name}"))
                .exists(),
            "no marker"
        );
        assert!(
            !scratch.root().join(format!("async-cfg-shell-{name}.json")).exists(),
            "cfg file unlinked"
        );
        let recorded = hooks.snapshot();
        assert_eq!(recorded.rolled_back_before_proceed.len(), 1, "capacity rolled back");
        assert!(recorded.events.is_empty());
    }
}

#[test]
fn f07_symlink_at_the_runner_log_fails_before_spawn_and_spares_its_target() {
    let scratch = Scratch::new("f07");
    scratch.create_root();
    let run = scratch.run_dir("shell-f07");
    std::fs::create_dir(&run).unwrap();
    let victim = scratch.path().join("victim");
    std::fs::write(&victim, b"precious").unwrap();
    std::os::unix::fs::symlink(&victim, run.join("runner.stdout.log")).unwrap();
    let opts = options(&scratch);
    let failure = fail_as(&scratch.work(), Some("shell-f07".into()), opts);
    let message = failure.message();
    assert!(
        message.contains("ELOOP") || message.contains("symbolic link"),
        "{message}"
    );
    assert_starts_with(&message, "Failed to start async run 'shell-f07': ");
    assert!(failure.pid().is_none(), "no process");
    assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
    assert!(!run.join("status.json").exists());
}

#[test]
fn f08_read_only_run_directory() {
    // chmod 0500 denies writes to an ordinary user only: as root (CI) the CLI runs as one.
    let scratch = Scratch::new("f08");
    scratch.create_root();
    let run = scratch.run_dir("shell-f08");
    std::fs::create_dir(&run).unwrap();
    let mut command = scratch.cli_unprivileged(&["run", "--agent", "shell", "--task", "true", "--run-id", "shell-f08"]);
    std::fs::set_permissions(&run, std::fs::Permissions::from_mode(0o500)).unwrap();
    let output = command.output().unwrap();
    std::fs::set_permissions(&run, std::fs::Permissions::from_mode(0o700)).unwrap();
    let stderr = sublaunch_tests::cli::text(&output.stderr);
    assert!(!output.status.success(), "{stderr}");
    assert!(
        stderr.contains("EACCES") && stderr.contains("runner.stdout.log"),
        "{stderr}"
    );
    assert!(names_in(&run).is_empty(), "nothing was written into the run directory");
    assert!(!scratch.runs().join(".active-runs/shell-f08").exists());
    assert!(
        sublaunch_tests::launch_harness::shims_under(&scratch.root()).is_empty(),
        "no shim"
    );
}
