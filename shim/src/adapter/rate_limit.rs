//! Recognising a provider's refusal for too many requests or overload in an agent CLI's
//! output (U5): the HTTP status the CLI reports (429, 529), its own wording (`rate_limit`,
//! `Too Many Requests`, `overloaded`), and the wait the provider asked for (`Retry-After`, or
//! the CLI's retry delay that honours it) when the CLI shows one.

/// A provider refused a call for too many requests or overload, as the agent's CLI said.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RateLimited {
    /// The HTTP status (429 rate limited, 529 overloaded), when the CLI said.
    pub status: Option<u16>,
    /// How long the provider asked to wait, when the CLI shows its words (`try again in 2s`).
    pub retry_after_ms: Option<u64>,
    /// The delay the CLI chose before its own retry (Claude Code's, which honours the
    /// provider's `Retry-After` but does not show it): the cooldown is at least this.
    pub cli_delay_ms: Option<u64>,
    /// What the CLI said.
    pub message: String,
}

/// Whether an HTTP status is a rate limit or an overload.
pub fn is_limit_status(status: u64) -> bool {
    matches!(status, 429 | 529)
}

/// A rate limit or overload named in an error `message`, with the status and wait it gives.
pub fn in_message(message: &str) -> Option<RateLimited> {
    let lower = message.to_ascii_lowercase();
    let status = status_in(&lower);
    let worded = [
        "rate limit",
        "rate_limit",
        "ratelimit",
        "too many requests",
        "overloaded",
        "rate-limit",
    ]
    .iter()
    .any(|w| lower.contains(w));
    if status.is_none() && !worded {
        return None;
    }
    Some(RateLimited {
        status: status.or_else(|| lower.contains("overloaded").then_some(529)),
        retry_after_ms: wait_in(&lower),
        cli_delay_ms: None,
        message: message.to_owned(),
    })
}

/// `429` or `529` as a number of its own in `text` (not inside a longer number).
fn status_in(text: &str) -> Option<u16> {
    let bytes = text.as_bytes();
    for status in ["429", "529"] {
        let mut from = 0;
        while let Some(at) = text[from..].find(status) {
            let start = from + at;
            let end = start + status.len();
            let digit_before = start > 0 && bytes[start - 1].is_ascii_digit();
            let digit_after = bytes.get(end).is_some_and(u8::is_ascii_digit);
            if !digit_before && !digit_after {
                return status.parse().ok();
            }
            from = end;
        }
    }
    None
}

/// The wait a message asks for: `retry-after: 12`, `retry after 12 seconds`, `try again in
/// 1.5s` or `in 300ms`.
fn wait_in(text: &str) -> Option<u64> {
    for marker in ["retry-after:", "retry-after", "retry after", "try again in"] {
        let Some(at) = text.find(marker) else { continue };
        let rest = text[at + marker.len()..].trim_start();
        let number: String = rest.chars().take_while(|c| c.is_ascii_digit() || *c == '.').collect();
        let Ok(value) = number.parse::<f64>() else { continue };
        let unit = rest[number.len()..].trim_start();
        let ms = if unit.starts_with("ms") || unit.starts_with("millisecond") {
            value
        } else if unit.starts_with("min") {
            value * 60_000.0
        } else {
            value * 1000.0
        };
        if ms.is_finite() && ms >= 0.0 {
            return Some(ms.round() as u64);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_clis_wordings_are_recognised_with_their_waits() {
        let codex = in_message("exceeded retry limit, last status: 429 Too Many Requests").unwrap();
        assert_eq!((codex.status, codex.retry_after_ms), (Some(429), None));
        let openai = in_message("Rate limit reached for gpt-5. Please try again in 1.5s.").unwrap();
        assert_eq!((openai.status, openai.retry_after_ms), (None, Some(1500)));
        let pi = in_message(r#"429: {"error":{"message":"slow down"}}"#).unwrap();
        assert_eq!(pi.status, Some(429));
        let overloaded = in_message("Overloaded").unwrap();
        assert_eq!(overloaded.status, Some(529));
        assert_eq!(
            in_message("retry-after: 12 rate limited").unwrap().retry_after_ms,
            Some(12_000)
        );
        assert_eq!(
            in_message("rate limited; try again in 300ms").unwrap().retry_after_ms,
            Some(300)
        );
    }

    #[test]
    fn other_errors_and_longer_numbers_are_not_rate_limits() {
        assert_eq!(in_message("invalid api key"), None);
        assert_eq!(in_message("500 Internal Server Error"), None);
        assert_eq!(in_message("read 14290 bytes"), None);
        assert_eq!(in_message("request id 1529"), None);
    }
}
