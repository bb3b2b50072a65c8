//! Machine selector validation (rule P3).

use crate::jsstr;
use sublaunch_contract::{ErrorCode, PlanError};

/// The longest selector accepted, in UTF-16 units (P3).
pub const MAX_SELECTOR_UNITS: usize = 128;

/// How many UTF-16 units of an over-long selector its error message quotes (P3).
const QUOTED_PREFIX_UNITS: usize = 24;

/// Validates the requested machine value and returns the selector R = TRIM(M) (P3): it must
/// be non-empty, at most 128 UTF-16 units long and free of control characters, checked in
/// that order. `location` says which child asked, for the message.
pub fn parse<'m>(machine: &'m str, location: &str) -> Result<&'m str, PlanError> {
    let selector = jsstr::trim(machine);
    let refuse = |problem: String| {
        Err(PlanError::new(
            ErrorCode::InvalidMachineName,
            format!("Invalid machine name for {location}: {problem}."),
        ))
    };
    if selector.is_empty() {
        return refuse(
            "a machine name is required; give a saved Herdr machine id or label, or no machine to run locally"
                .to_owned(),
        );
    }
    if jsstr::utf16_len(selector) > MAX_SELECTOR_UNITS {
        return refuse(format!(
            "'{}…' is longer than {MAX_SELECTOR_UNITS} characters",
            jsstr::utf16_prefix(selector, QUOTED_PREFIX_UNITS)
        ));
    }
    if jsstr::has_control(selector) {
        return refuse(format!("{} contains control characters", jsstr::json_quote(selector)));
    }
    Ok(selector)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refusal(machine: &str) -> String {
        let error = parse(machine, "step 1").expect_err("refused");
        assert_eq!(error.code, ErrorCode::InvalidMachineName);
        error.message
    }

    #[test]
    fn p3_selector_is_trimmed_with_the_javascript_set() {
        assert_eq!(parse("\u{FEFF} workmac\u{3000}", "step 1"), Ok("workmac"));
        assert_eq!(
            parse("\u{0085}m", "step 1"),
            Ok("\u{0085}m"),
            "Q5: NEL is neither trimmed nor a control"
        );
    }

    #[test]
    fn p3_empty_and_blank_selectors_are_required() {
        assert!(
            refusal("").contains("required"),
            "I1: the empty string is placed and refused"
        );
        assert!(refusal(" \t\u{00A0}").contains("required"));
    }

    #[test]
    fn p3_selectors_of_128_units_pass_and_129_fail() {
        let exact = "m".repeat(128);
        assert_eq!(parse(&exact, "step 1"), Ok(exact.as_str()));
        let message = refusal(&"m".repeat(129));
        assert!(message.contains("128"));
        assert!(message.contains(&format!("'{}…'", "m".repeat(24))));
    }

    #[test]
    fn p3_length_counts_utf16_units() {
        let emoji_127 = format!("{}😀", "m".repeat(126));
        assert_eq!(jsstr::utf16_len(&emoji_127), 128);
        assert!(parse(&emoji_127, "step 1").is_ok());
        let emoji_129 = format!("{}😀", "m".repeat(127));
        assert!(refusal(&emoji_129).contains("128"));
        // The quoted prefix never splits a surrogate pair.
        let message = refusal(&format!("{}😀{}", "m".repeat(23), "m".repeat(120)));
        assert!(message.contains(&format!("'{}…'", "m".repeat(23))));
    }

    #[test]
    fn p3_length_is_checked_before_control_characters() {
        assert!(refusal(&format!("\u{7}{}", "m".repeat(128))).contains("128"));
        assert!(refusal("with\u{7}bell").contains("control characters"));
        assert!(refusal("a\u{7F}").contains("control characters"));
    }
}
