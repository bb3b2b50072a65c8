//! The budgets of the running agents: each agent's step budget and the run's, checked as their
//! output moves the counters and once more against an agent's last word; and the dollars a
//! Claude Code step may still spend.

use super::Supervisor;
use crate::adapter;
use crate::context::Ctx;
use crate::step::budget;
use crate::step::child::ChildRun;

impl Supervisor {
    /// Marks every agent that crossed its step's budget, and every running agent when the
    /// run's agents together crossed the run's; [`Self::advance`] then stops them.
    pub(super) fn check_budgets(&self, ctx: &Ctx, running: &mut [ChildRun]) {
        let run_budget = ctx.cfg.usage_budget.as_ref();
        let limited = |c: &ChildRun| {
            let step = &ctx.cfg.steps[c.index];
            step.usage_budget.is_some() || step.tool_budget.is_some()
        };
        // Most runs have no budget: their agents' counters are not even read.
        if run_budget.is_none() && !running.iter().any(limited) {
            return;
        }
        let mut run_usage = run_budget.map(|_| self.run_spent.clone());
        for child in running.iter_mut() {
            let spent = &child.spent;
            if let (Some(total), Some(usage)) = (run_usage.as_mut(), &spent.usage) {
                total.add(usage);
            }
            if child.budget.is_none() {
                let step = &ctx.cfg.steps[child.index];
                child.budget =
                    budget::crossed(budget::Scope::Step, step.usage_budget.as_ref(), step.tool_budget, spent);
            }
        }
        let run_spent = adapter::Spent {
            usage: run_usage,
            tool_calls: 0,
            ..adapter::Spent::default()
        };
        if let Some(exceeded) = budget::crossed(budget::Scope::Run, run_budget, None, &run_spent) {
            for child in running
                .iter_mut()
                .filter(|c| c.budget.is_none() && c.exit_seen.is_none())
            {
                child.budget = Some(exceeded.clone());
            }
        }
    }

    /// The dollars a Claude Code step may still spend: its own budget, or what is left of the
    /// run's, whichever is less.
    pub(super) fn cost_cap(&self, ctx: &Ctx, step: &sublaunch_protocol::records::config::StepConfig) -> Option<f64> {
        let own = step.usage_budget.as_ref().and_then(|b| b.max_cost_usd);
        let left = ctx
            .cfg
            .usage_budget
            .as_ref()
            .and_then(|b| b.max_cost_usd)
            .map(|max| (max - self.run_spent.cost_usd.unwrap_or(0.0)).max(0.0));
        match (own, left) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The budgets against the agent's last word (Claude Code's result has the exact
    /// figures; Codex reports its usage only as its turn ends).
    pub(super) fn final_budget_check(
        &self,
        ctx: &Ctx,
        index: usize,
        extracted: &adapter::Extracted,
        spent: &adapter::Spent,
    ) -> Option<budget::Exceeded> {
        let step = &ctx.cfg.steps[index];
        let last = adapter::Spent {
            usage: extracted.usage.clone(),
            tool_calls: spent.tool_calls,
            ..adapter::Spent::default()
        };
        budget::crossed(budget::Scope::Step, step.usage_budget.as_ref(), step.tool_budget, &last).or_else(|| {
            let mut total = self.run_spent.clone();
            total.add(extracted.usage.as_ref()?);
            let run = adapter::Spent {
                usage: Some(total),
                tool_calls: 0,
                ..adapter::Spent::default()
            };
            budget::crossed(budget::Scope::Run, ctx.cfg.usage_budget.as_ref(), None, &run)
        })
    }
}
