//! The acceptance report an agent ends its answer with (G76): a fenced block tagged
//! `acceptance-report` holding one JSON object, or the same object given as structured output.
//!
//! Agents write this by hand, so the parser forgives the usual slips (snake_case keys, one
//! wrapper object, `"true"` for `true`, one string for a list, synonyms of the enum values) and
//! rejects the rest with every problem at once, each at its JSONPath: the agent (or whoever
//! reads the record) can then fix all of them in one go. Nothing here panics on any input: the
//! text is whatever the agent printed.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::fmt;

/// What the agent says it did, as parsed: the claims the runner then checks against git and
/// its own commands.
#[serde_with_macros::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AcceptanceReport {
    /// One claim per acceptance criterion.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub criteria_satisfied: Vec<CriterionClaim>,
    /// The files the agent changed (an empty list says it changed none).
    pub changed_files: Option<Vec<String>>,
    /// The tests it added or changed.
    pub tests_added_or_updated: Option<Vec<String>>,
    /// The commands it ran, with how they ended.
    pub commands_run: Option<Vec<CommandClaim>>,
    /// Excerpts of the output that shows the work holds.
    pub validation_output: Option<Vec<String>>,
    /// What could still be wrong.
    pub residual_risks: Option<Vec<String>>,
    /// Whether the agent left nothing staged in git.
    pub no_staged_files: Option<bool>,
    /// The change in a few words.
    pub diff_summary: Option<String>,
    /// What a review of the change found.
    pub review_findings: Option<Vec<String>>,
    /// What a person has to check by hand.
    pub manual_notes: Option<String>,
    /// Anything else the agent wants read.
    pub notes: Option<String>,
}

/// The agent's word on one acceptance criterion.
#[serde_with_macros::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CriterionClaim {
    /// The criterion's id as the prompt gave it (kept verbatim: the runner matches it).
    pub id: Option<String>,
    /// Whether it holds.
    pub status: CriterionStatus,
    /// What shows it.
    pub evidence: String,
}

/// Whether a criterion holds, in the agent's words.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CriterionStatus {
    /// It holds.
    Satisfied,
    /// It does not.
    NotSatisfied,
    /// It does not apply to this work.
    NotApplicable,
}

impl CriterionStatus {
    /// The status as the report writes it.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Satisfied => "satisfied",
            Self::NotSatisfied => "not-satisfied",
            Self::NotApplicable => "not-applicable",
        }
    }

    /// The status a (normalized) value or one of its synonyms stands for.
    fn from_word(word: &str) -> Option<Self> {
        match word {
            "satisfied" | "met" | "done" | "pass" | "passed" | "yes" => Some(Self::Satisfied),
            "not-satisfied" | "unsatisfied" | "unmet" | "fail" | "failed" | "no" => Some(Self::NotSatisfied),
            "not-applicable" | "n/a" | "na" | "skipped" => Some(Self::NotApplicable),
            _ => None,
        }
    }
}

/// A command the agent says it ran.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CommandClaim {
    /// The command line as run.
    pub command: String,
    /// How it ended.
    pub result: CommandResult,
    /// What it printed, in short (empty when the agent gave nothing).
    #[serde(default)]
    pub summary: String,
}

/// How a command the agent ran ended, in its words.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CommandResult {
    /// It succeeded.
    Passed,
    /// It failed.
    Failed,
    /// The agent did not run it after all.
    NotRun,
}

impl CommandResult {
    /// The result as the report writes it.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Passed => "passed",
            Self::Failed => "failed",
            Self::NotRun => "not-run",
        }
    }

    /// The result a (normalized) value or one of its synonyms stands for.
    fn from_word(word: &str) -> Option<Self> {
        match word {
            "passed" | "pass" | "ok" | "success" | "succeeded" => Some(Self::Passed),
            "failed" | "fail" | "error" | "failure" => Some(Self::Failed),
            "not-run" | "skipped" | "notrun" => Some(Self::NotRun),
            _ => None,
        }
    }
}

/// One problem of a report: where (a JSONPath from the report object: `$`,
/// `$.commandsRun[1].result`) and what, so the agent or a reader can fix it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Diagnostic {
    /// Where in the report.
    pub path: String,
    /// What is wrong, and what would be right.
    pub message: String,
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path, self.message)
    }
}

/// An answer with its acceptance-report blocks taken out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Extracted {
    /// The answer without the blocks (byte for byte the text when it had none).
    pub output: String,
    /// The last block, parsed; `None` when the answer had none.
    pub report: Option<Result<AcceptanceReport, Vec<Diagnostic>>>,
}

/// The report's keys, camelCase as written and snake_case as agents also write them.
const KEYS: [(&str, &str); 11] = [
    ("criteriaSatisfied", "criteria_satisfied"),
    ("changedFiles", "changed_files"),
    ("testsAddedOrUpdated", "tests_added_or_updated"),
    ("commandsRun", "commands_run"),
    ("validationOutput", "validation_output"),
    ("residualRisks", "residual_risks"),
    ("noStagedFiles", "no_staged_files"),
    ("diffSummary", "diff_summary"),
    ("reviewFindings", "review_findings"),
    ("manualNotes", "manual_notes"),
    ("notes", "notes"),
];

const CRITERION_KEYS: [&str; 3] = ["id", "status", "evidence"];
const COMMAND_KEYS: [&str; 3] = ["command", "result", "summary"];
const STATUSES: &str = "satisfied, not-satisfied or not-applicable";
const RESULTS: &str = "passed, failed or not-run";

/// More problems than this are counted, not listed: a hostile report (a list of a million
/// numbers) must not make a record of a million diagnostics.
const MAX_DIAGNOSTICS: usize = 50;

/// Quoted values and keys are cut to this many chars in paths and messages, for the same
/// reason.
const MAX_QUOTED: usize = 60;

/// Reads a report out of a JSON value (the body of a block or the agent's structured
/// `acceptanceReport`), forgiving the usual slips and listing every problem that remains.
pub fn parse_value(value: &Value) -> Result<AcceptanceReport, Vec<Diagnostic>> {
    let mut problems = Problems::default();
    let report = read_report(unwrap_wrapper(value), &mut problems);
    if problems.list.is_empty() {
        Ok(report)
    } else {
        Err(problems.finish())
    }
}

/// Takes every `acceptance-report` block out of an agent's answer and parses the last one:
/// the answer that is kept reads as if the agent had not been asked.
pub fn extract(text: &str) -> Extracted {
    let blocks = find_blocks(text, &["acceptance-report", "acceptance_report"]);
    let Some(last) = blocks.last() else {
        return Extracted {
            output: text.to_owned(),
            report: None,
        };
    };
    let report = if last.closed {
        parse_body(text.get(last.body.clone()).unwrap_or_default())
    } else {
        Err(vec![diagnostic(
            "$".to_owned(),
            "the acceptance-report block is not closed (its closing fence is missing)".to_owned(),
        )])
    };
    Extracted {
        output: remove_blocks(text, &blocks),
        report: Some(report),
    }
}

/// The report's shape as the prompt shows it: every field, one entry per list.
pub fn prompt_shape() -> String {
    let example = AcceptanceReport {
        criteria_satisfied: vec![CriterionClaim {
            id: Some("c1".to_owned()),
            status: CriterionStatus::Satisfied,
            evidence: "what shows the criterion holds".to_owned(),
        }],
        changed_files: Some(vec!["path/to/changed/file".to_owned()]),
        tests_added_or_updated: Some(vec!["path/to/test".to_owned()]),
        commands_run: Some(vec![CommandClaim {
            command: "the command as run".to_owned(),
            result: CommandResult::Passed,
            summary: "what it printed, in short".to_owned(),
        }]),
        validation_output: Some(vec!["the output that shows the work holds".to_owned()]),
        residual_risks: Some(vec!["what could still be wrong".to_owned()]),
        no_staged_files: Some(true),
        diff_summary: Some("the change in a few words".to_owned()),
        review_findings: Some(vec!["what a review of the change found".to_owned()]),
        manual_notes: Some("what a person has to check by hand".to_owned()),
        notes: None,
    };
    // Serializing plain strings, bools and lists cannot fail.
    serde_json::to_string_pretty(&example).unwrap_or_default()
}

/// Problems found so far, bounded.
#[derive(Default)]
struct Problems {
    list: Vec<Diagnostic>,
    dropped: usize,
}

impl Problems {
    fn push(&mut self, path: String, message: String) {
        if self.list.len() < MAX_DIAGNOSTICS {
            self.list.push(diagnostic(path, message));
        } else {
            self.dropped = self.dropped.saturating_add(1);
        }
    }

    fn finish(mut self) -> Vec<Diagnostic> {
        if self.dropped > 0 {
            let message = format!("and {} more problem(s) not listed", self.dropped);
            self.list.push(diagnostic("$".to_owned(), message));
        }
        self.list
    }
}

pub(crate) fn diagnostic(path: String, message: String) -> Diagnostic {
    Diagnostic { path, message }
}

/// `{"acceptanceReport": {...}}` is the report itself, once removed.
fn unwrap_wrapper(value: &Value) -> &Value {
    match value.as_object() {
        Some(object) if object.len() == 1 => object
            .get("acceptanceReport")
            .or_else(|| object.get("acceptance_report"))
            .unwrap_or(value),
        _ => value,
    }
}

fn read_report(value: &Value, problems: &mut Problems) -> AcceptanceReport {
    let Some(object) = value.as_object() else {
        problems.push(
            "$".to_owned(),
            format!("the report must be a JSON object, not {}", kind(value)),
        );
        return AcceptanceReport::default();
    };
    let mut fields: [Option<(&Value, String)>; KEYS.len()] = Default::default();
    for ((camel, snake), field) in KEYS.iter().zip(fields.iter_mut()) {
        *field = lookup(object, camel, snake, problems).map(|value| (value, format!("$.{camel}")));
    }
    for key in object.keys() {
        if !KEYS.iter().any(|(camel, snake)| key == camel || key == snake) {
            let known: Vec<&str> = KEYS.iter().map(|(camel, _)| *camel).collect();
            problems.push(
                key_path("$", key),
                format!("unknown key; the report's keys are {}", known.join(", ")),
            );
        }
    }
    // In the order of KEYS.
    let [
        criteria,
        changed,
        tests,
        commands,
        validation,
        risks,
        staged,
        diff,
        review,
        manual,
        notes,
    ] = fields;
    let criteria_satisfied = criteria.map(|(v, p)| {
        let what = "objects with id, status and evidence";
        entries(v, &p, problems, read_criterion, what)
    });
    let commands_run = commands.map(|(v, p)| {
        let what = "objects with command, result and summary";
        entries(v, &p, problems, read_command, what)
    });
    AcceptanceReport {
        criteria_satisfied: criteria_satisfied.unwrap_or_default(),
        changed_files: changed.map(|(v, p)| strings(v, &p, problems)),
        tests_added_or_updated: tests.map(|(v, p)| strings(v, &p, problems)),
        commands_run,
        validation_output: validation.map(|(v, p)| strings(v, &p, problems)),
        residual_risks: risks.map(|(v, p)| strings(v, &p, problems)),
        no_staged_files: staged.and_then(|(v, p)| boolean(v, &p, problems)),
        diff_summary: diff.and_then(|(v, p)| text(v, &p, problems)),
        review_findings: review.map(|(v, p)| strings(v, &p, problems)),
        manual_notes: manual.and_then(|(v, p)| text(v, &p, problems)),
        notes: notes.and_then(|(v, p)| text(v, &p, problems)),
    }
}

/// The value of a key given as `camel` or `snake`; `null` counts as not given, both at once
/// as a problem (which one did the agent mean?).
fn lookup<'a>(object: &'a Map<String, Value>, camel: &str, snake: &str, problems: &mut Problems) -> Option<&'a Value> {
    let found = match (object.get(camel), object.get(snake)) {
        (Some(_), Some(_)) if camel != snake => {
            problems.push(key_path("$", camel), format!("given twice, as {camel} and as {snake}"));
            None
        }
        (Some(value), _) | (None, Some(value)) => Some(value),
        (None, None) => None,
    };
    found.filter(|value| !value.is_null())
}

/// A list of objects (or one object, read as a list of one), each read by `read`.
fn entries<T>(
    value: &Value,
    path: &str,
    problems: &mut Problems,
    read: fn(&Value, &str, &mut Problems) -> Option<T>,
    what: &str,
) -> Vec<T> {
    match value {
        Value::Array(items) => items
            .iter()
            .enumerate()
            .filter_map(|(index, item)| read(item, &format!("{path}[{index}]"), problems))
            .collect(),
        Value::Object(_) => read(value, path, problems).into_iter().collect(),
        other => {
            problems.push(
                path.to_owned(),
                format!("must be a list of {what}, not {}", kind(other)),
            );
            Vec::new()
        }
    }
}

fn read_criterion(value: &Value, path: &str, problems: &mut Problems) -> Option<CriterionClaim> {
    let object = entry_object(value, path, problems, &CRITERION_KEYS, "a criterion")?;
    let id = object
        .get("id")
        .filter(|v| !v.is_null())
        .and_then(|v| string(v, &format!("{path}.id"), problems));
    let status = required(object, path, "status", problems, &format!("one of {STATUSES}"))
        .and_then(|(v, p)| enumerated(v, &p, problems, STATUSES, CriterionStatus::from_word));
    let evidence = required(
        object,
        path,
        "evidence",
        problems,
        "what shows the criterion holds (or not)",
    )
    .and_then(|(v, p)| string(v, &p, problems));
    Some(CriterionClaim {
        id,
        status: status?,
        evidence: evidence?,
    })
}

fn read_command(value: &Value, path: &str, problems: &mut Problems) -> Option<CommandClaim> {
    let object = entry_object(value, path, problems, &COMMAND_KEYS, "a command")?;
    let command = required(object, path, "command", problems, "the command line as run")
        .and_then(|(v, p)| string(v, &p, problems));
    let result = required(object, path, "result", problems, &format!("one of {RESULTS}"))
        .and_then(|(v, p)| enumerated(v, &p, problems, RESULTS, CommandResult::from_word));
    let summary = match object.get("summary").filter(|v| !v.is_null()) {
        Some(v) => string(v, &format!("{path}.summary"), problems),
        None => Some(String::new()),
    };
    Some(CommandClaim {
        command: command?,
        result: result?,
        summary: summary?,
    })
}

/// An entry of a list of objects, with its unknown keys reported.
fn entry_object<'a>(
    value: &'a Value,
    path: &str,
    problems: &mut Problems,
    keys: &[&str],
    what: &str,
) -> Option<&'a Map<String, Value>> {
    let Some(object) = value.as_object() else {
        problems.push(
            path.to_owned(),
            format!("must be an object with {}, not {}", keys.join(", "), kind(value)),
        );
        return None;
    };
    for key in object.keys().filter(|key| !keys.contains(&key.as_str())) {
        problems.push(
            key_path(path, key),
            format!("unknown key; {what} has {}", keys.join(", ")),
        );
    }
    Some(object)
}

/// A key an entry must have, with its path.
fn required<'a>(
    object: &'a Map<String, Value>,
    path: &str,
    key: &str,
    problems: &mut Problems,
    expected: &str,
) -> Option<(&'a Value, String)> {
    let path = format!("{path}.{key}");
    match object.get(key).filter(|v| !v.is_null()) {
        Some(value) => Some((value, path)),
        None => {
            problems.push(path, format!("missing; expected {expected}"));
            None
        }
    }
}

fn enumerated<T>(
    value: &Value,
    path: &str,
    problems: &mut Problems,
    accepted: &str,
    from_word: fn(&str) -> Option<T>,
) -> Option<T> {
    let Some(word) = value.as_str() else {
        problems.push(
            path.to_owned(),
            format!("must be a string, one of {accepted}; not {}", kind(value)),
        );
        return None;
    };
    let normalized: String = word
        .trim()
        .chars()
        .map(|c| match c {
            '_' | ' ' => '-',
            c => c.to_ascii_lowercase(),
        })
        .collect();
    let found = from_word(&normalized);
    if found.is_none() {
        problems.push(
            path.to_owned(),
            format!("unknown value {}; expected one of {accepted}", quoted(word)),
        );
    }
    found
}

/// A list of strings, forgiving one string for a list of one; blank entries are dropped (an
/// agent's `[""]` means none).
fn strings(value: &Value, path: &str, problems: &mut Problems) -> Vec<String> {
    match value {
        Value::String(one) => non_blank(one).into_iter().collect(),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .filter_map(|(index, item)| match item {
                Value::String(entry) => non_blank(entry),
                other => {
                    problems.push(
                        format!("{path}[{index}]"),
                        format!("must be a string, not {}", kind(other)),
                    );
                    None
                }
            })
            .collect(),
        other => {
            problems.push(
                path.to_owned(),
                format!("must be a list of strings, not {}", kind(other)),
            );
            Vec::new()
        }
    }
}

/// A free text; a blank one is none.
fn text(value: &Value, path: &str, problems: &mut Problems) -> Option<String> {
    string(value, path, problems).and_then(|text| non_blank(&text))
}

fn string(value: &Value, path: &str, problems: &mut Problems) -> Option<String> {
    match value {
        Value::String(text) => Some(text.clone()),
        other => {
            problems.push(path.to_owned(), format!("must be a string, not {}", kind(other)));
            None
        }
    }
}

fn boolean(value: &Value, path: &str, problems: &mut Problems) -> Option<bool> {
    match value {
        Value::Bool(flag) => Some(*flag),
        Value::String(word) if word.trim().eq_ignore_ascii_case("true") => Some(true),
        Value::String(word) if word.trim().eq_ignore_ascii_case("false") => Some(false),
        Value::String(word) => {
            problems.push(path.to_owned(), format!("must be true or false, not {}", quoted(word)));
            None
        }
        other => {
            problems.push(path.to_owned(), format!("must be true or false, not {}", kind(other)));
            None
        }
    }
}

fn non_blank(text: &str) -> Option<String> {
    (!text.trim().is_empty()).then(|| text.to_owned())
}

/// What a value is, for messages.
pub(crate) fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// `parent.key`, or `parent['key']` when the key is not a plain name.
fn key_path(parent: &str, key: &str) -> String {
    let mut chars = key.chars();
    let plain = chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && key.len() <= MAX_QUOTED;
    if plain {
        format!("{parent}.{key}")
    } else {
        format!("{parent}[{}]", quoted(key))
    }
}

/// `'text'`, escaped and cut short.
fn quoted(text: &str) -> String {
    let mut out = String::from("'");
    let mut chars = text.chars();
    for c in chars.by_ref().take(MAX_QUOTED) {
        match c {
            '\'' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            c if c.is_control() => out.extend(c.escape_default()),
            c => out.push(c),
        }
    }
    if chars.next().is_some() {
        out.push('…');
    }
    out.push('\'');
    out
}

/// One fenced block of the answer (an acceptance report, review findings), as byte ranges
/// of whole lines.
#[derive(Debug)]
pub(crate) struct Block {
    /// From the opening fence's line to the closing fence's line, both included.
    pub(crate) whole: std::ops::Range<usize>,
    /// The lines between the fences.
    pub(crate) body: std::ops::Range<usize>,
    /// Whether it had a closing fence (otherwise it runs to the end of the text).
    pub(crate) closed: bool,
}

/// An opening code fence (CommonMark 4.5).
struct Fence {
    marker: u8,
    len: usize,
    report: bool,
}

/// The blocks of `text` whose fence is named one of `names` (case aside), in order. Every
/// fenced block is followed, so that such a fence shown inside another code block stays what
/// it is: text.
pub(crate) fn find_blocks(text: &str, names: &[&str]) -> Vec<Block> {
    let mut blocks = Vec::new();
    let mut open: Option<(Fence, usize, usize)> = None;
    let mut start = 0;
    for line in text.split_inclusive('\n') {
        let end = start + line.len();
        match &open {
            None => open = opening_fence(line, names).map(|fence| (fence, start, end)),
            Some((fence, first, body)) => {
                if closes(line, fence) {
                    if fence.report {
                        blocks.push(Block {
                            whole: *first..end,
                            body: *body..start,
                            closed: true,
                        });
                    }
                    open = None;
                }
            }
        }
        start = end;
    }
    if let Some((fence, first, body)) = open
        && fence.report
    {
        blocks.push(Block {
            whole: first..text.len(),
            body: body..text.len(),
            closed: false,
        });
    }
    blocks
}

/// The line without its line ending.
fn content(line: &str) -> &str {
    line.strip_suffix('\n')
        .map_or(line, |l| l.strip_suffix('\r').unwrap_or(l))
}

/// The fence marker run of a line indented at most three spaces: its char, its length and
/// what follows it.
fn marker_run(line: &str) -> Option<(u8, usize, &str)> {
    let line = content(line);
    let indent = line.bytes().take_while(|b| *b == b' ').count();
    if indent > 3 {
        return None;
    }
    let rest = line.get(indent..)?;
    let marker = *rest.as_bytes().first()?;
    if marker != b'`' && marker != b'~' {
        return None;
    }
    let len = rest.bytes().take_while(|b| *b == marker).count();
    // The run is ASCII, so `len` is a char boundary.
    Some((marker, len, rest.get(len..)?))
}

fn opening_fence(line: &str, names: &[&str]) -> Option<Fence> {
    let (marker, len, info) = marker_run(line)?;
    if len < 3 || (marker == b'`' && info.contains('`')) {
        return None;
    }
    let word = info.split_whitespace().next().unwrap_or_default();
    Some(Fence {
        marker,
        len,
        report: names.iter().any(|name| word.eq_ignore_ascii_case(name)),
    })
}

fn closes(line: &str, fence: &Fence) -> bool {
    marker_run(line).is_some_and(|(marker, len, rest)| {
        marker == fence.marker && len >= fence.len && rest.trim_matches([' ', '\t']).is_empty()
    })
}

fn is_blank(line: &str) -> bool {
    line.trim_matches([' ', '\t', '\r', '\n']).is_empty()
}

/// The text without `blocks`. A block between two paragraphs leaves one blank line, not two;
/// one at the start or the end leaves none.
fn remove_blocks(text: &str, blocks: &[Block]) -> String {
    let mut out = String::with_capacity(text.len());
    let mut kept = 0;
    for block in blocks {
        out.push_str(text.get(kept..block.whole.start).unwrap_or_default());
        kept = block.whole.end;
        if is_blank(&out) {
            out.clear();
        }
        if out.is_empty() || ends_with_blank_line(&out) {
            let rest = text.get(kept..).unwrap_or_default();
            let blank: usize = rest
                .split_inclusive('\n')
                .take_while(|line| is_blank(line))
                .map(str::len)
                .sum();
            kept += blank;
        }
    }
    let tail = text.get(kept..).unwrap_or_default();
    out.push_str(tail);
    if tail.trim().is_empty() {
        out.truncate(out.trim_end().len());
    }
    out
}

/// Whether `text` (which ends at a line start) ends with a blank line.
fn ends_with_blank_line(text: &str) -> bool {
    text.strip_suffix('\n')
        .map(|rest| rest.rsplit('\n').next().unwrap_or_default())
        .is_some_and(is_blank)
}

fn parse_body(body: &str) -> Result<AcceptanceReport, Vec<Diagnostic>> {
    match serde_json::from_str::<Value>(body) {
        Ok(value) => parse_value(&value),
        Err(error) => Err(vec![diagnostic(
            "$".to_owned(),
            format!("the acceptance-report block is not JSON: {error}"),
        )]),
    }
}

#[cfg(test)]
mod tests;
