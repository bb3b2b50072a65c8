//! Acceptance contracts (rules G70–G79) through the real CLI, real processes and real git:
//! gates that pass, fail, hang and are stopped; reports that are valid, malformed or lie;
//! checks against git; memoised verification; inferred contracts only shown; refusals before
//! anything starts. The agents are `shell` steps that act as a coding agent would (write,
//! commit, stage, print the report block).

use serde_json::Value;
use std::time::Duration;
use sublaunch_tests::cli::{git, ok, text, waited_run_id, write};
use sublaunch_tests::launch_harness::{Scratch, events_of, names_in, processes_with, wait_for, wait_terminal};

const LIMIT: Duration = Duration::from_secs(60);

/// A scratch whose `work/` is a repository with one commit (`README`).
fn repository(name: &str) -> Scratch {
    let scratch = Scratch::new(name);
    scratch.create_root();
    let work = scratch.init_repo();
    write(&work.join("README"), "hello\n");
    git(&work, &["add", "-A"]);
    git(&work, &["commit", "-qm", "base"]);
    scratch
}

/// A user agent `name` that runs its task with `sh`, with `extra` frontmatter lines.
fn shell_agent(scratch: &Scratch, name: &str, extra: &str) {
    write(
        &scratch.path().join(format!("home/.config/sublaunch/agents/{name}.md")),
        &format!("---\nrunner:\n  type: external-cli\n  adapter: shell\n{extra}---\n"),
    );
}

/// The first step's `acceptance` record of a run's result.
fn acceptance(scratch: &Scratch, run_id: &str) -> Value {
    scratch.answer_json(run_id)["steps"][0]["acceptance"].clone()
}

/// A shell fragment printing an acceptance report block holding `json`.
fn report(json: &str) -> String {
    format!("printf '%s\\n' 'done.' '```acceptance-report' '{json}' '```'")
}

/// G70, G75, G78, G79: a gate that passes makes the step verified; one that fails fails the
/// step with its exit code and output, and its log is kept.
#[test]
fn a_gate_decides_whether_the_step_completes() {
    let scratch = repository("accept-gate");
    let passed = scratch
        .cli(&[
            "run",
            "--agent",
            "shell",
            "--task",
            "echo made > made.txt; echo hi",
            "--gate",
            "test -f made.txt",
            "--wait",
        ])
        .output()
        .unwrap();
    assert!(passed.status.success(), "{}", text(&passed.stderr));
    assert_eq!(ok(&passed).trim(), "hi");
    assert!(
        text(&passed.stderr).contains("acceptance: verified"),
        "{}",
        text(&passed.stderr)
    );
    let record = acceptance(&scratch, &waited_run_id(&passed));
    assert_eq!(record["status"], "verified", "{record}");
    assert_eq!(record["verify"][0]["id"], "gate");
    assert_eq!(record["verify"][0]["exitCode"], 0);

    let failed = scratch
        .cli(&[
            "run",
            "--agent",
            "shell",
            "--task",
            "echo hi",
            "--gate",
            "echo 'tests: 3 failed' >&2; exit 3",
            "--wait",
        ])
        .output()
        .unwrap();
    assert_eq!(failed.status.code(), Some(18), "{}", text(&failed.stderr));
    let run_id = waited_run_id(&failed);
    let record = acceptance(&scratch, &run_id);
    assert_eq!(record["status"], "rejected", "{record}");
    assert_eq!(record["verify"][0]["status"], "failed");
    assert_eq!(record["verify"][0]["exitCode"], 3);
    let result = scratch.answer_json(&run_id);
    let error = result["steps"][0]["error"].as_str().unwrap_or_default();
    assert!(
        error.contains("was not accepted") && error.contains("exit 3"),
        "{error}"
    );
    assert!(
        error.contains("tests: 3 failed"),
        "the output's tail is in the message: {error}"
    );
    let log = scratch.run_dir(&run_id).join("gate-0-gate.log");
    assert!(std::fs::read_to_string(&log).unwrap().contains("tests: 3 failed"));
    let status = ok(&scratch.cli(&["status", &run_id]).output().unwrap());
    assert!(status.contains("accept   shell: rejected"), "{status}");
}

/// G70: a bare gate is its whole contract: it needs no report and no git repository.
#[test]
fn a_gate_runs_outside_git_too() {
    let scratch = Scratch::new("accept-nogit");
    scratch.create_root();
    let output = scratch
        .cli(&[
            "run",
            "--agent",
            "shell",
            "--task",
            "echo hi",
            "--gate",
            "test -d .",
            "--wait",
        ])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", text(&output.stderr));
    let record = acceptance(&scratch, &waited_run_id(&output));
    assert_eq!(
        (record["status"].as_str(), record.get("tree")),
        (Some("verified"), None),
        "{record}"
    );
}

/// G78: a gate that hangs is stopped at its time limit with its whole tree, and the step
/// fails saying so.
#[test]
fn a_hanging_gate_is_stopped_at_its_limit_with_its_tree() {
    let scratch = repository("accept-hang");
    let mark = format!("gate-hang-{}", std::process::id());
    let chain = write(
        &scratch.work().join("chain.yaml"),
        &format!(
            "steps:\n  - agent: shell\n    task: echo hi\n    gate: {{command: \"(setsid sleep 300 &); sleep 300 # {mark}\", timeout: 1s}}\n"
        ),
    );
    let output = scratch
        .cli(&["run", "--chain", chain.to_str().unwrap(), "--wait"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(18), "{}", text(&output.stderr));
    let record = acceptance(&scratch, &waited_run_id(&output));
    assert_eq!(record["verify"][0]["status"], "timed-out", "{record}");
    assert!(record["problems"][0].as_str().unwrap().contains("ran out of time"));
    assert_eq!(processes_with(&mark), Vec::<u32>::new(), "the gate's tree outlived it");
}

/// G78: the run's stop reaches a running gate: the step ends stopped and nothing is left.
#[test]
fn a_stop_during_verification_stops_the_step_and_its_gate() {
    let scratch = repository("accept-stop");
    let mark = format!("gate-stop-{}", std::process::id());
    let started = scratch.path().join("gate-started");
    let gate = format!("touch {}; sleep 300 # {mark}", started.display());
    let output = scratch
        .cli(&["run", "--agent", "shell", "--task", "echo hi", "--gate", &gate])
        .output()
        .unwrap();
    let run_id = ok(&output).lines().next().unwrap().trim().to_owned();
    wait_for("the gate to start", LIMIT, || started.exists().then_some(()));
    ok(&scratch.cli(&["stop", &run_id]).output().unwrap());
    let status = wait_terminal(&scratch.run_dir(&run_id), LIMIT);
    assert_eq!(status["state"], "stopped", "{status}");
    let record = acceptance(&scratch, &run_id);
    assert_eq!(record["verify"][0]["status"], "stopped", "{record}");
    assert_eq!(processes_with(&mark), Vec::<u32>::new());
    let verifying = events_of(&scratch.run_dir(&run_id), "subagent.step.verifying");
    assert_eq!(verifying.len(), 1, "{verifying:?}");
    assert_eq!(verifying[0]["gate"], "gate");
}

/// G78: the same gate on an unchanged tree runs once per run; a changed tree runs it again.
#[test]
fn an_unchanged_tree_is_not_verified_twice() {
    let scratch = repository("accept-memo");
    let count = scratch.path().join("count");
    let chain = write(
        &scratch.work().join(".git/info/chain.yaml"),
        "steps:\n  - {agent: shell, task: 'echo one > one.txt'}\n  - {agent: shell, task: 'echo reads'}\n  - {agent: shell, task: 'echo two > two.txt'}\n",
    );
    let gate = format!("echo ran >> {}", count.display());
    let output = scratch
        .cli(&["run", "--chain", chain.to_str().unwrap(), "--gate", &gate, "--wait"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", text(&output.stderr));
    let result = scratch.answer_json(&waited_run_id(&output));
    let memoized: Vec<bool> = (0..3)
        .map(|i| {
            result["steps"][i]["acceptance"]["verify"][0]["memoized"]
                .as_bool()
                .unwrap_or(false)
        })
        .collect();
    assert_eq!(memoized, [false, true, false], "{result}");
    assert_eq!(std::fs::read_to_string(&count).unwrap().lines().count(), 2);
}

/// G76, G79: an attested step's report is parsed and taken out of the answer; a malformed one
/// fails the step naming the field; a missing one leaves the work claimed, not attested.
#[test]
fn reports_are_parsed_taken_out_of_the_answer_and_judged() {
    let scratch = repository("accept-report");
    let good = report(r#"{"criteriaSatisfied": [], "changedFiles": [], "residualRisks": ["none"]}"#);
    let output = scratch
        .cli(&[
            "run", "--agent", "shell", "--task", &good, "--accept", "attested", "--wait",
        ])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert_eq!(ok(&output).trim(), "done.", "the block is gone from the answer");
    let run_id = waited_run_id(&output);
    let record = acceptance(&scratch, &run_id);
    assert_eq!(record["status"], "attested", "{record}");
    assert_eq!(record["report"]["residualRisks"][0], "none");
    let log = std::fs::read_to_string(scratch.run_dir(&run_id).join("output-0.log")).unwrap();
    assert!(log.contains("```acceptance-report"), "the log keeps the block");

    let bad = report(r#"{"commandsRun": [{"command": "make", "result": "sort of"}]}"#);
    let output = scratch
        .cli(&[
            "run", "--agent", "shell", "--task", &bad, "--accept", "attested", "--wait",
        ])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(18));
    let record = acceptance(&scratch, &waited_run_id(&output));
    assert_eq!(record["status"], "rejected", "{record}");
    assert_eq!(
        record["reportProblems"][0]["path"], "$.commandsRun[0].result",
        "{record}"
    );

    let output = scratch
        .cli(&[
            "run",
            "--agent",
            "shell",
            "--task",
            "echo no report",
            "--accept",
            "attested",
            "--wait",
        ])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(18));
    let record = acceptance(&scratch, &waited_run_id(&output));
    assert!(
        record["problems"][0].as_str().unwrap().contains("no acceptance report"),
        "{record}"
    );
}

/// G77, G78: checked against git, a report naming a file the agent did not change, files
/// left staged, and a claim that a failing command passed are each caught.
#[test]
fn claims_are_checked_against_git_and_the_runners_own_runs() {
    let scratch = repository("accept-git");
    let lies = format!(
        "echo new > new.txt; git add new.txt; {}",
        report(
            r#"{"changedFiles": ["new.txt", "src/main.rs"], "commandsRun": [{"command": "exit 1", "result": "passed", "summary": "ok"}], "noStagedFiles": true}"#
        )
    );
    let chain = write(
        &scratch.path().join("lies.yaml"),
        &format!(
            "steps:\n  - agent: shell\n    task: {}\n    acceptance: {{level: checked, evidence: [changed-files, no-staged-files]}}\n",
            serde_json::to_string(&lies).unwrap()
        ),
    );
    let output = scratch
        .cli(&["run", "--chain", chain.to_str().unwrap(), "--wait"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(18), "{}", text(&output.stderr));
    let record = acceptance(&scratch, &waited_run_id(&output));
    let problems = record["problems"].to_string();
    assert!(problems.contains("git shows unchanged: src/main.rs"), "{record}");
    assert!(problems.contains("left staged: new.txt"), "{record}");
    assert_eq!(record["tree"]["changedFiles"], serde_json::json!(["new.txt"]));

    let claims = write(
        &scratch.path().join("claims.yaml"),
        &format!(
            "steps:\n  - agent: shell\n    task: {}\n    acceptance: {{verify: ['exit 1']}}\n",
            serde_json::to_string(&format!(
                "echo x > x.txt; {}",
                report(r#"{"changedFiles": ["x.txt"], "commandsRun": [{"command": "exit 1", "result": "passed", "summary": "all green"}]}"#)
            ))
            .unwrap()
        ),
    );
    let output = scratch
        .cli(&["run", "--chain", claims.to_str().unwrap(), "--wait"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(18));
    let record = acceptance(&scratch, &waited_run_id(&output));
    assert!(
        record["problems"]
            .to_string()
            .contains("the report says 'exit 1' passed"),
        "{record}"
    );
}

/// G74, G75: a writer role infers a checked contract that is shown and never fails the step;
/// `--accept off` turns it off; a reader has none.
#[test]
fn an_inferred_contract_is_shown_and_never_fails_the_step() {
    let scratch = repository("accept-infer");
    shell_agent(&scratch, "writer", "acceptanceRole: writer\n");
    shell_agent(&scratch, "reader", "acceptanceRole: read-only\n");
    let output = scratch
        .cli(&["run", "--agent", "writer", "--task", "echo no evidence", "--wait"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", text(&output.stderr));
    let record = acceptance(&scratch, &waited_run_id(&output));
    assert_eq!(
        (record["explicit"].as_bool(), record["status"].as_str()),
        (Some(false), Some("rejected"))
    );
    assert!(
        text(&output.stderr).contains("inferred, not enforced"),
        "{}",
        text(&output.stderr)
    );
    for (agent, accept) in [("writer", Some("off")), ("reader", None)] {
        let mut args = vec!["run", "--agent", agent, "--task", "echo x", "--wait"];
        if let Some(level) = accept {
            args.extend(["--accept", level]);
        }
        let output = scratch.cli(&args).output().unwrap();
        assert!(output.status.success());
        assert_eq!(acceptance(&scratch, &waited_run_id(&output)), Value::Null);
    }
}

/// G70, G71: meaningless contracts are refused before anything starts, naming the flag or
/// the field; no run is made.
#[test]
fn meaningless_contracts_start_nothing() {
    let scratch = repository("accept-refuse");
    let output = scratch
        .cli(&["run", "--agent", "shell", "--task", "x", "--accept", "verified"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(
        text(&output.stderr).contains("use --gate CMD"),
        "{}",
        text(&output.stderr)
    );
    let output = scratch
        .cli(&[
            "run", "--agent", "shell", "--task", "x", "--accept", "checked", "--gate", "true",
        ])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let chain = write(
        &scratch.path().join("bad.yaml"),
        "steps:\n  - agent: shell\n    task: x\n    acceptance: reviewed\n",
    );
    let output = scratch
        .cli(&["run", "--chain", chain.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let said = text(&output.stderr);
    assert!(
        said.contains("steps[0].acceptance") && said.contains("reviewed is not a level"),
        "{said}"
    );
    let made: Vec<String> = names_in(&scratch.runs())
        .into_iter()
        .filter(|name| !name.starts_with('.'))
        .collect();
    assert_eq!(made, Vec::<String>::new(), "a refused contract made a run");
}

/// G80: a typed gate's JSON output becomes the step's structured value, which a later step
/// reads as `{outputs.NAME}`; output that breaks its schema fails the step naming the field.
#[test]
fn a_typed_gate_hands_its_json_to_later_steps() {
    let scratch = repository("accept-typed");
    let chain = |name: &str, printed: &str| {
        write(
            &scratch.path().join(format!("{name}.yaml")),
            &format!(
                "steps:\n  - agent: shell\n    task: echo measured\n    as: count\n    gate:\n      command: {}\n      output: json\n      schema: {{type: object, required: [files], properties: {{files: {{type: integer}}}}}}\n  - agent: shell\n    task: 'echo \"got {{outputs.count}}\"'\n",
                serde_json::to_string(&format!("printf '%s' '{printed}'")).unwrap()
            ),
        )
    };
    let good = chain("good", r#"{"files": 3}"#);
    let output = scratch
        .cli(&["run", "--chain", good.to_str().unwrap(), "--wait"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", text(&output.stderr));
    let result = scratch.answer_json(&waited_run_id(&output));
    assert_eq!(result["steps"][0]["structured"]["files"], 3, "{result}");
    assert!(
        result["steps"][1]["output"].as_str().unwrap().contains("\"files\": 3"),
        "{result}"
    );

    let bad = chain("bad", r#"{"files": "three"}"#);
    let output = scratch
        .cli(&["run", "--chain", bad.to_str().unwrap(), "--wait"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(18));
    let record = acceptance(&scratch, &waited_run_id(&output));
    assert_eq!(record["verify"][0]["status"], "failed", "{record}");
    assert!(record["problems"][0].as_str().unwrap().contains("$.files"), "{record}");
}

/// A reviewer agent `name` (a command runner, the way a reviewer CLI is driven): `script` is
/// run with `sh`, the prompt in `$SUBLAUNCH_PROMPT`.
fn reviewer_agent(scratch: &Scratch, name: &str, script: &str) {
    let path = write(&scratch.path().join(format!("{name}.sh")), script);
    write(
        &scratch.path().join(format!("home/.config/sublaunch/agents/{name}.md")),
        &format!(
            "---\nrunner:\n  type: command\n  command: [sh, {}]\n---\n",
            serde_json::to_string(&path.to_string_lossy()).unwrap()
        ),
    );
}

/// A reviewer script that fails unless its prompt shows the step's diff and task, then
/// prints `findings` as its review-findings block.
fn reviewing(findings: &str) -> String {
    format!(
        "case \"$SUBLAUNCH_PROMPT\" in *'+made by the step'*) ;; *) echo 'no diff in the prompt'; exit 9;; esac\n\
         case \"$SUBLAUNCH_PROMPT\" in *'review-findings'*) ;; *) echo 'no block asked for'; exit 9;; esac\n\
         printf '%s\\n' 'Reviewed.' '```review-findings' '{findings}' '```'\n"
    )
}

/// A chain file of one `shell` step that writes `made.txt` (uncommitted) and reports it, its
/// contract `checked` with a review by `critic` (`required` as given).
fn reviewed_chain(scratch: &Scratch, file: &str, required: bool) -> std::path::PathBuf {
    let task = format!(
        "echo 'made by the step' > made.txt; {}",
        report(r#"{"changedFiles": ["made.txt"]}"#)
    );
    write(
        &scratch.path().join(file),
        &format!(
            "steps:\n  - agent: shell\n    task: {}\n    acceptance: {{level: checked, evidence: [changed-files], review: {{agent: critic, required: {required}}}}}\n",
            serde_json::to_string(&task).unwrap()
        ),
    )
}

/// Runs [`reviewed_chain`] to its end: the output and the run id.
fn reviewed_run(scratch: &Scratch, file: &str, required: bool) -> (std::process::Output, String) {
    let chain = reviewed_chain(scratch, file, required);
    let output = scratch
        .cli(&["run", "--chain", chain.to_str().unwrap(), "--wait"])
        .output()
        .unwrap();
    let run_id = waited_run_id(&output);
    (output, run_id)
}

/// G81: a reviewer's blocking finding rejects the step when the review is required (the
/// finding in the result and on the terminal); when it is not, it is only shown; a review
/// that accepts makes the work `reviewed`. The reviewer sees the step's uncommitted diff.
#[test]
fn a_required_review_decides_and_an_optional_one_is_only_shown() {
    let scratch = repository("accept-review");
    reviewer_agent(
        &scratch,
        "critic",
        &reviewing(
            r#"{"findings": [{"severity": "blocking", "file": "made.txt", "message": "the file says nothing useful"}], "verdict": "reject"}"#,
        ),
    );
    let (output, run_id) = reviewed_run(&scratch, "required.yaml", true);
    assert_eq!(output.status.code(), Some(18), "{}", text(&output.stderr));
    assert!(
        text(&output.stderr).contains("the file says nothing useful"),
        "the finding is shown: {}",
        text(&output.stderr)
    );
    let record = acceptance(&scratch, &run_id);
    assert_eq!(record["status"], "rejected", "{record}");
    assert_eq!(record["review"]["status"], "rejected", "{record}");
    assert_eq!(record["review"]["agent"], "critic");
    assert_eq!(record["review"]["findings"][0]["file"], "made.txt", "{record}");
    assert_eq!(record["review"]["findings"][0]["severity"], "blocking");
    assert!(record["problems"].to_string().contains("review by critic"), "{record}");
    let log = record["review"]["outputFile"].as_str().unwrap();
    assert!(
        std::fs::read_to_string(log).unwrap().contains("Reviewed."),
        "the reviewer's log is kept"
    );
    let answer = scratch.answer_json(&run_id);
    assert_ne!(answer["steps"][0]["status"], "complete", "{answer}");

    let (output, run_id) = reviewed_run(&scratch, "optional.yaml", false);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let record = acceptance(&scratch, &run_id);
    assert_eq!(
        record["status"], "checked",
        "an optional review is only shown: {record}"
    );
    assert_eq!(record["review"]["status"], "rejected", "{record}");
    assert!(
        text(&output.stderr).contains("review by critic (not required)"),
        "{}",
        text(&output.stderr)
    );

    reviewer_agent(
        &scratch,
        "critic",
        &reviewing(r#"{"findings": [{"severity": "minor", "message": "could say more"}], "verdict": "accept"}"#),
    );
    let (output, run_id) = reviewed_run(&scratch, "passes.yaml", true);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let record = acceptance(&scratch, &run_id);
    assert_eq!(record["status"], "reviewed", "{record}");
    assert_eq!(record["review"]["verdict"], "accept", "{record}");
    assert_eq!(record["review"]["findings"][0]["message"], "could say more");
}

/// G81: a required review whose reviewer fails, or ends without a usable block, rejects the
/// step with a problem saying so; it never hangs and never passes.
#[test]
fn a_reviewer_without_a_verdict_rejects_a_required_review() {
    let scratch = repository("accept-review-fails");
    let cases = [
        ("echo 'crashed' >&2; exit 3", "the reviewer failed (exit 3)"),
        ("echo 'looks fine to me'", "no review-findings block"),
        (
            "printf '%s\\n' '```review-findings' '{\"findings\": [], \"verdict\": \"perhaps\"}' '```'",
            "$.verdict",
        ),
    ];
    for (i, (script, says)) in cases.into_iter().enumerate() {
        reviewer_agent(&scratch, "critic", script);
        let (output, run_id) = reviewed_run(&scratch, &format!("case-{i}.yaml"), true);
        assert_eq!(output.status.code(), Some(18), "{script}: {}", text(&output.stderr));
        let record = acceptance(&scratch, &run_id);
        assert_eq!(record["status"], "rejected", "{script}: {record}");
        assert_eq!(record["review"]["status"], "failed", "{script}: {record}");
        assert!(record["problems"].to_string().contains(says), "{script}: {record}");
    }
}

/// G81, G78: the run's stop reaches a reviewer that is still reading: the run ends stopped,
/// the review is recorded as stopped (never passed), and nothing of the reviewer is left.
#[test]
fn a_stop_during_a_review_stops_the_reviewer_and_passes_nothing() {
    let scratch = repository("accept-review-stop");
    let mark = format!("critic-hangs-{}", std::process::id());
    let started = scratch.path().join("review-started");
    reviewer_agent(
        &scratch,
        "critic",
        // The mark in a shell's command line, which waits for its sleep.
        &format!("sh -c 'touch {}; sleep 300; : {mark}'\n", started.display()),
    );
    let chain = reviewed_chain(&scratch, "stopped.yaml", true);
    let output = scratch
        .cli(&["run", "--chain", chain.to_str().unwrap()])
        .output()
        .unwrap();
    let run_id = ok(&output).lines().next().unwrap().trim().to_owned();
    wait_for("the reviewer to start", LIMIT, || started.exists().then_some(()));
    assert!(!processes_with(&mark).is_empty(), "the reviewer runs");
    ok(&scratch.cli(&["stop", &run_id]).output().unwrap());
    let status = wait_terminal(&scratch.run_dir(&run_id), LIMIT);
    assert_eq!(status["state"], "stopped", "{status}");
    let record = acceptance(&scratch, &run_id);
    assert_eq!(record["review"]["status"], "stopped", "{record}");
    assert_ne!(record["status"], "reviewed", "{record}");
    assert_eq!(
        processes_with(&mark),
        Vec::<u32>::new(),
        "the reviewer outlived the stop"
    );
}
