//! Budgets, the checkpoint and pi's extensions and skills, refused through the real CLI when
//! they are malformed or cannot be kept — each with what and where, and nothing started. (What
//! the agents do with them is in `real_cli_limits`, against the real CLIs.)

use sublaunch_tests::cli::{executable, text, write};
use sublaunch_tests::launch_harness::{Scratch, names_in};

/// `sublaunch ARGS`, which must fail with `code`; its stderr. Nothing may have been started.
fn refused(scratch: &Scratch, args: &[&str], code: i32) -> String {
    // A `pi` on PATH, so that only what is under test refuses the launch.
    let bin = scratch.path().join("bin");
    executable(&bin.join("pi"), "#!/bin/sh\nexit 0\n");
    let output = scratch
        .cli(args)
        .env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
        .output()
        .unwrap();
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(code), "{args:?}: {stderr}");
    let runs = scratch.runs();
    assert!(
        !runs.exists() || names_in(&runs).is_empty(),
        "{args:?} left runs: {:?}",
        names_in(&runs)
    );
    stderr
}

#[test]
fn malformed_budgets_are_refused_naming_the_file_and_the_field() {
    let scratch = Scratch::trusting("limits-bad");
    let chain = |name: &str, body: &str| write(&scratch.path().join(name), body).to_string_lossy().into_owned();
    let file = chain(
        "tools.json",
        r#"{"steps": [{"agent": "shell", "task": "x", "toolBudget": "lots"}]}"#,
    );
    let stderr = refused(&scratch, &["run", "--chain", &file], 2);
    assert!(
        stderr.contains("tools.json")
            && stderr.contains("steps[0].toolBudget")
            && stderr.contains("whole number of tool calls"),
        "{stderr}"
    );
    let file = chain(
        "typo.yaml",
        "steps:\n  - {agent: shell, task: x, usageBudget: {maxTokns: 5}}\n",
    );
    let stderr = refused(&scratch, &["run", "--chain", &file], 2);
    assert!(
        stderr.contains("steps[0].usageBudget") && stderr.contains("maxTokns"),
        "{stderr}"
    );
    let file = chain(
        "top.yaml",
        "checkpointBeforeDeadlineMs: soon\nsteps:\n  - {agent: shell, task: x}\n",
    );
    let stderr = refused(&scratch, &["run", "--chain", &file], 2);
    assert!(stderr.contains("checkpointBeforeDeadlineMs"), "{stderr}");
    // An agent file's budget is checked where it is written.
    write(
        &scratch.work().join(".sublaunch/agents/cheap.md"),
        "---\ndescription: x\nusageBudget: {maxTokens: 0}\n---\n",
    );
    let stderr = refused(&scratch, &["run", "--agent", "cheap", "--task", "x"], 2);
    assert!(
        stderr.contains("agents[cheap].usageBudget.maxTokens") && stderr.contains("at least 1"),
        "{stderr}"
    );
    write(
        &scratch.work().join(".sublaunch/agents/cheap.md"),
        "---\ndescription: x\ntoolBudget: -1\n---\n",
    );
    let stderr = refused(&scratch, &["run", "--agent", "cheap", "--task", "x"], 2);
    assert!(stderr.contains("cheap.md") && stderr.contains("toolBudget"), "{stderr}");
}

#[test]
fn budgets_a_runner_cannot_keep_and_checkpoints_without_time_are_refused() {
    let scratch = Scratch::new("limits-unkept");
    let chain = write(
        &scratch.path().join("c.json"),
        r#"{"steps": [{"agent": "shell", "task": "x"}]}"#,
    );
    let chain = chain.to_str().unwrap();
    let cases: [(&[&str], i32, &[&str]); 5] = [
        (
            &["--agent", "shell", "--task", "true", "--max-tokens", "100"],
            2,
            &["Agent 'shell'", "reports no token usage"],
        ),
        (
            &["--agent", "shell", "--task", "true", "--max-cost", "0"],
            2,
            &["maxCostUsd", "above 0"],
        ),
        (
            &["--chain", chain, "--max-tool-calls", "3"],
            2,
            &["--max-tool-calls", "--chain"],
        ),
        // pi takes input while it runs, but the run needs a deadline with room before it.
        (
            &["--agent", "pi", "--task", "x", "--checkpoint-before-deadline", "5"],
            1,
            &["the run has none: give it a timeout or a deadline"],
        ),
        (
            &[
                "--agent",
                "pi",
                "--task",
                "x",
                "--timeout",
                "3",
                "--checkpoint-before-deadline",
                "5",
            ],
            1,
            &["and the run has only 3000 ms"],
        ),
    ];
    for (args, code, fragments) in cases {
        let mut all = vec!["run"];
        all.extend_from_slice(args);
        let stderr = refused(&scratch, &all, code);
        for fragment in fragments {
            assert!(stderr.contains(fragment), "{args:?}: {fragment:?} in {stderr}");
        }
    }
}
