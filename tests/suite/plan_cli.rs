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
    plan_with(&[], stdin, cache)
}

/// Runs `sublaunch plan ARGS` with `stdin` and a private component cache.
pub(crate) fn plan_with(args: &[&str], stdin: &[u8], cache: &std::path::Path) -> Output {
    let mut child = Command::new(bin("sublaunch"))
        .arg("plan")
        .args(args)
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
    let cache = dir.path().join("cache");
    let output = plan_with(&["--request", &file.to_string_lossy()], b"", &cache);
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
    let from_stdin = plan_with(&["--request", "-"], &std::fs::read(&file).unwrap(), &cache);
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

/// The JSON pointer of every value in `value`, the root (`""`) first.
fn json_paths(value: &Value, at: String, out: &mut Vec<String>) {
    out.push(at.clone());
    match value {
        Value::Object(map) => {
            for (key, child) in map {
                json_paths(
                    child,
                    format!("{at}/{}", key.replace('~', "~0").replace('/', "~1")),
                    out,
                );
            }
        }
        Value::Array(items) => {
            for (index, child) in items.iter().enumerate() {
                json_paths(child, format!("{at}/{index}"), out);
            }
        }
        _ => {}
    }
}

/// Hostile requests (bad input, E1): every public vector's request with each value in turn
/// replaced by a value of another shape, an extreme number, a long or odd string, or removed;
/// and its text cut short. The planner answers each with a plan or a typed error that has a
/// message — never a fault (a trap, a panic, running out of fuel or memory).
#[test]
fn hostile_variants_of_every_vector_get_a_plan_or_a_typed_error_never_a_fault() {
    let planner = Planner::embedded(Options::default()).unwrap();
    let replacements = vec![
        serde_json::json!(null),
        serde_json::json!(true),
        serde_json::json!(-1),
        serde_json::json!(1e308),
        serde_json::json!(18_446_744_073_709_551_615_u64),
        serde_json::json!(""),
        serde_json::json!(" \u{0}*?[/\u{202e}é"),
        serde_json::json!("x".repeat(70_000)),
        serde_json::json!([]),
        serde_json::json!({}),
        serde_json::from_str(&format!("{}1{}", "[".repeat(40), "]".repeat(40))).unwrap(),
    ];
    let (mut plans, mut refusals) = (0, 0);
    let mut check = |text: &str, what: &str| match planner.plan_json(text) {
        Ok(plan) => {
            plans += 1;
            serde_json::from_str::<Value>(&plan).unwrap_or_else(|e| panic!("{what}: plan is not JSON: {e}"));
        }
        Err(error) => {
            refusals += 1;
            assert_ne!(
                error.code,
                contract::ErrorCode::PlannerFault,
                "{what}: {}",
                error.message
            );
            assert!(
                !error.message.trim().is_empty(),
                "{what}: {:?} without a message",
                error.code
            );
        }
    };
    for (file, vector) in vectors::all() {
        let name = &vector.name;
        let request = &vector.request;
        let text = request.to_string();
        for cut in [0, 1, text.len() / 3, text.len() / 2, text.len() - 1] {
            let cut = (0..=cut).rev().find(|i| text.is_char_boundary(*i)).unwrap_or(0);
            check(&text[..cut], &format!("{file} '{name}' cut at {cut}"));
        }
        let mut paths = Vec::new();
        json_paths(request, String::new(), &mut paths);
        for (i, path) in paths.iter().enumerate().skip(1) {
            // Every path gets two replacements (which two turns with the path) and removal.
            for replacement in [
                &replacements[i % replacements.len()],
                &replacements[(i * 7 + 3) % replacements.len()],
            ] {
                let mut variant = request.clone();
                *variant.pointer_mut(path).unwrap() = replacement.clone();
                check(
                    &variant.to_string(),
                    &format!("{file} '{name}' {path} = {replacement:.40}"),
                );
            }
            let (parent, key) = path.rsplit_once('/').unwrap();
            let mut variant = request.clone();
            match variant.pointer_mut(parent).unwrap() {
                Value::Object(map) => {
                    map.remove(&key.replace("~1", "/").replace("~0", "~"));
                }
                Value::Array(items) => {
                    items.remove(key.parse::<usize>().unwrap());
                }
                _ => unreachable!("a path's parent holds it"),
            }
            check(&variant.to_string(), &format!("{file} '{name}' without {path}"));
        }
    }
    println!("hostile variants: {plans} planned, {refusals} refused with a typed error");
    assert!(plans > 1_000 && refusals > 1_000, "{plans} planned, {refusals} refused");
}
