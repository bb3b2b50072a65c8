//! Plain-text output (the `shell`, `command` and `external-cli` adapters): every stdout line
//! is a `subagent.child.stdout` event, and the step's output is the end of stdout.

use super::{Extracted, OutputParser, ParsedLine};

/// Bytes of a text line kept for its `subagent.child.stdout` event.
pub const TEXT_LINE_RETAIN: usize = 64 * 1024;

/// Bytes of the end of stdout that make a text step's output (256 KiB); older output is only in
/// `output-<n>.log`, and the result says `outputTruncated: true`.
pub const TEXT_OUTPUT_BYTES: usize = 256 * 1024;

/// Plain text: the output is the last [`TEXT_OUTPUT_BYTES`] of stdout, trailing whitespace
/// trimmed.
#[derive(Clone, Copy, Debug, Default)]
pub struct TextParser;

impl OutputParser for TextParser {
    fn line_retain_limit(&self) -> usize {
        TEXT_LINE_RETAIN
    }

    fn needs_lines(&self) -> bool {
        false
    }

    fn tail_bytes(&self) -> usize {
        TEXT_OUTPUT_BYTES
    }

    fn stdout_line(&mut self, _line: &[u8], _full_len: usize) -> ParsedLine {
        ParsedLine::Text
    }

    fn finish(&mut self, stdout_tail: &[u8], tail_cut: bool) -> Extracted {
        let mut text = String::from_utf8_lossy(stdout_tail).into_owned();
        if tail_cut {
            // Start at a line boundary when one is near, so the kept text is whole lines.
            if let Some(i) = text.find('\n').filter(|i| *i < 4096) {
                text.drain(..=i);
            }
        }
        Extracted {
            output: text.trim_end().to_owned(),
            truncated: tail_cut,
            ..Extracted::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_output_is_the_trimmed_tail() {
        assert_eq!(TextParser.finish(b"out\n\n", false).output, "out");
        let cut = TextParser.finish(b"tial line\nwhole\n", true);
        assert_eq!((cut.output.as_str(), cut.truncated), ("whole", true));
    }
}
