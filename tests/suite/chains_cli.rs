//! `sublaunch run --chain FILE` through the real binaries: chain files in JSON and YAML, their
//! errors (file and JSON path), and chains and parallel runs end to end with the `shell`
//! agent and with fake `pi`, `claude` and `codex` programs on PATH.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Output;
use sublaunch_tests::cli::{executable, ok, text, write};
use sublaunch_tests::launch_harness::{Scratch, names_in, status};

/// The run id: the first line `run` prints.
/// The run id of `run --wait`: the first line of its standard error (its standard output
/// carries the answer alone).
fn run_id(output: &Output) -> String {
    text(&output.stderr).lines().next().unwrap().trim().to_owned()
}

fn run(scratch: &Scratch, args: &[&str]) -> Output {
    scratch.cli(args).output().unwrap()
}

fn plan(scratch: &Scratch, chain: &Path, extra: &[&str]) -> Value {
    let chain = chain.to_string_lossy();
    let args = [&["run", "--dry-run", "--chain", chain.as_ref()], extra].concat();
    serde_json::from_str(&ok(&run(scratch, &args))).unwrap()
}

const TWO_STEPS_YAML: &str = "\
steps:
  - agent: shell
    task: echo first-{task}
  - agent: shell
    task: 'echo \"second saw: {previous}\"'
";

#[test]
fn json_and_yaml_chain_files_plan_the_same_steps() {
    let scratch = Scratch::new("chain-plan");
    let yaml = write(&scratch.work().join("two.yaml"), TWO_STEPS_YAML);
    let json = write(
        &scratch.work().join("two.json"),
        r#"{"mode": "chain", "steps": [
             {"agent": "shell", "task": "echo first-{task}"},
             {"agent": "shell", "task": "echo \"second saw: {previous}\""}]}"#,
    );
    let from_yaml = plan(&scratch, &yaml, &["--task", "T"]);
    let from_json = plan(&scratch, &json, &["--task", "T"]);
    assert_eq!(from_yaml, from_json);
    let steps = from_yaml["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 2);
    assert_eq!(
        steps[0]["task"], "echo first-{task}",
        "placeholders reach the runner verbatim"
    );
    assert_eq!(steps[1]["stepIndex"], 1);

    // A group inside a chain, and parallel mode; the file's name does not need an extension.
    let grouped = write(
        &scratch.work().join("grouped"),
        "steps:\n  - {agent: shell, task: 'echo {task}'}\n  - parallel:\n      - {agent: shell, task: 'echo a'}\n      - {agent: shell, task: 'echo b', cwd: sub}\n",
    );
    std::fs::create_dir_all(scratch.work().join("sub")).unwrap();
    let planned = plan(&scratch, &grouped, &["--task", "T"]);
    let steps = planned["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 3);
    assert_eq!(
        (steps[2]["stepIndex"].clone(), steps[2]["taskIndex"].clone()),
        (1.into(), 1.into())
    );
    assert!(
        steps[2]["cwd"].as_str().unwrap().ends_with("/work/sub"),
        "{}",
        steps[2]["cwd"]
    );
    assert!(planned["graph"]["steps"][1]["parallel"].is_array());
    let parallel = write(
        &scratch.work().join("par.json"),
        r#"{"mode": "parallel", "steps": [{"agent": "shell", "task": "echo 1"}, {"agent": "shell", "task": "echo 2"}]}"#,
    );
    assert_eq!(plan(&scratch, &parallel, &[])["steps"].as_array().unwrap().len(), 2);
}

#[test]
fn bad_chain_files_are_errors_naming_the_file_and_json_path() {
    let scratch = Scratch::new("chain-errors");
    let cases = [
        ("syntax.json", "{\"steps\": [", "syntax.json: broken JSON"),
        ("syntax.yaml", "steps: [\n", "syntax.yaml: broken YAML"),
        (
            "type.json",
            r#"{"steps": [{"agent": "shell", "task": ["echo"]}]}"#,
            "type.json: steps[0].task: invalid type: sequence, expected a string",
        ),
        (
            "typo.yaml",
            "steps:\n  - agent: shell\n    taks: echo\n",
            "typo.yaml: steps[0].taks: unknown field `taks`",
        ),
        (
            "unknown-agent.yaml",
            "steps:\n  - {agent: shell, task: 'echo {task}'}\n  - parallel:\n      - {agent: shell, task: x}\n      - {agent: ghost, task: x}\n",
            "unknown-agent.yaml: steps[1].parallel[1].agent: unknown agent 'ghost'; known agents: shell",
        ),
        (
            "placeholder.yaml",
            "steps:\n  - {agent: shell, task: 'echo {task}'}\n  - {agent: shell, task: 'echo {output}'}\n",
            "placeholder.yaml: steps[1].task: unknown placeholder {output}; known: {task}, {previous}, {chain_dir}",
        ),
        (
            "previous.yaml",
            "steps:\n  - {agent: shell, task: 'echo {previous}'}\n",
            "previous.yaml: steps[0].task: {previous} is used where no step ran before",
        ),
        (
            "groups.yaml",
            "steps:\n  - {parallel: [{agent: shell, task: a}], concurrency: 1}\n  - {parallel: [{agent: shell, task: b}], concurrency: 2}\n",
            "groups.yaml: steps[1].concurrency: 2 differs from steps[0].concurrency = 1",
        ),
        (
            "empty.yaml",
            "steps: []\n",
            "empty.yaml: steps: a chain file needs at least one step",
        ),
    ];
    for (name, content, expected) in cases {
        let path = write(&scratch.work().join(name), content);
        let output = run(&scratch, &["run", "--chain", &path.to_string_lossy(), "--task", "T"]);
        assert_eq!(output.status.code(), Some(2), "{name}: {}", text(&output.stderr));
        let stderr = text(&output.stderr);
        assert!(stderr.contains(expected), "{name}: {stderr}");
        assert!(
            stderr.contains(&*path.to_string_lossy()),
            "{name}: the full path: {stderr}"
        );
    }
    // {task} without --task.
    let path = write(&scratch.work().join("needs-task.yaml"), TWO_STEPS_YAML);
    let output = run(&scratch, &["run", "--chain", &path.to_string_lossy()]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        text(&output.stderr).contains("steps[0].task: {task} is used but the run has no --task"),
        "{}",
        text(&output.stderr)
    );
    // A missing file, and flags that need a chain.
    let output = run(&scratch, &["run", "--chain", "/nonexistent/chain.yaml"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(text(&output.stderr).contains("/nonexistent/chain.yaml: the chain file does not exist"));
    let output = run(
        &scratch,
        &["run", "--agent", "shell", "--task", "x", "--concurrency", "2"],
    );
    assert_eq!(output.status.code(), Some(2), "--concurrency needs --chain");
    assert!(names_in(&scratch.runs()).is_empty(), "nothing was launched");
}

#[test]
fn a_two_step_shell_chain_runs_end_to_end() {
    let scratch = Scratch::new("chain-e2e");
    let chain = write(&scratch.work().join("two.yaml"), TWO_STEPS_YAML);
    let output = run(
        &scratch,
        &["run", "--chain", &chain.to_string_lossy(), "--task", "T", "--wait"],
    );
    let stdout = ok(&output);
    let id = run_id(&output);
    assert!(text(&output.stderr).contains(&format!("{id}: complete")));
    assert_eq!(stdout, "second saw: first-T\n", "stdout is the last step's answer");
    let logs = ok(&run(&scratch, &["logs", &id]));
    assert!(logs.contains("[1 shell] first-T\n"), "{logs}");
    assert!(
        logs.contains("[2 shell] second saw: first-T"),
        "{{previous}} is step 1's output: {logs}"
    );
    let done = status(&scratch.run_dir(&id)).unwrap();
    assert_eq!(done["steps"][0]["status"], "complete");
    assert_eq!(done["steps"][1]["status"], "complete");
}

#[test]
fn a_failed_step_stops_the_chain() {
    let scratch = Scratch::new("chain-fail");
    let chain = write(
        &scratch.work().join("fail.yaml"),
        "steps:\n  - {agent: shell, task: 'echo one'}\n  - {agent: shell, task: 'echo two; exit 3'}\n  - {agent: shell, task: 'echo NEVER'}\n",
    );
    let output = run(&scratch, &["run", "--chain", &chain.to_string_lossy(), "--wait"]);
    assert_eq!(output.status.code(), Some(1));
    let id = run_id(&output);
    assert!(text(&output.stderr).contains(&format!("{id}: failed")));
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains("step 2 shell: failed"),
        "the progress says which: {stderr}"
    );
    let done = status(&scratch.run_dir(&id)).unwrap();
    assert_eq!(done["steps"][1]["status"], "failed");
    assert_ne!(done["steps"][2]["status"], "complete");
    assert!(done["error"].as_str().is_some_and(|e| !e.is_empty()), "{done}");
    let logs = ok(&run(&scratch, &["logs", &id]));
    assert!(!logs.contains("NEVER"), "the third step never ran: {logs}");
}

#[test]
fn a_three_way_parallel_run_runs_end_to_end() {
    let scratch = Scratch::new("parallel-e2e");
    let chain = write(
        &scratch.work().join("three.json"),
        r#"{"mode": "parallel", "concurrency": 3, "steps": [
             {"agent": "shell", "task": "sleep 0.3; echo alpha {task}"},
             {"agent": "shell", "task": "echo beta {task}"},
             {"agent": "shell", "task": "sleep 0.1; echo gamma {task}"}]}"#,
    );
    let output = run(
        &scratch,
        &[
            "run",
            "--chain",
            &chain.to_string_lossy(),
            "--task",
            "X",
            "--wait",
            "--json",
        ],
    );
    let result: Value = serde_json::from_str(&ok(&output)).unwrap();
    assert_eq!(result["state"], "complete");
    let steps = result["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 3);
    assert!(steps.iter().all(|s| s["state"] == "complete"), "{result}");
    let id = result["runId"].as_str().unwrap();
    let logs = ok(&run(&scratch, &["logs", id]));
    let order: Vec<usize> = ["alpha X", "beta X", "gamma X"]
        .iter()
        .map(|word| logs.find(word).unwrap_or_else(|| panic!("{word} missing: {logs}")))
        .collect();
    assert!(order.windows(2).all(|w| w[0] < w[1]), "outputs in task order: {logs}");
    // The tasks ran side by side: the second started before the first (sleeping) ended.
    let done = status(&scratch.run_dir(id)).unwrap();
    let starts: Vec<u64> = (0..3)
        .map(|i| done["steps"][i]["startedAt"].as_u64().unwrap())
        .collect();
    let ends: Vec<u64> = (0..3).map(|i| done["steps"][i]["endedAt"].as_u64().unwrap()).collect();
    assert!(
        starts[1] < ends[0],
        "task 2 started before task 1 ended: {starts:?} {ends:?}"
    );
}

#[test]
fn a_parallel_group_inside_a_chain_aggregates_its_outputs_in_order() {
    let scratch = Scratch::new("group-e2e");
    let chain = write(
        &scratch.work().join("group.yaml"),
        "failFast: true\nsteps:\n  - parallel:\n      - {agent: shell, task: 'sleep 0.2; echo one'}\n      - {agent: shell, task: 'echo two'}\n      - {agent: shell, task: 'echo three'}\n  - {agent: shell, task: 'echo \"after: {previous}\"'}\n",
    );
    let output = run(
        &scratch,
        &[
            "run",
            "--chain",
            &chain.to_string_lossy(),
            "--wait",
            "--concurrency",
            "2",
        ],
    );
    ok(&output);
    let id = run_id(&output);
    let logs = ok(&run(&scratch, &["logs", &id]));
    let last = logs
        .lines()
        .filter(|l| l.starts_with("[2 shell]"))
        .collect::<Vec<_>>()
        .join("\n");
    let (one, two, three) = (last.find("one"), last.find("two"), last.find("three"));
    assert!(
        one.is_some() && one < two && two < three,
        "the group's outputs reach the next step in order: {logs}"
    );
    // logs --follow on an ended run prints the same, each line with its step.
    let followed = ok(&run(&scratch, &["logs", &id, "--follow"]));
    assert_eq!(followed, logs);
    assert!(
        logs.contains("[1.1 shell] one") && logs.contains("[1.3 shell] three"),
        "{logs}"
    );
}

#[test]
fn fail_fast_stops_the_running_tasks_and_starts_no_more() {
    let scratch = Scratch::new("fail-fast-e2e");
    // Two run at once: the first fails, the second would sleep for minutes, the third waits
    // for a slot; the step after the group never runs.
    let chain = write(
        &scratch.work().join("ff.yaml"),
        "failFast: true\nconcurrency: 2\nsteps:\n  - parallel:\n      - {agent: shell, task: 'exit 3'}\n      - {agent: shell, task: 'sleep 300'}\n      - {agent: shell, task: 'echo three'}\n  - {agent: shell, task: 'echo after'}\n",
    );
    let output = run(
        &scratch,
        &["run", "--chain", &chain.to_string_lossy(), "--wait", "--json"],
    );
    assert_eq!(output.status.code(), Some(1), "{}", text(&output.stderr));
    let end: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(end["state"], "failed", "{end}");
    let steps = end["steps"].as_array().unwrap();
    let states: Vec<&str> = steps.iter().map(|s| s["state"].as_str().unwrap()).collect();
    assert_eq!(states[0], "failed", "{end}");
    assert_eq!(states[1], "stopped", "the sleeping sibling was stopped: {end}");
    let sibling = steps[1]["error"].as_str().unwrap();
    assert!(sibling.contains("failed and failFast is set"), "{sibling}");
    for later in &steps[2..] {
        assert!(later["error"].as_str().unwrap().starts_with("Not run"), "{later}");
    }
}

/// Fake agent CLIs speaking the output formats of the adapters: pi's JSON events (task as
/// the last argument), Claude Code's stream-json `result` (task on stdin) and Codex's
/// `--output-last-message` file (task on stdin). Each answers `<name> says <task>`.
fn fake_clis(dir: &Path) -> PathBuf {
    let bin = dir.join("fake-bin");
    let clean = r#"tr -d '"\\\n\r' | tr -s ' '"#;
    let scripts = [
        (
            "pi",
            format!(
                "#!/bin/sh\nfor last; do :; done\ntask=$(printf %s \"$last\" | {clean})\n\
                 printf '{{\"type\":\"agent_start\"}}\\n'\n\
                 printf '{{\"type\":\"message_end\",\"message\":{{\"role\":\"assistant\",\"content\":[{{\"type\":\"text\",\"text\":\"pi says %s\"}}],\"stopReason\":\"stop\"}}}}\\n' \"$task\"\n"
            ),
        ),
        (
            "claude",
            format!(
                "#!/bin/sh\ntask=$(cat | {clean})\n\
                 printf '{{\"type\":\"system\",\"subtype\":\"init\"}}\\n'\n\
                 printf '{{\"type\":\"assistant\",\"message\":{{\"role\":\"assistant\",\"content\":[{{\"type\":\"text\",\"text\":\"claude says %s\"}}]}}}}\\n' \"$task\"\n\
                 printf '{{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":false,\"result\":\"claude says %s\"}}\\n' \"$task\"\n"
            ),
        ),
        (
            "codex",
            format!(
                "#!/bin/sh\nout=\nwhile [ $# -gt 0 ]; do\n  if [ \"$1\" = --output-last-message ]; then out=$2; shift; fi\n  shift\ndone\n\
                 task=$(cat | {clean})\nprintf '{{\"type\":\"turn.started\"}}\\n'\n\
                 printf 'codex says %s' \"$task\" > \"$out\"\n\
                 printf '{{\"type\":\"item.completed\",\"item\":{{\"type\":\"agent_message\",\"text\":\"codex says %s\"}}}}\\n' \"$task\"\n"
            ),
        ),
    ];
    for (name, script) in scripts {
        executable(&bin.join(name), &script);
    }
    bin
}

fn run_with_fakes(scratch: &Scratch, bin: &Path, args: &[&str]) -> Output {
    scratch
        .cli(args)
        .env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
        .output()
        .unwrap()
}

#[test]
fn chains_and_parallel_runs_of_fake_pi_claude_and_codex_run_end_to_end() {
    let scratch = Scratch::new("chain-fakes");
    let bin = fake_clis(scratch.path());
    let chain = write(
        &scratch.work().join("agents.yaml"),
        "steps:\n  - {agent: pi, task: 'map {task}'}\n  - {agent: claude, task: 'review: {previous}'}\n",
    );
    let output = run_with_fakes(
        &scratch,
        &bin,
        &[
            "run",
            "--chain",
            &chain.to_string_lossy(),
            "--task",
            "the parser",
            "--wait",
        ],
    );
    ok(&output);
    let id = run_id(&output);
    let logs = ok(&run(&scratch, &["logs", &id]));
    assert!(logs.contains("pi says map the parser"), "{logs}");
    assert!(
        logs.contains("claude says review: pi says map the parser"),
        "claude got pi's final message as {{previous}}: {logs}"
    );

    let parallel = write(
        &scratch.work().join("three.yaml"),
        "mode: parallel\nsteps:\n  - {agent: pi, task: 'one {task}'}\n  - {agent: claude, task: 'two {task}'}\n  - {agent: codex, task: 'three {task}'}\n",
    );
    let output = run_with_fakes(
        &scratch,
        &bin,
        &[
            "run",
            "--chain",
            &parallel.to_string_lossy(),
            "--task",
            "X",
            "--wait",
            "--json",
        ],
    );
    let result: Value = serde_json::from_str(&ok(&output)).unwrap();
    assert_eq!(result["state"], "complete", "{result}");
    let agents: Vec<&str> = result["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["agent"].as_str().unwrap())
        .collect();
    assert_eq!(agents, ["pi", "claude", "codex"]);
    let logs = ok(&run(&scratch, &["logs", result["runId"].as_str().unwrap()]));
    for said in ["pi says one X", "claude says two X"] {
        assert!(logs.contains(said), "{said}: {logs}");
    }
    assert!(logs.contains("[1.3 codex]"), "{logs}");
}

/// Model output is attacker-controlled: values a later shell step receives.
const HOSTILE_VALUES: [&str; 9] = [
    "$(touch PWNED)",
    "`touch PWNED`",
    "ok; touch PWNED",
    "line one\ntouch PWNED",
    "it's a \"quote\"",
    "-n --version",
    "'$(touch PWNED)'",
    "\"; touch PWNED; echo \"",
    "* ? [a] {previous} {task}",
];

#[test]
fn previous_and_task_reach_shell_steps_as_data_never_as_code() {
    let scratch = Scratch::new("chain-hostile");
    // Step 1's answer is the hostile text (from a file, so nothing quotes it on the way);
    // step 2 uses {previous} and {task} unquoted, quoted and in a here-document.
    let chain = write(
        &scratch.work().join("hostile.yaml"),
        "steps:\n  - {agent: shell, task: 'cat value.txt'}\n  - agent: shell\n    task: |\n      printf '%s' {previous} > plain.out\n      printf '%s' \"[{previous}]\" > quoted.out\n      printf '%s' {task} > task.out\n      cat > heredoc.out <<EOF\n      {previous}\n      EOF\n",
    );
    for value in HOSTILE_VALUES {
        std::fs::write(scratch.work().join("value.txt"), value).unwrap();
        let output = run(
            &scratch,
            &["run", "--chain", &chain.to_string_lossy(), "--task", value, "--wait"],
        );
        ok(&output);
        let read = |name: &str| std::fs::read_to_string(scratch.work().join(name)).unwrap();
        assert_eq!(read("plain.out"), value, "unquoted {{previous}}");
        assert_eq!(
            read("quoted.out"),
            format!("[{value}]"),
            "{{previous}} in double quotes"
        );
        assert_eq!(read("task.out"), value, "{{task}}");
        assert_eq!(
            read("heredoc.out"),
            format!("{value}\n"),
            "{{previous}} in a here-document"
        );
        assert!(!scratch.work().join("PWNED").exists(), "{value:?} ran as code");
    }
}

#[test]
fn a_value_the_environment_cannot_carry_fails_the_step_clearly() {
    let scratch = Scratch::new("chain-nul");
    let chain = write(
        &scratch.work().join("nul.yaml"),
        "steps:\n  - {agent: shell, task: 'printf \"a\\\\000b\"'}\n  - {agent: shell, task: 'echo {previous}'}\n",
    );
    let output = run(&scratch, &["run", "--chain", &chain.to_string_lossy(), "--wait"]);
    assert_eq!(output.status.code(), Some(10), "{}", text(&output.stderr));
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains(
            "The value of {previous} contains a NUL byte, so the shell script cannot receive it in $SUBLAUNCH_PREVIOUS."
        ),
        "{stderr}"
    );
}

#[test]
fn a_command_runner_gets_each_value_as_one_argument_and_shell_templates_get_references() {
    let scratch = Scratch::trusting("command-hostile");
    scratch.init_repo();
    write(
        &scratch.work().join(".sublaunch/agents/argv.md"),
        "---\nrunner:\n  type: command\n  command: [sh, -c, 'printf \"%s|\" \"$@\" > argv.out', sh, '{task}', 'x{task}']\n---\n",
    );
    write(
        &scratch.work().join(".sublaunch/agents/script.md"),
        "---\nrunner:\n  type: command\n  command: [sh, -c, \"printf '%s' {task} > script.out\"]\n---\n",
    );
    for value in HOSTILE_VALUES {
        for agent in ["argv", "script"] {
            let output = run(&scratch, &["run", "--agent", agent, "--task", value, "--wait"]);
            ok(&output);
        }
        let read = |name: &str| std::fs::read_to_string(scratch.work().join(name)).unwrap();
        assert_eq!(read("argv.out"), format!("{value}|x{value}|"), "one argument each");
        assert_eq!(read("script.out"), value, "the shell template read $SUBLAUNCH_PROMPT");
        assert!(!scratch.work().join("PWNED").exists(), "{value:?} ran as code");
    }
}

/// A step's answer that would run `touch PWNED` if a shell read it as code.
const WRAPPED_HOSTILE_VALUES: [&str; 6] = [
    "notes $(touch PWNED)",
    "'; touch PWNED; '",
    "x[$(touch PWNED)]",
    "`touch PWNED`",
    "\"; touch PWNED; echo \"",
    "-n *",
];

#[test]
fn a_chain_value_reaches_a_shell_behind_env_as_data() {
    let scratch = Scratch::trusting("chain-env-sh");
    scratch.init_repo();
    write(
        &scratch.work().join(".sublaunch/agents/envsh.md"),
        "---\nrunner:\n  type: command\n  command: [env, sh, -c, \"printf '%s' {task} > envsh.out\"]\n---\n",
    );
    let chain = write(
        &scratch.work().join("envsh.yaml"),
        "steps:\n  - {agent: shell, task: 'cat value.txt'}\n  - {agent: envsh, task: '{previous}'}\n",
    );
    for value in WRAPPED_HOSTILE_VALUES {
        std::fs::write(scratch.work().join("value.txt"), value).unwrap();
        ok(&run(&scratch, &["run", "--chain", &chain.to_string_lossy(), "--wait"]));
        let got = std::fs::read_to_string(scratch.work().join("envsh.out")).unwrap();
        assert_eq!(got, value, "the value arrives verbatim");
        assert!(!scratch.work().join("PWNED").exists(), "{value:?} ran as code");
    }
}

#[test]
fn a_chain_value_in_bash_arithmetic_is_refused_with_a_clear_error() {
    let scratch = Scratch::trusting("chain-bash-arith");
    scratch.init_repo();
    write(
        &scratch.work().join(".sublaunch/agents/counter.md"),
        "---\nrunner:\n  type: command\n  command: [bash, -c, 'echo count=$(( {task} + 1 ))']\n---\n",
    );
    let chain = write(
        &scratch.work().join("arith.yaml"),
        "steps:\n  - {agent: shell, task: \"printf '%s' 'x[$(touch PWNED)]'\"}\n  - {agent: counter, task: '{previous}'}\n",
    );
    let output = run(&scratch, &["run", "--chain", &chain.to_string_lossy(), "--wait"]);
    assert_eq!(output.status.code(), Some(10), "{}", text(&output.stderr));
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains(
            "Step 2 (counter): {task} on line 1 of the shell script stands in bash arithmetic ($(( )), (( )) or $[ ]), where bash evaluates the value as an expression"
        ),
        "{stderr}"
    );
    assert!(
        stderr.contains("(The script is argument 2 of the command template.)"),
        "{stderr}"
    );
    assert!(!scratch.work().join("PWNED").exists(), "the value ran as code");
    // The same in a `shell` step's script: bash is sh on many systems.
    let chain = write(
        &scratch.work().join("shell-arith.yaml"),
        "steps:\n  - {agent: shell, task: \"printf '%s' 'x[$(touch PWNED)]'\"}\n  - {agent: shell, task: 'echo $(( {previous} + 1 ))'}\n",
    );
    let output = run(&scratch, &["run", "--chain", &chain.to_string_lossy(), "--wait"]);
    assert_eq!(output.status.code(), Some(10), "{}", text(&output.stderr));
    assert!(
        text(&output.stderr)
            .contains("Step 2 (shell): {previous} on line 1 of the shell script stands in bash arithmetic"),
        "{}",
        text(&output.stderr)
    );
    assert!(!scratch.work().join("PWNED").exists(), "the value ran as code");
}

#[test]
fn a_shift_is_not_taken_for_a_here_document() {
    let scratch = Scratch::new("chain-shift");
    std::fs::create_dir_all(scratch.work().join("victimdir/sub")).unwrap();
    let chain = write(
        &scratch.work().join("rm.yaml"),
        "steps:\n  - {agent: shell, task: \"printf '%s' '-r victimdir'\"}\n  - agent: shell\n    task: |\n      n=$((1<<2))\n      rm -f {previous} 2>/dev/null; printf '[%s]' {previous}\n",
    );
    let output = run(&scratch, &["run", "--chain", &chain.to_string_lossy(), "--wait"]);
    assert_eq!(ok(&output), "[-r victimdir]\n", "one word, as written");
    assert!(scratch.work().join("victimdir/sub").is_dir(), "rm did not get -r");
}

#[test]
fn chain_files_that_are_huge_deep_or_not_files_are_refused_at_once() {
    let scratch = Scratch::new("chain-limits");
    let deep = write(
        &scratch.work().join("deep.yaml"),
        &format!("steps: {}{}\n", "[".repeat(200_000), "]".repeat(200_000)),
    );
    let huge = write(
        &scratch.work().join("huge.yaml"),
        &format!(
            "# {}\nsteps: [{{agent: shell, task: 'true'}}]\n",
            "x".repeat(2 * 1024 * 1024)
        ),
    );
    let fifo = scratch.work().join("fifo.yaml");
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let cases = [
        (&deep, "line 1: nested more than 64 levels deep".to_owned()),
        (
            &huge,
            "bytes; configuration files may have at most 1048576 bytes (1 MiB)".to_owned(),
        ),
        (&fifo, "the chain file is not a regular file".to_owned()),
        (
            &scratch.work().join("absent.yaml"),
            "the chain file does not exist".to_owned(),
        ),
    ];
    for (path, message) in cases {
        let started = std::time::Instant::now();
        let output = run(&scratch, &["run", "--chain", &path.to_string_lossy(), "--task", "x"]);
        assert!(
            started.elapsed() < std::time::Duration::from_secs(10),
            "{path:?} took {:?}",
            started.elapsed()
        );
        assert_eq!(output.status.code(), Some(2), "{path:?}");
        let stderr = text(&output.stderr);
        assert!(
            stderr.contains(&path.display().to_string()) && stderr.contains(&message),
            "{message}: {stderr}"
        );
    }
    assert!(names_in(&scratch.runs()).is_empty(), "nothing was launched");
}
