//! What the runner records about one step beyond the spec's minimum (S4, S11): typed fields of
//! a step's `status.json` entry ([`crate::records::status::StepStatus`]) and of its result
//! ([`crate::records::results::StepResult`]). A new step field is one field here (or on the record
//! that alone carries it) and its uses; readers take fields, never string keys.
//!
//! Every field is read leniently: a value of another shape (an older or foreign writer's) is
//! read as absent instead of making the whole document unreadable (W9).

use crate::records::usage::Usage;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

/// Reads an optional field, taking a value of another shape as absent.
pub(crate) fn lenient<'de, D: Deserializer<'de>, T: DeserializeOwned>(d: D) -> Result<Option<T>, D::Error> {
    Ok(Option::<Value>::deserialize(d)?.and_then(|value| serde_json::from_value(value).ok()))
}

/// How a step is named in messages, as progress, `status` and `logs` name it: `step 2
/// reviewer`, or `step 2.1 reviewer` for task 1 of the parallel group at step 2 (indexes from
/// zero, shown from one).
pub fn step_label(step_index: u32, task_index: Option<u32>, agent: &str) -> String {
    match task_index {
        Some(task) => format!("step {}.{} {agent}", step_index + 1, task + 1),
        None => format!("step {} {agent}", step_index + 1),
    }
}

/// The fields a step's status entry and its result both carry: where the step sits in the
/// run, how it was started, and what its agent reported.
#[serde_with_macros::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StepFacts {
    /// The workflow step (0-based) of a workflow run.
    #[serde(default, deserialize_with = "lenient")]
    pub step_index: Option<u32>,
    /// The task (0-based) inside a parallel step.
    #[serde(default, deserialize_with = "lenient")]
    pub task_index: Option<u32>,
    /// The adapter that started the agent (its id, e.g. `claude-code`).
    #[serde(default, deserialize_with = "lenient")]
    pub adapter: Option<String>,
    /// The model the agent said it used.
    #[serde(default, deserialize_with = "lenient")]
    pub reported_model: Option<String>,
    /// The tokens and cost the agent reported.
    #[serde(default, deserialize_with = "lenient")]
    pub usage: Option<Usage>,
    /// The agent's own conversation id (what `resume` continues).
    #[serde(default, deserialize_with = "lenient")]
    pub agent_session: Option<String>,
    /// The managed worktree the step ran in, as it was at the end.
    #[serde(default, deserialize_with = "lenient")]
    pub worktree: Option<WorktreeReport>,
    /// The budget the step crossed, when one stopped it.
    #[serde(default, deserialize_with = "lenient")]
    pub budget_exceeded: Option<BudgetExceeded>,
    /// The name later steps use for this step's output (`as`).
    #[serde(default, rename = "as", deserialize_with = "lenient")]
    pub output_name: Option<String>,
    /// The step's label in a workflow.
    #[serde(default, deserialize_with = "lenient")]
    pub label: Option<String>,
    /// The workflow phase the step belongs to.
    #[serde(default, deserialize_with = "lenient")]
    pub phase: Option<String>,
    /// The permissions the step ran with, from the runner configuration (rule G6).
    #[serde(default, deserialize_with = "lenient")]
    pub permissions: Option<crate::records::config::ResolvedPermissions>,
    /// The OS sandbox the agent ran in (absent: none).
    #[serde(default, deserialize_with = "lenient")]
    pub sandbox: Option<crate::records::sandbox::AppliedSandbox>,
    /// What the runner found when it kept the step's acceptance contract (G79).
    #[serde(default, deserialize_with = "lenient")]
    pub acceptance: Option<crate::records::acceptance::AcceptanceRecord>,
    /// Every attempt of the step that a provider's rate limit met, oldest first (U6).
    #[serde(default, deserialize_with = "lenient")]
    pub rate_limits: Option<Vec<RateLimitAttempt>>,
    /// Why the step did not complete, in one word (D1); absent when it completed.
    #[serde(default, deserialize_with = "lenient")]
    pub failure_kind: Option<crate::records::failure::FailureKind>,
    /// The output is what the agent produced before the step ended without its final answer
    /// (D2).
    #[serde(default, deserialize_with = "lenient")]
    pub output_partial: Option<bool>,
}

/// One attempt of a step that a provider's rate limit or overload met (`rateLimits[]`).
#[serde_with_macros::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct RateLimitAttempt {
    /// The attempt (1 = the first).
    pub attempt: u32,
    /// When it started (epoch ms).
    pub started_at: u64,
    /// When it ended (epoch ms).
    pub ended_at: u64,
    /// The provider.
    pub provider: Option<String>,
    /// The HTTP status (429 rate limited, 529 overloaded), when the agent's CLI said.
    pub status: Option<u16>,
    /// The wait the provider asked for, or the CLI chose honouring it.
    pub retry_after_ms: Option<u64>,
    /// What the CLI said.
    pub message: String,
    /// Whether the agent had done work (answered, called a tool) before the limit.
    pub worked: bool,
    /// Whether the step was run again after the provider's cooldown.
    pub retried: bool,
    /// The provider's cooldown after this attempt (epoch ms).
    pub cooldown_until: Option<u64>,
}

/// `worktree` of a step: the managed worktree (its path, branch and base), the step's
/// directory in it, and what the agent left there (commits, uncommitted changes).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct WorktreeReport {
    /// The worktree's directory.
    pub path: String,
    /// The step's directory in it.
    pub cwd: String,
    /// The worktree's branch.
    pub branch: String,
    /// The repository it belongs to.
    pub repository: String,
    /// The commit the worktree was made at.
    pub base_commit: String,
    /// The commit the step started at.
    pub start_commit: String,
    /// The commit checked out at the end.
    pub head_commit: Option<String>,
    /// The branch checked out at the end (`null`: detached).
    pub checked_out: Option<String>,
    /// Commits made since `startCommit`, oldest first (at most 500 listed).
    pub commits: Vec<CommitLine>,
    /// How many commits there are in all.
    pub commit_count: u64,
    /// What is changed and not committed.
    pub uncommitted: Uncommitted,
    /// Why some of this could not be read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
}

/// One commit of [`WorktreeReport::commits`].
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct CommitLine {
    /// Its id.
    pub sha: String,
    /// Its subject line.
    pub subject: String,
}

/// [`WorktreeReport::uncommitted`].
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Uncommitted {
    /// Tracked files with uncommitted changes.
    pub changed_files: u64,
    /// Lines added by those changes.
    pub insertions: u64,
    /// Lines removed by those changes.
    pub deletions: u64,
    /// Untracked files (not ignored).
    pub untracked_files: u64,
}

/// `budgetExceeded`: the limit a step crossed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BudgetExceeded {
    /// `step` (its own limit) or `run` (the run's, shared by its steps).
    pub scope: BudgetScope,
    /// The limit's setting: `usageBudget.maxTokens`, `usageBudget.maxCostUsd` or `toolBudget`.
    pub limit: String,
    /// The limit.
    pub allowed: f64,
    /// What was used when it was noticed.
    pub used: f64,
}

/// [`BudgetExceeded::scope`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BudgetScope {
    /// The step's own limit.
    Step,
    /// The run's, shared by all its steps.
    Run,
}

/// `externalProcess` of a step's status entry: the agent's process, written when it starts
/// (pid, start, start identity) and replaced when it ends (how it ended).
#[serde_with_macros::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExternalProcess {
    /// The agent's pid (its process group's id too).
    pub pid: u32,
    /// Wall ms of its start.
    pub started_at: Option<u64>,
    /// Its start identity (`linux:<ticks>`, X3), written at the start, so whoever finds the
    /// runner dead ends the agent's group without signalling a process that reused the pid.
    #[serde(default, deserialize_with = "lenient")]
    pub start_identity: Option<String>,
    /// G43: what ends its whole process tree with the runner: `pid-namespace` (a PID
    /// namespace of its own) or `process-group` (the kernel refused one: supervision by
    /// process group only). Absent in records of older runners.
    #[serde(default, deserialize_with = "lenient")]
    pub containment: Option<String>,
    /// Why it got no PID namespace (the kernel's refusal), when it did not.
    #[serde(default, deserialize_with = "lenient")]
    pub containment_note: Option<String>,
    /// How it ended; absent while it runs.
    #[serde(flatten)]
    pub end: Option<ProcessEnd>,
    /// Fields of other writers (a peer's log paths …).
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// How an agent's process ended ([`ExternalProcess::end`]).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProcessEnd {
    /// Wall ms of its end.
    pub ended_at: u64,
    /// Monotonic duration in ms.
    pub duration_ms: u64,
    /// Its exit code (`null`: ended by a signal or never reaped).
    pub exit_code: Option<i32>,
    /// The signal that ended it.
    pub process_signal: Option<String>,
    /// Bytes it wrote on stdout.
    pub stdout_bytes: u64,
    /// Bytes it wrote on stderr.
    pub stderr_bytes: u64,
}

/// `machine` of a step result: where a remote step ran.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct MachineRecord {
    /// The machine's catalog id.
    pub id: String,
    /// The ssh target.
    pub target: String,
    /// The working directory on the machine.
    pub cwd: String,
}

/// `remoteGit` of a step result: the remote checkout after the step.
#[serde_with_macros::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct RemoteGit {
    /// The commit checked out.
    pub head: Option<String>,
    /// The branch checked out.
    pub branch: Option<String>,
    /// Whether there were uncommitted changes.
    pub dirty: Option<bool>,
}

/// One element of `status.parallelGroups`: a parallel step of a workflow.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ParallelGroup {
    /// The workflow step.
    pub step_index: Option<u32>,
    /// Its first entry in `steps`.
    pub start: usize,
    /// How many tasks it runs.
    pub count: usize,
    /// How many run at once.
    pub concurrency: usize,
    /// Whether one task's failure stops the others.
    pub fail_fast: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::results::StepResult;
    use crate::records::status::StepStatus;
    use serde_json::json;

    /// S4/S11: the typed fields are written under the keys the runner always wrote, and read
    /// back into the same fields.
    #[test]
    fn s11_step_fields_keep_their_keys_and_round_trip() {
        let result = StepResult {
            agent: "a".into(),
            skipped: Some(true),
            output_file: Some("/o".into()),
            facts: StepFacts {
                step_index: Some(1),
                task_index: Some(0),
                adapter: Some("shell".into()),
                output_name: Some("plan".into()),
                budget_exceeded: Some(BudgetExceeded {
                    scope: BudgetScope::Run,
                    limit: "toolBudget".into(),
                    allowed: 2.0,
                    used: 3.0,
                }),
                ..StepFacts::default()
            },
            ..StepResult::default()
        };
        let value = serde_json::to_value(&result).unwrap();
        assert_eq!(value["stepIndex"], 1);
        assert_eq!(value["taskIndex"], 0);
        assert_eq!(value["adapter"], "shell");
        assert_eq!(value["as"], "plan");
        assert_eq!(value["skipped"], true);
        assert_eq!(value["outputFile"], "/o");
        assert_eq!(
            value["budgetExceeded"],
            json!({"scope": "run", "limit": "toolBudget", "allowed": 2.0, "used": 3.0})
        );
        assert!(value.get("usage").is_none() && value.get("structuredErrors").is_none());
        let back: StepResult = serde_json::from_value(value).unwrap();
        assert_eq!(back, result);
        assert!(back.extra.is_empty(), "no typed field lands in extra: {:?}", back.extra);
    }

    /// W9: a field of another shape is read as absent, never makes the entry unreadable, and a
    /// foreign writer's fields stay where they were.
    #[test]
    fn w9_odd_values_are_absent_and_foreign_fields_stay() {
        let step: StepStatus = serde_json::from_value(json!({
            "agent": "a",
            "usage": "lots",
            "stepIndex": -1,
            "externalProcess": {"pid": 7, "startedAt": 1, "stdoutPath": "/x"},
            "runner": {"type": "external-cli"},
        }))
        .unwrap();
        assert_eq!(step.facts.usage, None);
        assert_eq!(step.facts.step_index, None);
        let process = step.external_process.clone().unwrap();
        assert_eq!((process.pid, process.end), (7, None));
        assert_eq!(process.extra["stdoutPath"], "/x");
        assert_eq!(step.extra["runner"]["type"], "external-cli");
        let written = serde_json::to_value(&step).unwrap();
        assert_eq!(
            written["externalProcess"],
            json!({"pid": 7, "startedAt": 1, "stdoutPath": "/x"})
        );
    }

    /// The end of an agent's process writes its exit fields, `null` included, as it always did.
    #[test]
    fn s4_an_ended_process_writes_every_exit_field() {
        let process = ExternalProcess {
            pid: 9,
            started_at: Some(1),
            end: Some(ProcessEnd {
                ended_at: 2,
                duration_ms: 1,
                exit_code: None,
                process_signal: Some("SIGKILL".into()),
                stdout_bytes: 3,
                stderr_bytes: 4,
            }),
            ..ExternalProcess::default()
        };
        assert_eq!(
            serde_json::to_value(&process).unwrap(),
            json!({"pid": 9, "startedAt": 1, "endedAt": 2, "durationMs": 1, "exitCode": null,
                   "processSignal": "SIGKILL", "stdoutBytes": 3, "stderrBytes": 4})
        );
    }
}
