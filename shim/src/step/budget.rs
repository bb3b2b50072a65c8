//! Budgets: what a step (`usageBudget`, `toolBudget`) and the whole run (`usageBudget`) may
//! spend, checked each time the agents' output moved their counters. An agent that crosses a
//! limit is stopped with the stop ladder and its step fails, saying which limit and by how
//! much; the record keeps the same facts as `budgetExceeded`.

use crate::adapter::Spent;
use sublaunch_protocol::records::config::UsageBudget;
use sublaunch_protocol::records::step_record::{BudgetExceeded, BudgetScope};
use sublaunch_protocol::records::usage::{Usage, usd};

/// Whose limit was crossed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// The step's own.
    Step,
    /// The run's, shared by all its steps.
    Run,
}

/// Which limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Limit {
    /// `usageBudget.maxTokens`.
    Tokens,
    /// `usageBudget.maxCostUsd`.
    Cost,
    /// `toolBudget`.
    ToolCalls,
}

/// A crossed limit: what was allowed and what was used.
#[derive(Clone, Debug, PartialEq)]
pub struct Exceeded {
    /// Whose limit.
    pub scope: Scope,
    /// Which limit.
    pub limit: Limit,
    /// The limit.
    pub allowed: f64,
    /// What was used when it was noticed.
    pub used: f64,
}

/// The tokens a budget counts: input (cache writes included) and output; tokens read from
/// the prompt cache are not counted.
pub fn budget_tokens(usage: &Usage) -> u64 {
    usage
        .input_tokens
        .saturating_add(usage.cache_write_tokens)
        .saturating_add(usage.output_tokens)
}

impl Exceeded {
    /// The JSON field the limit was given in.
    pub fn field(&self) -> &'static str {
        match self.limit {
            Limit::Tokens => "usageBudget.maxTokens",
            Limit::Cost => "usageBudget.maxCostUsd",
            Limit::ToolCalls => "toolBudget",
        }
    }

    /// How a person names the limit: the `run` flag for the run's token and cost limits
    /// (a chain file's `usageBudget` sets the same), the agent file's or chain step's field for
    /// a step's own.
    fn setting(&self) -> &'static str {
        match (self.scope, self.limit) {
            (Scope::Run, Limit::Tokens) => "--max-tokens",
            (Scope::Run, Limit::Cost) => "--max-cost",
            (_, Limit::Tokens) => "the step's usageBudget.maxTokens",
            (_, Limit::Cost) => "the step's usageBudget.maxCostUsd",
            (_, Limit::ToolCalls) => "the step's toolBudget",
        }
    }

    /// The step's failure text: `… spent $0.0001, more than --max-cost $0.00001 …`.
    pub fn message(&self) -> String {
        let who = match self.scope {
            Scope::Step => "the agent",
            Scope::Run => "the run's agents",
        };
        let setting = self.setting();
        match self.limit {
            Limit::Tokens => format!(
                "Usage budget exceeded: {who} used {} input and output tokens, more than {setting} {}; the agent was stopped.",
                self.used, self.allowed
            ),
            Limit::Cost => format!(
                "Usage budget exceeded: {who} spent {}, more than {setting} {}; the agent was stopped.",
                usd(self.used),
                usd(self.allowed)
            ),
            Limit::ToolCalls => format!(
                "Tool budget exceeded: the agent started tool call {}, more than {setting} {}; the agent was stopped.",
                self.used, self.allowed
            ),
        }
    }

    /// `budgetExceeded` of the status and the result.
    pub fn record(&self) -> BudgetExceeded {
        BudgetExceeded {
            scope: match self.scope {
                Scope::Step => BudgetScope::Step,
                Scope::Run => BudgetScope::Run,
            },
            limit: self.field().to_owned(),
            allowed: self.allowed,
            used: self.used,
        }
    }
}

/// The first limit of `usage_budget` or `tool_budget` that `spent` crossed (strictly more
/// than allowed).
pub fn crossed(
    scope: Scope,
    usage_budget: Option<&UsageBudget>,
    tool_budget: Option<u32>,
    spent: &Spent,
) -> Option<Exceeded> {
    let exceeded = |limit, allowed: f64, used: f64| {
        (used > allowed).then_some(Exceeded {
            scope,
            limit,
            allowed,
            used,
        })
    };
    let usage = spent.usage.as_ref();
    let tokens = usage_budget
        .and_then(|b| b.max_tokens)
        .zip(usage)
        .and_then(|(max, u)| exceeded(Limit::Tokens, max as f64, budget_tokens(u) as f64));
    let cost = || {
        usage_budget
            .and_then(|b| b.max_cost_usd)
            .zip(usage.and_then(|u| u.cost_usd))
            .and_then(|(max, used)| exceeded(Limit::Cost, max, used))
    };
    let tools = || tool_budget.and_then(|max| exceeded(Limit::ToolCalls, f64::from(max), spent.tool_calls as f64));
    tokens.or_else(cost).or_else(tools)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spent(input: u64, output: u64, cache_read: u64, cost: Option<f64>, tools: u64) -> Spent {
        Spent {
            usage: Some(Usage {
                input_tokens: input,
                output_tokens: output,
                cache_read_tokens: cache_read,
                cache_write_tokens: 0,
                cost_usd: cost,
            }),
            tool_calls: tools,
            ..Spent::default()
        }
    }

    #[test]
    fn limits_are_crossed_only_by_more_than_allowed() {
        let budget = UsageBudget {
            max_tokens: Some(100),
            max_cost_usd: Some(0.5),
        };
        assert_eq!(
            crossed(
                Scope::Step,
                Some(&budget),
                Some(2),
                &spent(60, 40, 10_000, Some(0.5), 2)
            ),
            None
        );
        let tokens = crossed(Scope::Step, Some(&budget), None, &spent(61, 40, 0, None, 0)).unwrap();
        assert_eq!(
            (tokens.limit, tokens.used, tokens.allowed),
            (Limit::Tokens, 101.0, 100.0)
        );
        let cost = crossed(Scope::Run, Some(&budget), None, &spent(1, 1, 0, Some(0.51), 0)).unwrap();
        assert_eq!(cost.limit, Limit::Cost);
        assert!(
            cost.message().contains("spent $0.51, more than --max-cost $0.50;"),
            "{}",
            cost.message()
        );
        let tools = crossed(Scope::Step, None, Some(2), &spent(0, 0, 0, None, 3)).unwrap();
        assert_eq!(tools.record().limit, "toolBudget");
        assert_eq!(
            crossed(Scope::Step, None, None, &spent(u64::MAX, 1, 0, Some(9.0), 99)),
            None
        );
    }
}
