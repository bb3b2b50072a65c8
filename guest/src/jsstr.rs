//! JavaScript-compatible string primitives (placement-and-schemas.md §1.5).
//!
//! The specification is written against upstream's TypeScript, so trimming, control
//! characters and lengths must behave exactly as JavaScript's do, not as Rust's.

/// Whether `c` is in the JavaScript whitespace set WS of §1.5 (what `String.prototype.trim`
/// strips). U+0085 and U+001C–U+001F are not in it; U+FEFF is.
pub fn is_js_whitespace(c: char) -> bool {
    matches!(
        c,
        '\u{0009}'..='\u{000D}'
            | '\u{0020}'
            | '\u{00A0}'
            | '\u{1680}'
            | '\u{2000}'..='\u{200A}'
            | '\u{2028}'
            | '\u{2029}'
            | '\u{202F}'
            | '\u{205F}'
            | '\u{3000}'
            | '\u{FEFF}'
    )
}

/// TRIM: `s` without leading and trailing JavaScript whitespace.
pub fn trim(s: &str) -> &str {
    s.trim_matches(is_js_whitespace)
}

/// CTRL: whether `s` contains an ASCII control character (below U+0020) or DEL.
pub fn has_control(s: &str) -> bool {
    s.chars().any(|c| c <= '\u{001F}' || c == '\u{007F}')
}

/// LEN: the length of `s` in UTF-16 code units.
pub fn utf16_len(s: &str) -> usize {
    s.chars().map(char::len_utf16).sum()
}

/// The first `units` UTF-16 code units of `s` (a surrogate pair is never split: it is
/// dropped whole when only its first half would fit).
pub fn utf16_prefix(s: &str, units: usize) -> &str {
    let mut used = 0;
    for (index, c) in s.char_indices() {
        used += c.len_utf16();
        if used > units {
            return &s[..index];
        }
    }
    s
}

/// JSONQ: the JSON string literal of `s`, quotes included.
pub fn json_quote(s: &str) -> String {
    serde_json::Value::from(s).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trim_uses_the_javascript_whitespace_set() {
        assert_eq!(trim("\u{FEFF} a \u{3000}"), "a");
        assert_eq!(trim("\u{0085}a\u{0085}"), "\u{0085}a\u{0085}");
        assert_eq!(trim("\u{001C}a"), "\u{001C}a");
        assert_eq!(trim(" \t\n "), "");
    }

    #[test]
    fn control_characters_are_c0_and_del_only() {
        assert!(has_control("a\u{0000}"));
        assert!(has_control("a\u{001F}"));
        assert!(has_control("a\u{007F}"));
        assert!(!has_control("a\u{0085}b"));
        assert!(!has_control("plain text"));
    }

    #[test]
    fn lengths_count_utf16_units() {
        assert_eq!(utf16_len("abc"), 3);
        assert_eq!(utf16_len("😀"), 2);
        assert_eq!(utf16_prefix("a😀b", 2), "a");
        assert_eq!(utf16_prefix("a😀b", 3), "a😀");
        assert_eq!(utf16_prefix("ab", 24), "ab");
    }

    #[test]
    fn json_quote_escapes_controls() {
        assert_eq!(json_quote("a\"b\n"), r#""a\"b\n""#);
    }
}
