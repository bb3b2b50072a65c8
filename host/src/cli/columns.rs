//! Text measured in terminal columns, not in chars: an emoji or a CJK character takes two
//! columns, a combining mark none. A line padded or cut by chars is wider than the terminal
//! when it holds wide characters, wraps, and throws the live block's redraw off by a row.

use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

/// The columns `text` takes on a terminal (control characters take none).
pub fn width(text: &str) -> usize {
    UnicodeWidthStr::width(text)
}

/// `text` padded with spaces to `columns` columns (as it is when it is wider).
pub fn pad(text: &str, columns: usize) -> String {
    let mut out = text.to_owned();
    out.extend(std::iter::repeat_n(' ', columns.saturating_sub(width(text))));
    out
}

/// `text` cut to at most `columns` columns, its last column an ellipsis when cut. A wide
/// character that does not fit whole is left out, and the combining marks after the last
/// character kept stay with it.
pub fn cut(text: &str, columns: usize) -> String {
    if width(text) <= columns {
        return text.to_owned();
    }
    let room = columns.saturating_sub(1);
    let mut out = String::new();
    let mut used = 0;
    for c in text.chars() {
        let w = c.width().unwrap_or(0);
        if used + w > room {
            break;
        }
        used += w;
        out.push(c);
    }
    if columns > 0 {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wide_characters_take_two_columns_and_marks_none() {
        assert_eq!(width("ab"), 2);
        assert_eq!(width("日本"), 4);
        assert_eq!(width("✅ ok 🚀"), 8);
        assert_eq!(width("e\u{301}"), 1, "a combining acute accent takes no column");
    }

    #[test]
    fn padding_and_cutting_count_columns() {
        assert_eq!(pad("日本", 6), "日本  ");
        assert_eq!(pad("abcdef", 3), "abcdef");
        assert_eq!(cut("日本語テキスト", 7), "日本語…");
        assert_eq!(
            width(&cut("日本語テキスト", 6)),
            5,
            "a wide char that does not fit whole is left out"
        );
        assert_eq!(cut("✅ All 42 tests pass 🚀", 10), "✅ All 42…");
        assert_eq!(cut("short", 10), "short");
        assert_eq!(cut("e\u{301}e\u{301}e\u{301}", 2), "e\u{301}…");
    }
}
