//! Placeholders in shell scripts become references to environment variables.
//!
//! A value such as the previous step's answer is model output, so it is never pasted into
//! the text a shell parses: `{previous}` in a script is replaced by a quoted expansion of
//! `$SUBLAUNCH_PREVIOUS`, and the value travels in the environment. The expansion is quoted
//! for the place it stands in — `"${V}"` in plain text, `${V}` inside double quotes or an
//! unquoted here-document, `'"${V}"'` inside single quotes — so the value arrives as one
//! word, exactly as written, whatever it contains. Only the reference depends on this
//! reading of the quoting; the value never enters the script, so a misread can at worst
//! show the reference instead of the value, never run the value.

use std::collections::BTreeMap;

/// The longest `NAME=value` string the kernel passes in an environment (`MAX_ARG_STRLEN`).
const ENV_STRING_LIMIT: usize = 128 * 1024;

/// Values a shell script receives through environment variables, each with the placeholder
/// that stands for it in the script.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ScriptValues {
    entries: Vec<ScriptValue>,
}

/// One value: `{placeholder}` in the script, `$variable` in its environment.
#[derive(Clone, Debug, PartialEq, Eq)]
struct ScriptValue {
    placeholder: String,
    variable: String,
    value: String,
}

impl ScriptValues {
    /// Adds `{placeholder}`, passed as `$variable`.
    pub fn push(&mut self, placeholder: &str, variable: &str, value: &str) {
        self.entries.push(ScriptValue {
            placeholder: placeholder.to_owned(),
            variable: variable.to_owned(),
            value: value.to_owned(),
        });
    }

    /// `script` with its placeholders turned into references ([`rewrite`]) and the
    /// environment that carries the values. A value the environment cannot carry (a NUL
    /// byte, over 128 KiB) is an error when the script names it, and left out otherwise.
    pub fn apply(&self, script: &str) -> Result<(String, BTreeMap<String, String>), String> {
        let mut env = BTreeMap::new();
        for entry in &self.entries {
            let used = script.contains(&format!("{{{}}}", entry.placeholder)) || script.contains(&entry.variable);
            let problem = if entry.value.contains('\0') {
                Some("contains a NUL byte".to_owned())
            } else if entry.variable.len() + 1 + entry.value.len() > ENV_STRING_LIMIT {
                Some(format!(
                    "is {} bytes; an environment variable holds at most 128 KiB",
                    entry.value.len()
                ))
            } else {
                None
            };
            match problem {
                None => {
                    env.insert(entry.variable.clone(), entry.value.clone());
                }
                Some(problem) if used => {
                    return Err(format!(
                        "The value of {{{}}} {problem}, so the shell script cannot receive it in ${}.",
                        entry.placeholder, entry.variable
                    ));
                }
                Some(_) => {}
            }
        }
        let names: Vec<(&str, &str)> = self
            .entries
            .iter()
            .map(|e| (e.placeholder.as_str(), e.variable.as_str()))
            .collect();
        Ok((rewrite(script, &names), env))
    }
}

/// The quoting context at a point of the script.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Context {
    /// Plain shell text (the top level, or inside `$(…)` / backquotes).
    Plain,
    /// Inside `'…'`.
    Single,
    /// Inside `$'…'`.
    AnsiC,
    /// Inside `"…"`.
    Double,
}

/// An open construct: its context and, for command substitutions, how it closes.
#[derive(Clone, Copy, Debug)]
struct Frame {
    context: Context,
    /// `$(`: the parenthesis depth inside it; closing at depth 0 pops the frame.
    parens: Option<u32>,
    /// A backquoted command substitution.
    backquote: bool,
}

impl Frame {
    const fn new(context: Context) -> Self {
        Self {
            context,
            parens: None,
            backquote: false,
        }
    }
}

/// A here-document announced on the current line, read once the line ends.
struct PendingHeredoc {
    delimiter: String,
    /// `<<-`: leading tabs of the body lines are stripped.
    strip_tabs: bool,
    /// The delimiter was quoted: the body is literal text, nothing is expanded.
    literal: bool,
}

/// `script` with every `{name}` of `placeholders` (name → environment variable) replaced by a
/// reference to its variable, quoted for where it stands.
pub fn rewrite(script: &str, placeholders: &[(&str, &str)]) -> String {
    let mut out = String::with_capacity(script.len());
    let mut stack = vec![Frame::new(Context::Plain)];
    let mut heredocs: Vec<PendingHeredoc> = Vec::new();
    let mut rest = script;
    while let Some(c) = rest.chars().next() {
        let top = *stack.last().expect("the top level is never popped");
        if c == '{'
            && let Some((name, variable)) = placeholder_at(rest, placeholders)
        {
            out.push_str(&reference(variable, top.context));
            rest = &rest[name.len() + 2..];
            continue;
        }
        let len = c.len_utf8();
        match (top.context, c) {
            (Context::Single, '\'') | (Context::Double, '"') => {
                stack.pop();
            }
            (Context::AnsiC, '\'') => {
                stack.pop();
            }
            (Context::AnsiC | Context::Double | Context::Plain, '\\') => {
                // The escaped character is copied as it is (an escaped newline too).
                let escaped = rest[1..].chars().next().map_or(0, char::len_utf8);
                out.push_str(&rest[..1 + escaped]);
                rest = &rest[1 + escaped..];
                continue;
            }
            (Context::Plain, '\'') => stack.push(Frame::new(Context::Single)),
            (Context::Plain, '$') if rest[1..].starts_with('\'') => {
                out.push_str("$'");
                rest = &rest[2..];
                stack.push(Frame::new(Context::AnsiC));
                continue;
            }
            (Context::Plain, '"') => stack.push(Frame::new(Context::Double)),
            (Context::Plain | Context::Double, '$') if rest[1..].starts_with('(') => {
                out.push_str("$(");
                rest = &rest[2..];
                stack.push(Frame {
                    parens: Some(0),
                    ..Frame::new(Context::Plain)
                });
                continue;
            }
            (Context::Plain | Context::Double, '`') => {
                if top.backquote {
                    stack.pop();
                } else {
                    stack.push(Frame {
                        backquote: true,
                        ..Frame::new(Context::Plain)
                    });
                }
            }
            (Context::Plain, '(') => {
                if let Some(depth) = stack.last_mut().and_then(|f| f.parens.as_mut()) {
                    *depth += 1;
                }
            }
            (Context::Plain, ')') => match top.parens {
                Some(0) => {
                    stack.pop();
                }
                Some(depth) => stack.last_mut().expect("a frame is open").parens = Some(depth - 1),
                None => {}
            },
            (Context::Plain, '#') if starts_word(&out) => {
                // A comment runs to the end of the line; nothing in it is rewritten.
                let end = rest.find('\n').unwrap_or(rest.len());
                out.push_str(&rest[..end]);
                rest = &rest[end..];
                continue;
            }
            (Context::Plain, '<') if rest.starts_with("<<") && !rest.starts_with("<<<") => {
                let (consumed, heredoc) = heredoc_operator(rest);
                out.push_str(&rest[..consumed]);
                rest = &rest[consumed..];
                heredocs.extend(heredoc);
                continue;
            }
            (Context::Plain, '\n') if !heredocs.is_empty() => {
                out.push('\n');
                rest = &rest[1..];
                for heredoc in heredocs.drain(..) {
                    rest = copy_heredoc_body(rest, &heredoc, placeholders, &mut out);
                }
                continue;
            }
            _ => {}
        }
        out.push_str(&rest[..len]);
        rest = &rest[len..];
    }
    out
}

/// The placeholder `{name}` at the start of `text`, with its variable.
fn placeholder_at<'a>(text: &str, placeholders: &[(&'a str, &'a str)]) -> Option<(&'a str, &'a str)> {
    let inner = &text[1..];
    placeholders
        .iter()
        .find(|(name, _)| inner.starts_with(name) && inner[name.len()..].starts_with('}'))
        .copied()
}

/// A reference to `variable` that expands to its value as one word in `context`.
fn reference(variable: &str, context: Context) -> String {
    match context {
        Context::Plain => format!("\"${{{variable}}}\""),
        Context::Double => format!("${{{variable}}}"),
        Context::Single => format!("'\"${{{variable}}}\"'"),
        // Closed, referenced, and reopened as a plain single-quoted string: bash reads the
        // rest as it did (less escape processing after this point), and sh, for which `$'` is
        // a `$` before a quoted string, reads it exactly as it did.
        Context::AnsiC => format!("'\"${{{variable}}}\"'"),
    }
}

/// Whether the next character starts a word (so `#` begins a comment).
fn starts_word(out: &str) -> bool {
    out.chars()
        .next_back()
        .is_none_or(|c| c.is_whitespace() || matches!(c, ';' | '&' | '|' | '(' | ')'))
}

/// Reads `<<[-] WORD` at the start of `text`: how many bytes it spans and the here-document
/// it announces (none when no word follows).
fn heredoc_operator(text: &str) -> (usize, Option<PendingHeredoc>) {
    let mut at = 2;
    let strip_tabs = text[at..].starts_with('-');
    if strip_tabs {
        at += 1;
    }
    at += text[at..].len() - text[at..].trim_start_matches([' ', '\t']).len();
    let mut delimiter = String::new();
    let mut literal = false;
    let mut chars = text[at..].char_indices().peekable();
    let mut quote: Option<char> = None;
    let mut end = text.len() - at;
    while let Some((i, c)) = chars.next() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => delimiter.push(c),
            (None, '\'' | '"') => {
                literal = true;
                quote = Some(c);
            }
            (None, '\\') => {
                literal = true;
                if let Some((_, next)) = chars.next() {
                    delimiter.push(next);
                }
            }
            (None, c) if c.is_whitespace() || matches!(c, ';' | '&' | '|' | '<' | '>' | '(' | ')') => {
                end = i;
                break;
            }
            (None, c) => delimiter.push(c),
        }
    }
    let heredoc = (!delimiter.is_empty()).then_some(PendingHeredoc {
        delimiter,
        strip_tabs,
        literal,
    });
    (at + end, heredoc)
}

/// Copies a here-document's body and its delimiter line from the start of `text` into `out`;
/// returns what follows. In an expanding body a placeholder becomes `${V}` (quotes would be
/// literal there); a literal body is copied as it is.
fn copy_heredoc_body<'a>(
    mut text: &'a str,
    heredoc: &PendingHeredoc,
    placeholders: &[(&str, &str)],
    out: &mut String,
) -> &'a str {
    let references: Vec<(&str, String)> = placeholders
        .iter()
        .map(|(name, variable)| (*name, format!("${{{variable}}}")))
        .collect();
    let references: Vec<(&str, &str)> = references.iter().map(|(n, r)| (*n, r.as_str())).collect();
    while !text.is_empty() {
        let end = text.find('\n').map_or(text.len(), |i| i + 1);
        let line = &text[..end];
        text = &text[end..];
        let bare = line.trim_end_matches('\n');
        let bare = if heredoc.strip_tabs {
            bare.trim_start_matches('\t')
        } else {
            bare
        };
        if bare == heredoc.delimiter {
            out.push_str(line);
            break;
        }
        if heredoc.literal {
            out.push_str(line);
        } else {
            out.push_str(&crate::adapter::fill_template(line, &references));
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    const VARS: [(&str, &str); 2] = [("previous", "SUBLAUNCH_PREVIOUS"), ("task", "SUBLAUNCH_TASK")];

    /// Runs the rewritten script with `sh` and the values in the environment; its stdout.
    fn run(script: &str, previous: &str) -> String {
        let output = Command::new("sh")
            .args(["-c", &rewrite(script, &VARS)])
            .env("SUBLAUNCH_PREVIOUS", previous)
            .env("SUBLAUNCH_TASK", "the task")
            .output()
            .unwrap();
        String::from_utf8(output.stdout).unwrap()
    }

    const HOSTILE: [&str; 9] = [
        "$(touch PWNED)",
        "`touch PWNED`",
        "a; touch PWNED",
        "line one\ntouch PWNED\n",
        "it's \"quoted\" 'both'",
        "-n --help",
        "*  ?  [a-z]  two  spaces",
        "${HOME} $HOME \\$x",
        "EOF\ntouch PWNED\nEOF",
    ];

    #[test]
    fn every_quoting_context_gets_the_value_verbatim_and_never_runs_it() {
        // (script, what it prints with {} for the value, whether a command substitution
        // ends with the value: the shell drops its trailing newlines, not us).
        let scripts = [
            ("printf '%s' {previous}", "{}", false),
            ("printf '%s' \"<{previous}>\"", "<{}>", false),
            ("printf '%s' '<{previous}>'", "<{}>", false),
            ("printf '%s' \"$(printf '%s' {previous})\"", "{}", true),
            ("printf '%s' \"`printf '%s' {previous}`\"", "{}", true),
            ("x=$(printf '[%s]' {previous}); printf '%s' \"$x\"", "[{}]", false),
            ("cat <<EOF\n<{previous}>\nEOF", "<{}>\n", false),
            ("cat <<-'EOF'\n\t{previous}\n\tEOF", "{previous}\n", false),
            ("printf '%s' {previous} # {previous} in a comment", "{}", false),
        ];
        let dir = tempfile::tempdir().unwrap();
        for value in HOSTILE {
            for (script, expected, strips) in scripts {
                let script = format!("cd '{}' && {script}", dir.path().display());
                let got = run(&script, value);
                let shown = if strips { value.trim_end_matches('\n') } else { value };
                assert_eq!(
                    got,
                    expected.replace("{}", shown),
                    "script {script:?} with value {value:?}"
                );
                assert!(!dir.path().join("PWNED").exists(), "{script:?} ran {value:?}");
            }
        }
    }

    #[test]
    fn escaped_quotes_and_unknown_braces_stay_as_written() {
        assert_eq!(
            rewrite(r#"echo \"{x} {task}"#, &VARS),
            r#"echo \"{x} "${SUBLAUNCH_TASK}""#
        );
        assert_eq!(
            rewrite("echo \"a\\\"{task}\"", &VARS),
            "echo \"a\\\"${SUBLAUNCH_TASK}\""
        );
        assert_eq!(
            rewrite("f() { echo {task}; }", &VARS),
            "f() { echo \"${SUBLAUNCH_TASK}\"; }"
        );
        assert_eq!(rewrite("echo $'a{task}'", &VARS), "echo $'a'\"${SUBLAUNCH_TASK}\"''");
    }
}
