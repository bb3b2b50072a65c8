//! Structured output: the final output of a step with an output schema must
//! end with JSON that validates against the schema.
//!
//! What counts as the JSON, tried in this order (the first that parses wins):
//! 1. the whole output, without surrounding whitespace;
//! 2. the last fenced code block labelled `json` (or unlabelled): a line starting with three
//!    backticks, the JSON, a line of three backticks;
//! 3. a JSON object or array at the very end of the output (only whitespace after it), with
//!    any prose before it ignored.
//!
//! The value is validated with the `jsonschema` crate (the schema's `$schema` draft, else
//! 2020-12; no remote references are fetched). Every violation is reported with the JSON path
//! of the offending value (`$.items[2].name`).

use serde_json::Value;

/// How many `{` / `[` positions rule 3 tries before giving up (bounds the work on
/// pathological outputs).
const MAX_TRAILING_ATTEMPTS: usize = 4_096;

/// Why structured output was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StructuredError {
    /// No JSON was found (the message of parsing the whole output).
    NotJson(String),
    /// The schema itself cannot be compiled.
    BadSchema(String),
    /// The JSON does not validate: `(path, message)` for every violation.
    Invalid(Vec<(String, String)>),
    /// The validator process could not give a verdict (missing, crashed, too slow).
    Unavailable(String),
}

impl StructuredError {
    /// The step's error text, naming it as `label` (`step 2 reviewer`).
    pub fn message(&self, label: &str) -> String {
        match self {
            Self::NotJson(cause) => format!(
                "Structured output of {label} is not JSON: the output, its last ```json block and its end were tried ({cause})."
            ),
            Self::BadSchema(cause) => format!("The output schema of {label} cannot be used: {cause}"),
            Self::Unavailable(cause) => format!("Structured output of {label} could not be checked: {cause}."),
            Self::Invalid(errors) => {
                let lines: Vec<String> = errors
                    .iter()
                    .map(|(path, message)| format!("- {path}: {message}"))
                    .collect();
                format!(
                    "Structured output of {label} does not match its output schema ({} error{}):\n{}",
                    errors.len(),
                    if errors.len() == 1 { "" } else { "s" },
                    lines.join("\n")
                )
            }
        }
    }
}

/// Finds the JSON in `text` (see the module documentation).
pub fn extract(text: &str) -> Result<Value, String> {
    let whole = text.trim();
    let first_error = match serde_json::from_str::<Value>(whole) {
        Ok(value) => return Ok(value),
        Err(e) => e.to_string(),
    };
    if let Some(value) = last_fenced_block(text) {
        return Ok(value);
    }
    if let Some(value) = trailing_value(whole) {
        return Ok(value);
    }
    Err(first_error)
}

/// The last fenced block (```json or ```) whose content parses.
fn last_fenced_block(text: &str) -> Option<Value> {
    let lines: Vec<&str> = text.lines().collect();
    let mut blocks: Vec<(usize, usize)> = Vec::new();
    let mut open: Option<usize> = None;
    for (i, line) in lines.iter().enumerate() {
        let trimmed = line.trim();
        match open {
            None => {
                if let Some(label) = trimmed.strip_prefix("```") {
                    let label = label.trim();
                    if label.is_empty() || label.eq_ignore_ascii_case("json") {
                        open = Some(i);
                    }
                }
            }
            Some(start) if trimmed == "```" => {
                blocks.push((start + 1, i));
                open = None;
            }
            Some(_) => {}
        }
    }
    blocks
        .iter()
        .rev()
        .find_map(|(from, to)| serde_json::from_str(lines[*from..*to].join("\n").trim()).ok())
}

/// A JSON object or array that ends the (trimmed) text.
fn trailing_value(text: &str) -> Option<Value> {
    if !(text.ends_with('}') || text.ends_with(']')) {
        return None;
    }
    text.char_indices()
        .filter(|(_, c)| *c == '{' || *c == '[')
        .take(MAX_TRAILING_ATTEMPTS)
        .find_map(|(i, _)| {
            let mut stream = serde_json::Deserializer::from_str(&text[i..]).into_iter::<Value>();
            match stream.next() {
                Some(Ok(value)) if text[i + stream.byte_offset()..].trim().is_empty() => Some(value),
                _ => None,
            }
        })
}

/// Validates `value` against `schema`.
pub fn validate(schema: &Value, value: &Value) -> Result<(), StructuredError> {
    let validator = jsonschema::validator_for(schema).map_err(|e| StructuredError::BadSchema(e.to_string()))?;
    let errors: Vec<(String, String)> = validator
        .iter_errors(value)
        .map(|e| (json_path(e.instance_path().as_str()), e.to_string()))
        .collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(StructuredError::Invalid(errors))
    }
}

/// Extracts and validates; the parsed value on success.
pub fn check(text: &str, schema: &Value) -> Result<Value, StructuredError> {
    let value = extract(text).map_err(StructuredError::NotJson)?;
    validate(schema, &value)?;
    Ok(value)
}

/// A JSON pointer (`/items/2/name`) as a JSON path (`$.items[2].name`).
pub fn json_path(pointer: &str) -> String {
    let mut path = String::from("$");
    for raw in pointer.split('/').skip(1) {
        let segment = raw.replace("~1", "/").replace("~0", "~");
        let identifier = segment
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && segment.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !segment.is_empty() && segment.chars().all(|c| c.is_ascii_digit()) {
            path.push_str(&format!("[{segment}]"));
        } else if identifier {
            path.push('.');
            path.push_str(&segment);
        } else {
            path.push_str(&format!("[{}]", serde_json::Value::String(segment)));
        }
    }
    path
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn json_is_found_whole_fenced_or_at_the_end() {
        assert_eq!(extract(" {\"a\": 1}\n").unwrap(), json!({"a": 1}));
        let fenced = "Here it is:\n```json\n{\"a\": 2}\n```\nand more ```\n```\n{\"a\": 3}\n```\nDone.";
        assert_eq!(extract(fenced).unwrap(), json!({"a": 3}));
        let trailing = "I checked {things}. Result:\n{\"verdict\": \"pass\", \"n\": [1, {\"x\": 2}]}\n";
        assert_eq!(
            extract(trailing).unwrap(),
            json!({"verdict": "pass", "n": [1, {"x": 2}]})
        );
        assert!(extract("no json here").is_err());
        assert!(extract("{\"a\": 1} and then prose").is_err());
    }

    #[test]
    fn every_violation_is_listed_with_its_path() {
        let schema = json!({
            "type": "object",
            "required": ["verdict", "files"],
            "properties": {
                "verdict": {"enum": ["pass", "fail"]},
                "files": {"type": "array", "items": {"type": "object", "properties": {"my name": {"type": "string"}}}}
            }
        });
        let value = json!({"verdict": "maybe", "files": [{"my name": 1}]});
        let Err(StructuredError::Invalid(errors)) = validate(&schema, &value) else {
            panic!("expected errors")
        };
        let paths: Vec<&str> = errors.iter().map(|(p, _)| p.as_str()).collect();
        assert!(paths.contains(&"$.verdict"), "{errors:?}");
        assert!(paths.contains(&"$.files[0][\"my name\"]"), "{errors:?}");
        assert!(validate(&schema, &json!({"verdict": "pass", "files": []})).is_ok());
        let message = StructuredError::Invalid(errors).message("step 1 ('r')");
        assert!(
            message.starts_with("Structured output of step 1 ('r') does not match its output schema (2 errors):\n- $.")
        );
    }
}
