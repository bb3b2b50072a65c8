//! Thinking levels, suffixes and ceilings (model-and-thinking.md T1–T11).

use crate::jsstr;
use sublaunch_contract::{ErrorCode, LooseString, PlanError, ThinkingLevel, ThinkingSetting};

/// A model string split at a known thinking suffix (T2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SuffixSplit<'s> {
    /// The text before the suffix (the whole string when there is none).
    pub base: &'s str,
    /// The level of the suffix, when the text after the last `:` is exactly a level.
    pub level: Option<ThinkingLevel>,
}

/// Splits `model` at its known thinking suffix (T2): the text after the **last** `:` must be
/// exactly one of the seven lower-case level names.
pub fn split_suffix(model: &str) -> SuffixSplit<'_> {
    if let Some((base, after)) = model.rsplit_once(':')
        && let Some(level) = ThinkingLevel::from_name(after)
    {
        return SuffixSplit {
            base,
            level: Some(level),
        };
    }
    SuffixSplit {
        base: model,
        level: None,
    }
}

/// A valid `thinking` value (T3): `false` (or an empty string) or a level.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ThinkingValue {
    /// `false` or `""`: no thinking suffix is added.
    Disabled,
    /// One of the seven levels.
    Level(ThinkingLevel),
}

/// How a thinking value reaches a child (T4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AppliedThinking {
    /// The step's own `thinking`: replaces a suffix written in the model.
    Override(ThinkingValue),
    /// The agent's `thinking`: only fills in a missing suffix.
    Default(ThinkingValue),
}

/// The `invalid-thinking-level` error (E3): strings are shown in single quotes, other
/// values as JSON.
pub fn invalid_level(shown_value: &str, field: &str) -> PlanError {
    PlanError::new(
        ErrorCode::InvalidThinkingLevel,
        format!(
            "Invalid thinking level {shown_value} in {field}; expected one of: off, minimal, low, medium, high, xhigh, max."
        ),
    )
}

/// Validates a `thinking` value (T3, M-I4): trimmed; empty means `false`; otherwise it must
/// name a level; any other JSON type is invalid. `field` names it in the message.
pub fn parse_thinking(setting: &ThinkingSetting, field: impl FnOnce() -> String) -> Result<ThinkingValue, PlanError> {
    match setting {
        ThinkingSetting::Disabled => Ok(ThinkingValue::Disabled),
        ThinkingSetting::Text(raw) => match jsstr::trim(raw) {
            "" => Ok(ThinkingValue::Disabled),
            trimmed => ThinkingLevel::from_name(trimmed)
                .map(ThinkingValue::Level)
                .ok_or_else(|| invalid_level(&format!("'{raw}'"), &field())),
        },
        ThinkingSetting::Invalid(json) => Err(invalid_level(json, &field())),
    }
}

/// Validates a ceiling (T8): a string that trims to a level. An empty string is invalid,
/// not absent; any other JSON type is invalid.
pub fn parse_ceiling(value: &LooseString, field: impl FnOnce() -> String) -> Result<ThinkingLevel, PlanError> {
    match value {
        LooseString::Text(raw) => {
            ThinkingLevel::from_name(jsstr::trim(raw)).ok_or_else(|| invalid_level(&format!("'{raw}'"), &field()))
        }
        LooseString::NotText(json) => Err(invalid_level(json, &field())),
    }
}

/// The effective ceiling (T8): the lowest of the ceilings present, none when none is.
pub fn effective_ceiling(ceilings: impl IntoIterator<Item = Option<ThinkingLevel>>) -> Option<ThinkingLevel> {
    ceilings.into_iter().flatten().min()
}

/// Applies the applicable thinking value to a selected model (T5).
pub fn apply(model: &str, thinking: Option<AppliedThinking>) -> String {
    let split = split_suffix(model);
    match thinking {
        None
        | Some(AppliedThinking::Override(ThinkingValue::Disabled))
        | Some(AppliedThinking::Default(ThinkingValue::Disabled)) => model.to_owned(),
        Some(AppliedThinking::Override(ThinkingValue::Level(level))) => with_suffix(split.base, level),
        Some(AppliedThinking::Default(ThinkingValue::Level(level))) => match split.level {
            Some(_) => model.to_owned(),
            None => with_suffix(model, level),
        },
    }
}

/// `base:level`.
pub fn with_suffix(base: &str, level: ThinkingLevel) -> String {
    format!("{base}:{}", level.name())
}

/// The ceiling check (T9, T10): the reported level must not rank above the ceiling.
pub fn check_ceiling(
    reported: Option<ThinkingLevel>,
    ceiling: Option<ThinkingLevel>,
    agent: &str,
) -> Result<(), PlanError> {
    match (reported, ceiling) {
        (Some(level), Some(ceiling)) if level > ceiling => Err(PlanError::new(
            ErrorCode::ThinkingAboveCeiling,
            format!(
                "Thinking level '{}' for agent '{agent}' is above the configured maximum '{}'.",
                level.name(),
                ceiling.name()
            ),
        )),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ThinkingLevel::*;
    use proptest::prelude::*;

    fn field() -> String {
        "steps[0].thinking".to_owned()
    }

    #[test]
    fn t2_suffix_is_the_text_after_the_last_colon() {
        assert_eq!(
            split_suffix("openai/gpt-5:max"),
            SuffixSplit {
                base: "openai/gpt-5",
                level: Some(Max)
            }
        );
        assert_eq!(split_suffix("ollama/llama3:8b").level, None);
        assert_eq!(split_suffix("openai/gpt-5:HIGH").level, None);
        assert_eq!(
            split_suffix("a:high:low"),
            SuffixSplit {
                base: "a:high",
                level: Some(Low)
            }
        );
        assert_eq!(
            split_suffix(":off"),
            SuffixSplit {
                base: "",
                level: Some(Off)
            }
        );
        assert_eq!(split_suffix("high").level, None);
    }

    #[test]
    fn t3_strings_are_trimmed_and_empty_means_false() {
        let text = |s: &str| ThinkingSetting::Text(s.to_owned());
        assert_eq!(parse_thinking(&text(" high "), field), Ok(ThinkingValue::Level(High)));
        assert_eq!(parse_thinking(&text(" \u{FEFF}"), field), Ok(ThinkingValue::Disabled));
        assert_eq!(
            parse_thinking(&ThinkingSetting::Disabled, field),
            Ok(ThinkingValue::Disabled)
        );
    }

    #[test]
    fn t3_e3_invalid_values_are_quoted_or_json() {
        let text = ThinkingSetting::Text("extreme".to_owned());
        let error = parse_thinking(&text, field).unwrap_err();
        assert_eq!(error.code, ErrorCode::InvalidThinkingLevel);
        assert_eq!(
            error.message,
            "Invalid thinking level 'extreme' in steps[0].thinking; expected one of: off, minimal, low, medium, high, xhigh, max."
        );
        let error = parse_thinking(&ThinkingSetting::Invalid("true".to_owned()), field).unwrap_err();
        assert!(
            error
                .message
                .starts_with("Invalid thinking level true in steps[0].thinking;")
        );
        let error = parse_thinking(&ThinkingSetting::Text("High".to_owned()), field).unwrap_err();
        assert!(error.message.contains("'High'"));
    }

    #[test]
    fn t8_empty_ceiling_is_invalid_not_absent() {
        let empty = LooseString::Text("  ".to_owned());
        assert!(parse_ceiling(&empty, || "thinkingCeiling".to_owned()).is_err());
        let number = LooseString::NotText("3".to_owned());
        let error = parse_ceiling(&number, || "thinkingCeiling".to_owned()).unwrap_err();
        assert!(error.message.contains("level 3 in thinkingCeiling"));
        assert_eq!(
            parse_ceiling(&LooseString::Text(" low".to_owned()), String::new),
            Ok(Low)
        );
    }

    #[test]
    fn t8_effective_ceiling_is_the_lowest_present() {
        assert_eq!(effective_ceiling([Some(Xhigh), None, Some(Medium)]), Some(Medium));
        assert_eq!(effective_ceiling([None, None, None]), None);
    }

    #[test]
    fn t5_override_replaces_and_default_fills_in() {
        let over = |l| Some(AppliedThinking::Override(ThinkingValue::Level(l)));
        let default = |l| Some(AppliedThinking::Default(ThinkingValue::Level(l)));
        assert_eq!(apply("a/b:low", over(High)), "a/b:high");
        assert_eq!(apply("a/b:low", default(High)), "a/b:low");
        assert_eq!(apply("a/b", default(Off)), "a/b:off");
        assert_eq!(apply("o/llama3:8b", default(Medium)), "o/llama3:8b:medium");
        assert_eq!(apply("a/b", None), "a/b");
    }

    #[test]
    fn n1_false_override_keeps_a_written_suffix() {
        let disabled = Some(AppliedThinking::Override(ThinkingValue::Disabled));
        assert_eq!(apply("a/b:high", disabled), "a/b:high");
    }

    #[test]
    fn t9_t10_equal_passes_higher_fails() {
        assert!(check_ceiling(Some(High), Some(High), "w").is_ok());
        assert!(check_ceiling(None, Some(Off), "w").is_ok());
        assert!(check_ceiling(Some(Max), None, "w").is_ok());
        let error = check_ceiling(Some(Minimal), Some(Off), "w").unwrap_err();
        assert_eq!(error.code, ErrorCode::ThinkingAboveCeiling);
        assert_eq!(
            error.message,
            "Thinking level 'minimal' for agent 'w' is above the configured maximum 'off'."
        );
    }

    fn level() -> impl Strategy<Value = ThinkingLevel> {
        proptest::sample::select(ThinkingLevel::ALL.to_vec())
    }

    proptest! {
        /// T8/T9: a level that passes the check never exceeds the lowest ceiling.
        #[test]
        fn a_reported_level_never_exceeds_a_lower_ceiling(
            model_level in proptest::option::of(level()),
            value in proptest::option::of(level()),
            is_override in any::<bool>(),
            ceilings in proptest::collection::vec(proptest::option::of(level()), 0..4),
        ) {
            let model = match model_level {
                Some(l) => with_suffix("p/m", l),
                None => "p/m".to_owned(),
            };
            let applied = value.map(|l| {
                let v = ThinkingValue::Level(l);
                if is_override { AppliedThinking::Override(v) } else { AppliedThinking::Default(v) }
            });
            let final_model = apply(&model, applied);
            let reported = split_suffix(&final_model).level;
            let ceiling = effective_ceiling(ceilings.iter().copied());
            if check_ceiling(reported, ceiling, "a").is_ok() {
                for c in ceilings.iter().flatten() {
                    prop_assert!(reported.is_none_or(|r| r <= *c));
                }
            }
        }
    }
}
