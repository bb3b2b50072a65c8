//! A run as listers show it: one typed view for `sublaunch list --json`, `sublaunch status`
//! and the MCP server's `list` and `status` tools, so they cannot drift apart.

use serde::Serialize;
use serde_json::Value;
use std::path::PathBuf;
use sublaunch_protocol::files::dir::Dir;
use sublaunch_protocol::records::cluster::ClusterJob;
use sublaunch_protocol::records::failure::FailureKind;
use sublaunch_protocol::records::status::{RunState, Status};
use sublaunch_protocol::records::usage::Usage;
use sublaunch_protocol::records::waiting::Waiting;

/// One run: its id and directory, what its status says (when it has one that can be read),
/// and what a caller adds (its place in the capacity queue, its answer).
///
/// Its JSON is an object with camelCase keys; a run without a readable status has only
/// `runId`, `runDir` and `state: null`.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RunView {
    /// The run id.
    pub run_id: String,
    /// The run's directory.
    pub run_dir: PathBuf,
    /// The state (`unknown` for a status without one); `None` without a status.
    pub state: Option<String>,
    /// What the status says; absent without a status.
    #[serde(flatten)]
    pub status: Option<StatusView>,
    /// The place of a queued run in the capacity queue (1 = next), when asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue_position: Option<usize>,
    /// J7: why a run queued on a cluster waits, as its engine says (`Priority`,
    /// `Resources`, …), when asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue_reason: Option<String>,
    /// What an active run (or its next step) waits for: a provider's rate-limit cooldown,
    /// room under a spend limit (U10).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub waiting: Option<Waiting>,
    /// An ended run's answer ([`super::answer_json`]), when asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
}

/// What an active run waits for, from `<run>/waiting.json` (an ended run's is stale: a runner
/// killed while it waited leaves it behind).
pub fn active_wait(run: &Dir, status: &Status) -> Option<Waiting> {
    if !status.state.as_ref().is_some_and(RunState::is_active) {
        return None;
    }
    Waiting::read(run).ok().flatten()
}

/// The fields of a run's view read from its status.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StatusView {
    /// The agent of each step, in order.
    pub agents: Vec<String>,
    /// The shim's pid.
    pub pid: Option<u32>,
    /// Wall ms.
    pub started_at: Option<u64>,
    /// Wall ms.
    pub ended_at: Option<u64>,
    /// The failure text.
    pub error: Option<String>,
    /// Why the run did not complete, in one word (D1).
    pub failure_kind: Option<FailureKind>,
    /// The state of the process-terminal proof (`pending`, `observed`, `unknown`).
    pub process_terminal: Option<Value>,
    /// The tokens and cost the run's agents reported.
    pub usage: Option<Usage>,
    /// J6: the cluster job the run was handed to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cluster: Option<ClusterJob>,
}

impl RunView {
    /// The engine's reason the run's cluster job waits, from `reasons` by job id.
    pub fn with_queue_reason(mut self, reasons: &std::collections::BTreeMap<String, String>) -> Self {
        let queued = self.state.as_deref() == Some("queued");
        let job = self.status.as_ref().and_then(|s| s.cluster.as_ref());
        self.queue_reason = job.filter(|_| queued).and_then(|job| reasons.get(&job.job_id).cloned());
        self
    }

    /// The view of run `run_id` in `run`, from its status (`None`: none could be read).
    pub fn new(run_id: &str, run: &Dir, status: Option<&Status>) -> Self {
        Self {
            run_id: run_id.to_owned(),
            run_dir: run.path().to_owned(),
            state: status.map(|s| s.state.as_ref().map_or("unknown", RunState::as_str).to_owned()),
            status: status.map(StatusView::new),
            queue_position: None,
            queue_reason: None,
            waiting: status.and_then(|s| active_wait(run, s)),
            result: None,
        }
    }

    /// The view as a JSON value, keys sorted as every JSON object sublaunch prints.
    pub fn to_json(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

impl StatusView {
    /// What `status` says of the run.
    pub fn new(status: &Status) -> Self {
        Self {
            agents: status.steps.iter().flatten().filter_map(|s| s.agent.clone()).collect(),
            pid: status.pid,
            started_at: status.started_at,
            ended_at: status.ended_at,
            error: status.error.clone(),
            failure_kind: status.failure_kind,
            process_terminal: status.process_terminal.as_ref().and_then(|p| p.get("state")).cloned(),
            usage: status.usage(),
            cluster: status.cluster.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use sublaunch_protocol::records::status::StepStatus;

    /// The keys and nulls `list --json` printed before the view existed, byte for byte.
    #[test]
    fn the_view_prints_what_list_printed() {
        let tmp = tempfile::tempdir().unwrap();
        let run = Dir::open(tmp.path()).unwrap();
        let path = tmp.path().to_str().unwrap();
        assert_eq!(
            serde_json::to_string(&RunView::new("r1", &run, None).to_json()).unwrap(),
            serde_json::to_string(&json!({"runId": "r1", "runDir": path, "state": null})).unwrap()
        );
        let status = Status {
            state: Some(RunState::Failed),
            pid: Some(42),
            started_at: Some(1),
            error: Some("boom".into()),
            failure_kind: Some(FailureKind::AgentError),
            steps: Some(vec![StepStatus {
                agent: Some("scout".into()),
                ..StepStatus::default()
            }]),
            process_terminal: Some(json!({"state": "observed", "exitCode": 1})),
            ..Status::default()
        };
        let mut view = RunView::new("r2", &run, Some(&status));
        view.queue_position = Some(2);
        let expected = json!({
            "runId": "r2",
            "runDir": path,
            "state": "failed",
            "agents": ["scout"],
            "pid": 42,
            "startedAt": 1,
            "endedAt": null,
            "error": "boom",
            "failureKind": "agent-error",
            "processTerminal": "observed",
            "usage": null,
            "queuePosition": 2,
        });
        assert_eq!(
            serde_json::to_string_pretty(&view.to_json()).unwrap(),
            serde_json::to_string_pretty(&expected).unwrap()
        );
    }
}
