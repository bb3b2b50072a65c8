//! The review gate's findings (G81): the reviewer agent ends its answer with a fenced
//! `review-findings` block,
//! `{"findings": [{"severity": "blocking"|"minor", "file": "…", "message": "…"}], "verdict": "accept"|"reject"}`,
//! parsed here with a problem per field, named by its path (`$.findings[0].severity`), so
//! that neither the runner nor a reader guesses at the reviewer's answer.

use super::report::{Diagnostic, diagnostic, find_blocks, kind};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The fence the reviewer's block is named by.
pub const FENCE: &str = "review-findings";

/// How much one finding weighs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Severity {
    /// The work must not be accepted as it is.
    Blocking,
    /// Worth fixing; the work may be accepted.
    Minor,
}

/// What the reviewer concluded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// The work may be accepted.
    Accept,
    /// It may not.
    Reject,
}

/// One thing the reviewer found.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Finding {
    /// How much it weighs.
    pub severity: Severity,
    /// The file it is about, when it is about one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// What is wrong.
    pub message: String,
}

/// The reviewer's block, parsed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Findings {
    /// What it found, in its order.
    pub findings: Vec<Finding>,
    /// What it concluded.
    pub verdict: Verdict,
}

impl Findings {
    /// Whether the review lets the work pass: it accepts and found nothing blocking.
    pub fn passes(&self) -> bool {
        self.verdict == Verdict::Accept && !self.findings.iter().any(|f| f.severity == Severity::Blocking)
    }
}

/// The last `review-findings` block of `text`, parsed (`None`: there is none).
pub fn extract(text: &str) -> Option<Result<Findings, Vec<Diagnostic>>> {
    let blocks = find_blocks(text, &[FENCE, "review_findings"]);
    let last = blocks.last()?;
    if !last.closed {
        return Some(Err(vec![diagnostic(
            "$".to_owned(),
            "the review-findings block is not closed (its closing fence is missing)".to_owned(),
        )]));
    }
    let body = text.get(last.body.clone()).unwrap_or_default();
    Some(match serde_json::from_str::<Value>(body) {
        Ok(value) => parse_value(&value),
        Err(error) => Err(vec![diagnostic(
            "$".to_owned(),
            format!("the review-findings block is not JSON: {error}"),
        )]),
    })
}

/// A findings value, every problem named by its path.
pub fn parse_value(value: &Value) -> Result<Findings, Vec<Diagnostic>> {
    let mut problems = Vec::new();
    let Some(object) = value.as_object() else {
        return Err(vec![diagnostic(
            "$".to_owned(),
            format!("expected an object {{findings, verdict}}, got {}", kind(value)),
        )]);
    };
    unknown_keys(object, "$", &["findings", "verdict"], &mut problems);
    let verdict = match object.get("verdict") {
        None | Some(Value::Null) => {
            problems.push(diagnostic(
                "$.verdict".into(),
                "missing; use \"accept\" or \"reject\"".into(),
            ));
            None
        }
        Some(Value::String(word)) => match word.to_ascii_lowercase().as_str() {
            "accept" => Some(Verdict::Accept),
            "reject" => Some(Verdict::Reject),
            _ => {
                problems.push(diagnostic(
                    "$.verdict".into(),
                    format!("'{word}' is not a verdict; use \"accept\" or \"reject\""),
                ));
                None
            }
        },
        Some(other) => {
            problems.push(diagnostic(
                "$.verdict".into(),
                format!("expected \"accept\" or \"reject\", got {}", kind(other)),
            ));
            None
        }
    };
    let mut findings = Vec::new();
    match object.get("findings") {
        None | Some(Value::Null) => {
            problems.push(diagnostic(
                "$.findings".into(),
                "missing; use [] when nothing was found".into(),
            ));
        }
        Some(Value::Array(items)) => {
            for (i, item) in items.iter().enumerate() {
                if let Some(finding) = finding(item, &format!("$.findings[{i}]"), &mut problems) {
                    findings.push(finding);
                }
            }
        }
        Some(other) => problems.push(diagnostic(
            "$.findings".into(),
            format!("expected a list, got {}", kind(other)),
        )),
    }
    match verdict {
        Some(verdict) if problems.is_empty() => Ok(Findings { findings, verdict }),
        _ => Err(problems),
    }
}

fn finding(value: &Value, path: &str, problems: &mut Vec<Diagnostic>) -> Option<Finding> {
    let Some(object) = value.as_object() else {
        problems.push(diagnostic(
            path.to_owned(),
            format!("expected an object {{severity, file, message}}, got {}", kind(value)),
        ));
        return None;
    };
    unknown_keys(object, path, &["severity", "file", "message"], problems);
    let severity = match object.get("severity") {
        Some(Value::String(word)) => match word.to_ascii_lowercase().as_str() {
            "blocking" => Some(Severity::Blocking),
            "minor" => Some(Severity::Minor),
            _ => {
                problems.push(diagnostic(
                    format!("{path}.severity"),
                    format!("'{word}' is not a severity; use \"blocking\" or \"minor\""),
                ));
                None
            }
        },
        None | Some(Value::Null) => {
            problems.push(diagnostic(
                format!("{path}.severity"),
                "missing; use \"blocking\" or \"minor\"".into(),
            ));
            None
        }
        Some(other) => {
            problems.push(diagnostic(
                format!("{path}.severity"),
                format!("expected \"blocking\" or \"minor\", got {}", kind(other)),
            ));
            None
        }
    };
    let file = match object.get("file") {
        None | Some(Value::Null) => None,
        Some(Value::String(file)) if !file.trim().is_empty() => Some(file.clone()),
        Some(Value::String(_)) => None,
        Some(other) => {
            problems.push(diagnostic(
                format!("{path}.file"),
                format!("expected a path, got {}", kind(other)),
            ));
            None
        }
    };
    let message = match object.get("message") {
        Some(Value::String(message)) if !message.trim().is_empty() => Some(message.clone()),
        Some(Value::String(_)) | None | Some(Value::Null) => {
            problems.push(diagnostic(
                format!("{path}.message"),
                "missing; say what is wrong".into(),
            ));
            None
        }
        Some(other) => {
            problems.push(diagnostic(
                format!("{path}.message"),
                format!("expected a text, got {}", kind(other)),
            ));
            None
        }
    };
    Some(Finding {
        severity: severity?,
        file,
        message: message?,
    })
}

fn unknown_keys(object: &Map<String, Value>, path: &str, known: &[&str], problems: &mut Vec<Diagnostic>) {
    for key in object.keys().filter(|k| !known.contains(&k.as_str())) {
        problems.push(diagnostic(
            format!("{path}.{key}"),
            format!("unknown field; use {}", known.join(", ")),
        ));
    }
}

/// The block's shape as the reviewer's prompt shows it.
pub fn prompt_shape() -> String {
    format!(
        "```{FENCE}\n{{\"findings\": [{{\"severity\": \"blocking\", \"file\": \"path/to/file\", \"message\": \"what is wrong\"}}], \"verdict\": \"reject\"}}\n```"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_block_is_parsed_and_its_verdict_decides() {
        let text = "Looks fine.\n```review-findings\n{\"findings\": [{\"severity\": \"minor\", \"file\": \"a.rs\", \"message\": \"naming\"}], \"verdict\": \"accept\"}\n```\n";
        let findings = extract(text).unwrap().unwrap();
        assert!(findings.passes());
        assert_eq!(findings.findings[0].file.as_deref(), Some("a.rs"));
        let blocking = "```review-findings\n{\"findings\": [{\"severity\": \"blocking\", \"message\": \"broken\"}], \"verdict\": \"accept\"}\n```";
        assert!(
            !extract(blocking).unwrap().unwrap().passes(),
            "a blocking finding fails"
        );
        let rejected = "```review-findings\n{\"findings\": [], \"verdict\": \"reject\"}\n```";
        assert!(!extract(rejected).unwrap().unwrap().passes());
        assert!(extract("no block").is_none());
    }

    #[test]
    fn problems_are_named_by_their_path() {
        let text = "```review-findings\n{\"findings\": [{\"severity\": \"huge\", \"message\": \"x\", \"line\": 3}], \"verdict\": \"maybe\"}\n```";
        let problems = extract(text).unwrap().unwrap_err();
        let paths: Vec<&str> = problems.iter().map(|p| p.path.as_str()).collect();
        assert!(paths.contains(&"$.verdict"), "{paths:?}");
        assert!(paths.contains(&"$.findings[0].severity"), "{paths:?}");
        assert!(paths.contains(&"$.findings[0].line"), "{paths:?}");
        let open = extract("```review-findings\n{\"findings\": []").unwrap().unwrap_err();
        assert!(open[0].message.contains("not closed"));
        let not_json = extract("```review-findings\nyes\n```").unwrap().unwrap_err();
        assert!(not_json[0].message.contains("not JSON"));
    }
}
