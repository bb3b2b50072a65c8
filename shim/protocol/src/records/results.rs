//! Result files (S11): the payload written by the shim after the terminal status, published as
//! a pending copy under `result-pending/<enc(sid)>/`, index entries under `result-index/`, then
//! promoted onto the public `<results>/<runId>.json` by rename (never delete-then-write).
//!
//! A session's pending directory stays once its copy is promoted, like its index directory:
//! removing it after each run and making it again for the next made and freed one directory
//! per run (an inode and a block; costly where the filesystem scans recently freed inodes).
//! The creation is still retried on `ENOENT`, for a directory removed by hand or by an older
//! version.

use crate::errors::{has_errno, os_error};
use crate::files::dir::Dir;
use crate::files::durability::{DocKind, DurabilityPolicy};
use crate::files::layout::{enc, names};
use crate::records::index::retry_enoent;
use crate::records::step_record::{MachineRecord, RemoteGit, StepFacts};
use crate::records::usage::Usage;
use rustix::io::Errno;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::fmt;
use std::io;
use std::path::Path;

/// `outputState` of a step result.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OutputState {
    /// The step produced output.
    Present,
    /// No output.
    #[default]
    Absent,
}

/// `results[].protocolError` (R11).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProtocolError {
    /// e.g. `protocol_output_limit`.
    pub code: String,
    /// `stdout` / `stderr`.
    pub stream: String,
    /// The message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Fields of other writers.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// One element of `results[]`.
#[serde_with_macros::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StepResult {
    /// Agent name.
    pub agent: String,
    /// The step's output text.
    pub output: String,
    /// Whether there was output.
    pub output_state: OutputState,
    /// Failure text.
    pub error: Option<String>,
    /// Protocol failure.
    pub protocol_error: Option<ProtocolError>,
    /// Success.
    pub success: bool,
    /// The agent's exit code.
    pub exit_code: Option<i64>,
    /// The signal that ended the agent.
    pub process_signal: Option<String>,
    /// Timed out.
    pub timed_out: Option<bool>,
    /// Stopped.
    pub stopped: Option<bool>,
    /// The structured output, when the step had an output schema and the output met it.
    pub structured: Option<Value>,
    /// Why the output did not meet the step's schema.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub structured_errors: Vec<Value>,
    /// Whether the output was cut at the output limit.
    pub output_truncated: Option<bool>,
    /// The usage of the agent's whole conversation so far (a resumed one included).
    #[serde(default, deserialize_with = "crate::records::step_record::lenient")]
    pub agent_session_usage: Option<Usage>,
    /// Whether the step never ran (the run ended before it).
    pub skipped: Option<bool>,
    /// Where a remote step ran.
    #[serde(default, deserialize_with = "crate::records::step_record::lenient")]
    pub machine: Option<MachineRecord>,
    /// The remote checkout after a remote step.
    #[serde(default, deserialize_with = "crate::records::step_record::lenient")]
    pub remote_git: Option<RemoteGit>,
    /// The file the step's output was also written to.
    pub output_file: Option<String>,
    /// G43: what ended the agent's process tree with the runner: `pid-namespace` or
    /// `process-group` (absent for a step that never started, and from older runners).
    #[serde(default, deserialize_with = "crate::records::step_record::lenient")]
    pub containment: Option<String>,
    /// What the runner records about the step beside the spec's fields.
    #[serde(flatten)]
    pub facts: StepFacts,
    /// Fields of other writers / adapters.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The result payload (S11 minimum plus preserved extras).
#[serde_with_macros::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResultPayload {
    /// Always 3.
    pub lifecycle_artifact_version: u32,
    /// Run id.
    pub id: String,
    /// Agent (first step).
    pub agent: String,
    /// Mode.
    pub mode: String,
    /// Overall success.
    pub success: bool,
    /// Terminal state.
    pub state: String,
    /// Human summary.
    pub summary: String,
    /// Per-step results.
    pub results: Vec<StepResult>,
    /// 0 on success, else 1.
    pub exit_code: i32,
    /// Wall ms (the run's `endedAt`).
    pub timestamp: u64,
    /// Duration (monotonic).
    pub duration_ms: u64,
    /// The run's cwd.
    pub cwd: String,
    /// `<run>`.
    pub async_dir: String,
    /// Session id.
    pub session_id: String,
    /// Completion owner.
    pub completion_owner_id: Option<String>,
    /// Failure text.
    pub error: Option<String>,
    /// Why the run did not complete, in one word (D1).
    #[serde(default, deserialize_with = "crate::records::step_record::lenient")]
    pub failure_kind: Option<crate::records::failure::FailureKind>,
    /// Timed out.
    pub timed_out: Option<bool>,
    /// Stopped.
    pub stopped: Option<bool>,
    /// The usage of the run's steps, summed.
    #[serde(default, deserialize_with = "crate::records::step_record::lenient")]
    pub usage: Option<Usage>,
    /// Set when the host made this payload from the status of a run whose runner died before
    /// publishing one (for its completion hook).
    pub synthesized_from_status: Option<bool>,
    /// Fields of other writers / adapters.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A result index entry (S11 step 3): `version` 1, `file` the public file's name, `writtenAt`
/// in wall ms, `asyncDir` the run directory.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ResultIndexEntry {
    version: u32,
    run_id: String,
    session_id: String,
    file: String,
    written_at: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    async_dir: Option<String>,
}

/// Publishing failed.
#[derive(Debug, thiserror::Error)]
pub enum ResultError {
    /// No session id (S11 step 1).
    #[error("Cannot write async result '{0}' without a sessionId.")]
    MissingSession(String),
    /// A fatal write failed.
    #[error(transparent)]
    Io(io::Error),
}

/// The status error after a failed result write: `Failed to write result file <path>: <cause>`.
pub fn result_write_failure(path: &Path, cause: &dyn fmt::Display) -> String {
    format!("Failed to write result file {}: {cause}", path.display())
}

/// What to publish.
pub struct Publish<'a> {
    /// `<results>`.
    pub results: &'a Dir,
    /// `resultPath` from the config (normally `<results>/<runId>.json`).
    pub result_path: &'a Path,
    /// Run id.
    pub run_id: &'a str,
    /// Session id (required).
    pub session_id: Option<&'a str>,
    /// Tool call (for the tool-call index).
    pub tool_call_id: Option<&'a str>,
    /// `<run>`.
    pub async_dir: Option<&'a str>,
    /// The payload (any serializable value; normally [`ResultPayload`]).
    pub payload: &'a Value,
}

/// Non-fatal problems of a publication (to be logged).
#[derive(Debug, Default)]
pub struct PublishReport {
    /// Failures of the `runs/` and `tool-calls/` index entries.
    pub warnings: Vec<String>,
}

/// S11 steps 1–4.
pub fn publish_result(request: &Publish<'_>, policy: DurabilityPolicy) -> Result<PublishReport, ResultError> {
    let session_id = request
        .session_id
        .ok_or_else(|| ResultError::MissingSession(request.result_path.display().to_string()))?;
    let results = request.results;
    let file = request
        .result_path
        .file_name()
        .and_then(|f| f.to_str())
        .ok_or_else(|| ResultError::Io(os_error(Errno::INVAL, "open", request.result_path)))?;
    let payload = crate::files::doc::to_pretty_bytes(request.payload);
    let durable = policy.for_kind(DocKind::ResultPayload);
    let pending_name = format!("{}.json", enc(request.run_id));
    let session_dir = enc(session_id);

    // Step 2: the pending copy (create retried on ENOENT: the session dir may be removed meanwhile).
    // Its content is fsynced, its name is not (A4): only the public name it is renamed to in
    // step 4 has to survive a power loss, and that directory is fsynced after the rename.
    let pending = retry_enoent(|| {
        let dir = results.ensure_path(&[names::RESULT_PENDING_DIR, &session_dir])?;
        dir.write(&pending_name, &payload, durable.staged())?;
        Ok(dir)
    })
    .map_err(ResultError::Io)?;

    // Step 3: index entries; the session entry is fatal, the others are logged.
    let entry = ResultIndexEntry {
        version: 1,
        run_id: request.run_id.to_owned(),
        session_id: session_id.to_owned(),
        file: file.to_owned(),
        written_at: results.os().clock.wall_ms(),
        async_dir: request.async_dir.map(str::to_owned),
    };
    let index_options = policy.for_kind(DocKind::ResultIndex);
    let write_entry = |components: &[&str]| {
        retry_enoent(|| {
            let mut path = vec![names::RESULT_INDEX_DIR];
            path.extend_from_slice(components);
            results
                .ensure_path_synced(&path)?
                .write_doc(&pending_name, &entry, index_options)
        })
    };
    if let Err(e) = write_entry(&[names::RESULT_INDEX_SESSIONS_DIR, &session_dir]) {
        let _ = pending.remove(&pending_name);
        return Err(ResultError::Io(e));
    }
    let mut report = PublishReport::default();
    if let Err(e) = write_entry(&[names::RESULT_INDEX_RUNS_DIR]) {
        report.warnings.push(format!(
            "Failed to write the run result index of '{}': {e}",
            request.run_id
        ));
    }
    if let Some(tc) = request.tool_call_id
        && let Err(e) = write_entry(&[names::TOOL_CALLS_DIR, &enc(tc)])
    {
        report.warnings.push(format!(
            "Failed to write the tool-call result index of '{}': {e}",
            request.run_id
        ));
    }

    // Step 4: promote by rename onto the public name.
    let public_dir = match request.result_path.parent() {
        Some(parent) if parent == results.path() => results.try_clone(),
        Some(parent) => Dir::open_with(parent, results.os().clone()),
        None => Err(os_error(Errno::INVAL, "open", request.result_path)),
    };
    let promoted = public_dir.and_then(|public| {
        match pending.rename_to(&pending_name, &public, file) {
            Err(e) if has_errno(&e, Errno::XDEV) => {
                public.write(file, &payload, durable)?;
                let _ = pending.remove(&pending_name);
            }
            other => other?,
        }
        if durable == crate::files::atomic::Durability::Durable {
            public.sync()?;
        }
        Ok(())
    });
    if let Err(e) = promoted {
        let _ = pending.remove(&pending_name);
        return Err(ResultError::Io(e));
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const PEER_RESULT: &str = include_str!("../../fixtures/peer/result.json");
    const PEER_INDEX: &str = include_str!("../../fixtures/peer/result-index.json");

    fn setup() -> (tempfile::TempDir, Dir) {
        let tmp = tempfile::tempdir().unwrap();
        let results = Dir::create_private(&tmp.path().join("results")).unwrap();
        (tmp, results)
    }

    #[test]
    fn s11_peer_payload_and_index_round_trip() {
        let value: Value = serde_json::from_str(PEER_RESULT).unwrap();
        let payload: ResultPayload = serde_json::from_str(PEER_RESULT).unwrap();
        assert_eq!(serde_json::to_value(&payload).unwrap(), value);
        assert_eq!(payload.results[0].output_state, OutputState::Absent);
        let index: ResultIndexEntry = serde_json::from_str(PEER_INDEX).unwrap();
        assert_eq!(
            serde_json::to_value(&index).unwrap(),
            serde_json::from_str::<Value>(PEER_INDEX).unwrap()
        );
    }

    #[test]
    fn s11_publish_writes_indexes_and_promotes_the_pending_copy() {
        let (_tmp, results) = setup();
        let payload = json!({"id": "r1", "success": true});
        let path = results.join("r1.json");
        let report = publish_result(
            &Publish {
                results: &results,
                result_path: &path,
                run_id: "r1",
                session_id: Some("s 1"),
                tool_call_id: Some("tc"),
                async_dir: Some("/runs/r1"),
                payload: &payload,
            },
            DurabilityPolicy::standard(),
        )
        .unwrap();
        assert!(report.warnings.is_empty());
        assert_eq!(
            serde_json::from_slice::<Value>(&std::fs::read(&path).unwrap()).unwrap(),
            payload
        );
        for sub in ["sessions/s%201", "runs", "tool-calls/tc"] {
            let entry: ResultIndexEntry =
                serde_json::from_slice(&std::fs::read(results.join(format!("result-index/{sub}/r1.json"))).unwrap())
                    .unwrap();
            assert_eq!(
                (
                    entry.file.as_str(),
                    entry.session_id.as_str(),
                    entry.async_dir.as_deref()
                ),
                ("r1.json", "s 1", Some("/runs/r1"))
            );
        }
        assert_eq!(
            std::fs::read_dir(results.join("result-pending/s%201")).unwrap().count(),
            0,
            "pending copy renamed away"
        );
        assert!(crate::testing::temp_files(results.path()).is_empty());
    }

    /// A4 after a power loss: once publication returns, the public result and its session and
    /// run index entries survive, by the model of a filesystem that keeps only what was
    /// fsynced ([`crate::testing::ScriptedFs::durable`]). The pending copy's content is
    /// fsynced but not its name (only the public name must survive), so the whole publication
    /// costs six fsyncs.
    #[test]
    fn a4_a_published_result_and_its_indexes_survive_a_power_loss() {
        let fs = crate::testing::ScriptedFs::new();
        let tmp = tempfile::tempdir().unwrap();
        let os = crate::os::Os::system().with_files(fs.clone()).shared();
        let results = Dir::create_private_with(&tmp.path().join("results"), os).unwrap();
        let payload = json!({"success": true});
        let publish = |run_id: &str| {
            let path = results.join(format!("{run_id}.json"));
            let publish = Publish {
                results: &results,
                result_path: &path,
                run_id,
                session_id: Some("s1"),
                tool_call_id: None,
                async_dir: None,
                payload: &payload,
            };
            publish_result(&publish, DurabilityPolicy::standard()).unwrap();
        };
        // The first publication of a session also creates (and fsyncs) the index directories.
        publish("r0");
        let before = fs.calls(crate::testing::Op::Fsync);
        publish("r1");
        let root = std::fs::canonicalize(results.path()).unwrap();
        let durable = fs.durable();
        for run in ["r0", "r1"] {
            for name in [
                format!("{run}.json"),
                format!("result-index/sessions/s1/{run}.json"),
                format!("result-index/runs/{run}.json"),
            ] {
                assert!(durable.contains(&root.join(&name)), "{name} survives: {durable:?}");
            }
        }
        assert_eq!(fs.calls(crate::testing::Op::Fsync) - before, 6);
    }

    #[test]
    fn s11_a_session_id_is_required() {
        let (_tmp, results) = setup();
        let path = results.join("r1.json");
        let error = publish_result(
            &Publish {
                results: &results,
                result_path: &path,
                run_id: "r1",
                session_id: None,
                tool_call_id: None,
                async_dir: None,
                payload: &json!({}),
            },
            DurabilityPolicy::standard(),
        )
        .unwrap_err();
        assert_eq!(
            error.to_string(),
            format!("Cannot write async result '{}' without a sessionId.", path.display())
        );
        assert!(!path.exists());
    }

    #[test]
    fn f43_unwritable_results_fail_with_a_cause() {
        use std::os::unix::fs::PermissionsExt;
        let (tmp, results) = setup();
        // Permission bits bind an ordinary user only; as root (CI) the test drops to one.
        let path = results.join("r1.json");
        let error = crate::testing::as_unprivileged(tmp.path(), || {
            std::fs::set_permissions(results.path(), std::fs::Permissions::from_mode(0o500)).unwrap();
            publish_result(
                &Publish {
                    results: &results,
                    result_path: &path,
                    run_id: "r1",
                    session_id: Some("s"),
                    tool_call_id: None,
                    async_dir: None,
                    payload: &json!({}),
                },
                DurabilityPolicy::standard(),
            )
            .unwrap_err()
        });
        assert!(
            result_write_failure(&path, &error)
                .starts_with(&format!("Failed to write result file {}: EACCES", path.display()))
        );
    }

    #[test]
    fn s11_promote_replaces_an_existing_public_file_atomically() {
        let (_tmp, results) = setup();
        let path = results.join("r1.json");
        std::fs::write(&path, b"old").unwrap();
        publish_result(
            &Publish {
                results: &results,
                result_path: &path,
                run_id: "r1",
                session_id: Some("s"),
                tool_call_id: None,
                async_dir: None,
                payload: &json!({"v": 2}),
            },
            DurabilityPolicy::strict(),
        )
        .unwrap();
        assert_eq!(
            serde_json::from_slice::<Value>(&std::fs::read(&path).unwrap()).unwrap(),
            json!({"v": 2})
        );
    }
}
