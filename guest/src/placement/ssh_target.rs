//! ssh target safety (rule P13): the target becomes one argv element after every ssh option,
//! so it must not be readable as an option or split into several words.

use crate::jsstr;
use sublaunch_contract::{ErrorCode, PlanError};

/// Returns the safe target T = TRIM(target) (P13): non-empty, not starting with `-`, and
/// without whitespace (the JavaScript set) or control characters. C1 controls such as U+0085
/// are allowed (Q5).
pub fn check<'t>(target: &'t str, selector: &str) -> Result<&'t str, PlanError> {
    let trimmed = jsstr::trim(target);
    let unsafe_because = if trimmed.is_empty() {
        Some("it is empty")
    } else if trimmed.starts_with('-') {
        Some("it starts with '-' and would be read as an ssh option")
    } else if trimmed.contains(jsstr::is_js_whitespace) {
        Some("it contains whitespace")
    } else if jsstr::has_control(trimmed) {
        Some("it contains control characters")
    } else {
        None
    };
    match unsafe_because {
        None => Ok(trimmed),
        Some(reason) => Err(PlanError::new(
            ErrorCode::UnsafeSshTarget,
            format!(
                "Saved Herdr machine '{selector}' has the unsafe ssh target {}: {reason}; fix it with herdr.",
                jsstr::json_quote(trimmed)
            ),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refusal(target: &str) -> String {
        let error = check(target, "bad").expect_err("refused");
        assert_eq!(error.code, ErrorCode::UnsafeSshTarget);
        assert!(error.message.contains("'bad'"));
        assert!(
            error.message.contains(&jsstr::json_quote(jsstr::trim(target))),
            "{}",
            error.message
        );
        error.message
    }

    #[test]
    fn p13_ordinary_targets_are_trimmed_and_kept() {
        assert_eq!(check(" me@gpu-box ", "m"), Ok("me@gpu-box"));
        assert_eq!(check("100.82.67.118", "m"), Ok("100.82.67.118"));
        assert_eq!(check("user@[::1]:22", "m"), Ok("user@[::1]:22"));
        assert_eq!(check("a\u{0085}b", "m"), Ok("a\u{0085}b"), "Q5");
    }

    #[test]
    fn p13_option_shaped_targets_are_refused() {
        refusal("-oProxyCommand=evil");
        refusal("  -p 22 host");
        refusal("-");
    }

    #[test]
    fn p13_empty_and_blank_targets_are_refused() {
        refusal("");
        refusal(" \t ");
    }

    #[test]
    fn p13_whitespace_inside_is_refused() {
        for target in [
            "a b",
            "a\u{00A0}b",
            "a\u{2028}b",
            "a\u{3000}b",
            "a\u{FEFF}b",
            "a\tb",
            "a\nb",
        ] {
            refusal(target);
        }
    }

    #[test]
    fn p13_control_characters_are_refused() {
        for target in ["a\u{0}b", "a\u{1B}[31mb", "a\u{7F}", "a\u{1C}b"] {
            refusal(target);
        }
    }
}
