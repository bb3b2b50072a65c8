//! Ages as people write them (`90s`, `30m`, `12h`, `7d`, `2w`; a bare number is seconds), for
//! every duration flag of the CLI and the retention setting, and durations said back the same
//! way ([`exact`]).

use std::time::Duration;

/// Why a text is not an age.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AgeError {
    /// No number where one was expected.
    #[error("'{0}' is not a duration (say 90s, 30m, 12h or 7d)")]
    NotANumber(String),
    /// A unit other than s, m, h, d, w.
    #[error("'{text}' has an unknown unit '{unit}' (use s, m, h, d or w)")]
    Unit {
        /// The text read.
        text: String,
        /// The unit found.
        unit: String,
    },
    /// Longer than any clock measures.
    #[error("'{0}' is not a duration this clock can measure")]
    TooLong(String),
}

/// The age `text` names.
pub fn parse_age(text: &str) -> Result<Duration, AgeError> {
    let text = text.trim();
    let (number, unit) = text
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .map_or((text, ""), |at| text.split_at(at));
    let value: f64 = number.parse().map_err(|_| AgeError::NotANumber(text.to_owned()))?;
    let seconds = match unit {
        "" | "s" => value,
        "m" => value * 60.0,
        "h" => value * 3600.0,
        "d" => value * 86_400.0,
        "w" => value * 604_800.0,
        _ => {
            return Err(AgeError::Unit {
                text: text.to_owned(),
                unit: unit.to_owned(),
            });
        }
    };
    // An age beyond any clock is refused, not a panic.
    Duration::try_from_secs_f64(seconds).map_err(|_| AgeError::TooLong(text.to_owned()))
}

/// `ms` in the largest unit that says it exactly, as [`parse_age`] reads it back: `10m`,
/// `1h`, `90s`; `1500ms` when no whole unit does.
pub fn exact(ms: u64) -> String {
    const UNITS: [(u64, &str); 5] = [
        (604_800_000, "w"),
        (86_400_000, "d"),
        (3_600_000, "h"),
        (60_000, "m"),
        (1000, "s"),
    ];
    UNITS
        .iter()
        .find(|(size, _)| ms > 0 && ms.is_multiple_of(*size))
        .map_or_else(|| format!("{ms}ms"), |(size, unit)| format!("{}{unit}", ms / size))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_read_as_people_write_them() {
        assert_eq!(parse_age("90").unwrap(), Duration::from_secs(90));
        assert_eq!(parse_age("30m").unwrap(), Duration::from_secs(1800));
        assert_eq!(parse_age("1.5h").unwrap(), Duration::from_secs(5400));
        assert_eq!(parse_age("30d").unwrap(), Duration::from_secs(30 * 86_400));
        assert!(matches!(parse_age("3y"), Err(AgeError::Unit { .. })));
        assert!(matches!(parse_age("soon"), Err(AgeError::NotANumber(_))));
        let huge = format!("{}w", "9".repeat(400));
        assert!(matches!(parse_age(&huge), Err(AgeError::TooLong(_))));
    }

    #[test]
    fn exact_durations_keep_the_largest_unit() {
        assert_eq!(exact(600_000), "10m");
        assert_eq!(exact(3_600_000), "1h");
        assert_eq!(exact(90_000), "90s");
        assert_eq!(exact(1000), "1s");
        assert_eq!(exact(1500), "1500ms");
        assert_eq!(exact(0), "0ms");
    }
}
