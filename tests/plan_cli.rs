//! `sublaunch plan` end to end: every public vector through the real binary and through the
//! library (typed records and the component's JSON entry point), and bad input of every kind.

use serde_json::Value;
use std::io::Write;
use std::process::{Command, Output, Stdio};
use sublaunch::contract::{self, PlanError};
use sublaunch::{Options, Planner};
use sublaunch_tests::{bin, vectors};

/// Runs `sublaunch plan` with `stdin` and a private component cache.
fn plan(stdin: &[u8], cache: &std::path::Path) -> Output {
    let mut child = Command::new(bin("sublaunch"))
        .arg("plan")
        .env("SUBLAUNCH_CACHE_DIR", cache)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    // The planner may refuse before reading everything; a closed pipe is then expected.
    let _ = input.write_all(stdin);
    drop(input);
    child.wait_with_output().unwrap()
}

fn json(output: &Output) -> Value {
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}): {}\nstderr: {}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )
    })
}

#[test]
fn every_public_vector_passes_through_the_cli() {
    let cache = tempfile::tempdir().unwrap();
    vectors::assert_all_pass("", |request| {
        let output = plan(request, cache.path());
        let code = output.status.code();
        assert!(matches!(code, Some(0 | 1)), "exit {code:?}");
        (json(&output), code == Some(0))
    });
}

#[test]
fn typed_records_and_the_json_entry_point_give_identical_documents() {
    let planner = Planner::embedded(Options::default()).unwrap();
    for (_, vector) in vectors::all() {
        let text = serde_json::to_string(&vector.request).unwrap();
        let typed = contract::parse_request(text.as_bytes()).and_then(|request| planner.plan(&request));
        let through_json = planner.plan_json(&text);
        let printed_typed = contract::render(&typed);
        let printed_json = match through_json {
            Ok(document) => document,
            Err(error) => contract::render(&Err::<contract::LaunchPlan, PlanError>(error)),
        };
        assert_eq!(printed_typed, printed_json, "{}", vector.name);
    }
}

/// Asserts that `stdin` is refused with `invalid-request` (exit 1, JSON on stdout) and
/// that the message contains `fragment`.
fn refused(stdin: &[u8], fragment: &str) {
    let cache = tempfile::tempdir().unwrap();
    let output = plan(stdin, cache.path());
    assert_eq!(
        output.status.code(),
        Some(1),
        "stderr: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let document = json(&output);
    assert_eq!(document["error"]["code"], "invalid-request", "{document}");
    let message = document["error"]["message"].as_str().unwrap();
    assert!(message.contains(fragment), "{message:?} lacks {fragment:?}");
}

const AGENTS: &str = r#""agents":[{"name":"w"}]"#;

#[test]
fn malformed_json_is_refused_with_its_position() {
    refused(br#"{"cwd": "/c", "mode": "#, "line 1 column");
    refused(b"", "EOF");
    refused(br#"{"cwd":"/c","mode":"single","steps":[]} trailing"#, "trailing");
}

#[test]
fn wrong_types_are_refused_with_the_json_path() {
    let request = format!(r#"{{"cwd":"/c","mode":"single",{AGENTS},"steps":[{{"agent":5,"task":"t"}}]}}"#);
    refused(request.as_bytes(), "steps[0].agent");
    let request =
        format!(r#"{{"cwd":"/c","mode":"single",{AGENTS},"steps":[{{"agent":"w","task":"t","machine":7}}]}}"#);
    refused(request.as_bytes(), "steps[0].machine");
    refused(br#"{"cwd":"/c","mode":"single","steps":{}}"#, "steps");
    refused(
        br#"{"cwd":"/c","mode":"single","steps":[],"agents":[{"name":1}]}"#,
        "agents[0].name",
    );
}

#[test]
fn an_unknown_mode_is_refused() {
    refused(br#"{"cwd":"/c","mode":"sideways","steps":[]}"#, "mode");
}

#[test]
fn empty_steps_are_refused_for_every_mode() {
    for mode in ["single", "chain", "parallel"] {
        let request = format!(r#"{{"cwd":"/c","mode":"{mode}",{AGENTS},"steps":[]}}"#);
        refused(request.as_bytes(), "steps");
    }
}

#[test]
fn a_parallel_group_inside_a_parallel_group_is_refused() {
    let request = format!(
        r#"{{"cwd":"/c","mode":"chain",{AGENTS},"steps":[{{"parallel":[{{"agent":"w","task":"t","parallel":[{{"agent":"w","task":"t"}}]}}]}}]}}"#
    );
    refused(request.as_bytes(), "steps[0].parallel[0]");
    let request = format!(
        r#"{{"cwd":"/c","mode":"parallel",{AGENTS},"steps":[{{"agent":"w","task":"t"}},{{"parallel":[{{"agent":"w","task":"t"}}]}}]}}"#
    );
    refused(request.as_bytes(), "steps[1].parallel");
}

#[test]
fn a_relative_cwd_is_refused() {
    let request = format!(r#"{{"cwd":"code/repo","mode":"single",{AGENTS},"steps":[{{"agent":"w","task":"t"}}]}}"#);
    refused(request.as_bytes(), "absolute");
}

#[test]
fn a_50_mb_request_is_refused_without_reading_it_all() {
    let mut request = format!(r#"{{"cwd":"/c","mode":"single",{AGENTS},"steps":[{{"agent":"w","task":""#).into_bytes();
    request.resize(50 * 1024 * 1024, b'x');
    request.extend_from_slice(br#""}]}"#);
    refused(&request, "16 MiB");
}

#[test]
fn deeply_nested_json_is_refused() {
    let nested = |prefix: &str, suffix: &str| {
        let mut request = prefix.as_bytes().to_vec();
        request.extend(std::iter::repeat_n(b'[', 100_000));
        request.extend(std::iter::repeat_n(b']', 100_000));
        request.extend_from_slice(suffix.as_bytes());
        request
    };
    // Where any JSON value is allowed, the parser's nesting limit stops it.
    let step = format!(r#"{{"cwd":"/c","mode":"single",{AGENTS},"steps":[{{"agent":"w","task":"t","outputSchema":"#);
    refused(&nested(&step, "}]}"), "recursion limit exceeded");
    // Where a string is expected, the first bracket is already wrong.
    refused(
        &nested(r#"{"cwd":"/c","mode":"single","steps":[],"platform":"#, "}"),
        "platform",
    );
}

#[test]
fn invalid_utf8_on_stdin_is_refused() {
    let mut request = br#"{"cwd":"/c","mode":"single","agents":[{"name":"w"}],"steps":[{"agent":"w","task":""#.to_vec();
    request.extend_from_slice(&[0xff, 0xfe, 0x80]);
    request.extend_from_slice(br#""}]}"#);
    refused(&request, "unicode");
}

#[test]
fn a_request_file_works_like_stdin() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("request.json");
    std::fs::write(
        &file,
        format!(r#"{{"cwd":"/c","mode":"single",{AGENTS},"steps":[{{"agent":"w","task":"t"}}]}}"#),
    )
    .unwrap();
    let output = Command::new(bin("sublaunch"))
        .args(["plan", "--request"])
        .arg(&file)
        .env("SUBLAUNCH_CACHE_DIR", dir.path().join("cache"))
        .output()
        .unwrap();
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stdout)
    );
    let plan = json(&output);
    assert_eq!(plan["steps"][0]["agent"], "w");
    assert_eq!(plan["steps"][0]["cwd"], "/c");
    // `--request -` is standard input.
    let mut child = Command::new(bin("sublaunch"))
        .args(["plan", "--request", "-"])
        .env("SUBLAUNCH_CACHE_DIR", dir.path().join("cache"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(&std::fs::read(&file).unwrap())
        .unwrap();
    let from_stdin = child.wait_with_output().unwrap();
    assert_eq!(from_stdin.status.code(), Some(0));
    assert_eq!(from_stdin.stdout, output.stdout);
}

#[test]
fn usage_errors_exit_2_with_help() {
    let output = Command::new(bin("sublaunch"))
        .args(["plan", "--bogus"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("Usage: sublaunch plan"));
    let output = Command::new(bin("sublaunch")).output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("Commands:"));
    let output = Command::new(bin("sublaunch"))
        .args(["plan", "--request", "/nonexistent/request.json"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("/nonexistent/request.json"));
}
