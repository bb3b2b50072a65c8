//! What a launch is held to under the spend limits (U8, U9), decided once its steps are known:
//! the limits from settings, the local time zone the periods follow, the run's tree, and what it
//! reserves — the run's own budget when it has one, else each step's budget, else what its
//! agent's recent steps spent on average (the last [`RECENT_BYTES`] of the ledger, read at a
//! bounded cost). The runner takes the reservation; the host only looks, to record a run that
//! must wait as `queued`, or to refuse it when the launch asked not to queue.

use super::blocking::blocking_value;
use super::context::RunContext;
use super::error::LaunchError;
use std::collections::BTreeMap;
use std::sync::Arc;
use sublaunch_protocol::os::processes::RealProcesses;
use sublaunch_protocol::records::config::RunnerConfig;
use sublaunch_protocol::records::ledger::{Ledger, LedgerEntry};
use sublaunch_protocol::records::spend::reservations::SpendBook;
use sublaunch_protocol::records::spend::{Amount, Shortfall, SpendPlan};

/// How much of the newest ledger file the estimate reads.
pub const RECENT_BYTES: u64 = 32 * 1024;

/// The run's spend plan (`None`: no limit in settings).
pub(crate) async fn plan(ctx: &Arc<RunContext>, config: &RunnerConfig) -> Result<Option<SpendPlan>, LaunchError> {
    let Some(settings) = ctx.launch.settings.clone() else {
        return Ok(None);
    };
    let limits = settings
        .spend_limits()
        .map_err(|e| LaunchError::Setting(super::error::cause(e)))?;
    if limits.is_empty() {
        return Ok(None);
    }
    let now = ctx.os.clock.wall_ms();
    let mut agents: Vec<String> = config.steps.iter().filter_map(|s| s.agent.clone()).collect();
    agents.sort();
    agents.dedup();
    let mut providers: Vec<String> = config.steps.iter().filter_map(|s| s.provider()).collect();
    providers.sort();
    providers.dedup();
    let ledger = Ledger::under(ctx.root.root().path());
    let recent = blocking_value(move || ledger.recent(RECENT_BYTES))
        .await
        .and_then(Result::ok)
        .unwrap_or_default();
    let (estimate, estimate_from) = estimate(config, &recent);
    Ok(Some(SpendPlan {
        limits,
        utc_offset_s: crate::usage::local_utc_offset_s(now),
        estimate,
        estimate_from,
        agents,
        providers,
        tree_root: config.tree_root_run_id.clone().unwrap_or_else(|| ctx.run_id.clone()),
    }))
}

/// What the run reserves, and where that came from: the run's budget, else per step its own
/// budget or its agent's average step in `recent`.
fn estimate(config: &RunnerConfig, recent: &[LedgerEntry]) -> (Amount, String) {
    if let Some(budget) = &config.usage_budget
        && (budget.max_cost_usd.is_some() || budget.max_tokens.is_some())
    {
        let amount = Amount {
            cost_usd: budget.max_cost_usd.unwrap_or(0.0),
            tokens: budget.max_tokens.unwrap_or(0),
        };
        return (amount, "the run's budget".to_owned());
    }
    let mut averages: BTreeMap<&str, (Amount, u32)> = BTreeMap::new();
    for entry in recent {
        if let Some(agent) = entry.agent.as_deref() {
            // A step's entries add up to its spend; it counts as one step, at its end.
            let (sum, n) = averages.entry(agent).or_default();
            *sum = sum.plus(Amount::of(&entry.usage));
            *n += u32::from(!entry.partial);
        }
    }
    let mut total = Amount::default();
    let mut sources: Vec<String> = Vec::new();
    for step in &config.steps {
        let own = step
            .usage_budget
            .as_ref()
            .filter(|b| b.max_cost_usd.is_some() || b.max_tokens.is_some());
        if let Some(budget) = own {
            total = total.plus(Amount {
                cost_usd: budget.max_cost_usd.unwrap_or(0.0),
                tokens: budget.max_tokens.unwrap_or(0),
            });
            sources.push("a step's budget".to_owned());
            continue;
        }
        let agent = step.agent.as_deref().unwrap_or_default();
        if let Some((sum, n)) = averages.get(agent).filter(|(_, n)| *n > 0) {
            let n_f = f64::from(*n);
            total = total.plus(Amount {
                cost_usd: sum.cost_usd / n_f,
                tokens: sum.tokens / u64::from(*n),
            });
            sources.push(format!("{n} recent steps of {agent}"));
        } else {
            sources.push(format!("no past step of {agent}"));
        }
    }
    sources.dedup();
    (total, sources.join(", "))
}

/// Whether the run would wait for a spend limit now (the runner reserves; this only looks).
pub(crate) async fn shortfall(ctx: &Arc<RunContext>, plan: &SpendPlan) -> Result<Option<Shortfall>, LaunchError> {
    let (context, plan) = (ctx.clone(), plan.clone());
    blocking_value(move || {
        let book = SpendBook::open(context.root.root())?;
        book.check(&context.run_id, &plan, context.os.clock.wall_ms(), &RealProcesses)
    })
    .await
    .unwrap_or_else(|| Err(std::io::Error::other("the check did not finish")))
    .map_err(|e| LaunchError::Spend(Arc::new(e)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use sublaunch_protocol::records::config::StepConfig;
    use sublaunch_protocol::records::usage::Usage;

    fn config(agents: &[&str]) -> RunnerConfig {
        let mut config: RunnerConfig = serde_json::from_value(serde_json::json!({
            "configVersion": 1, "id": "r", "steps": [], "resultPath": "/r.json", "cwd": "/",
            "asyncDir": "/a", "runnerProcessInstanceId": "i"
        }))
        .unwrap();
        config.steps = agents
            .iter()
            .map(|a| StepConfig {
                agent: Some((*a).to_owned()),
                ..StepConfig::default()
            })
            .collect();
        config
    }

    fn spent(agent: &str, cost: f64) -> LedgerEntry {
        LedgerEntry {
            agent: Some(agent.to_owned()),
            usage: Usage {
                input_tokens: 100,
                cost_usd: Some(cost),
                ..Usage::default()
            },
            ..LedgerEntry::default()
        }
    }

    #[test]
    fn the_estimate_is_the_budget_else_each_agents_average_step() {
        let recent = [spent("a", 1.0), spent("a", 3.0), spent("b", 0.5)];
        let (amount, from) = estimate(&config(&["a", "b", "c"]), &recent);
        assert_eq!(amount.cost_usd, 2.5);
        assert_eq!(amount.tokens, 200);
        assert_eq!(from, "2 recent steps of a, 1 recent steps of b, no past step of c");
        let mut budgeted = config(&["a"]);
        budgeted.usage_budget = Some(sublaunch_contract::UsageBudget {
            max_cost_usd: Some(0.25),
            ..Default::default()
        });
        assert_eq!(estimate(&budgeted, &recent).0.cost_usd, 0.25);
    }
}
