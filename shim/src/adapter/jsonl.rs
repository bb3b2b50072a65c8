//! Shared pieces of the JSON-line adapters (pi, Claude Code, Codex, Cursor): parsing one
//! stdout line, the text of a message's content blocks, and the final-message bound.

use super::{Extracted, FINAL_MESSAGE_LIMIT, OutputParser, ParsedLine};
use serde_json::Value;

/// Bytes of a JSON line kept for parsing: the whole line up to the R11 protocol limit.
pub const JSON_LINE_RETAIN: usize = crate::process::streams::PROTOCOL_LINE_LIMIT;

/// Bytes of the end of stdout kept to explain a run that printed no usable event.
pub const JSON_TAIL_BYTES: usize = 64 * 1024;

/// One stdout line as a JSON object, or why it is not one.
#[derive(Debug)]
pub enum Line {
    /// A JSON object.
    Object(Value),
    /// Not JSON (a banner, a warning): plain text.
    Text,
    /// A line longer than [`JSON_LINE_RETAIN`] (only its start was kept).
    Oversized(usize),
}

/// Parses a complete line (`full_len` is its length before truncation).
pub fn parse(line: &[u8], full_len: usize) -> Line {
    if full_len > line.len() {
        return Line::Oversized(full_len);
    }
    let trimmed = line.strip_suffix(b"\r").unwrap_or(line);
    if trimmed.first() != Some(&b'{') {
        return Line::Text;
    }
    match serde_json::from_slice::<Value>(trimmed) {
        Ok(value @ Value::Object(_)) => Line::Object(value),
        _ => Line::Text,
    }
}

/// The `type` field of an event.
pub fn kind(value: &Value) -> &str {
    value.get("type").and_then(Value::as_str).unwrap_or("")
}

/// The text of a message's `content`: a string, or the `text` of its `{type:"text"}` blocks
/// joined (tool calls, thinking and images are left out).
pub fn content_text(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(text)) => text.clone(),
        Some(Value::Array(blocks)) => blocks
            .iter()
            .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    }
}

/// The whole number at `key` of `object` (0 when absent or not one).
pub fn count(object: Option<&Value>, key: &str) -> u64 {
    object.and_then(|o| o.get(key)).and_then(Value::as_u64).unwrap_or(0)
}

/// The string at `key` of `object`, when there is a non-empty one.
pub fn string(object: Option<&Value>, key: &str) -> Option<String> {
    object
        .and_then(|o| o.get(key))
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
}

/// The error of a final message longer than [`FINAL_MESSAGE_LIMIT`].
pub fn too_long(what: &str, len: usize) -> String {
    format!(
        "output_limit: the {what} is {len} bytes; a step's final output may have at most {FINAL_MESSAGE_LIMIT} bytes."
    )
}

/// The error of a line over [`JSON_LINE_RETAIN`].
pub fn oversized(program: &str, len: usize) -> String {
    format!(
        "protocol_output_limit: {program} printed a JSON line of {len} bytes; lines may have at most {JSON_LINE_RETAIN} bytes."
    )
}

/// A short excerpt of the end of stdout for "no result" errors.
pub fn excerpt(tail: &[u8]) -> String {
    let text = String::from_utf8_lossy(tail);
    let text = text.trim();
    let mut start = text.len().saturating_sub(1_000);
    while !text.is_char_boundary(start) {
        start += 1;
    }
    text[start..].to_owned()
}

/// What one JSON-line adapter does with its events; [`JsonlParser`] does the rest.
pub trait EventReader {
    /// The program, named in errors.
    fn program(&self) -> &str;
    /// One event object: what the supervisor persists of it.
    fn event(&mut self, value: Value) -> ParsedLine;
    /// The step's output once stdout ended (every JSON line was within bounds).
    fn extract(&mut self, stdout_tail: &[u8]) -> Extracted;
    /// Whether the terminal event has been read (X5).
    fn settled(&self) -> bool;
    /// What the agent reported so far.
    fn spent(&self) -> super::Spent {
        super::Spent::default()
    }
    /// See [`OutputParser::answered`].
    fn answered(&self) -> bool {
        self.settled()
    }
    /// See [`OutputParser::input_sent`].
    fn input_sent(&mut self) {}
    /// See [`OutputParser::partial`].
    fn partial(&self) -> Option<String> {
        None
    }
    /// See [`OutputParser::session`].
    fn session(&self) -> Option<String> {
        None
    }
}

/// An [`EventReader`] as an [`OutputParser`]: lines that are JSON objects are events, other
/// lines plain text, and a line over [`JSON_LINE_RETAIN`] fails the step.
#[derive(Debug, Default)]
pub struct JsonlParser<R> {
    reader: R,
    oversized: Option<usize>,
}

impl<R> JsonlParser<R> {
    /// The reader, to configure it.
    pub fn reader_mut(&mut self) -> &mut R {
        &mut self.reader
    }

    /// The parser reading events with `reader`.
    pub fn of(reader: R) -> Self {
        Self {
            reader,
            oversized: None,
        }
    }
}

impl<R: EventReader> OutputParser for JsonlParser<R> {
    fn line_retain_limit(&self) -> usize {
        JSON_LINE_RETAIN
    }

    fn needs_lines(&self) -> bool {
        true
    }

    fn tail_bytes(&self) -> usize {
        JSON_TAIL_BYTES
    }

    fn stdout_line(&mut self, line: &[u8], full_len: usize) -> ParsedLine {
        match parse(line, full_len) {
            Line::Object(value) => self.reader.event(value),
            Line::Text => ParsedLine::Text,
            Line::Oversized(len) => {
                self.oversized.get_or_insert(len);
                ParsedLine::Ignore
            }
        }
    }

    fn settled(&self) -> bool {
        self.reader.settled()
    }

    fn spent(&self) -> super::Spent {
        self.reader.spent()
    }

    fn answered(&self) -> bool {
        self.reader.answered()
    }

    fn input_sent(&mut self) {
        self.reader.input_sent();
    }

    fn partial(&self) -> Option<String> {
        self.reader.partial()
    }

    fn session(&self) -> Option<String> {
        self.reader.session()
    }

    fn finish(&mut self, stdout_tail: &[u8], _tail_cut: bool) -> Extracted {
        match self.oversized {
            Some(len) => Extracted::failed(oversized(self.reader.program(), len)),
            None => self.reader.extract(stdout_tail),
        }
    }
}
