//! Text from agents, run files and agent definitions, made safe to print on a terminal.
//!
//! An agent's output is model output: escape sequences in it could move the cursor over
//! earlier lines, rewrite the window title, plant a hyperlink or write to the clipboard
//! (OSC 52). Before such text reaches a terminal, every escape sequence (CSI, OSC, DCS and
//! the other string controls, in their 7-bit and 8-bit forms) is dropped whole, carriage
//! returns and other control characters are shown in caret notation (`^M`, `^G`), and the
//! Unicode controls that reorder how a line is displayed are shown by code point. Newlines
//! and tabs stay.

/// `text` made safe to print (multi-line text keeps its lines).
pub fn for_terminal(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\n' | '\t' => out.push(c),
            '\u{1b}' => match chars.next() {
                Some('[') => skip_csi(&mut chars),
                Some(']' | 'P' | 'X' | '^' | '_') => skip_string(&mut chars),
                // A two-character escape (or a lone ESC at the end): dropped.
                _ => {}
            },
            '\u{9b}' => skip_csi(&mut chars),
            '\u{90}' | '\u{98}' | '\u{9d}' | '\u{9e}' | '\u{9f}' => skip_string(&mut chars),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                out.push('^');
                out.push(char::from_u32((c as u32) ^ 0x40).unwrap_or('?'));
            }
            c if ('\u{80}'..='\u{9f}').contains(&c) || is_bidi_control(c) => {
                out.push_str(&format!("<U+{:04X}>", c as u32));
            }
            c => out.push(c),
        }
    }
    out
}

/// `ESC [` parameters and intermediates up to the final byte.
fn skip_csi(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    for c in chars.by_ref() {
        if ('\u{40}'..='\u{7e}').contains(&c) {
            break;
        }
    }
}

/// A string control (OSC, DCS, SOS, PM, APC) up to BEL or the string terminator.
fn skip_string(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    while let Some(c) = chars.next() {
        match c {
            '\u{7}' | '\u{9c}' => break,
            '\u{1b}' if chars.peek() == Some(&'\\') => {
                chars.next();
                break;
            }
            _ => {}
        }
    }
}

/// The explicit directional formatting characters (embeddings, overrides, isolates, marks).
fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{061c}')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_sequences_go_and_controls_become_visible() {
        assert_eq!(for_terminal("\u{1b}[1;31mred\u{1b}[0m\nnext\tcol"), "red\nnext\tcol");
        assert_eq!(for_terminal("a\u{1b}]0;owned title\u{7}b"), "ab");
        assert_eq!(
            for_terminal("a\u{1b}]52;c;ZXZpbA==\u{1b}\\b"),
            "ab",
            "no clipboard writes"
        );
        assert_eq!(
            for_terminal("a\u{1b}]8;;http://x\u{1b}\\link\u{1b}]8;;\u{1b}\\"),
            "alink"
        );
        assert_eq!(for_terminal("a\u{9b}2Jb\u{9d}0;t\u{9c}c"), "abc");
        assert_eq!(for_terminal("fake\rreal\u{7}\u{0}"), "fake^Mreal^G^@");
        assert_eq!(for_terminal("x\u{202e}cba"), "x<U+202E>cba");
        assert_eq!(for_terminal("trailing \u{1b}"), "trailing ");
    }
}
