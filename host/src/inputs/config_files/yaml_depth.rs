//! How deep a YAML text nests, counted as the YAML parser (libyaml, under `serde_norway`) will
//! tokenise it: a block collection for every indentation level the parser opens, a flow
//! collection for every `[`/`{` it reads as one.
//!
//! The parser's time grows with the flow depth times the number of tokens, so a hostile file
//! must not be able to hide brackets from this count. A bracket is therefore ignored only
//! where the parser reads it as text, by the parser's own rules: inside a quoted scalar (which
//! opens only where a token starts, and may span lines), a plain scalar (`a'b` and `x [y` are
//! text, and so is a continuation line), a block scalar (`|`, `>`: every line indented past
//! the parser's current indentation) or a comment. Where the parser would stop with an error
//! the count goes on regardless: what follows an error is never parsed, so counting it can at
//! worst refuse a broken file with this message instead of the parser's.

/// The first line (1-based) at which `text` is nested more than `limit` levels deep, if any.
pub(super) fn first_line_deeper_than(text: &str, limit: usize) -> Option<usize> {
    Scanner::new(text, limit).run().err().map(|Deeper { line }| line)
}

/// The depth was exceeded on `line` (1-based).
struct Deeper {
    line: usize,
}

/// A cursor over the text that keeps the parser's state that decides nesting.
struct Scanner<'a> {
    text: &'a [u8],
    /// Byte offset of the cursor.
    at: usize,
    /// Line (0-based) and column (in characters, as the parser counts) of the cursor.
    line: usize,
    column: usize,
    /// The parser's flow level: open `[`/`{` collections.
    flow: usize,
    /// The parser's stack of block indentation columns (its current indent is the last one,
    /// or -1 when empty).
    indents: Vec<usize>,
    /// Whether a simple key (`key:`) may start at the next token.
    key_allowed: bool,
    /// Where the possible simple key outside any flow collection started (line, column): a
    /// `:` after it opens a block mapping at that column.
    block_key: Option<(usize, usize)>,
    limit: usize,
    deepest: usize,
}

impl<'a> Scanner<'a> {
    fn new(text: &'a str, limit: usize) -> Self {
        Self {
            text: text.as_bytes(),
            at: 0,
            line: 0,
            column: 0,
            flow: 0,
            indents: Vec::new(),
            key_allowed: true,
            block_key: None,
            limit,
            deepest: 0,
        }
    }

    /// Scans the whole text; the deepest nesting seen, or where it exceeded the limit.
    fn run(&mut self) -> Result<usize, Deeper> {
        loop {
            self.skip_to_next_token();
            if self.block_key.is_some_and(|(line, _)| line < self.line) {
                self.block_key = None;
            }
            self.unroll(self.column as isize);
            if self.at_end(0) {
                return Ok(self.deepest);
            }
            let c = self.byte(0);
            if self.column == 0 && c == b'%' {
                // A directive: one line.
                self.skip_to_line_end();
                continue;
            }
            if self.document_indicator() {
                self.unroll(-1);
                self.remove_key();
                self.key_allowed = false;
                for _ in 0..3 {
                    self.skip();
                }
                continue;
            }
            match c {
                b'[' | b'{' => {
                    self.save_key();
                    self.flow += 1;
                    self.measure()?;
                    self.key_allowed = true;
                    self.skip();
                }
                b']' | b'}' => {
                    self.remove_key();
                    self.flow = self.flow.saturating_sub(1);
                    self.key_allowed = false;
                    self.skip();
                }
                b',' => {
                    self.remove_key();
                    self.key_allowed = true;
                    self.skip();
                }
                b'-' if self.is_blankz(1) => {
                    self.roll(self.column)?;
                    self.remove_key();
                    self.key_allowed = true;
                    self.skip();
                }
                b'?' if self.flow > 0 || self.is_blankz(1) => {
                    self.roll(self.column)?;
                    self.remove_key();
                    self.key_allowed = self.flow == 0;
                    self.skip();
                }
                b':' if self.flow > 0 || self.is_blankz(1) => {
                    if self.flow == 0 {
                        match self.block_key.take() {
                            Some((_, column)) => {
                                self.roll(column)?;
                                self.key_allowed = false;
                            }
                            None => {
                                self.roll(self.column)?;
                                self.key_allowed = true;
                            }
                        }
                    } else {
                        self.key_allowed = false;
                    }
                    self.skip();
                }
                b'*' | b'&' => {
                    self.save_key();
                    self.key_allowed = false;
                    self.skip();
                    while is_alpha(self.byte(0)) {
                        self.skip();
                    }
                }
                b'!' => {
                    self.save_key();
                    self.key_allowed = false;
                    self.tag();
                }
                b'|' | b'>' if self.flow == 0 => {
                    self.remove_key();
                    self.key_allowed = true;
                    self.block_scalar();
                }
                b'\'' | b'"' => {
                    self.save_key();
                    self.key_allowed = false;
                    self.quoted(c);
                }
                _ if self.starts_plain() => {
                    self.save_key();
                    self.key_allowed = false;
                    self.plain();
                }
                // The parser stops here ("cannot start any token").
                _ => self.skip(),
            }
        }
    }

    /// Skips spaces, line breaks and comments up to the next token.
    fn skip_to_next_token(&mut self) {
        loop {
            // A byte order mark at the start of a line is skipped as a character (the parser
            // is told the text is UTF-8, so its reader drops none, not even the first).
            if self.column == 0 && self.text[self.at..].starts_with("\u{feff}".as_bytes()) {
                self.skip();
            }
            while self.byte(0) == b' ' || ((self.flow > 0 || !self.key_allowed) && self.byte(0) == b'\t') {
                self.skip();
            }
            if self.byte(0) == b'#' {
                self.skip_to_line_end();
            }
            if !self.is_break(0) {
                return;
            }
            self.skip_break();
            if self.flow == 0 {
                self.key_allowed = true;
            }
        }
    }

    /// Whether the character at the cursor starts a plain scalar.
    fn starts_plain(&self) -> bool {
        let c = self.byte(0);
        let indicator = self.is_blankz(0) || b"-?:,[]{}#&*!|>'\"%@`".contains(&c);
        !indicator
            || (c == b'-' && !self.is_blank(1))
            || (self.flow == 0 && (c == b'?' || c == b':') && !self.is_blankz(1))
    }

    /// A tag (`!x`, `!!str`, `!<verbatim>`): its characters may include quotes and, in the
    /// verbatim form, brackets.
    fn tag(&mut self) {
        if self.byte(1) == b'<' {
            self.skip();
            self.skip();
            while is_uri_char(self.byte(0)) || matches!(self.byte(0), b',' | b'[' | b']') {
                self.skip();
            }
            if self.byte(0) == b'>' {
                self.skip();
            }
        } else {
            self.skip();
            while is_uri_char(self.byte(0)) {
                self.skip();
            }
        }
    }

    /// A single- or double-quoted scalar from its opening `quote` to its closing one, across
    /// lines.
    fn quoted(&mut self, quote: u8) {
        let single = quote == b'\'';
        self.skip();
        loop {
            if self.document_indicator() || self.at_end(0) {
                return;
            }
            while !self.is_blankz(0) {
                self.skip_run(if single { &SINGLE_QUOTED } else { &DOUBLE_QUOTED });
                if self.is_blankz(0) {
                    break;
                }
                let c = self.byte(0);
                if single && c == b'\'' && self.byte(1) == b'\'' {
                    self.skip();
                    self.skip();
                } else if c == quote {
                    break;
                } else if !single && c == b'\\' && self.is_break(1) {
                    self.skip();
                    self.skip_break();
                    break;
                } else if !single && c == b'\\' {
                    self.skip();
                    if !self.at_end(0) {
                        self.skip();
                    }
                } else {
                    self.skip();
                }
            }
            if self.byte(0) == quote {
                self.skip();
                return;
            }
            while self.is_blank(0) || self.is_break(0) {
                if self.is_blank(0) {
                    self.skip();
                } else {
                    self.skip_break();
                }
            }
        }
    }

    /// A plain scalar: up to `: `, a comment, a flow indicator inside a flow collection, or a
    /// line indented no deeper than the current block.
    fn plain(&mut self) {
        let indent = self.indent() + 1;
        let mut leading_blanks = false;
        loop {
            if self.document_indicator() || self.byte(0) == b'#' {
                break;
            }
            while !self.is_blankz(0) {
                self.skip_run(if self.flow > 0 { &PLAIN_IN_FLOW } else { &PLAIN });
                if self.is_blankz(0) {
                    break;
                }
                let c = self.byte(0);
                if self.flow > 0 && c == b':' && matches!(self.byte(1), b',' | b'?' | b'[' | b']' | b'{' | b'}') {
                    // The parser stops here ("found unexpected ':'").
                    return;
                }
                if (c == b':' && self.is_blankz(1)) || (self.flow > 0 && matches!(c, b',' | b'[' | b']' | b'{' | b'}'))
                {
                    break;
                }
                self.skip();
            }
            if !(self.is_blank(0) || self.is_break(0)) {
                break;
            }
            while self.is_blank(0) || self.is_break(0) {
                if self.is_blank(0) {
                    self.skip();
                } else {
                    self.skip_break();
                    leading_blanks = true;
                }
            }
            if self.flow == 0 && (self.column as isize) < indent {
                break;
            }
        }
        if leading_blanks {
            self.key_allowed = true;
        }
    }

    /// A literal (`|`) or folded (`>`) block scalar: its header, then every line indented at
    /// least as far as its content (given by the header or by its first non-empty line).
    fn block_scalar(&mut self) {
        self.skip();
        let mut increment = 0;
        let digit = |c: u8| c.is_ascii_digit().then(|| isize::from(c - b'0'));
        if matches!(self.byte(0), b'+' | b'-') {
            self.skip();
            if let Some(d) = digit(self.byte(0)) {
                if d == 0 {
                    return;
                }
                increment = d;
                self.skip();
            }
        } else if let Some(d) = digit(self.byte(0)) {
            if d == 0 {
                return;
            }
            increment = d;
            self.skip();
            if matches!(self.byte(0), b'+' | b'-') {
                self.skip();
            }
        }
        while self.is_blank(0) {
            self.skip();
        }
        if self.byte(0) == b'#' {
            self.skip_to_line_end();
        }
        if !self.is_breakz(0) {
            return;
        }
        if self.is_break(0) {
            self.skip_break();
        }
        let mut indent = match increment {
            0 => 0,
            _ if self.indent() >= 0 => self.indent() + increment,
            _ => increment,
        };
        if !self.block_breaks(&mut indent) {
            return;
        }
        while self.column as isize == indent && !self.at_end(0) {
            self.skip_to_line_end();
            if self.is_break(0) {
                self.skip_break();
            }
            if !self.block_breaks(&mut indent) {
                return;
            }
        }
    }

    /// The indentation and empty lines before a block scalar's next content line; fixes the
    /// content's indentation (`*indent`, 0 while unknown) from the first one. False where the
    /// parser stops (a tab where indentation is expected).
    fn block_breaks(&mut self, indent: &mut isize) -> bool {
        let mut max_indent = 0;
        loop {
            while (*indent == 0 || (self.column as isize) < *indent) && self.byte(0) == b' ' {
                self.skip();
            }
            max_indent = max_indent.max(self.column as isize);
            if (*indent == 0 || (self.column as isize) < *indent) && self.byte(0) == b'\t' {
                return false;
            }
            if !self.is_break(0) {
                break;
            }
            self.skip_break();
        }
        if *indent == 0 {
            *indent = max_indent.max(self.indent() + 1).max(1);
        }
        true
    }

    /// The parser's current block indentation (-1 outside any block collection).
    fn indent(&self) -> isize {
        self.indents.last().map_or(-1, |&i| i as isize)
    }

    /// A block collection opens at `column` if it is deeper than the current one.
    fn roll(&mut self, column: usize) -> Result<(), Deeper> {
        if self.flow == 0 && self.indent() < column as isize {
            self.indents.push(column);
            self.measure()?;
        }
        Ok(())
    }

    /// Block collections deeper than `column` end.
    fn unroll(&mut self, column: isize) {
        if self.flow == 0 {
            while self.indent() > column {
                self.indents.pop();
            }
        }
    }

    fn measure(&mut self) -> Result<(), Deeper> {
        // A flow collection that starts a line's possible key (`[a, b]: c`) opens a block
        // mapping around itself once its `:` comes: counted from the start.
        let pending_mapping = self.flow > 0
            && self
                .block_key
                .is_some_and(|(_, column)| column as isize > self.indent());
        let depth = self.indents.len() + self.flow + usize::from(pending_mapping);
        self.deepest = self.deepest.max(depth);
        if depth > self.limit {
            return Err(Deeper { line: self.line + 1 });
        }
        Ok(())
    }

    fn save_key(&mut self) {
        if self.flow == 0 && self.key_allowed {
            self.block_key = Some((self.line, self.column));
        }
    }

    fn remove_key(&mut self) {
        if self.flow == 0 {
            self.block_key = None;
        }
    }

    fn byte(&self, ahead: usize) -> u8 {
        self.text.get(self.at + ahead).copied().unwrap_or(0)
    }

    fn at_end(&self, ahead: usize) -> bool {
        self.at + ahead >= self.text.len()
    }

    /// The length in bytes of the line break `ahead` bytes on (CR LF, CR, LF, NEL, LS, PS),
    /// 0 when there is none.
    fn break_width(&self, ahead: usize) -> usize {
        match (self.byte(ahead), self.byte(ahead + 1), self.byte(ahead + 2)) {
            (b'\r', b'\n', _) => 2,
            (b'\r' | b'\n', _, _) => 1,
            (0xC2, 0x85, _) => 2,
            (0xE2, 0x80, 0xA8 | 0xA9) => 3,
            _ => 0,
        }
    }

    fn is_break(&self, ahead: usize) -> bool {
        self.break_width(ahead) > 0
    }

    fn is_breakz(&self, ahead: usize) -> bool {
        self.is_break(ahead) || self.at_end(ahead)
    }

    fn is_blank(&self, ahead: usize) -> bool {
        matches!(self.byte(ahead), b' ' | b'\t')
    }

    fn is_blankz(&self, ahead: usize) -> bool {
        self.is_blank(ahead) || self.is_breakz(ahead)
    }

    /// `---` or `...` at the start of a line, followed by a space or the line's end.
    fn document_indicator(&self) -> bool {
        self.column == 0
            && (self.text[self.at..].starts_with(b"---") || self.text[self.at..].starts_with(b"..."))
            && self.is_blankz(3)
    }

    /// Moves past the bytes at the cursor up to the first one in `stops` (a fast path through
    /// long scalars; every table stops at the bytes that begin a line break).
    fn skip_run(&mut self, stops: &[bool; 256]) {
        let rest = &self.text[self.at..];
        let run = rest.iter().position(|&b| stops[usize::from(b)]).unwrap_or(rest.len());
        // Characters, not bytes: continuation bytes do not count.
        self.column += rest[..run].iter().filter(|&&b| b & 0xC0 != 0x80).count();
        self.at += run;
    }

    /// Moves to the line break (or the end) that ends the current line.
    fn skip_to_line_end(&mut self) {
        loop {
            self.skip_run(&LINE);
            if self.is_breakz(0) {
                return;
            }
            // A byte that may begin a line break, but here begins another character.
            self.skip();
        }
    }

    /// Moves past one character.
    fn skip(&mut self) {
        let width = match self.byte(0) {
            0xF0.. => 4,
            0xE0.. => 3,
            0xC0.. => 2,
            _ => 1,
        };
        self.at = (self.at + width).min(self.text.len());
        self.column += 1;
    }

    /// Moves past the line break at the cursor.
    fn skip_break(&mut self) {
        self.at += self.break_width(0);
        self.line += 1;
        self.column = 0;
    }
}

/// The bytes that stop [`Scanner::skip_run`]: line breaks (CR, LF, and the first bytes of
/// NEL, LS and PS), plus what else a scalar's scan must look at.
const LINE: [bool; 256] = stops(b"\r\n\xC2\xE2");
const SINGLE_QUOTED: [bool; 256] = stops(b"' \t\r\n\xC2\xE2");
const DOUBLE_QUOTED: [bool; 256] = stops(b"\"\\ \t\r\n\xC2\xE2");
const PLAIN: [bool; 256] = stops(b": \t\r\n\xC2\xE2");
const PLAIN_IN_FLOW: [bool; 256] = stops(b":,[]{} \t\r\n\xC2\xE2");

const fn stops(bytes: &[u8]) -> [bool; 256] {
    let mut table = [false; 256];
    let mut i = 0;
    while i < bytes.len() {
        table[bytes[i] as usize] = true;
        i += 1;
    }
    table
}

/// A character of anchor names and tag handles.
fn is_alpha(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c == b'-'
}

/// A character of a tag's URI.
fn is_uri_char(c: u8) -> bool {
    is_alpha(c) || b";/?:@&=+$.%!~*'()".contains(&c)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn deepest(text: &str) -> usize {
        match Scanner::new(text, usize::MAX).run() {
            Ok(depth) => depth,
            Err(_) => unreachable!("no limit"),
        }
    }

    /// How deep the parsed value nests.
    fn value_depth(value: &serde_norway::Value) -> usize {
        use serde_norway::Value;
        match value {
            Value::Sequence(items) => 1 + items.iter().map(value_depth).max().unwrap_or(0),
            Value::Mapping(map) => {
                1 + map
                    .iter()
                    .map(|(k, v)| value_depth(k).max(value_depth(v)))
                    .max()
                    .unwrap_or(0)
            }
            Value::Tagged(tagged) => value_depth(&tagged.value),
            _ => 0,
        }
    }

    #[test]
    fn brackets_are_counted_where_the_parser_reads_them_as_collections() {
        let cases: &[(&str, usize)] = &[
            // A quote inside a plain scalar opens nothing: the brackets after it nest.
            ("foo: [a'b, [[[x]]]]\n", 5),
            ("foo: [a\"b, [[[x]]]]\n", 5),
            ("foo: a 'b\nbar: [[x]]\n", 3),
            // A plain scalar continues on the next line, quote and all.
            ("foo: [a\n 'b, [[x]]]\n", 4),
            ("k: a\n  'b\nbar: [[x]]\n", 3),
            // Quoted scalars, escapes and doubled quotes keep their brackets.
            ("s: '[[[['\n", 1),
            ("t: ['it''s ]]]]', [[x]]]\n", 4),
            ("t: [\"a\\\"]]]]\", [[x]]]\n", 4),
            ("t: ['a\n ]]]]', [[x]]]\n", 4),
            ("t: [\"a\\\n]]]]\", [[x]]]\n", 4),
            // Block scalars are text, as far as they are indented.
            ("a: |\n  [[[[\n  it's\nb: [[x]]\n", 3),
            ("- a: |\n  b: [[[x]]]\n", 5),
            // Comments; `#` inside a plain scalar is text.
            ("a: 1 # [[[[\nb: a#[[[[\n", 1),
            // Tags and anchors may hold quotes.
            ("a: !t'x [[y]]\n", 3),
            ("&k a: [[y]]\n", 3),
            // Block nesting is the parser's indentation levels.
            ("a:\n  b:\n    - c: [1, {d: 2}]\n    - - e\n", 6),
        ];
        for (text, expected) in cases {
            assert_eq!(deepest(text), *expected, "{text:?}");
        }
    }

    #[test]
    fn the_count_is_never_below_the_parsed_nesting() {
        // Random texts from pieces that open and close collections, quotes in and out of
        // scalars, comments, block scalars and line breaks; for every one the parser accepts,
        // the count must cover its nesting (each counted level holds at most two of the
        // value's: an indentless sequence or a `[k: v]` pair adds one without a level).
        const PIECES: &[&str] = &[
            "[", "[", "[[[", "]", "]", "]]]", "{", "}", ", ", ",", ": ", ":", "a", "a'b", "'", "\"", "\\", "''", "'x'",
            "\"x\"", " #", "#", "\n", "\n  ", "\n    ", " |\n", " >-\n", "- ", "? ", "k: ", " ", "\t", "&a ", "*a",
            "!t ", "!<[[>", "---\n", "x'", "\"\\\"", "a]", "%", "\u{feff}", "\r\n", "\u{2028}", "\u{85}", "é",
            "\u{2030}", "\n- ", "\n  - ", "\n  ", " |2\n", " >+\n", "k:\n", "\n ", "[a: ", "{a: ", "\n...\n", "\\\n",
            "-", "?", "\n? ", "\n: ",
        ];
        let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let mut parsed = 0;
        for _ in 0..60_000 {
            let pieces = 1 + (next() % 24) as usize;
            let text: String = (0..pieces)
                .map(|_| PIECES[(next() % PIECES.len() as u64) as usize])
                .collect();
            let Ok(value) = serde_norway::from_str::<serde_norway::Value>(&text) else {
                continue;
            };
            parsed += 1;
            let depth = value_depth(&value);
            assert!(
                depth <= 2 * deepest(&text),
                "{text:?} nests {depth} deep, counted {}",
                deepest(&text)
            );
        }
        assert!(
            parsed > 5_000,
            "only {parsed} texts parsed: the pieces need rebalancing"
        );
    }

    /// About 1 MiB of frontmatter that is legal but as costly as the limits allow: thousands
    /// of keys, long quoted and plain strings, a block scalar full of brackets, and flow
    /// collections nested to the limit holding tens of thousands of items — behind a quote in
    /// a plain scalar, as the attack that hid brackets used to.
    fn hostile_frontmatter(deep: usize) -> String {
        let mut yaml = String::from("name: hostile\ndescription: 'it''s [[[ not a list'\n");
        for k in 0..8000 {
            yaml.push_str(&format!("key{k}: value {k} with a'quote and [brackets\n"));
        }
        yaml.push_str(&format!("long: '{}'\n", "[x] ".repeat(60_000)));
        yaml.push_str("prose: |\n");
        for _ in 0..2000 {
            yaml.push_str("  [[[[ {{{{ don't \"\n");
        }
        let open = deep - 2;
        yaml.push_str(&format!(
            "nest: [a'b, {}{}{}]\n",
            "[".repeat(open),
            "a, ".repeat(100_000),
            "]".repeat(open)
        ));
        yaml
    }

    #[test]
    fn a_mebibyte_of_hostile_frontmatter_is_parsed_or_refused() {
        use crate::inputs::agents::{AgentSource, Scope, parse_agent_file};
        let path = std::path::Path::new("/agents/hostile.md");
        let source = || AgentSource::File {
            path: path.to_owned(),
            scope: Scope::User,
        };
        // Within the limit (the mapping, then 63 flow levels): parsed.
        let yaml = hostile_frontmatter(crate::inputs::config_files::YAML_DEPTH_LIMIT);
        assert!(yaml.len() > 900 * 1024 && yaml.len() < 1024 * 1024, "{}", yaml.len());
        assert_eq!(deepest(&yaml), crate::inputs::config_files::YAML_DEPTH_LIMIT);
        let agent = parse_agent_file(path, &format!("---\n{yaml}---\nprompt\n"), source());
        assert!(agent.is_ok(), "{:?}", agent.err());
        // One level more: refused before the parser sees it.
        let yaml = hostile_frontmatter(crate::inputs::config_files::YAML_DEPTH_LIMIT + 1);
        let error = parse_agent_file(path, &format!("---\n{yaml}---\nprompt\n"), source()).unwrap_err();
        assert!(error.to_string().contains("nested more than 64 levels deep"), "{error}");
    }

    #[test]
    fn the_limit_names_the_line() {
        let text = format!("ok: 1\nfoo: [a'b, {}{}]\n", "[".repeat(70), "]".repeat(70));
        assert!(matches!(Scanner::new(&text, 64).run(), Err(Deeper { line: 2 })));
        assert_eq!(first_line_deeper_than(&text, 64), Some(2));
        assert_eq!(first_line_deeper_than("a: [[x]]\n", 64), None);
    }
}
