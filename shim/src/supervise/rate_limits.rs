//! Providers' rate limits (U5, U6, U7). When an agent's CLI reports that its provider refused a call
//! for too many requests or overload, the runner records a cooldown for that provider in the
//! state root ([`sublaunch_protocol::records::cooldown`]), which every run of the root honours:
//!
//! * an agent refused before it did any work (no answer, no tool call) is stopped at once —
//!   its CLI would otherwise retry on its own schedule, eight agents making eight storms — and
//!   its step runs again once the cooldown passed, with the same model, as often as the step's
//!   `retry.rateLimit` allows; each attempt is kept in the step's `rateLimits`;
//! * an agent refused after it did work is left to its CLI's own retries (stopping it would
//!   lose the work), and its cooldown still holds back the others;
//! * a step about to start waits while its provider cools down, and a launched run whose first
//!   steps' providers cool down waits before it starts, `queued`, with the reason in
//!   `<run>/waiting.json` ([`wait_before_start`]).

use super::{Requests, Supervisor};
use crate::adapter::RateLimited;
use crate::context::Ctx;
use crate::step::child::ChildRun;
use crate::step::end::StepEnd;
use crate::supervise::control::Pause;
use std::time::{Duration, Instant};
use sublaunch_protocol::files::dir::Dir;
use sublaunch_protocol::records::config::{DEFAULT_RATE_LIMIT_RETRIES, StepConfig};
use sublaunch_protocol::records::cooldown::{Cooldown, Cooldowns, Strike};
use sublaunch_protocol::records::proof::WriterRecord;
use sublaunch_protocol::records::status::RunState;
use sublaunch_protocol::records::step_record::RateLimitAttempt;
use sublaunch_protocol::records::waiting::{WaitKind, Waiting};

/// The attempts of one step that a rate limit ended to run it again.
#[derive(Clone, Debug, Default)]
pub struct Retried {
    /// What each met.
    pub attempts: Vec<RateLimitAttempt>,
    /// Their writer records (one per agent attempt, S8).
    pub writers: Vec<WriterRecord>,
}

/// What becomes of an agent's end.
#[derive(Debug)]
pub enum AfterLimit {
    /// The step runs again once its provider's cooldown passed.
    Again(usize),
    /// The step's end, with every rate-limited attempt before it.
    Ended(Box<StepEnd>),
}

impl Supervisor {
    /// Strikes each rate limit an agent's CLI newly reported against its provider, and stops
    /// an agent refused before it did any work when its step may run again.
    pub(super) fn check_rate_limits(&self, ctx: &Ctx, running: &mut [ChildRun]) {
        for child in running.iter_mut().filter(|c| c.gate.is_none()) {
            let Some(limited) = child.spent.rate_limited.clone() else {
                continue;
            };
            if child.rate_limited.as_ref() == Some(&limited) {
                continue;
            }
            strike(ctx, child.index, &limited);
            if !child.spent.worked
                && child.exit_seen.is_none()
                && self.retries_left(ctx, child.index) > 0
                && !self.requests.ends_run()
            {
                child.rate_limit_stop = true;
            }
            child.rate_limited = Some(limited);
        }
    }

    /// The runs of step `index` still allowed after a rate limit.
    fn retries_left(&self, ctx: &Ctx, index: usize) -> u32 {
        let allowed = ctx.cfg.steps[index]
            .rate_limit_retries
            .unwrap_or(DEFAULT_RATE_LIMIT_RETRIES);
        let used = self.rate_limit_retries.get(&index).map_or(0, |r| r.attempts.len());
        allowed.saturating_sub(u32::try_from(used).unwrap_or(u32::MAX))
    }

    /// Decides what becomes of an agent's end: run again when a rate limit refused it before it
    /// did any work, retries are left and nothing else ended it; otherwise its end, carrying
    /// the attempts before it.
    pub fn after_rate_limit(&mut self, ctx: &Ctx, mut end: StepEnd) -> AfterLimit {
        let index = end.index;
        if let Some(limited) = end.rate_limited.clone() {
            let provider = ctx.cfg.steps.get(index).and_then(StepConfig::provider);
            let failed = end.rate_limit_stopped || end.state() == RunState::Failed;
            let only_the_limit = end.stop.is_none()
                && end.cancel.is_none()
                && end.budget.is_none()
                && end.timeout.is_none()
                && !end.interrupted;
            let retry = failed
                && only_the_limit
                && !end.worked
                && self.retries_left(ctx, index) > 0
                && !self.requests.ends_run();
            let used = self.rate_limit_retries.get(&index).map_or(0, |r| r.attempts.len());
            let ended_at = if end.ended_wall == 0 {
                ctx.now_wall()
            } else {
                end.ended_wall
            };
            let attempt = RateLimitAttempt {
                attempt: u32::try_from(used + 1).unwrap_or(u32::MAX),
                started_at: end.started_wall,
                ended_at,
                cooldown_until: cooldown_of(ctx, index).map(|c| c.until),
                provider,
                status: limited.status,
                retry_after_ms: limited.retry_after_ms.or(limited.cli_delay_ms),
                message: limited.message.clone(),
                worked: end.worked,
                retried: retry,
            };
            if retry {
                // What the refused attempt reported still counts (U1).
                super::ledger::record_step(ctx, &end);
                let retried = self.rate_limit_retries.entry(index).or_default();
                retried.attempts.push(attempt);
                retried.writers.extend(end.writer.take());
                return AfterLimit::Again(index);
            }
            end.rate_limits.push(attempt);
        }
        if let Some(before) = self.rate_limit_retries.remove(&index) {
            let this = std::mem::take(&mut end.rate_limits);
            end.rate_limits = before.attempts.into_iter().chain(this).collect();
            end.earlier_writers = before.writers;
        }
        AfterLimit::Ended(Box::new(end))
    }

    /// Whether step `index` may start now; when its provider cools down, records the wait and
    /// wakes the event loop when the cooldown ends.
    pub fn may_start(&mut self, ctx: &Ctx, index: usize) -> bool {
        match cooldown_of(ctx, index) {
            None => {
                if self.cooldown_wake.take().is_some() {
                    clear_waiting(ctx);
                }
                true
            }
            Some(cooldown) => {
                let now = ctx.now_wall();
                let left = Duration::from_millis(cooldown.until.saturating_sub(now));
                let wake = Instant::now() + left;
                if self.cooldown_wake != Some(wake) {
                    write_waiting(ctx, &cooldown, u32::try_from(index).ok(), now);
                }
                self.cooldown_wake = Some(wake);
                false
            }
        }
    }
}

/// The cooldown of step `index`'s provider still running now.
pub fn cooldown_of(ctx: &Ctx, index: usize) -> Option<Cooldown> {
    let provider = ctx.cfg.steps.get(index).and_then(StepConfig::provider)?;
    let root = Dir::open_with(&ctx.paths.root, ctx.os.clone()).ok()?;
    let cooldowns = Cooldowns::open_existing(&root).ok()??;
    cooldowns.active(&provider, ctx.now_wall()).unwrap_or_else(|e| {
        eprintln!("sublaunch-shim: cannot read the cooldown of {provider}: {e}");
        None
    })
}

/// Records `limited` against step `index`'s provider (best effort: a cooldown that cannot be
/// written only loses the other runs their pause).
fn strike(ctx: &Ctx, index: usize, limited: &RateLimited) {
    let Some(provider) = ctx.cfg.steps.get(index).and_then(StepConfig::provider) else {
        return;
    };
    let struck = Dir::open_with(&ctx.paths.root, ctx.os.clone())
        .and_then(|root| Cooldowns::open(&root))
        .and_then(|cooldowns| {
            cooldowns.strike(&Strike {
                provider: &provider,
                at: ctx.now_wall(),
                retry_after_ms: limited.retry_after_ms,
                cli_delay_ms: limited.cli_delay_ms,
                status: limited.status,
                message: &limited.message,
                run: &ctx.cfg.id,
                random: ctx.os.random.next_u64(),
            })
        });
    match struck {
        Ok(cooldown) => eprintln!(
            "sublaunch-shim: {provider} is rate limited; no call before {} (strike {})",
            cooldown.until, cooldown.strikes
        ),
        Err(e) => eprintln!("sublaunch-shim: cannot record the rate limit of {provider}: {e}"),
    }
}

/// `rate limit: anthropic (HTTP 429)`.
fn reason(cooldown: &Cooldown) -> String {
    match cooldown.status {
        Some(status) => format!("rate limit: {} (HTTP {status})", cooldown.provider),
        None => format!("rate limit: {}", cooldown.provider),
    }
}

fn write_waiting(ctx: &Ctx, cooldown: &Cooldown, step: Option<u32>, now: u64) {
    let waiting = Waiting {
        kind: WaitKind::RateLimit,
        reason: reason(cooldown),
        detail: cooldown.message.clone(),
        since: now,
        until: Some(cooldown.until),
        step,
    };
    if let Err(e) = ctx.open_run().and_then(|run| waiting.write(&run)) {
        eprintln!("sublaunch-shim: cannot record the wait for {}: {e}", cooldown.provider);
    }
    ctx.publish(sublaunch_protocol::records::stream::What::Queued { reason: waiting.reason });
}

fn clear_waiting(ctx: &Ctx) {
    if let Err(e) = ctx.open_run().and_then(|run| Waiting::clear(&run)) {
        eprintln!("sublaunch-shim: cannot clear the run's wait: {e}");
    }
}

/// Before the first status: waits while a provider of the first steps cools down, the run
/// still `queued` and its reason in `<run>/waiting.json`; stop requests end the wait (the run
/// then starts nothing). Returns the requests that arrived.
pub fn wait_before_start(ctx: &Ctx) -> Requests {
    let mut requests = Requests::default();
    let mut pause = None;
    let mut said: Option<u64> = None;
    loop {
        let longest = Dir::open_with(&ctx.paths.root, ctx.os.clone())
            .and_then(|root| Cooldowns::open_existing(&root))
            .and_then(|c| c.map_or(Ok(None), |c| c.blocking_start(&ctx.cfg, ctx.now_wall())));
        let longest = longest.unwrap_or_else(|e| {
            eprintln!("sublaunch-shim: cannot read the providers' cooldowns, starting: {e}");
            None
        });
        let Some(cooldown) = longest else {
            if said.is_some() {
                clear_waiting(ctx);
            }
            return requests;
        };
        let now = ctx.now_wall();
        if said != Some(cooldown.until) {
            eprintln!("sublaunch-shim: queued: {}", reason(&cooldown));
            write_waiting(ctx, &cooldown, None, now);
            said = Some(cooldown.until);
        }
        let pause = pause.get_or_insert_with(|| Pause::new(ctx));
        // Wake at the cooldown's end, and now and then to look again (another run may have
        // lengthened it, a stop may arrive without waking the inbox).
        let left = Duration::from_millis(cooldown.until.saturating_sub(now)).min(super::queue::TICK);
        if pause.sleep(&mut requests, left) {
            clear_waiting(ctx);
            return requests;
        }
    }
}
