//! Model-name normalisation and date stamps (model-and-thinking.md §2 `norm`, rule M9).
//!
//! `norm` makes `GPT--5.Mini` and `gpt-5-mini` compare equal; [`split_date`] lets
//! `claude-3-5-sonnet-20241022` and `claude-3-5-sonnet-2024-10-22` compare equal and keeps
//! the stem of a dated id for the dated ↔ undated tier (M-I6).

/// Appends `norm(s)` to `out`: lower-case; every run of `.`, `_` and `-` becomes one `-`;
/// one leading and one trailing `-` are dropped. `/` and `:` are kept.
fn norm_into(s: &str, out: &mut String) {
    let start = out.len();
    if s.is_ascii() {
        push_collapsed(s.bytes().map(|b| char::from(b.to_ascii_lowercase())), out);
    } else {
        // Full Unicode lower-casing (final sigma included), as JavaScript's toLowerCase.
        push_collapsed(s.to_lowercase().chars(), out);
    }
    if out.len() > start && out.ends_with('-') {
        out.pop();
    }
}

/// `norm(s)` as a new string.
pub fn norm(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    norm_into(s, &mut out);
    out
}

/// What [`compare_normalized`] asks about `norm(raw)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Comparison {
    /// `norm(raw) == target`.
    Equals,
    /// `norm(raw)` starts with `target`.
    StartsWith,
}

/// Answers `comparison` about `norm(raw)` and `target`, which must itself be an output of
/// [`norm`] (the fast path relies on it having no `--`, `.`, `_`, upper case or edge `-`).
/// Decided without building `norm(raw)` and stopping at the first difference: most
/// registry entries differ from a query in their first byte. `None` when a non-ASCII byte
/// of `raw` is met before the answer is known: only [`norm`] lower-cases Unicode.
pub fn compare_normalized(raw: &str, target: &str, comparison: Comparison) -> Option<bool> {
    let whole = comparison == Comparison::Equals;
    compare_plain(raw.as_bytes(), target.as_bytes(), whole)
        .or_else(|| compare_streamed(raw.as_bytes(), target.as_bytes(), whole))
}

/// Fast path: compares `raw` with `wanted` ignoring ASCII case, which is what `norm` does
/// as long as no separator run or non-ASCII byte is met. `None` when one is met at the
/// first difference (or `wanted` is not normalised), so the answer needs the stream.
fn compare_plain(raw: &[u8], wanted: &[u8], whole: bool) -> Option<bool> {
    if wanted.first() == Some(&b'-') || wanted.last() == Some(&b'-') {
        return None;
    }
    let common = raw
        .iter()
        .zip(wanted)
        .take_while(|(r, w)| r.to_ascii_lowercase() == **w)
        .count();
    let plain = |b: u8| b < 0x80 && !matches!(b, b'.' | b'_' | b'-');
    match (raw.get(common), wanted.get(common)) {
        // `raw` ends first: its normalised form is shorter than `wanted`.
        (None, Some(_)) => Some(false),
        (None, None) => Some(true),
        (Some(_), None) if !whole => Some(true),
        (Some(&r), _) if plain(r) => Some(false),
        _ => None,
    }
}

/// Slow path: produces `norm(raw)` byte by byte and compares as it goes. `None` at a
/// non-ASCII byte.
fn compare_streamed(raw: &[u8], wanted: &[u8], whole: bool) -> Option<bool> {
    let mut matched = 0;
    let mut started = false;
    let mut after_separator = false;
    // Compares one produced byte; `Some` once the answer is known.
    let mut produce = |byte: u8| -> Option<bool> {
        match wanted.get(matched) {
            None => Some(!whole),
            Some(&w) if w == byte => {
                matched += 1;
                None
            }
            Some(_) => Some(false),
        }
    };
    for &b in raw {
        if b >= 0x80 {
            return None;
        }
        if matches!(b, b'.' | b'_' | b'-') {
            // A leading run is dropped; any other run becomes one `-`.
            after_separator = started;
            continue;
        }
        if after_separator && let Some(answer) = produce(b'-') {
            return Some(answer);
        }
        if let Some(answer) = produce(b.to_ascii_lowercase()) {
            return Some(answer);
        }
        started = true;
        after_separator = false;
    }
    // A trailing separator run is dropped.
    Some(matched == wanted.len())
}

/// Pushes lower-cased characters, collapsing separator runs into one `-` and dropping a
/// leading one (where `out` ended on entry marks where this value begins).
fn push_collapsed(chars: impl Iterator<Item = char>, out: &mut String) {
    let start = out.len();
    let mut in_separator_run = false;
    for c in chars {
        if matches!(c, '.' | '_' | '-') {
            if !in_separator_run && out.len() > start {
                out.push('-');
            }
            in_separator_run = true;
        } else {
            out.push(c);
            in_separator_run = false;
        }
    }
}

/// A calendar day written `YYYYMMDD` as a number (both formats of one day are equal).
pub type DateStamp = u32;

/// Splits a normalised id into its stem and trailing date stamp (M9): `-YYYY-MM-DD` or
/// `-YYYYMMDD` with 1900 ≤ YYYY ≤ 2099, 01 ≤ MM ≤ 12, 01 ≤ DD ≤ 31. Ids without such an
/// ending are `(whole, None)`.
pub fn split_date(normalized: &str) -> (&str, Option<DateStamp>) {
    let bytes = normalized.as_bytes();
    if !bytes.last().is_some_and(u8::is_ascii_digit) {
        return (normalized, None);
    }
    let dashed = tail(bytes, 11).and_then(|t| match t {
        [b'-', y @ .., b'-', m1, m2, b'-', d1, d2] if y.len() == 4 => {
            date_from_digits(y, &[*m1, *m2], &[*d1, *d2]).map(|date| (11, date))
        }
        _ => None,
    });
    let compact = || {
        tail(bytes, 9).and_then(|t| match t {
            [b'-', digits @ ..] => {
                let (year, rest) = digits.split_at_checked(4)?;
                let (month, day) = rest.split_at_checked(2)?;
                date_from_digits(year, month, day).map(|date| (9, date))
            }
            _ => None,
        })
    };
    match dashed.or_else(compact) {
        // The suffix is ASCII, so the cut is a character boundary; `get` keeps this panic-free.
        Some((len, date)) => match normalized.len().checked_sub(len).and_then(|end| normalized.get(..end)) {
            Some(stem) => (stem, Some(date)),
            None => (normalized, None),
        },
        None => (normalized, None),
    }
}

/// The last `n` bytes, when there are that many.
fn tail(bytes: &[u8], n: usize) -> Option<&[u8]> {
    bytes.len().checked_sub(n).and_then(|start| bytes.get(start..))
}

/// A plausible date from ASCII digit groups, as `YYYYMMDD`.
fn date_from_digits(year: &[u8], month: &[u8], day: &[u8]) -> Option<DateStamp> {
    let year = digits_value(year)?;
    let month = digits_value(month)?;
    let day = digits_value(day)?;
    let plausible = (1900..=2099).contains(&year) && (1..=12).contains(&month) && (1..=31).contains(&day);
    plausible.then_some(year * 10_000 + month * 100 + day)
}

/// The value of a run of ASCII digits (at most four here), or `None` for any other byte.
fn digits_value(digits: &[u8]) -> Option<u32> {
    digits.iter().try_fold(0u32, |value, &b| {
        b.is_ascii_digit().then(|| value * 10 + u32::from(b - b'0'))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn norm_examples_of_section_2() {
        assert_eq!(norm("GPT--5.Mini"), "gpt-5-mini");
        assert_eq!(norm("Claude.Sonnet_4"), "claude-sonnet-4");
        assert_eq!(norm("claude-haiku-4.5"), "claude-haiku-4-5");
    }

    #[test]
    fn norm_keeps_slash_and_colon() {
        assert_eq!(norm("OpenRouter/Auto_Beta:8B"), "openrouter/auto-beta:8b");
        assert_eq!(norm("a._-/-._b"), "a-/-b");
    }

    #[test]
    fn norm_drops_one_leading_and_trailing_dash() {
        assert_eq!(norm("-x-"), "x");
        assert_eq!(norm("._x_."), "x");
        assert_eq!(norm("-"), "");
        assert_eq!(norm(""), "");
        assert_eq!(norm("..."), "");
    }

    #[test]
    fn norm_lowercases_unicode_like_javascript() {
        assert_eq!(norm("ÄB.Ç"), "äb-ç");
        assert_eq!(norm("ΟΔΟΣ"), "οδος");
    }

    fn norm_equals(raw: &str, target: &str) -> bool {
        compare_normalized(raw, target, Comparison::Equals).unwrap_or_else(|| norm(raw) == target)
    }

    fn norm_starts_with(raw: &str, target: &str) -> bool {
        compare_normalized(raw, target, Comparison::StartsWith).unwrap_or_else(|| norm(raw).starts_with(target))
    }

    #[test]
    fn streamed_comparisons_agree_with_norm() {
        assert!(norm_equals("GPT--5.Mini", "gpt-5-mini"));
        assert!(norm_equals("-x-", "x"));
        assert!(norm_equals("", ""));
        assert!(norm_equals("._", ""));
        assert!(!norm_equals("x", ""));
        assert!(!norm_equals("gpt-5", "gpt-5-mini"));
        assert!(norm_starts_with("GPT_5_Mini", "gpt-5"));
        assert!(norm_starts_with("gpt-5", "gpt-5"));
        assert!(!norm_starts_with("gpt-", "gpt-"));
        assert!(norm_equals("ΟΔΟΣ", "οδος"));
        assert!(norm_starts_with("Ab-ÄB", "ab-ä"));
        assert_eq!(compare_normalized("ÄB", "äb", Comparison::Equals), None);
        assert_eq!(compare_normalized("xÄ", "y", Comparison::Equals), Some(false));
    }

    #[test]
    fn norm_into_appends() {
        let mut out = String::from("x");
        norm_into("-A-", &mut out);
        assert_eq!(out, "xa");
    }

    #[test]
    fn m9_date_stamps_in_both_formats_are_equal() {
        assert_eq!(
            split_date("claude-3-5-sonnet-20241022"),
            ("claude-3-5-sonnet", Some(20241022))
        );
        assert_eq!(
            split_date("claude-3-5-sonnet-2024-10-22"),
            ("claude-3-5-sonnet", Some(20241022))
        );
    }

    #[test]
    fn m9_implausible_digits_are_not_a_date() {
        assert_eq!(split_date("model-12345678"), ("model-12345678", None));
        assert_eq!(split_date("model-21000101"), ("model-21000101", None));
        assert_eq!(split_date("model-18991231"), ("model-18991231", None));
        assert_eq!(split_date("model-2024-13-01"), ("model-2024-13-01", None));
        assert_eq!(split_date("model-2024-12-32"), ("model-2024-12-32", None));
        assert_eq!(split_date("model-2024-00-10"), ("model-2024-00-10", None));
        assert_eq!(split_date("model-120241022"), ("model-120241022", None));
    }

    #[test]
    fn m9_date_needs_a_leading_dash() {
        assert_eq!(split_date("20241022"), ("20241022", None));
        assert_eq!(split_date("x20241022"), ("x20241022", None));
        assert_eq!(split_date("-20241022"), ("", Some(20241022)));
        assert_eq!(split_date("é-2024-10-22"), ("é", Some(20241022)));
        assert_eq!(split_date(""), ("", None));
    }

    proptest! {
        /// §2: normalisation is idempotent.
        #[test]
        fn norm_is_idempotent(s in "\\PC{0,40}") {
            let once = norm(&s);
            prop_assert_eq!(norm(&once), once.clone());
        }

        /// The streamed comparisons agree with `norm`.
        #[test]
        fn streamed_comparisons_match_norm(raw in "[-._aAbB/:é]{0,10}", other in "[-._aAbB/:é]{0,10}") {
            let (normalized, target) = (norm(&raw), norm(&other));
            prop_assert_eq!(norm_equals(&raw, &target), normalized == target);
            prop_assert_eq!(norm_starts_with(&raw, &target), normalized.starts_with(&target));
            prop_assert!(norm_equals(&raw, &normalized));
        }

        /// §2: separator-heavy ASCII strings too.
        #[test]
        fn norm_is_idempotent_on_separators(s in "[-._a-zA-Z0-9/:]{0,30}") {
            let once = norm(&s);
            prop_assert_eq!(norm(&once), once.clone());
            prop_assert!(!once.starts_with('-') && !once.ends_with('-'));
            prop_assert!(!once.contains("--"));
        }

        /// M9: split_date never panics and the stem is a prefix.
        #[test]
        fn split_date_stem_is_a_prefix(s in "\\PC{0,20}(-[0-9]{8}|-[0-9]{4}-[0-9]{2}-[0-9]{2})?") {
            let (stem, _) = split_date(&s);
            prop_assert!(s.starts_with(stem));
        }
    }
}
