//! The planner test vectors (`tests/vectors/*.json`, copied verbatim from
//! `../shared/vectors/`) and the matching rules of placement-and-schemas.md §1.4.

use serde_json::Value;
use std::path::{Path, PathBuf};

/// One vector: `{name, rules, request, expect}`.
#[derive(Debug, serde::Deserialize)]
pub struct Vector {
    /// What the vector checks.
    pub name: String,
    /// The rule ids it exercises.
    #[serde(default)]
    pub rules: Vec<String>,
    /// The PlanRequest.
    pub request: Value,
    /// A plan subset, or `{"error": {"code", "messageContains"}}`.
    pub expect: Value,
}

/// The directory holding the vector files.
pub fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/vectors")
}

/// Every vector of every file, with the file's name.
pub fn all() -> Vec<(String, Vector)> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir())
        .expect("tests/vectors exists")
        .map(|entry| entry.expect("readable directory entry").path())
        .filter(|path| path.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    let mut vectors = Vec::new();
    for file in files {
        let name = file.file_name().unwrap().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(&file).expect("readable vector file");
        let parsed: Vec<Vector> = serde_json::from_str(&text).expect("vector files are JSON arrays of vectors");
        vectors.extend(parsed.into_iter().map(|v| (name.clone(), v)));
    }
    vectors
}

/// Checks a printed outcome (the plan, or `{"error": …}`) and its exit status against a
/// vector's expectation. Returns the list of differences (empty when it matches).
pub fn check(expect: &Value, output: &Value, exit_ok: bool) -> Vec<String> {
    if let Some(want) = expect.get("error") {
        let Some(error) = output.get("error").filter(|_| !exit_ok) else {
            return vec![format!(
                "expected error {}, got a plan: {}",
                want["code"],
                short(output)
            )];
        };
        let mut problems = Vec::new();
        if error.get("code") != want.get("code") {
            problems.push(format!(
                "error.code: expected {}, got {} ({})",
                want["code"], error["code"], error["message"]
            ));
        }
        let message = error.get("message").and_then(Value::as_str).unwrap_or_default();
        for fragment in want
            .get("messageContains")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let fragment = fragment.as_str().unwrap_or_default();
            if !message.contains(fragment) {
                problems.push(format!("error.message lacks {fragment:?}: {message:?}"));
            }
        }
        return problems;
    }
    if !exit_ok {
        return vec![format!("expected a plan, got {}", short(output))];
    }
    subset(expect, output, "plan", false)
}

/// The recursive subset match of §1.4.
fn subset(expected: &Value, actual: &Value, path: &str, deep: bool) -> Vec<String> {
    if deep {
        return if expected == actual {
            Vec::new()
        } else {
            vec![format!("{path}: expected {expected}, got {actual}")]
        };
    }
    match expected {
        Value::Object(fields) => {
            let Some(actual) = actual.as_object() else {
                return vec![format!("{path}: expected an object, got {}", short(actual))];
            };
            let mut problems = Vec::new();
            for (key, want) in fields {
                let here = format!("{path}.{key}");
                match (want, actual.get(key)) {
                    (Value::Null, Some(got)) if !got.is_null() => {
                        problems.push(format!("{here}: expected absent, got {got}"));
                    }
                    (Value::Null, _) => {}
                    (_, None) => problems.push(format!("{here}: missing")),
                    (want, Some(got)) => {
                        let deep = key == "outputSchema" || key == "machineEnv";
                        problems.extend(subset(want, got, &here, deep));
                    }
                }
            }
            problems
        }
        Value::Array(items) => match actual.as_array() {
            Some(got) if got.len() == items.len() => items
                .iter()
                .zip(got)
                .enumerate()
                .flat_map(|(i, (want, got))| subset(want, got, &format!("{path}[{i}]"), false))
                .collect(),
            _ => vec![format!("{path}: expected {} items, got {}", items.len(), short(actual))],
        },
        Value::Number(want) => match actual.as_number() {
            Some(got) if want.as_f64() == got.as_f64() => Vec::new(),
            _ => vec![format!("{path}: expected {expected}, got {actual}")],
        },
        _ if expected == actual => Vec::new(),
        _ => vec![format!("{path}: expected {expected}, got {actual}")],
    }
}

fn short(value: &Value) -> String {
    let text = value.to_string();
    if text.len() > 300 {
        format!("{}…", &text[..300])
    } else {
        text
    }
}

/// Runs every vector (of the files whose name contains `filter`) through `plan`, which gets
/// the request as JSON and returns the printed document and whether it was a plan (exit 0).
/// Panics with every failing vector and its differences.
pub fn assert_all_pass(filter: &str, mut plan: impl FnMut(&[u8]) -> (Value, bool)) {
    let all: Vec<(String, Vector)> = all().into_iter().filter(|(file, _)| file.contains(filter)).collect();
    assert!(
        !filter.is_empty() || all.len() >= 122,
        "expected the public vectors, found {}",
        all.len()
    );
    let mut failures = Vec::new();
    for (file, vector) in &all {
        let (output, ok) = plan(&serde_json::to_vec(&vector.request).expect("vectors serialise"));
        let problems = check(&vector.expect, &output, ok);
        if !problems.is_empty() {
            let rules = vector.rules.join(", ");
            failures.push(format!(
                "{file}: {} [{rules}]\n    {}",
                vector.name,
                problems.join("\n    ")
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} vectors failed:\n{}",
        failures.len(),
        all.len(),
        failures.join("\n")
    );
}
