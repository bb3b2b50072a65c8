//! An absolute deadline as people and files write it: an RFC 3339 time
//! (`2026-12-01T23:00:00Z`, `2026-12-01T18:00:00-05:00`, fractions of a second allowed) or
//! milliseconds since the Unix epoch.

/// A deadline that names no time (the text, trimmed, is kept for the message).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DeadlineError {
    /// Milliseconds beyond any clock.
    #[error("'{0}' is too large for a time")]
    TooLarge(String),
    /// Neither RFC 3339 nor milliseconds.
    #[error("'{0}' is not a time; write it as 2026-12-01T23:00:00Z (RFC 3339) or as milliseconds since 1970")]
    NotATime(String),
}

/// The deadline `text` names, in wall milliseconds since the epoch.
pub fn parse_deadline(text: &str) -> Result<u64, DeadlineError> {
    let text = text.trim();
    if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) {
        return text.parse().map_err(|_| DeadlineError::TooLarge(text.to_owned()));
    }
    rfc3339_ms(text).ok_or_else(|| DeadlineError::NotATime(text.to_owned()))
}

fn rfc3339_ms(text: &str) -> Option<u64> {
    let (date, rest) = text.split_once(['T', 't', ' '])?;
    let mut parts = date.splitn(3, '-');
    let year: i64 = parts.next()?.parse().ok()?;
    let month: i64 = parts.next()?.parse().ok()?;
    let day: i64 = parts.next()?.parse().ok()?;
    let zone_at = rest.find(['Z', 'z', '+', '-'])?;
    let (clock, zone) = rest.split_at(zone_at);
    let mut fields = clock.splitn(3, ':');
    let hour: i64 = fields.next()?.parse().ok()?;
    let minute: i64 = fields.next()?.parse().ok()?;
    let (second, millis) = match fields.next() {
        None => (0, 0),
        Some(seconds) => match seconds.split_once('.') {
            None => (seconds.parse().ok()?, 0),
            Some((whole, fraction)) => {
                let digits: String = fraction.chars().chain("000".chars()).take(3).collect();
                (whole.parse().ok()?, digits.parse::<i64>().ok()?)
            }
        },
    };
    let offset_minutes = match zone {
        "Z" | "z" => 0,
        _ => {
            let sign = if zone.starts_with('-') { -1 } else { 1 };
            let (h, m) = zone[1..].split_once(':')?;
            sign * (h.parse::<i64>().ok()? * 60 + m.parse::<i64>().ok()?)
        }
    };
    let valid = (1..=12).contains(&month)
        && (1..=31).contains(&day)
        && (0..24).contains(&hour)
        && (0..60).contains(&minute)
        && (0..=60).contains(&second);
    if !valid {
        return None;
    }
    let days = days_from_civil(year, month, day);
    let seconds = days * 86_400 + hour * 3600 + minute * 60 + second - offset_minutes * 60;
    u64::try_from(seconds * 1000 + millis).ok()
}

/// Days from 1970-01-01 to the given proleptic Gregorian date.
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let yoe = year - era * 400;
    let doy = (153 * ((month + 9) % 12) + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_read_as_people_write_them() {
        assert_eq!(parse_deadline("1970-01-01T00:00:00Z"), Ok(0));
        assert_eq!(parse_deadline("2026-12-01T23:00:00Z"), Ok(1_796_166_000_000));
        assert_eq!(parse_deadline("2026-12-01T18:00:00-05:00"), Ok(1_796_166_000_000));
        assert_eq!(parse_deadline("2026-12-01T23:00:00.25Z"), Ok(1_796_166_000_250));
        assert_eq!(parse_deadline("2024-02-29T12:30Z"), Ok(1_709_209_800_000));
        assert_eq!(parse_deadline(" 1796166000000 "), Ok(1_796_166_000_000));
        for bad in ["tomorrow", "2026-13-01T00:00:00Z", "2026-12-01T23:00:00", "", "-5"] {
            assert!(
                parse_deadline(bad).unwrap_err().to_string().contains("is not a time"),
                "{bad}"
            );
        }
    }
}
