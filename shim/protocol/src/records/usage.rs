//! What an agent's model calls cost: tokens and, when the agent reports it, money. Recorded
//! per step (`steps[i].usage` in `status.json`, `results[i].usage` in the result) and summed
//! per run (`usage` in the result).

use serde::{Deserialize, Serialize};

/// Tokens and cost an agent reported for one step, or their sum over a run.
#[serde_with_macros::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    /// Input tokens not read from the prompt cache.
    #[serde(default)]
    pub input_tokens: u64,
    /// Output tokens (reasoning included).
    #[serde(default)]
    pub output_tokens: u64,
    /// Input tokens read from the prompt cache.
    #[serde(default)]
    pub cache_read_tokens: u64,
    /// Input tokens written to the prompt cache.
    #[serde(default)]
    pub cache_write_tokens: u64,
    /// Cost in US dollars, when the agent reports one (Claude Code and pi do, Codex does not).
    pub cost_usd: Option<f64>,
}

impl Usage {
    /// Every token counted once.
    pub fn total_tokens(&self) -> u64 {
        self.input_tokens
            .saturating_add(self.output_tokens)
            .saturating_add(self.cache_read_tokens)
            .saturating_add(self.cache_write_tokens)
    }

    /// Adds `other` to this sum (a cost is kept when either side has one).
    pub fn add(&mut self, other: &Usage) {
        self.input_tokens = self.input_tokens.saturating_add(other.input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(other.output_tokens);
        self.cache_read_tokens = self.cache_read_tokens.saturating_add(other.cache_read_tokens);
        self.cache_write_tokens = self.cache_write_tokens.saturating_add(other.cache_write_tokens);
        self.cost_usd = match (self.cost_usd, other.cost_usd) {
            (Some(a), Some(b)) => Some(a + b),
            (a, b) => a.or(b),
        };
    }

    /// What this usage adds to `before` (each count less `before`'s; a cost is kept as it is).
    pub fn since(&self, before: &Usage) -> Usage {
        Usage {
            input_tokens: self.input_tokens.saturating_sub(before.input_tokens),
            output_tokens: self.output_tokens.saturating_sub(before.output_tokens),
            cache_read_tokens: self.cache_read_tokens.saturating_sub(before.cache_read_tokens),
            cache_write_tokens: self.cache_write_tokens.saturating_sub(before.cache_write_tokens),
            cost_usd: self.cost_usd,
        }
    }

    /// The sum of `parts`, or `None` when none reported usage.
    pub fn sum<'a>(parts: impl IntoIterator<Item = &'a Usage>) -> Option<Usage> {
        parts.into_iter().fold(None, |sum: Option<Usage>, part| {
            let mut sum = sum.unwrap_or_default();
            sum.add(part);
            Some(sum)
        })
    }

    /// `12.3k tokens, $0.0123` for a progress line.
    pub fn brief(&self) -> String {
        let tokens = self.total_tokens();
        let count = if tokens >= 1_000_000 {
            format!("{:.1}M", tokens as f64 / 1e6)
        } else if tokens >= 1_000 {
            format!("{:.1}k", tokens as f64 / 1e3)
        } else {
            tokens.to_string()
        };
        match self.cost_usd {
            Some(cost) => format!("{count} tokens, {}", usd(cost)),
            None => format!("{count} tokens"),
        }
    }
}

/// A dollar amount with the digits it needs: `$1.25`, `$0.0123`, `$0.00001` (cents from a
/// dollar up; below, up to four decimals or two significant digits, trailing zeros dropped
/// down to cents). Zero, negative zero and amounts too small to matter are `$0.00`: a sum of
/// float costs can come out as `-0.0`.
pub fn usd(amount: f64) -> String {
    if !amount.is_finite() {
        return format!("${amount}");
    }
    let magnitude = amount.abs();
    if magnitude < 1e-9 {
        return "$0.00".to_owned();
    }
    let decimals = if magnitude >= 1.0 {
        2
    } else {
        // Zeros after the point before the first significant digit, then two digits. Counted
        // by scaling, not with `log10`: that would link libm into the runner, 300 KiB of its
        // resident memory for one call.
        let mut leading_zeros = 0usize;
        let mut scaled = magnitude;
        while scaled < 0.1 && leading_zeros < 10 {
            scaled *= 10.0;
            leading_zeros += 1;
        }
        (leading_zeros + 2).clamp(4, 10)
    };
    let mut text = format!("{magnitude:.decimals$}");
    while text.ends_with('0') && text.len() - text.find('.').map_or(text.len(), |dot| dot + 1) > 2 {
        text.pop();
    }
    if amount < 0.0 {
        format!("-${text}")
    } else {
        format!("${text}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dollars_keep_the_digits_they_need() {
        assert_eq!(usd(-0.0), "$0.00");
        assert_eq!(usd(0.0), "$0.00");
        assert_eq!(usd(0.00001), "$0.00001");
        assert_eq!(usd(0.0001234), "$0.00012");
        assert_eq!(usd(0.0123), "$0.0123");
        assert_eq!(usd(0.0001), "$0.0001");
        assert_eq!(usd(0.5), "$0.50");
        assert_eq!(usd(1.25), "$1.25");
        assert_eq!(usd(12.0), "$12.00");
        assert_eq!(usd(-0.25), "-$0.25");
    }

    #[test]
    fn sums_keep_every_count_and_any_reported_cost() {
        let a = Usage {
            input_tokens: 10,
            output_tokens: 5,
            cache_read_tokens: 100,
            cache_write_tokens: 1,
            cost_usd: Some(0.5),
        };
        let b = Usage {
            input_tokens: 1,
            output_tokens: 2,
            ..Usage::default()
        };
        let sum = Usage::sum([&a, &b]).unwrap();
        assert_eq!(
            (sum.input_tokens, sum.output_tokens, sum.cache_read_tokens),
            (11, 7, 100)
        );
        assert_eq!(sum.cost_usd, Some(0.5));
        assert_eq!(sum.total_tokens(), 119);
        assert_eq!(Usage::sum([]), None);
        assert_eq!(sum.brief(), "119 tokens, $0.50");
        assert_eq!(
            serde_json::to_value(&b).unwrap(),
            serde_json::json!({"inputTokens": 1, "outputTokens": 2, "cacheReadTokens": 0, "cacheWriteTokens": 0})
        );
    }
}
