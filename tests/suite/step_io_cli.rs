//! What a step takes and gives beyond its task, through the real CLI: the files its agent
//! reads first (`--read`, `reads`, an agent's `defaultReads`), the file its answer is also
//! written to (`--output`, `output`), answers named with `as` and used as `{outputs.NAME}`,
//! labels and phases in progress and status — and each refused before launch, with what and
//! where, when it cannot be honoured.

use serde_json::Value;
use sublaunch_tests::cli::{git, ok, text, waited_run_id, write};
use sublaunch_tests::launch_harness::{Scratch, names_in};

/// A project whose `echo` agent answers with the prompt it was given (a `command` runner,
/// which gets its task in `{task}`, as every prompt-taking agent does).
fn project(name: &str) -> Scratch {
    let scratch = Scratch::trusting(name);
    scratch.init_repo();
    write(
        &scratch.work().join(".sublaunch/agents/echo.md"),
        "---\ndescription: says its prompt back\nrunner:\n  type: command\n  command: [sh, -c, 'printf \"%s\" \"$1\"', echo, '{task}']\n---\n",
    );
    write(&scratch.work().join("docs/STYLE.md"), "be brief\n");
    scratch
}

#[test]
fn reads_are_named_to_the_agent_and_checked_before_launch() {
    let scratch = project("io-reads");
    let output = scratch
        .cli(&[
            "run",
            "--agent",
            "echo",
            "--read",
            "docs/STYLE.md",
            "--read",
            "/etc/hostname",
            "--task",
            "tidy up",
            "--wait",
        ])
        .output()
        .unwrap();
    let style = scratch.work().join("docs/STYLE.md");
    assert_eq!(
        ok(&output),
        format!(
            "Before you start, read these files:\n- {}\n- /etc/hostname\n\ntidy up\n",
            style.display()
        )
    );
    // An agent's defaults, and a step that drops them.
    write(
        &scratch.work().join(".sublaunch/agents/styled.md"),
        "---\ndefaultReads: [docs/STYLE.md]\nrunner:\n  type: command\n  command: [sh, -c, 'printf \"%s\" \"$1\"', echo, '{task}']\n---\n",
    );
    let output = scratch
        .cli(&["run", "--agent", "styled", "--task", "go", "--wait"])
        .output()
        .unwrap();
    assert!(ok(&output).contains(&format!("- {}\n\ngo", style.display())));
    let chain = write(
        &scratch.path().join("no-reads.json"),
        r#"{"steps": [{"agent": "styled", "task": "go", "reads": false}]}"#,
    );
    let output = scratch
        .cli(&["run", "--chain", chain.to_str().unwrap(), "--wait"])
        .output()
        .unwrap();
    assert_eq!(ok(&output), "go\n");
    // A missing file: refused before anything starts, naming it.
    let output = scratch
        .cli(&["run", "--agent", "echo", "--read", "docs/MISSING.md", "--task", "x"])
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains(&format!(
            "step 1 echo reads docs/MISSING.md, and {} does not exist",
            scratch.work().join("docs/MISSING.md").display()
        )),
        "{stderr}"
    );
    let runs = names_in(&scratch.runs())
        .into_iter()
        .filter(|n| !n.starts_with('.'))
        .count();
    assert_eq!(runs, 3, "only the three runs above exist");
    // A shell step reads nothing: the planner says so.
    let output = scratch
        .cli(&["run", "--agent", "shell", "--read", "docs/STYLE.md", "--task", "true"])
        .output()
        .unwrap();
    assert!(
        text(&output.stderr).contains("reads no files first"),
        "{}",
        text(&output.stderr)
    );
}

#[test]
fn a_relative_read_and_output_resolve_inside_the_worktree() {
    let scratch = project("io-worktree");
    let work = scratch.work();
    git(&work, &["add", "-A"]);
    git(&work, &["commit", "-qm", "base"]);
    std::fs::create_dir_all(work.join("out")).unwrap();
    write(&work.join("out/.keep"), "");
    git(&work, &["add", "-A"]);
    git(&work, &["commit", "-qm", "out dir"]);
    let output = scratch
        .cli(&[
            "run",
            "--agent",
            "echo",
            "--worktree",
            "--read",
            "docs/STYLE.md",
            "--output",
            "out/answer.md",
            "--task",
            "go",
            "--wait",
        ])
        .output()
        .unwrap();
    let stdout = ok(&output);
    let id = waited_run_id(&output);
    let tree = scratch.root().join("worktrees").join(&id).join("1");
    assert!(
        stdout.contains(&format!("- {}\n", tree.join("docs/STYLE.md").display())),
        "{stdout}"
    );
    assert_eq!(
        std::fs::read_to_string(tree.join("out/answer.md")).unwrap(),
        stdout.trim_end_matches('\n')
    );
    assert!(
        !work.join("out/answer.md").exists(),
        "written in the worktree, not the checkout"
    );
}

#[test]
fn an_output_file_gets_the_answer_atomically_and_bad_paths_are_refused() {
    let scratch = project("io-output");
    std::fs::create_dir_all(scratch.work().join("notes")).unwrap();
    write(&scratch.work().join("notes/answer.md"), "the old answer\n");
    let output = scratch
        .cli(&[
            "run",
            "--agent",
            "echo",
            "--output",
            "notes/answer.md",
            "--task",
            "the new answer",
            "--wait",
        ])
        .output()
        .unwrap();
    ok(&output);
    let path = scratch.work().join("notes/answer.md");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "the new answer");
    assert_eq!(
        names_in(&scratch.work().join("notes")),
        ["answer.md"],
        "no temporary file is left"
    );
    let result = scratch.result_json(&waited_run_id(&output));
    assert_eq!(result["steps"][0]["outputFile"], path.to_str().unwrap());
    // A failed step leaves the file as it was.
    let failing = write(
        &scratch.path().join("fail.json"),
        r#"{"steps": [{"agent": "shell", "task": "exit 3", "output": "notes/answer.md"}]}"#,
    );
    let output = scratch
        .cli(&["run", "--chain", failing.to_str().unwrap(), "--wait"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "the new answer");
    for (args, message) in [
        (vec!["--output", "gone/answer.md"], "and its directory"),
        (vec!["--output", "../outside.md"], "climbs out of the step's directory"),
        (vec!["--output", "notes"], "which is a directory"),
    ] {
        let mut all = vec!["run", "--agent", "echo", "--task", "x"];
        all.extend(args);
        let output = scratch.cli(&all).output().unwrap();
        assert!(!output.status.success());
        assert!(
            text(&output.stderr).contains(message),
            "{message}: {}",
            text(&output.stderr)
        );
    }
}

#[test]
fn an_agent_that_swaps_the_output_directory_for_a_symlink_redirects_nothing() {
    let scratch = Scratch::new("io-swap");
    std::fs::create_dir_all(scratch.work().join("out")).unwrap();
    let elsewhere = scratch.path().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let task = format!(
        "rm -rf out && ln -s {} out && printf 'payload from the agent'",
        elsewhere.display()
    );
    let output = scratch
        .cli(&[
            "run",
            "--agent",
            "shell",
            "--output",
            "out/answer.md",
            "--task",
            &task,
            "--wait",
        ])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(17), "{}", text(&output.stderr));
    assert_eq!(
        names_in(&elsewhere),
        Vec::<String>::new(),
        "the answer went through the link"
    );
    let shown = scratch
        .cli(&["result", &waited_run_id(&output), "--json"])
        .output()
        .unwrap();
    let result: Value = serde_json::from_slice(&shown.stdout).unwrap();
    assert_eq!(result["state"], "failed");
    assert_eq!(result["steps"][0]["outputFile"], Value::Null, "{result}");
    let out = scratch.work().join("out");
    assert_eq!(
        result["error"],
        format!(
            "The step completed, but its answer cannot be written to {}: {} is a symbolic link now; the answer is written only into the directory checked at launch, never through a link.",
            out.join("answer.md").display(),
            out.display()
        )
        .as_str()
    );
}

#[test]
fn an_output_file_gets_the_users_umask_and_an_existing_one_keeps_its_mode() {
    use std::os::unix::fs::PermissionsExt;
    let scratch = Scratch::new("io-mode");
    let existing = write(&scratch.work().join("existing.md"), "old\n");
    std::fs::set_permissions(&existing, std::fs::Permissions::from_mode(0o640)).unwrap();
    for file in ["new.md", "existing.md"] {
        ok(&scratch.cli_under_umask(
            "022",
            &format!("run --agent shell --task 'echo answer' --output {file} --wait"),
        ));
    }
    let mode = |name: &str| {
        std::fs::metadata(scratch.work().join(name))
            .unwrap()
            .permissions()
            .mode()
            & 0o777
    };
    assert_eq!(mode("new.md"), 0o644, "a new file gets the umask of the launch");
    assert_eq!(mode("existing.md"), 0o640, "a file that was there keeps its mode");
    assert_eq!(std::fs::read_to_string(&existing).unwrap(), "answer");
}

#[test]
fn named_answers_reach_later_steps_and_labels_show_in_progress_and_status() {
    let scratch = project("io-named");
    let chain = write(
        &scratch.path().join("named.yaml"),
        "steps:\n  - agent: echo\n    task: the plan\n    as: plan\n    label: planner\n    phase: design\n  - parallel:\n      - {agent: echo, task: 'lexer per {outputs.plan}', as: lexer, label: lexer}\n      - {agent: shell, task: 'echo \"parser per {outputs.plan}\"'}\n    phase: review\n  - agent: echo\n    task: 'merge [{outputs.lexer}] after [{outputs.plan}]'\n",
    );
    let output = scratch
        .cli(&["run", "--chain", chain.to_str().unwrap(), "--wait"])
        .output()
        .unwrap();
    let stdout = ok(&output);
    assert_eq!(stdout, "merge [lexer per the plan] after [the plan]\n");
    let stderr = text(&output.stderr);
    assert!(stderr.contains("step 1 echo (design: planner): complete"), "{stderr}");
    assert!(stderr.contains("step 2.1 echo (review: lexer): complete"), "{stderr}");
    let id = waited_run_id(&output);
    let result = scratch.result_json(&id);
    // A shell step gets the named answer in its environment, never pasted into the script.
    assert_eq!(
        result["steps"][2]["output"].as_str().unwrap().trim(),
        "parser per the plan"
    );
    let status: Value = serde_json::from_str(&ok(&scratch.cli(&["status", &id, "--json"]).output().unwrap())).unwrap();
    let steps = status["steps"].as_array().unwrap();
    assert_eq!(
        (steps[0]["label"].as_str(), steps[0]["phase"].as_str()),
        (Some("planner"), Some("design"))
    );
    assert_eq!(steps[2]["phase"], "review", "a group's phase is its tasks'");
    assert_eq!(steps[1]["as"], "lexer");
    // A reference to a later step: refused by the planner, with the JSON path.
    let bad = write(
        &scratch.path().join("bad.json"),
        r#"{"steps": [{"agent": "echo", "task": "use {outputs.fix}"}, {"agent": "echo", "task": "b", "as": "fix"}]}"#,
    );
    let output = scratch
        .cli(&["run", "--chain", bad.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(!output.status.success());
    assert!(
        text(&output.stderr).contains("steps[0].task: {outputs.fix} is the answer of steps[1], which runs after it"),
        "{}",
        text(&output.stderr)
    );
}

#[test]
fn a_deadline_ends_the_run_and_one_that_passed_is_refused() {
    let scratch = project("io-deadline");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis();
    let soon = (now + 1_500).to_string();
    let output = scratch
        .cli(&[
            "run",
            "--agent",
            "shell",
            "--task",
            "sleep 30",
            "--deadline",
            &soon,
            "--wait",
        ])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(13), "{}", text(&output.stderr));
    let id = waited_run_id(&output);
    let result: Value =
        serde_json::from_slice(&scratch.cli(&["result", &id, "--json"]).output().unwrap().stdout).unwrap();
    assert_eq!(result["state"], "failed");
    assert!(
        result["error"]
            .as_str()
            .unwrap()
            .starts_with("Subagent timed out after"),
        "{result}"
    );
    // A deadline that has passed: nothing starts.
    let output = scratch
        .cli(&[
            "run",
            "--agent",
            "shell",
            "--task",
            "true",
            "--deadline",
            "2020-01-01T00:00:00Z",
        ])
        .output()
        .unwrap();
    assert!(!output.status.success());
    assert!(
        text(&output.stderr).contains("the deadline 2020-01-01T00:00:00.000Z has passed"),
        "{}",
        text(&output.stderr)
    );
    assert_eq!(
        names_in(&scratch.runs())
            .into_iter()
            .filter(|n| !n.starts_with('.'))
            .count(),
        1
    );
    let output = scratch
        .cli(&["run", "--agent", "shell", "--task", "true", "--deadline", "soon"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(
        text(&output.stderr).contains("'soon' is not a time"),
        "{}",
        text(&output.stderr)
    );
    let chain = write(
        &scratch.path().join("deadline.yaml"),
        "deadlineAt: next week\nsteps: [{agent: shell, task: 'true'}]\n",
    );
    let output = scratch
        .cli(&["run", "--chain", chain.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(
        text(&output.stderr).contains("deadline.yaml: deadlineAt: 'next week' is not a time"),
        "{}",
        text(&output.stderr)
    );
}
