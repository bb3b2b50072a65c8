//! Rate-limit cooldowns shared by every run of a state root (U5–U7): when an agent's CLI says
//! its provider refused a call for too many requests or overload, the runner records until when
//! that provider should not be asked again, in `<root>/limits/cooldowns/<provider>.json`. Every
//! launch and every step about to start for that provider waits until then, so that eight
//! parallel agents that hit one limit together make one pause, not eight retry storms.
//!
//! A strike is recorded under an `flock` on `<root>/limits/cooldowns/.lock` and written by
//! atomic rename; readers read without the lock. The delay is the provider's `Retry-After`
//! when the CLI shows it, else [`DEFAULT_DELAY_MS`], and never shorter than the delay the CLI
//! itself chose for its retry (Claude Code's honours `Retry-After` without showing it); strikes that follow one another (a strike
//! within [`REPEAT_WINDOW_MS`] of the last cooldown's end) double it, up to [`MAX_DELAY_MS`],
//! and up to a fifth is added at random so that the waiting runs do not all ask at one
//! instant. Strikes that arrive while a cooldown is running are the same event seen by
//! another run: they may lengthen the cooldown to their own `Retry-After`, never double it.

use crate::files::atomic::Durability;
use crate::files::dir::Dir;
use crate::files::doc::ReadDoc;
use crate::files::lock::FileLock;
use crate::records::config::RunnerConfig;
use serde::{Deserialize, Serialize};
use std::io;

/// `<root>/limits`.
pub const LIMITS_DIR: &str = "limits";
/// `<root>/limits/cooldowns`.
pub const COOLDOWNS_DIR: &str = "cooldowns";
/// The delay of a first strike without `Retry-After`.
pub const DEFAULT_DELAY_MS: u64 = 5_000;
/// The longest delay repeats back off to.
pub const MAX_DELAY_MS: u64 = 5 * 60 * 1000;
/// A strike this soon after the last cooldown ended counts as a repeat.
pub const REPEAT_WINDOW_MS: u64 = 2 * 60 * 1000;
/// The lock file's name.
const LOCK: &str = ".lock";

/// The cooldown of one provider.
#[serde_with_macros::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Cooldown {
    /// The provider (`anthropic`, `openai`, a pi provider).
    pub provider: String,
    /// No call before this (epoch ms).
    pub until: u64,
    /// When the cooldown began (epoch ms).
    pub since: u64,
    /// Strikes in a row (1 after a quiet spell; each repeat doubles the delay).
    pub strikes: u32,
    /// The HTTP status that caused it (429, 529), when the CLI said.
    pub status: Option<u16>,
    /// What the CLI said, shortened.
    pub message: Option<String>,
    /// The run whose agent was refused.
    pub run: Option<String>,
}

/// One provider's refusal, as an adapter recognised it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Strike<'a> {
    /// The provider.
    pub provider: &'a str,
    /// When (epoch ms).
    pub at: u64,
    /// The provider's `Retry-After`, when the CLI showed it.
    pub retry_after_ms: Option<u64>,
    /// The delay the CLI chose for its own retry: the delay is at least this.
    pub cli_delay_ms: Option<u64>,
    /// The HTTP status.
    pub status: Option<u16>,
    /// What the CLI said.
    pub message: &'a str,
    /// The run.
    pub run: &'a str,
    /// A random value for the jitter.
    pub random: u64,
}

/// The cooldowns of one state root.
#[derive(Debug)]
pub struct Cooldowns {
    dir: Dir,
}

impl Cooldowns {
    /// The cooldowns under `<root>`, creating their directory.
    pub fn open(root: &Dir) -> io::Result<Self> {
        Ok(Self {
            dir: root.ensure_path(&[LIMITS_DIR, COOLDOWNS_DIR])?,
        })
    }

    /// The cooldowns under `<root>` when their directory exists (`None`: no provider was ever
    /// refused there).
    pub fn open_existing(root: &Dir) -> io::Result<Option<Self>> {
        Ok(root.open_path(&[LIMITS_DIR, COOLDOWNS_DIR])?.map(|dir| Self { dir }))
    }

    /// The cooldown of `provider` still running at `now` (epoch ms).
    pub fn active(&self, provider: &str, now: u64) -> io::Result<Option<Cooldown>> {
        Ok(self.read(provider)?.filter(|c| c.until > now))
    }

    /// The longest cooldown running at `now` among the providers of the steps `cfg` starts
    /// first: a launch waits, queued, until it passed.
    pub fn blocking_start(&self, cfg: &RunnerConfig, now: u64) -> io::Result<Option<Cooldown>> {
        self.longest(&first_providers(cfg), now)
    }

    /// The longest cooldown running at `now` among `providers`.
    pub fn longest(&self, providers: &[String], now: u64) -> io::Result<Option<Cooldown>> {
        let mut longest: Option<Cooldown> = None;
        for provider in providers {
            if let Some(cooldown) = self.active(provider, now)?
                && longest.as_ref().is_none_or(|l| cooldown.until > l.until)
            {
                longest = Some(cooldown);
            }
        }
        Ok(longest)
    }

    /// Records a strike; returns the provider's cooldown after it.
    pub fn strike(&self, strike: &Strike<'_>) -> io::Result<Cooldown> {
        let _lock = self.lock()?;
        let previous = self.read(strike.provider)?;
        let next = next_cooldown(previous.as_ref(), strike);
        if previous.as_ref() != Some(&next) {
            self.dir
                .write_doc(&file_name(strike.provider), &next, Durability::default())?;
        }
        Ok(next)
    }

    fn read(&self, provider: &str) -> io::Result<Option<Cooldown>> {
        Ok(match self.dir.read_doc::<Cooldown>(&file_name(provider))? {
            ReadDoc::Present(cooldown) => Some(cooldown),
            _ => None,
        })
    }

    fn lock(&self) -> io::Result<FileLock> {
        FileLock::exclusive(&self.dir, LOCK)
    }
}

/// The providers of the steps `cfg` starts first.
pub fn first_providers(cfg: &RunnerConfig) -> Vec<String> {
    let mut providers: Vec<String> = cfg
        .first_group()
        .map(|first| cfg.steps[first.indices()].iter().filter_map(|s| s.provider()).collect())
        .unwrap_or_default();
    providers.sort();
    providers.dedup();
    providers
}

/// The cooldown after `strike`, given the provider's last one.
pub fn next_cooldown(previous: Option<&Cooldown>, strike: &Strike<'_>) -> Cooldown {
    let base = strike
        .retry_after_ms
        .unwrap_or(DEFAULT_DELAY_MS)
        .max(strike.cli_delay_ms.unwrap_or(0))
        // An agent's output is not trusted to pause a provider for longer than the cap.
        .clamp(1, MAX_DELAY_MS);
    let message = Some(shorten(strike.message)).filter(|m| !m.is_empty());
    match previous {
        // The same refusal seen by another run: at most as long as its own Retry-After asks.
        Some(running) if running.until > strike.at => {
            let mut same = running.clone();
            if let Some(after) = strike.retry_after_ms.max(strike.cli_delay_ms) {
                same.until = same.until.max(strike.at.saturating_add(after.min(MAX_DELAY_MS)));
            }
            same
        }
        _ => {
            let repeat = previous.is_some_and(|p| strike.at <= p.until.saturating_add(REPEAT_WINDOW_MS));
            let strikes = if repeat {
                previous.map_or(1, |p| p.strikes.saturating_add(1))
            } else {
                1
            };
            let doubled = base.saturating_mul(1u64 << (strikes - 1).min(16));
            let delay = doubled.min(MAX_DELAY_MS);
            let jitter = strike.random % (delay / 5 + 1);
            Cooldown {
                provider: strike.provider.to_owned(),
                until: strike.at.saturating_add(delay).saturating_add(jitter),
                since: strike.at,
                strikes,
                status: strike.status,
                message,
                run: Some(strike.run.to_owned()).filter(|r| !r.is_empty()),
            }
        }
    }
}

/// A provider's file name: its name where it is plain, other bytes as `%XX`.
fn file_name(provider: &str) -> String {
    let mut name = String::with_capacity(provider.len() + 5);
    for byte in provider.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_') {
            name.push(char::from(byte));
        } else {
            name.push_str(&format!("%{byte:02X}"));
        }
    }
    if name.is_empty() {
        name.push('%');
    }
    name.push_str(".json");
    name
}

/// The first 200 characters of a message.
fn shorten(message: &str) -> String {
    let message = message.trim();
    match message.char_indices().nth(200) {
        Some((at, _)) => format!("{}…", &message[..at]),
        None => message.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strike(at: u64, retry_after_ms: Option<u64>) -> Strike<'static> {
        Strike {
            provider: "anthropic",
            at,
            retry_after_ms,
            cli_delay_ms: None,
            status: Some(429),
            message: "rate limited",
            run: "r1",
            random: 0,
        }
    }

    #[test]
    fn retry_after_is_honoured_and_repeats_back_off() {
        let first = next_cooldown(None, &strike(1_000, Some(2_000)));
        assert_eq!((first.until, first.strikes), (3_000, 1));
        // Another run's sight of the same refusal: no doubling, at most its own Retry-After.
        let same = next_cooldown(Some(&first), &strike(2_000, Some(1_500)));
        assert_eq!((same.until, same.strikes), (3_500, 1));
        let same = next_cooldown(Some(&same), &strike(2_500, None));
        assert_eq!((same.until, same.strikes), (3_500, 1));
        // Refused again soon after the cooldown: twice the delay.
        let second = next_cooldown(Some(&same), &strike(4_000, Some(2_000)));
        assert_eq!((second.until, second.strikes), (8_000, 2));
        // After a quiet spell the count starts over.
        let later = 8_000 + REPEAT_WINDOW_MS + 1;
        let fresh = next_cooldown(Some(&second), &strike(later, None));
        assert_eq!((fresh.until, fresh.strikes), (later + DEFAULT_DELAY_MS, 1));
    }

    #[test]
    fn no_wait_an_agent_prints_pauses_a_provider_past_the_cap() {
        let hostile = next_cooldown(None, &strike(0, Some(u64::MAX / 4)));
        assert_eq!(hostile.until, MAX_DELAY_MS);
        let again = next_cooldown(Some(&hostile), &strike(1, Some(u64::MAX / 4)));
        assert_eq!(again.until, MAX_DELAY_MS + 1);
    }

    #[test]
    fn the_clis_own_delay_is_a_floor() {
        let long = Strike {
            cli_delay_ms: Some(9_000),
            ..strike(0, None)
        };
        assert_eq!(next_cooldown(None, &long).until, 9_000);
        let short = Strike {
            cli_delay_ms: Some(500),
            ..strike(0, None)
        };
        assert_eq!(next_cooldown(None, &short).until, DEFAULT_DELAY_MS);
    }

    #[test]
    fn delays_are_capped_and_jittered_by_at_most_a_fifth() {
        let mut cooldown = next_cooldown(None, &strike(0, None));
        for _ in 0..20 {
            let at = cooldown.until + 1;
            cooldown = next_cooldown(Some(&cooldown), &strike(at, None));
        }
        assert_eq!(cooldown.until - cooldown.since, MAX_DELAY_MS);
        let jittered = next_cooldown(
            None,
            &Strike {
                random: u64::MAX,
                ..strike(0, Some(10_000))
            },
        );
        assert!((10_000..=12_000).contains(&jittered.until), "{jittered:?}");
    }

    #[test]
    fn strikes_are_shared_through_the_state_root() {
        let tmp = tempfile::tempdir().unwrap();
        let root = Dir::open(tmp.path()).unwrap();
        let one = Cooldowns::open(&root).unwrap();
        one.strike(&strike(1_000, Some(5_000))).unwrap();
        let other = Cooldowns::open_existing(&root).unwrap().unwrap();
        assert_eq!(other.active("anthropic", 2_000).unwrap().unwrap().until, 6_000);
        assert_eq!(other.active("anthropic", 6_000).unwrap(), None);
        assert_eq!(other.active("openai", 2_000).unwrap(), None);
        assert_eq!(file_name("my provider/x"), "my%20provider%2Fx.json");
    }
}
