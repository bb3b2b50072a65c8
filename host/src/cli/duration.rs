//! Durations on the command line, written as `timeout(1)` and `sleep(1)` take them: `90s`,
//! `10m`, `1.5h`, `7d`, `2w`, a bare number being seconds. One parser
//! ([`sublaunch::inputs::age::parse_age`], also the retention setting's) serves every flag
//! that takes a duration: `run --timeout`, `--checkpoint-before-deadline`, `wait --timeout`,
//! `stop --timeout`, `prune --older-than`, `list --since`. A flag that bounds how long
//! something may take refuses zero (timeout(1) reads 0 as "no limit", which is what leaving
//! the flag out already says) and anything beyond a year.

use std::fmt;
use std::time::Duration;

/// The longest time a command or MCP tool takes: a year (a wait, a timeout, a checkpoint).
/// Anything longer is a typo, and would not fit the clocks' arithmetic anyway.
pub const MAX_SECONDS: f64 = 365.0 * 24.0 * 3600.0;

/// A duration as the user wrote it, so that messages can speak in their unit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GivenDuration {
    /// The duration.
    pub duration: Duration,
    /// The text given (trimmed), e.g. `10m`.
    pub text: String,
}

impl fmt::Display for GivenDuration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// Any duration, zero included (`prune --older-than 0` means every ended run).
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    sublaunch::inputs::age::parse_age(text).map_err(|e| e.to_string())
}

/// A limit on how long something takes: above zero and at most a year.
pub fn parse_limit(text: &str) -> Result<GivenDuration, String> {
    let duration = parse_duration(text)?;
    let text = text.trim().to_owned();
    if duration.is_zero() {
        return Err(format!(
            "'{text}' is no time at all; give a duration above zero such as 90s or 10m (leave the flag out for no limit)"
        ));
    }
    if duration.as_secs_f64() > MAX_SECONDS {
        return Err(format!("'{text}' is more than a year"));
    }
    Ok(GivenDuration { duration, text })
}

pub use sublaunch::inputs::age::exact;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_as_timeout_takes_them() {
        assert_eq!(parse_duration("90").unwrap(), Duration::from_secs(90));
        assert_eq!(parse_duration("0").unwrap(), Duration::ZERO);
        assert_eq!(parse_limit("10m").unwrap().duration, Duration::from_secs(600));
        assert_eq!(parse_limit(" 1h ").unwrap().text, "1h");
        assert_eq!(parse_limit("1.5").unwrap().duration, Duration::from_millis(1500));
        assert!(parse_limit("0").unwrap_err().contains("'0' is no time at all"));
        assert!(parse_limit("0s").unwrap_err().contains("above zero"));
        assert!(parse_limit("53w").unwrap_err().contains("more than a year"));
        assert!(parse_limit("-1").unwrap_err().contains("is not a duration"));
        assert!(parse_limit("abc").unwrap_err().contains("is not a duration"));
        assert!(parse_limit("5y").unwrap_err().contains("unknown unit"));
    }
}
