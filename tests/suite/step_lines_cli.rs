//! What a step's progress line says when it fails, and what `run --wait` prints for a step
//! with an output schema: the reason a person needs first (the agent's or the API's words,
//! the first schema violation), and the validated JSON value as the answer.

use serde_json::Value;
use sublaunch_tests::cli::{ok, text, write};
use sublaunch_tests::launch_harness::Scratch;

/// The `judge` agent: prints `verdict.txt`, with an output schema.
fn judge(scratch: &Scratch, verdict: &str) {
    write(
        &scratch.work().join(".sublaunch/agents/judge.md"),
        "---\nname: judge\nrunner:\n  type: command\n  command: [cat, verdict.txt]\n\
         outputSchema:\n  type: object\n  required: [verdict]\n  properties:\n    verdict: {enum: [approve, reject]}\n---\nJudge.\n",
    );
    write(&scratch.work().join("verdict.txt"), verdict);
}

#[test]
fn a_structured_run_answers_with_its_validated_json() {
    let scratch = Scratch::trusting("answer-structured");
    judge(
        &scratch,
        "Here it is:\n```json\n{\"verdict\": \"approve\"}\n```\nThat is all.\n",
    );
    let output = scratch
        .cli(&["run", "--agent", "judge", "--task", "judge it", "--wait"])
        .output()
        .unwrap();
    let answer: Value = serde_json::from_str(&ok(&output)).expect("stdout is the JSON value alone");
    assert_eq!(answer, serde_json::json!({"verdict": "approve"}));
}

#[test]
fn a_failed_schema_check_names_its_first_violation_on_the_step_line() {
    let scratch = Scratch::trusting("answer-schema");
    judge(&scratch, "{\"verdict\": \"maybe\"}");
    let output = scratch
        .cli(&["run", "--agent", "judge", "--task", "judge it", "--wait"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(17));
    let stderr = text(&output.stderr);
    let line = stderr
        .lines()
        .find(|l| l.starts_with("step 1 judge: failed"))
        .unwrap_or_else(|| panic!("{stderr}"));
    assert!(
        line.contains("does not match its output schema (1 error): $.verdict: "),
        "the violation follows on the step line: {line}"
    );
}

#[test]
fn the_reason_an_agent_gave_comes_first_on_its_step_line() {
    let scratch = Scratch::new("answer-reason");
    let output = scratch
        .cli(&[
            "run",
            "--agent",
            "shell",
            "--task",
            "echo 'API Error: 400 {\"message\":\"model not found\"}' >&2; exit 1",
            "--wait",
        ])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains("step 1 shell: failed after ")
            && stderr.contains("(exit code 1): API Error: 400 {\"message\":\"model not found\"}\n"),
        "{stderr}"
    );
}
