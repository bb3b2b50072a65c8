//! The tools of `sublaunch mcp`. Each answers with JSON text; a problem the caller can act on
//! (an unknown agent, a bad model, an unknown run id) is a tool error with the same words the
//! command line prints.

use super::params::{
    AgentsParams, ListParams, LogsParams, ModelsParams, RunIdParams, RunParams, StopParams, WaitMode, WaitParams,
};
use super::{Server, State};
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, ContentBlock, ProgressNotificationParam, RequestMetaObject, ServerConfig};
use rmcp::{ErrorData, Peer, RoleServer, ServerHandler, tool, tool_handler, tool_router};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use sublaunch::inputs::chain::parse_chain_file;
use sublaunch::launch::{self, Caller};
use sublaunch::runs::start::{Gathered, RunRequest, StartError, Work, prepare};
use sublaunch::runs::{AnswerError, WaitEnd, answer_json, read_result, settled_result, wait_terminal};
use sublaunch_protocol::dir::Dir;
use sublaunch_protocol::status::Status;

/// The session id runs started through MCP carry.
const MCP_SESSION_ID: &str = "sublaunch-mcp";
/// How long `stop` waits for the end by default.
const DEFAULT_STOP_WAIT: Duration = Duration::from_secs(15);
/// Lines `logs` returns by default, and at most.
const DEFAULT_TAIL: usize = 200;
const MAX_TAIL: usize = 2000;

type ToolResult = Result<CallToolResult, ErrorData>;

/// A successful answer: `value` as pretty JSON text.
fn answer(value: &Value) -> ToolResult {
    Ok(CallToolResult::success(vec![ContentBlock::text(
        serde_json::to_string_pretty(value).unwrap_or_default(),
    )]))
}

/// A tool error the caller reads.
fn refuse(message: impl std::fmt::Display) -> ToolResult {
    Ok(CallToolResult::error(vec![ContentBlock::text(message.to_string())]))
}

/// A number of seconds from the caller (finite, not negative).
fn seconds(value: Option<f64>, name: &str) -> Result<Option<Duration>, String> {
    value
        .map(|s| {
            if s.is_finite() && s >= 0.0 {
                Ok(Duration::from_secs_f64(s))
            } else {
                Err(format!("{name} must be a number of seconds, not {s}"))
            }
        })
        .transpose()
}

impl State {
    /// The run directory of an id or unique prefix, with the full id.
    fn open(&self, id: &str) -> Result<(String, Arc<Dir>), String> {
        let id = sublaunch::runs::resolve_run_id(&self.store, id).map_err(|e| e.to_string())?;
        match self.store.run_dir(&id) {
            Ok(Some(run)) => Ok((id, Arc::new(run))),
            Ok(None) => Err(format!("unknown run '{id}'")),
            Err(e) => Err(format!("cannot open run '{id}': {e}")),
        }
    }

    /// The status summary of a run, with its answer once it ended.
    fn describe(&self, id: &str, run: &Dir, status: Option<&Status>) -> Value {
        let mut summary = crate::cli::runs::summary_json(id, run, status);
        if let Ok(payload) = read_result(&self.store, id) {
            summary["result"] = answer_json(&payload);
        }
        summary
    }

    /// The working directory of a request: the caller's for a local run, else the server's.
    fn local_dir(&self, cwd: Option<&str>, machine: Option<&str>) -> PathBuf {
        match (cwd, machine) {
            (Some(cwd), None) => self.cwd.join(cwd),
            _ => self.cwd.clone(),
        }
    }
}

#[tool_router(vis = "pub(super)")]
impl Server {
    /// Starts a run.
    #[tool(
        description = "Start a background run: an agent with a task, or a chain of steps (sequential, with {previous} passing each step's answer on, and parallel groups). Returns the run id at once; with wait=true, waits and returns the result (answer, per-step output, structured value, exit, error, usage)."
    )]
    async fn run(
        &self,
        Parameters(params): Parameters<RunParams>,
        meta: RequestMetaObject,
        peer: Peer<RoleServer>,
    ) -> ToolResult {
        let state = &self.state;
        let timeout = match seconds(params.timeout_seconds, "timeout_seconds") {
            Ok(timeout) => timeout,
            Err(message) => return refuse(message),
        };
        let checkpoint = match seconds(
            params.checkpoint_before_deadline_seconds,
            "checkpoint_before_deadline_seconds",
        ) {
            Ok(checkpoint) => checkpoint,
            Err(message) => return refuse(message),
        };
        let work = match (params.agent, params.chain) {
            (Some(_), Some(_)) => return refuse("give either agent (with task) or chain, not both"),
            (None, None) => return refuse("give an agent and a task, or a chain"),
            (Some(agent), None) => match params.task {
                Some(task) => Work::Agent { agent, task },
                None => return refuse(format!("agent '{agent}' needs a task")),
            },
            (None, Some(chain)) => match parse_chain_file(Path::new("chain"), &chain.to_string()) {
                Ok(chain) => Work::Chain {
                    chain,
                    task: params.task,
                },
                Err(e) => return refuse(e),
            },
        };
        let dir = state.local_dir(params.cwd.as_deref(), params.machine.as_deref());
        // A local directory is resolved against the server's here, once.
        let cwd = match (params.cwd, &params.machine) {
            (Some(_), None) => Some(dir.to_string_lossy().into_owned()),
            (cwd, _) => cwd,
        };
        let request = RunRequest {
            work,
            model: params.model,
            thinking: params.thinking,
            max_thinking: None,
            machine: params.machine,
            cwd,
            models_file: None,
            timeout,
            deadline_at: match params
                .deadline_at
                .as_deref()
                .map(sublaunch::inputs::deadline::parse_deadline)
            {
                None => None,
                Some(Ok(at)) => Some(at),
                Some(Err(e)) => return refuse(format!("deadline_at: {e}")),
            },
            run_id: None,
            concurrency: None,
            fail_fast: false,
            caller: Caller {
                session_id: Some(MCP_SESSION_ID.into()),
                ..Caller::default()
            },
            on_end: None,
            max_active: match crate::cli::capacity::max_active(&state.env) {
                Ok(cap) => cap,
                Err(e) => return refuse(e),
            },
            worktree: params.worktree,
            worktree_base: params.base,
            require_clean: false,
            reads: params.reads.unwrap_or_default(),
            output: params.output,
            usage_budget: (params.max_tokens.is_some() || params.max_cost_usd.is_some()).then_some(
                sublaunch::contract::UsageBudget {
                    max_tokens: params.max_tokens,
                    max_cost_usd: params.max_cost_usd,
                },
            ),
            tool_budget: params.max_tool_calls,
            checkpoint_before_deadline: checkpoint,
            extensions: None,
            required_extensions: Vec::new(),
            skills: None,
        };
        let gathered = match Gathered::read(&dir, None, &state.env) {
            Ok(gathered) => gathered,
            Err(e) => return refuse(e),
        };
        let mut warnings = gathered.warnings();
        warnings.extend(gathered.ignored().iter().map(ToString::to_string));
        let prepared = match prepare(request, gathered, &state.planner).await {
            Ok(prepared) => prepared,
            Err(StartError::Plan(error)) => return refuse(format!("{} ({})", error.message, error.code.as_str())),
            Err(e) => return refuse(e),
        };
        let launched = match launch::launch(&prepared.plan, prepared.options).await {
            Ok(launched) => launched,
            Err(failure) => return refuse(failure.message()),
        };
        if let Err(e) = launched.handle.committed().await {
            return refuse(format!("the run '{}' did not start: {e}", launched.run_id));
        }
        let run_id = launched.run_id.clone();
        let run_dir = launched.run_dir.clone();
        // The server observes the end of what it started (an `observed` proof) for as long as
        // it runs; the run does not depend on it.
        let handle = launched.handle;
        tokio::spawn(async move {
            let _ = handle.finished().await;
        });
        let mut started = json!({"runId": run_id, "runDir": run_dir});
        if !warnings.is_empty() || !prepared.notes.is_empty() {
            started["notes"] = json!(warnings.iter().chain(&prepared.notes).collect::<Vec<_>>());
        }
        if !params.wait {
            return answer(&started);
        }
        let (id, run) = match state.open(&run_id) {
            Ok(opened) => opened,
            Err(message) => return refuse(message),
        };
        let mut waited = self.wait_for(vec![(id, run)], WaitMode::All, None, &meta, &peer).await;
        match waited["ended"].get_mut(0).map(Value::take) {
            Some(result) => answer(&result),
            None => answer(&waited),
        }
    }

    /// Waits for runs to end.
    #[tool(
        description = "Wait until the given runs end (mode all, default) or the first of them ends (mode any), at most timeout_seconds. Returns each ended run's result (answer, per-step output, structured value, exit, error, usage) and the ids still running. Sends progress notifications as runs end."
    )]
    async fn wait(
        &self,
        Parameters(params): Parameters<WaitParams>,
        meta: RequestMetaObject,
        peer: Peer<RoleServer>,
    ) -> ToolResult {
        if params.run_ids.is_empty() {
            return refuse("run_ids is empty: name the runs to wait for");
        }
        let limit = match seconds(params.timeout_seconds, "timeout_seconds") {
            Ok(limit) => limit,
            Err(message) => return refuse(message),
        };
        let mut runs: Vec<(String, Arc<Dir>)> = Vec::new();
        for id in &params.run_ids {
            match self.state.open(id) {
                Ok(opened) if !runs.iter().any(|(known, _)| *known == opened.0) => runs.push(opened),
                Ok(_) => {}
                Err(message) => return refuse(message),
            }
        }
        let mode = params.mode.unwrap_or(WaitMode::All);
        answer(&self.wait_for(runs, mode, limit, &meta, &peer).await)
    }

    /// A run's status.
    #[tool(description = "A run's status: state, agents, pid, times, error, usage; once it ended, its result.")]
    async fn status(&self, Parameters(params): Parameters<RunIdParams>) -> ToolResult {
        let (id, run) = match self.state.open(&params.run_id) {
            Ok(opened) => opened,
            Err(message) => return refuse(message),
        };
        self.state.store.reconcile_run(&run);
        let status = sublaunch::runs::status_of(&run);
        let mut summary = self.state.describe(&id, &run, status.as_ref());
        // The shim publishes the result just after the terminal status.
        if summary.get("result").is_none()
            && status.as_ref().is_some_and(Status::is_terminal)
            && let Ok(payload) = settled_result(&self.state.store, &id, &run).await
        {
            summary["result"] = answer_json(&payload);
        }
        answer(&summary)
    }

    /// Lists runs.
    #[tool(
        description = "List the active runs (all=true: every run), oldest first, with state, agents, times, error and usage."
    )]
    async fn list(&self, Parameters(params): Parameters<ListParams>) -> ToolResult {
        let store = &self.state.store;
        store.reconcile_all();
        let ids = if params.all {
            store.run_ids()
        } else {
            store.active_run_ids()
        };
        let ids = match ids {
            Ok(ids) => ids,
            Err(e) => return refuse(format!("cannot list runs: {e}")),
        };
        let mut rows: Vec<(u64, Value)> = ids
            .iter()
            .filter_map(|id| {
                let run = store.run_dir(id).ok()??;
                let status = sublaunch::runs::status_of(&run);
                let started = status.as_ref().and_then(|s| s.started_at).unwrap_or(0);
                Some((started, crate::cli::runs::summary_json(id, &run, status.as_ref())))
            })
            .collect();
        rows.sort_by_key(|(started, _)| *started);
        answer(&Value::Array(rows.into_iter().map(|(_, row)| row).collect()))
    }

    /// A finished run's result.
    #[tool(
        description = "A finished run's result: its answer (the last step's output, or each task of a final parallel group) and every step's output, structured value, exit code, error, usage and agent session."
    )]
    async fn result(&self, Parameters(params): Parameters<RunIdParams>) -> ToolResult {
        let (id, run) = match self.state.open(&params.run_id) {
            Ok(opened) => opened,
            Err(message) => return refuse(message),
        };
        self.state.store.reconcile_run(&run);
        match settled_result(&self.state.store, &id, &run).await {
            Ok(payload) => answer(&answer_json(&payload)),
            Err(AnswerError::NotYet(_)) => {
                let state = sublaunch::runs::status_of(&run)
                    .and_then(|s| s.state)
                    .map_or_else(|| "unknown".to_owned(), |s| s.as_str().to_owned());
                refuse(format!(
                    "run '{id}' has no result yet (it is {state}); the wait tool waits for it"
                ))
            }
            Err(e) => refuse(e),
        }
    }

    /// The end of a run's output.
    #[tool(
        description = "The last lines of a run's output (default 200, at most 2000): what each agent said and did, lines prefixed with their step when the run has several; raw=true gives the agents' output as printed."
    )]
    async fn logs(&self, Parameters(params): Parameters<LogsParams>) -> ToolResult {
        let (id, run) = match self.state.open(&params.run_id) {
            Ok(opened) => opened,
            Err(message) => return refuse(message),
        };
        let tail = params.tail_lines.unwrap_or(DEFAULT_TAIL).clamp(1, MAX_TAIL);
        let lines = crate::cli::logs::tail_lines(&run, tail, !params.raw);
        answer(&json!({"runId": id, "lines": lines}))
    }

    /// Stops a run.
    #[tool(
        description = "Stop a run and its whole process tree; waits (default 15 s) until the end is recorded and returns the run's state."
    )]
    async fn stop(&self, Parameters(params): Parameters<StopParams>) -> ToolResult {
        let limit = match seconds(params.timeout_seconds, "timeout_seconds") {
            Ok(limit) => limit.unwrap_or(DEFAULT_STOP_WAIT),
            Err(message) => return refuse(message),
        };
        let (id, run) = match self.state.open(&params.run_id) {
            Ok(opened) => opened,
            Err(message) => return refuse(message),
        };
        if let Some(status) = sublaunch::runs::status_of(&run).filter(Status::is_terminal) {
            let mut ended = self.state.describe(&id, &run, Some(&status));
            ended["alreadyEnded"] = json!(true);
            return answer(&ended);
        }
        if let Err(e) = sublaunch::runs::request_stop(&run, &id, MCP_SESSION_ID, &self.state.env) {
            return refuse(format!("cannot request the stop of '{id}': {e}"));
        }
        match wait_terminal(&self.state.store, &run, Some(limit)).await {
            WaitEnd::Terminal(status) => {
                let mut ended = self.state.describe(&id, &run, Some(&status));
                if let Ok(payload) = settled_result(&self.state.store, &id, &run).await {
                    ended["result"] = answer_json(&payload);
                }
                answer(&ended)
            }
            WaitEnd::TimedOut => refuse(format!(
                "run '{id}' did not record its end within {}s",
                limit.as_secs_f64()
            )),
        }
    }

    /// The agents that can run.
    #[tool(
        description = "The agents that can run in a directory (default: the server's): name, description, runner (pi, Claude Code, Codex, Cursor, a command), model, thinking, tools, output schema and where each is defined."
    )]
    async fn agents(&self, Parameters(params): Parameters<AgentsParams>) -> ToolResult {
        let dir = self.state.local_dir(params.cwd.as_deref(), None);
        let project = sublaunch::inputs::project::Project::open(&dir, &self.state.env);
        let catalog = sublaunch::inputs::agents::discover(&project, &self.state.env);
        let ignored = project
            .ignored()
            .iter()
            .chain(&catalog.ignored)
            .map(ToString::to_string)
            .collect::<Vec<_>>();
        let agents: Vec<Value> = catalog
            .agents
            .iter()
            .map(|agent| crate::cli::agents::agent_json(agent, false, &catalog))
            .collect();
        answer(&json!({
            "agents": agents,
            "warnings": catalog.untrusted.iter().map(ToString::to_string).collect::<Vec<_>>(),
            "notes": ignored,
            "notLoaded": catalog.problems.iter().map(ToString::to_string).collect::<Vec<_>>(),
        }))
    }

    /// The model registry.
    #[tool(
        description = "Models the planner knows (provider/id, context window, reasoning, where the entry comes from); query filters by text."
    )]
    async fn models(&self, Parameters(params): Parameters<ModelsParams>) -> ToolResult {
        let project = sublaunch::inputs::project::Project::open(&self.state.cwd, &self.state.env);
        let registry =
            match sublaunch::inputs::registry::Registry::load(&self.state.cwd, &project, None, &self.state.env) {
                Ok(registry) => registry,
                Err(e) => return refuse(format!("{e:#}")),
            };
        let query = params.query.as_deref().map(str::to_lowercase);
        let matching: Vec<Value> = registry
            .entries
            .iter()
            .filter(|entry| {
                let name = format!("{}/{}", entry.model.provider, entry.model.id).to_lowercase();
                query.as_deref().is_none_or(|q| name.contains(q))
            })
            .map(|entry| {
                json!({
                    "model": format!("{}/{}", entry.model.provider, entry.model.id),
                    "contextWindow": entry.model.context_window,
                    "reasoning": entry.model.reasoning,
                    "source": entry.source,
                })
            })
            .collect();
        let limit = params.limit.unwrap_or(100);
        answer(&json!({
            "total": matching.len(),
            "models": matching.into_iter().take(limit).collect::<Vec<_>>(),
            "notes": project.ignored().iter().map(ToString::to_string).collect::<Vec<_>>(),
        }))
    }
}

impl Server {
    /// Waits for `runs` (all, or the first), sending a progress notification as each ends
    /// when the caller asked for progress; the results of the ended ones and the ids still
    /// running.
    async fn wait_for(
        &self,
        runs: Vec<(String, Arc<Dir>)>,
        mode: WaitMode,
        limit: Option<Duration>,
        meta: &RequestMetaObject,
        peer: &Peer<RoleServer>,
    ) -> Value {
        let total = runs.len();
        let token = meta.get_progress_token();
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<(String, Status)>();
        let until = match mode {
            WaitMode::All => sublaunch::runs::WaitUntil::All,
            WaitMode::Any => sublaunch::runs::WaitUntil::Any,
        };
        let store = self.state.store.clone();
        let waiting = tokio::spawn(async move {
            sublaunch::runs::wait_many(&store, runs, until, limit, |id, status| {
                let _ = tx.send((id.to_owned(), status.clone()));
            })
            .await
        });
        let mut done = 0usize;
        while let Some((id, status)) = rx.recv().await {
            done += 1;
            if let Some(token) = &token {
                let state = status.state.as_ref().map_or("unknown", |s| s.as_str());
                let _ = peer
                    .notify_progress(
                        ProgressNotificationParam::new(token.clone(), done as f64)
                            .with_total(total as f64)
                            .with_message(format!("{id}: {state}")),
                    )
                    .await;
            }
        }
        let outcome = match waiting.await {
            Ok(outcome) => outcome,
            Err(e) => return json!({"error": format!("the wait failed: {e}")}),
        };
        let mut ended: Vec<Value> = Vec::with_capacity(outcome.ended.len());
        for (id, status) in &outcome.ended {
            let settled = match self.state.store.run_dir(id) {
                Ok(Some(run)) => settled_result(&self.state.store, id, &run).await.ok(),
                _ => None,
            };
            ended.push(match settled {
                Some(payload) => answer_json(&payload),
                None => json!({"runId": id, "state": status.state.as_ref().map(|s| s.as_str()), "error": status.error}),
            });
        }
        json!({"ended": ended, "stillRunning": outcome.still_running, "timedOut": outcome.timed_out})
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        Server::config()
    }
}
