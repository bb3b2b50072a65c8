//! How a child is run again (`retry`, rule U6): how many times the runner runs it again when
//! the provider's rate limit refused it before it did any work. The child's own number, else
//! its group's, else its agent's; absent everywhere, the runner's default applies. The planner
//! checks the number; the runner recognises the refusal and counts the attempts.

use crate::children::Child;
use crate::step_io::invalid;
use sublaunch_contract::retry::MAX_RATE_LIMIT_RETRIES;
use sublaunch_contract::{Agent, PlanError, RetryPolicy};

/// The child's retry policy, or `None` when no source sets a part of it; a number above
/// [`MAX_RATE_LIMIT_RETRIES`] is refused at the path of the source that gave it.
pub fn plan(child: &Child<'_>, agent: &Agent) -> Result<Option<RetryPolicy>, PlanError> {
    let rate_limit = match child.fields.rate_limit_retries {
        Some(given) => Some((given.value, child.inherited_path("retry.rateLimit", &given))),
        None => agent
            .retry
            .as_ref()
            .and_then(|r| r.rate_limit)
            .map(|n| (n, format!("agents[{}].retry.rateLimit", agent.name))),
    };
    if let Some((n, path)) = &rate_limit
        && *n > MAX_RATE_LIMIT_RETRIES
    {
        return Err(invalid(
            path,
            format!("a step runs again at most {MAX_RATE_LIMIT_RETRIES} times after a rate limit, got {n}."),
        ));
    }
    Ok(rate_limit.map(|(n, _)| RetryPolicy { rate_limit: Some(n) }))
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};
    use sublaunch_contract::{ErrorCode, LaunchPlan, PlanError, RetryPolicy};

    fn plan(steps: Value, agent: Value) -> Result<LaunchPlan, PlanError> {
        let request = json!({"cwd": "/w", "mode": "chain", "agents": [agent], "steps": steps});
        crate::plan(&sublaunch_contract::parse_request(request.to_string().as_bytes())?)
    }

    fn rate_limits(plan: &LaunchPlan) -> Vec<Option<u32>> {
        plan.steps
            .iter()
            .map(|s| s.retry.as_ref().and_then(|r| r.rate_limit))
            .collect()
    }

    /// U6: a step's own number reaches its plan step (0 included); a group's is each of its
    /// tasks' unless the task has one (a task's `retry: {}` keeps the group's); the agent's
    /// applies where neither does; none anywhere leaves the runner's default.
    #[test]
    fn u6_retry_rate_limit_is_a_steps_own_else_its_groups_else_its_agents() {
        let steps = json!([
            {"agent": "a", "task": "one", "retry": {"rateLimit": 0}},
            {"parallel": [
                {"agent": "a", "task": "two"},
                {"agent": "a", "task": "three", "retry": {"rateLimit": 5}},
                {"agent": "a", "task": "four", "retry": {}},
            ], "retry": {"rateLimit": 3}},
            {"agent": "a", "task": "five"},
        ]);
        let planned = plan(steps.clone(), json!({"name": "a"})).unwrap();
        assert_eq!(rate_limits(&planned), [Some(0), Some(3), Some(5), Some(3), None]);
        assert_eq!(planned.steps[0].retry, Some(RetryPolicy { rate_limit: Some(0) }));
        let with_agent = plan(steps, json!({"name": "a", "retry": {"rateLimit": 7}})).unwrap();
        assert_eq!(rate_limits(&with_agent), [Some(0), Some(3), Some(5), Some(3), Some(7)]);
    }

    /// U6: more than 20 is refused as an invalid request naming the JSON path of the source
    /// that gave it: the step's, the group's (for its tasks) or the agent's.
    #[test]
    fn u6_more_than_20_rate_limit_retries_are_refused_at_their_path() {
        let agent = json!({"name": "a"});
        let ok = json!([{"agent": "a", "task": "t"}, {"agent": "a", "task": "u", "retry": {"rateLimit": 20}}]);
        assert!(plan(ok, agent.clone()).is_ok());
        let cases = [
            (
                json!([{"agent": "a", "task": "t"}, {"agent": "a", "task": "u", "retry": {"rateLimit": 21}}]),
                agent.clone(),
                "Invalid request at steps[1].retry.rateLimit: ",
            ),
            (
                json!([{"parallel": [{"agent": "a", "task": "t"}], "retry": {"rateLimit": 21}}]),
                agent.clone(),
                "Invalid request at steps[0].retry.rateLimit: ",
            ),
            (
                json!([{"parallel": [{"agent": "a", "task": "t", "retry": {"rateLimit": 21}}]}]),
                agent.clone(),
                "Invalid request at steps[0].parallel[0].retry.rateLimit: ",
            ),
            (
                json!([{"agent": "a", "task": "t"}]),
                json!({"name": "a", "retry": {"rateLimit": 21}}),
                "Invalid request at agents[a].retry.rateLimit: ",
            ),
        ];
        for (steps, agent, expected) in cases {
            let error = plan(steps, agent).unwrap_err();
            assert_eq!(error.code, ErrorCode::InvalidRequest);
            assert!(
                error.message.starts_with(expected)
                    && error.message.contains("at most 20 times")
                    && error.message.contains("got 21"),
                "{}",
                error.message
            );
        }
        let error = plan(json!([{"agent": "a", "task": "t", "retry": {"rateLimits": 1}}]), agent).unwrap_err();
        assert!(
            error.message.contains("steps[0].retry") && error.message.contains("unknown field `rateLimits`"),
            "{}",
            error.message
        );
    }
}
