//! What a child may spend and when it is asked to wrap up: its usage budget (tokens and
//! money), its tool budget (tool calls), the run's usage budget and the checkpoint before the
//! run's deadline. The planner checks the numbers and that the agent reports what a limit
//! counts (a budget nothing can measure is refused, not ignored); the runner does the
//! counting.

use crate::children::Child;
use crate::runner::adapter;
use crate::step_io::invalid;
use sublaunch_contract::{AdapterId, Agent, ErrorCode, LaunchOptions, PlanError, PlanStep, Reports, UsageBudget};

/// What `agent`'s output tells the runner as it goes (nothing for a runner type the planner
/// does not know).
fn reports(agent: &Agent) -> Reports {
    adapter(agent).map_or(Reports::NOTHING, AdapterId::reports)
}

/// The name an agent's runner goes by in messages.
fn runs_as(agent: &Agent) -> String {
    match adapter(agent) {
        Some(AdapterId::Pi) => "pi".to_owned(),
        Some(AdapterId::Command) => "a command runner".to_owned(),
        Some(AdapterId::GenericCli) => "an external command".to_owned(),
        Some(other) => format!("adapter {other}"),
        None => "an unknown runner".to_owned(),
    }
}

fn unsupported(agent: &Agent, child: &Child<'_>, what: &str) -> PlanError {
    PlanError::new(
        ErrorCode::RunnerOptionUnsupported,
        format!(
            "Agent '{}' ({}, {}) {what}.",
            agent.name,
            child.position.describe(),
            runs_as(agent)
        ),
    )
}

/// A child's limits.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ChildBudgets {
    /// Its usage budget.
    pub usage: Option<UsageBudget>,
    /// Its tool budget.
    pub tool_calls: Option<u32>,
}

/// The child's budgets: its own (or its group's), else its agent's; refused when the agent
/// does not report what a limit counts.
pub fn plan(child: &Child<'_>, agent: &Agent) -> Result<ChildBudgets, PlanError> {
    let can = reports(agent);
    let usage = match &child.fields.usage_budget {
        Some(given) => Some((given.value, child.inherited_path("usageBudget", given))),
        None => agent
            .usage_budget
            .as_ref()
            .map(|b| (b, format!("agents[{}].usageBudget", agent.name))),
    };
    if let Some((budget, path)) = &usage {
        check_usage(path, budget)?;
        check_kept(child, agent, budget, path)?;
    }
    let tool_calls = match child.fields.tool_budget {
        Some(given) => Some((given.value, child.inherited_path("toolBudget", &given))),
        None => agent
            .tool_budget
            .map(|n| (n, format!("agents[{}].toolBudget", agent.name))),
    };
    if let Some((_, path)) = &tool_calls
        && !can.tool_calls
    {
        return Err(unsupported(
            agent,
            child,
            &format!("reports no tool calls, so {path} cannot be kept"),
        ));
    }
    Ok(ChildBudgets {
        usage: usage.map(|(b, _)| b.clone()),
        tool_calls: tool_calls.map(|(n, _)| n),
    })
}

/// Refuses a limit of `budget` (given at `path`) that `agent` does not report.
fn check_kept(child: &Child<'_>, agent: &Agent, budget: &UsageBudget, path: &str) -> Result<(), PlanError> {
    let can = reports(agent);
    if budget.max_tokens.is_some() && !can.tokens {
        return Err(unsupported(
            agent,
            child,
            &format!("reports no token usage, so {path}.maxTokens cannot be kept"),
        ));
    }
    if budget.max_cost_usd.is_some() && !can.cost {
        let but = if can.tokens { " (maxTokens can)" } else { "" };
        return Err(unsupported(
            agent,
            child,
            &format!("reports no cost, so {path}.maxCostUsd cannot be kept{but}"),
        ));
    }
    Ok(())
}

/// A usage budget names at least one limit, each above zero.
fn check_usage(path: &str, budget: &UsageBudget) -> Result<(), PlanError> {
    if budget.max_tokens.is_none() && budget.max_cost_usd.is_none() {
        return Err(invalid(path, "a usage budget names maxTokens, maxCostUsd or both."));
    }
    if budget.max_tokens == Some(0) {
        return Err(invalid(&format!("{path}.maxTokens"), "must be at least 1."));
    }
    if let Some(cost) = budget.max_cost_usd
        && !(cost.is_finite() && cost > 0.0)
    {
        return Err(invalid(
            &format!("{path}.maxCostUsd"),
            format!("must be a number of dollars above 0, got {cost}."),
        ));
    }
    Ok(())
}

/// The run's usage budget (every child must report what it counts) and the checkpoint (every
/// child must take input while it runs, and run on this machine).
pub fn plan_run(
    launch: Option<&LaunchOptions>,
    children: &[Child<'_>],
    agents: &[&Agent],
    planned: &[PlanStep],
) -> Result<Option<UsageBudget>, PlanError> {
    let Some(launch) = launch else { return Ok(None) };
    if let Some(budget) = &launch.usage_budget {
        let path = "launch.usageBudget";
        check_usage(path, budget)?;
        for (child, agent) in children.iter().zip(agents) {
            check_kept(child, agent, budget, &format!("the run's {path}"))?;
        }
    }
    if let Some(ms) = launch.checkpoint_before_deadline_ms {
        let path = "launch.checkpointBeforeDeadlineMs";
        if ms == 0 {
            return Err(invalid(path, "must be at least 1."));
        }
        for ((child, agent), planned) in children.iter().zip(agents).zip(planned) {
            if !adapter(agent).is_some_and(AdapterId::takes_input) {
                return Err(unsupported(
                    agent,
                    child,
                    &format!(
                        "takes no input while it runs, so it cannot be asked to wrap up ({path}); only pi and Claude Code can"
                    ),
                ));
            }
            if planned.machine.is_some() {
                return Err(unsupported(
                    agent,
                    child,
                    &format!("runs on a saved machine, where it cannot be asked to wrap up ({path})"),
                ));
            }
        }
    }
    Ok(launch.usage_budget.clone())
}
