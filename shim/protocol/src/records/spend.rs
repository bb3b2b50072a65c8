//! Spend limits across runs (U8, U9): what the runs of a state root may spend together per day,
//! week or month — overall, per provider or per agent — and per run tree, in dollars and in
//! tokens (`subagents.limits` in settings).
//!
//! A launch reserves what it may spend before it starts ([`reservations`]): its own budget, else
//! an estimate from its agents' past steps. A limit is kept when what the period's ledger
//! entries spent ([`totals`]), plus what the other live runs reserved, plus this run's
//! reservation fit under it; a run that does not fit waits, queued, until the period ends (or
//! is refused when it asked not to queue). Once running, a run may spend what was left when it
//! started; crossing that is crossing the limit. Reservations are settled as steps end and
//! released when the run ends; a dead runner's reservation is released by whoever looks.

pub mod reservations;
pub mod totals;

use crate::os::clock::Period;
use crate::records::usage::{Usage, usd};
use serde::{Deserialize, Serialize};

/// The period a limit counts over.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Per {
    /// A local calendar day.
    Day,
    /// A local week, from Monday.
    Week,
    /// A local calendar month.
    Month,
    /// A run tree: a run and every run launched from inside it, for as long as it lasts.
    Tree,
}

impl Per {
    /// The calendar period, when the limit has one.
    pub fn period(self) -> Option<Period> {
        match self {
            Self::Day => Some(Period::Day),
            Self::Week => Some(Period::Week),
            Self::Month => Some(Period::Month),
            Self::Tree => None,
        }
    }

    /// `today`, `this week`, `this month`, `in this run tree`.
    fn span(self) -> &'static str {
        match self {
            Self::Day => "today",
            Self::Week => "this week",
            Self::Month => "this month",
            Self::Tree => "in this run tree",
        }
    }
}

/// One limit: at most `costUsd` dollars and/or `tokens` tokens `per` period, for the runs of
/// one provider or agent when it names one.
#[serde_with_macros::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SpendLimit {
    /// The period.
    pub per: Per,
    /// The most dollars.
    pub cost_usd: Option<f64>,
    /// The most tokens (input, cache writes and output; cache reads are not counted, as in
    /// budgets).
    pub tokens: Option<u64>,
    /// Only the steps calling this provider.
    pub provider: Option<String>,
    /// Only the steps of this agent.
    pub agent: Option<String>,
}

/// Dollars and tokens.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Amount {
    /// Dollars (what was reported; unreported costs count as nothing).
    pub cost_usd: f64,
    /// Tokens as a budget counts them.
    pub tokens: u64,
}

impl Amount {
    /// What `usage` counts against a limit.
    pub fn of(usage: &Usage) -> Self {
        Self {
            cost_usd: usage.cost_usd.unwrap_or(0.0),
            tokens: counted_tokens(usage),
        }
    }

    /// The sum.
    pub fn plus(self, other: Self) -> Self {
        Self {
            cost_usd: self.cost_usd + other.cost_usd,
            tokens: self.tokens.saturating_add(other.tokens),
        }
    }

    /// What is left of `self` after `spent` (never below nothing).
    pub fn minus(self, spent: Self) -> Self {
        Self {
            cost_usd: (self.cost_usd - spent.cost_usd).max(0.0),
            tokens: self.tokens.saturating_sub(spent.tokens),
        }
    }
}

/// The tokens a limit counts: input (cache writes included) and output.
pub fn counted_tokens(usage: &Usage) -> u64 {
    usage
        .input_tokens
        .saturating_add(usage.cache_write_tokens)
        .saturating_add(usage.output_tokens)
}

/// What a run is held to, decided at launch (`spend` of the runner configuration).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SpendPlan {
    /// The limits from settings.
    pub limits: Vec<SpendLimit>,
    /// The local time zone's offset from UTC at launch, in seconds (periods are local).
    pub utc_offset_s: i64,
    /// What the run reserves: its budget, else an estimate from its agents' past steps.
    pub estimate: Amount,
    /// Where the estimate came from, for people (`its budget`, `3 past steps of reviewer`).
    pub estimate_from: String,
    /// The agents of its steps.
    pub agents: Vec<String>,
    /// The providers of its steps.
    pub providers: Vec<String>,
    /// The run at the top of its tree (itself when it has no parent run).
    pub tree_root: String,
}

impl SpendLimit {
    /// Whether `total` is more than this limit allows, in cost or in tokens.
    pub fn exceeded_by(&self, total: Amount) -> bool {
        self.cost_usd.is_some_and(|max| total.cost_usd > max) || self.tokens.is_some_and(|max| total.tokens > max)
    }
}

impl SpendPlan {
    /// Whether `limit` holds this run.
    pub fn bound_by(&self, limit: &SpendLimit) -> bool {
        limit.provider.as_ref().is_none_or(|p| self.providers.contains(p))
            && limit.agent.as_ref().is_none_or(|a| self.agents.contains(a))
    }
}

/// Whether spend of `agent` at `provider` in run tree `tree_root` counts against `limit` for
/// a run of tree `own_tree`.
pub fn counts(
    limit: &SpendLimit,
    agent: Option<&str>,
    provider: Option<&str>,
    tree_root: &str,
    own_tree: &str,
) -> bool {
    limit.provider.as_deref().is_none_or(|p| provider == Some(p))
        && limit.agent.as_deref().is_none_or(|a| agent == Some(a))
        && (limit.per != Per::Tree || tree_root == own_tree)
}

/// A limit a run does not fit under.
#[derive(Clone, Debug, PartialEq)]
pub struct Shortfall {
    /// The limit.
    pub limit: SpendLimit,
    /// What was spent and reserved by others in its period.
    pub used: Amount,
    /// What the run reserves.
    pub wanted: Amount,
    /// When the period ends and the run may fit (absent: a run tree's limit never resets).
    pub until: Option<u64>,
}

impl Shortfall {
    /// Whether the run could never fit: it alone wants more than the limit.
    pub fn never(&self) -> bool {
        let over_cost = self.limit.cost_usd.is_some_and(|max| self.wanted.cost_usd > max);
        let over_tokens = self.limit.tokens.is_some_and(|max| self.wanted.tokens > max);
        over_cost || over_tokens || self.until.is_none()
    }

    /// `spend limit: $4.10 of $5.00 used today` (with `for anthropic`, `for reviewer`).
    pub fn reason(&self) -> String {
        let used = match (self.limit.cost_usd, self.limit.tokens) {
            (Some(max), _) if self.used.cost_usd + self.wanted.cost_usd > max => {
                format!("{} of {}", usd(self.used.cost_usd), usd(max))
            }
            (_, Some(max)) => format!("{} of {} tokens", self.used.tokens, max),
            (Some(max), None) => format!("{} of {}", usd(self.used.cost_usd), usd(max)),
            (None, None) => "nothing".to_owned(),
        };
        format!(
            "spend limit: {used} used {}{}",
            self.limit.per.span(),
            scope(&self.limit)
        )
    }
}

/// ` for anthropic`, ` for reviewer`, ` for reviewer at anthropic` or nothing.
pub fn scope(limit: &SpendLimit) -> String {
    match (&limit.agent, &limit.provider) {
        (Some(agent), Some(provider)) => format!(" for {agent} at {provider}"),
        (Some(agent), None) => format!(" for {agent}"),
        (None, Some(provider)) => format!(" for {provider}"),
        (None, None) => String::new(),
    }
}

/// The first limit binding `plan` that `used` (by others, per limit in order) and the run's
/// estimate do not fit under, at `now`.
pub fn first_shortfall(plan: &SpendPlan, used: &[Amount], now: u64) -> Option<Shortfall> {
    plan.limits
        .iter()
        .zip(used)
        .filter(|(limit, _)| plan.bound_by(limit))
        .find_map(|(limit, used)| {
            limit.exceeded_by(used.plus(plan.estimate)).then(|| Shortfall {
                limit: limit.clone(),
                used: *used,
                wanted: plan.estimate,
                until: limit.per.period().map(|p| p.end_ms(now, plan.utc_offset_s)),
            })
        })
}

/// A limit the run crossed while it ran: what it may spend (what was left when it started) and
/// what it spent.
#[derive(Clone, Debug, PartialEq)]
pub struct Crossed {
    /// The limit.
    pub limit: SpendLimit,
    /// What others had spent and reserved in its period when the run started.
    pub others: Amount,
    /// What the run spent.
    pub spent: Amount,
}

impl Crossed {
    /// `Stopped: the spend limit of $5.00 per day was reached ($5.20 used today).`
    pub fn message(&self) -> String {
        let total = self.others.plus(self.spent);
        let (limit, used) = match (self.limit.cost_usd, self.limit.tokens) {
            (Some(max), _) if total.cost_usd > max => (usd(max), usd(total.cost_usd)),
            (_, Some(max)) => (format!("{max} tokens"), format!("{} tokens", total.tokens)),
            (Some(max), None) => (usd(max), usd(total.cost_usd)),
            (None, None) => (String::new(), String::new()),
        };
        let per = match self.limit.per {
            Per::Tree => "per run tree".to_owned(),
            per => format!(
                "per {}",
                serde_json::to_value(per)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_default()
            ),
        };
        format!(
            "Stopped: the spend limit of {limit} {per}{} was reached ({used} used {}).",
            scope(&self.limit),
            self.limit.per.span()
        )
    }
}

/// The first limit binding `plan` that `others` (per limit, when the run started) plus what the
/// run spent crosses.
pub fn crossed(plan: &SpendPlan, others: &[Amount], spent: Amount) -> Option<Crossed> {
    plan.limits
        .iter()
        .zip(others)
        .filter(|(limit, _)| plan.bound_by(limit))
        .find_map(|(limit, others)| {
            limit.exceeded_by(others.plus(spent)).then(|| Crossed {
                limit: limit.clone(),
                others: *others,
                spent,
            })
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(limits: Vec<SpendLimit>, estimate: f64) -> SpendPlan {
        SpendPlan {
            limits,
            estimate: Amount {
                cost_usd: estimate,
                tokens: 0,
            },
            agents: vec!["worker".into()],
            providers: vec!["anthropic".into()],
            tree_root: "r1".into(),
            ..SpendPlan::default()
        }
    }

    fn daily(cost: f64) -> SpendLimit {
        SpendLimit {
            per: Per::Day,
            cost_usd: Some(cost),
            tokens: None,
            provider: None,
            agent: None,
        }
    }

    #[test]
    fn a_run_fits_while_what_others_used_and_its_estimate_stay_under_the_limit() {
        let plan = plan(vec![daily(5.0)], 0.5);
        let used = |cost| {
            [Amount {
                cost_usd: cost,
                tokens: 0,
            }]
        };
        assert_eq!(first_shortfall(&plan, &used(4.5), 0), None);
        let short = first_shortfall(&plan, &used(4.6), 0).unwrap();
        assert_eq!(short.reason(), "spend limit: $4.60 of $5.00 used today");
        assert_eq!(short.until, Some(86_400_000));
        assert!(!short.never());
        // Alone it is too much: it can never fit.
        let greedy = super::tests::plan(vec![daily(5.0)], 6.0);
        assert!(first_shortfall(&greedy, &used(0.0), 0).unwrap().never());
    }

    #[test]
    fn limits_of_other_providers_and_agents_do_not_bind() {
        let mut other = daily(1.0);
        other.provider = Some("openai".into());
        let plan = plan(vec![other.clone()], 5.0);
        assert_eq!(first_shortfall(&plan, &[Amount::default()], 0), None);
        assert!(!counts(&other, Some("worker"), Some("anthropic"), "r1", "r1"));
        assert!(counts(&other, Some("worker"), Some("openai"), "r9", "r1"));
        let tree = SpendLimit {
            per: Per::Tree,
            ..daily(1.0)
        };
        assert!(!counts(&tree, None, None, "r9", "r1"));
    }

    #[test]
    fn crossing_names_the_limit() {
        let plan = plan(vec![daily(5.0)], 0.0);
        let others = [Amount {
            cost_usd: 4.0,
            tokens: 0,
        }];
        let spent = |cost| Amount {
            cost_usd: cost,
            tokens: 0,
        };
        assert_eq!(crossed(&plan, &others, spent(1.0)), None);
        let crossed = crossed(&plan, &others, spent(1.2)).unwrap();
        assert_eq!(
            crossed.message(),
            "Stopped: the spend limit of $5.00 per day was reached ($5.20 used today)."
        );
    }
}
