//! The spend limits a run is held to (U8, U9), carried out by its runner:
//!
//! * before the first status, the run reserves what it may spend
//!   ([`sublaunch_protocol::records::spend::reservations`]); while it does not fit it waits,
//!   still `queued`, the reason in `<run>/waiting.json` (`spend limit: $4.10 of $5.00 used
//!   today`), until the period ends or another run's reservation goes ([`wait_for_allowance`]);
//! * while it runs, what its agents reported is held against what was left when it started:
//!   crossing a limit asks the agents that take messages to wrap up, then, after
//!   [`WRAP_UP`], stops the run, the limit named in its error ([`Supervisor::check_spend`]);
//! * as steps end the reservation shrinks to what is left of the estimate, and it goes when
//!   the run ends ([`settle`], [`release`]).

use super::{Requests, Supervisor};
use crate::context::Ctx;
use crate::step::child::ChildRun;
use crate::supervise::control::Pause;
use std::time::{Duration, Instant};
use sublaunch_protocol::files::dir::Dir;
use sublaunch_protocol::procinfo::{own_host_pid, own_start_identity};
use sublaunch_protocol::records::spend::reservations::{Admission, Runner, SpendBook};
use sublaunch_protocol::records::spend::{Amount, Crossed, SpendPlan, crossed};
use sublaunch_protocol::records::usage::Usage;
use sublaunch_protocol::records::waiting::{WaitKind, Waiting};

/// How long agents that take messages are given to wrap up once a limit is crossed.
pub const WRAP_UP: Duration = Duration::from_secs(10);

/// What a running run is held to: its plan, what others had spent and reserved per limit when
/// it started, and the limit it crossed (with when the run is stopped for it).
#[derive(Clone, Debug)]
pub struct SpendWatch {
    /// The plan.
    pub plan: SpendPlan,
    /// What others held against each limit when the reservation was taken.
    pub others: Vec<Amount>,
    /// The limit crossed, and when the run stops for it.
    pub crossed: Option<(Crossed, Instant)>,
}

fn book(ctx: &Ctx) -> std::io::Result<SpendBook> {
    SpendBook::open(&Dir::open_with(&ctx.paths.root, ctx.os.clone())?)
}

/// Before the first status: reserves the run's estimate, waiting while it does not fit;
/// returns the requests that arrived and, once reserved, the watch the run is held to.
pub fn wait_for_allowance(ctx: &Ctx) -> (Requests, Option<SpendWatch>) {
    let mut requests = Requests::default();
    let Some(plan) = ctx.cfg.spend.clone().filter(|p| !p.limits.is_empty()) else {
        return (requests, None);
    };
    let identity = own_start_identity();
    let runner = Runner {
        run: &ctx.cfg.id,
        pid: own_host_pid(),
        pid_start_identity: identity.as_deref(),
    };
    let mut pause = None;
    let mut said: Option<String> = None;
    loop {
        let admission =
            book(ctx).and_then(|book| book.reserve(runner, &plan, ctx.now_wall(), ctx.os.processes.as_ref()));
        let short = match admission {
            Ok(Admission::Reserved(others)) => {
                if said.is_some() {
                    clear_waiting(ctx);
                }
                let watch = SpendWatch {
                    plan,
                    others,
                    crossed: None,
                };
                return (requests, Some(watch));
            }
            Ok(Admission::Short(short)) => short,
            Err(e) => {
                // A book that cannot be read must not lift the limits: the run waits and
                // says why.
                eprintln!("sublaunch-shim: cannot check the spend limits (retrying): {e}");
                sublaunch_protocol::records::spend::Shortfall {
                    limit: plan.limits[0].clone(),
                    used: Amount::default(),
                    wanted: plan.estimate,
                    until: None,
                }
            }
        };
        let reason = short.reason();
        if said.as_ref() != Some(&reason) {
            eprintln!("sublaunch-shim: queued: {reason}");
            let waiting = Waiting {
                kind: WaitKind::SpendLimit,
                reason: reason.clone(),
                detail: Some(format!(
                    "the run reserves {} ({})",
                    amount(plan.estimate),
                    plan.estimate_from
                )),
                since: ctx.now_wall(),
                until: short.until,
                step: None,
            };
            if let Err(e) = ctx.open_run().and_then(|run| waiting.write(&run)) {
                eprintln!("sublaunch-shim: cannot record the wait: {e}");
            }
            ctx.publish(sublaunch_protocol::records::stream::What::Queued { reason: reason.clone() });
            said = Some(reason);
        }
        // Another run's end frees its reservation at any moment: look again each tick.
        if pause
            .get_or_insert_with(|| Pause::new(ctx))
            .sleep(&mut requests, super::queue::TICK)
        {
            clear_waiting(ctx);
            return (requests, None);
        }
    }
}

/// `$0.40 and 12000 tokens`.
fn amount(amount: Amount) -> String {
    format!(
        "{} and {} tokens",
        sublaunch_protocol::records::usage::usd(amount.cost_usd),
        amount.tokens
    )
}

fn clear_waiting(ctx: &Ctx) {
    if let Err(e) = ctx.open_run().and_then(|run| Waiting::clear(&run)) {
        eprintln!("sublaunch-shim: cannot clear the run's wait: {e}");
    }
}

/// Shrinks the run's reservation to what is left of its estimate after `spent` (its ended
/// steps', now in the ledger).
pub fn settle(ctx: &Ctx, spent: &Usage) {
    let Some(plan) = &ctx.cfg.spend else { return };
    if let Err(e) = book(ctx).and_then(|book| book.settle(&ctx.cfg.id, plan.estimate, Amount::of(spent))) {
        eprintln!("sublaunch-shim: cannot settle the spend reservation: {e}");
    }
}

/// Releases the run's reservation (its end).
pub fn release(ctx: &Ctx) {
    if ctx.cfg.spend.is_none() {
        return;
    }
    if let Err(e) = book(ctx).and_then(|book| book.release(&ctx.cfg.id)) {
        eprintln!("sublaunch-shim: cannot release the spend reservation: {e}");
    }
}

impl Supervisor {
    /// Holds what the run's agents reported against the limits: on crossing one, the agents
    /// that take messages are asked to wrap up, and the run is stopped when they were given
    /// [`WRAP_UP`] (at once when none can be asked).
    pub(super) fn check_spend(&mut self, ctx: &Ctx, running: &mut [ChildRun]) {
        let Some(watch) = &mut self.spend else { return };
        let now = Instant::now();
        if let Some((limit, at)) = &watch.crossed {
            if now >= *at && !self.requests.ends_run() {
                eprintln!("sublaunch-shim: {}", limit.message());
                self.requests.stop_for(limit.message());
            }
            return;
        }
        let mut spent = self.run_spent.clone();
        for child in running.iter().filter(|c| c.gate.is_none()) {
            if let Some(usage) = &child.spent.usage {
                spent.add(usage);
            }
        }
        let Some(limit) = crossed(&watch.plan, &watch.others, Amount::of(&spent)) else {
            return;
        };
        let text = wrap_up_message(&limit);
        let mut asked = false;
        for child in running.iter_mut() {
            asked |= super::checkpoint::ask(ctx, child, &text);
        }
        let stop_at = if asked { now + WRAP_UP } else { now };
        watch.crossed = Some((limit, stop_at));
    }

    /// A run that crossed a limit starts no further step: it is stopped then and there.
    pub(super) fn stop_if_over_limit(&mut self) {
        let crossed = self.spend.as_ref().and_then(|w| w.crossed.as_ref());
        if let Some(message) = crossed.map(|(limit, _)| limit.message()) {
            self.requests.stop_for(message);
        }
    }

    /// When the run is stopped for a crossed limit (the event loop wakes then).
    pub(super) fn spend_stop_at(&self) -> Option<Instant> {
        self.spend
            .as_ref()
            .and_then(|w| w.crossed.as_ref())
            .map(|(_, at)| *at)
            .filter(|_| !self.requests.ends_run())
    }
}

/// What an agent is told when the run crossed a spend limit.
fn wrap_up_message(limit: &Crossed) -> String {
    let seconds = WRAP_UP.as_secs();
    format!(
        "[sublaunch] This run reached a spend limit ({}) and ends in {seconds} s. Stop now: \
         start no new work and give your final answer with what you have, saying what is left \
         undone.",
        limit.message().trim_start_matches("Stopped: ").trim_end_matches('.')
    )
}
