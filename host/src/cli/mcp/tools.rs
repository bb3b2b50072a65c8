//! The tools of `sublaunch mcp`. Each answers with JSON text; a problem the caller can act on
//! (an unknown agent, a bad model, an unknown run id) is a tool error with the same words the
//! command line prints.

use super::params::{
    self, AgentsParams, IntegrateParams, ListParams, LogsParams, ModelsParams, ResumeParams, RunIdParams, RunParams,
    StopParams, UsageParams, WaitMode, WaitParams,
};
use super::{Server, State};
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, ContentBlock, ProgressNotificationParam, RequestMetaObject, ServerConfig};
use rmcp::{ErrorData, Peer, RoleServer, ServerHandler, tool, tool_handler, tool_router};
use serde_json::{Value, json};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use sublaunch::contract::{LaunchPlan, PlanStep};
use sublaunch::inputs::agents::AgentDef;
use sublaunch::inputs::chain::{ChainStep, parse_chain_file};
use sublaunch::launch::{self, Caller};
use sublaunch::runs::ResumeRequest;
use sublaunch::runs::start::{Gathered, RunRequest, StartError, Work, prepare};
use sublaunch::runs::{AnswerError, HistoryFilter, Page, RunView, WaitEnd, answer_json, read_result, settled_result};
use sublaunch_protocol::files::dir::Dir;
use sublaunch_protocol::records::failure::FailureKind;
use sublaunch_protocol::records::status::Status;

/// The session id runs started through MCP carry.
const MCP_SESSION_ID: &str = "sublaunch-mcp";
/// How long `stop` waits for the end by default.
const DEFAULT_STOP_WAIT: Duration = Duration::from_secs(15);
/// Lines `logs` returns by default, and at most.
const DEFAULT_TAIL: u64 = 200;
const MAX_TAIL: u64 = 2000;
/// Runs `list` with all=true returns by default, and at most.
const DEFAULT_LISTED: u64 = 50;
const MAX_LISTED: u64 = 100_000;
/// Models `models` lists by default, and at most.
const DEFAULT_MODELS: u64 = 100;
const MAX_MODELS: u64 = 100_000;
/// The largest token budget and tool budget a run may be given.
const MAX_TOKENS: u64 = 1_000_000_000_000;
const MAX_TOOL_CALLS: u64 = 1_000_000;

type ToolResult = Result<CallToolResult, ErrorData>;

/// What a tool found before the notes go with it: its JSON answer, or a refusal in words.
type Outcome = Result<Value, String>;

/// A refusal's words.
#[allow(clippy::needless_pass_by_value)]
fn said(error: impl std::fmt::Display) -> String {
    error.to_string()
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

    /// The view of a run, with its answer once it ended.
    fn describe(&self, id: &str, run: &Dir, status: Option<&Status>) -> RunView {
        let mut view = RunView::new(id, run, status).with_queue_reason(&self.store.queue_reasons());
        view.result = read_result(&self.store, id).ok().map(|payload| answer_json(&payload));
        view
    }

    /// Refuses a plan that leaves the policy: an agent the client may not start, a local
    /// working directory, read or answer file outside the root. `dir` is the run's directory;
    /// `single`: one agent, whose paths are the `cwd`, `reads` and `output` arguments.
    fn check_plan(&self, plan: &LaunchPlan, agents: &[AgentDef], dir: &Path, single: bool) -> Result<(), String> {
        let policy = &self.policy;
        for step in &plan.steps {
            policy.check_agent(&step.agent, agents).map_err(said)?;
            let what = |field: &str| {
                if single {
                    field.to_owned()
                } else {
                    format!("{} {field}", step_label(step))
                }
            };
            // A placed step's directory and reads are on its machine; its answer file is here.
            let step_dir = match step.machine {
                None => policy.confine(&what("cwd"), &step.cwd, dir).map_err(said)?,
                Some(_) => dir.to_owned(),
            };
            if step.machine.is_none() {
                for read in &step.reads {
                    policy.confine(&what("reads"), read, &step_dir).map_err(said)?;
                }
            }
            if let Some(output) = &step.output {
                policy.confine(&what("output"), output, &step_dir).map_err(said)?;
            }
            let commands: Vec<&str> = step
                .acceptance
                .iter()
                .flat_map(|a| a.verify.iter().map(|v| v.id.as_str()))
                .collect();
            policy.check_gates(&what("acceptance"), &commands).map_err(said)?;
        }
        Ok(())
    }
}

/// The agents `work` names (each step and task of a chain), not yet planned.
fn requested_agents(work: &Work) -> Vec<&str> {
    match work {
        Work::Agent { agent, .. } => vec![agent.as_str()],
        Work::Chain { chain, .. } => chain
            .steps
            .iter()
            .flat_map(|step| match step {
                ChainStep::Task(task) => vec![task.agent.as_str()],
                ChainStep::Group(group) => group.parallel.iter().map(|task| task.agent.as_str()).collect(),
            })
            .collect(),
    }
}

/// `step 2 reviewer` or `step 2.1 reviewer`, as the launch names steps.
fn step_label(step: &PlanStep) -> String {
    sublaunch_protocol::records::step_record::step_label(step.step_index, step.task_index, &step.agent)
}

impl Server {
    /// [`Self::reply`] for `run` and `resume`: a launch that did not go on also says, as
    /// structured content, why in one word (`failureKind`: refused, not-started).
    fn reply_launched(&self, outcome: Launched, notes: Vec<String>) -> ToolResult {
        match outcome {
            Ok(value) => self.reply(Ok(value), notes),
            Err(not) => {
                let mut result = self.reply(Err(not.message.clone()), notes)?;
                result.structured_content = Some(json!({"error": not.message, "failureKind": not.kind.as_str()}));
                Ok(result)
            }
        }
    }

    /// The one door every answer leaves by, as compact JSON without null members: the
    /// server's notes and the call's own `notes` go with it, an answer or a refusal alike — in a JSON object answer as its `notes`,
    /// otherwise as `note: …` lines after it. A JSON object answer is also the call's
    /// structured content (the same value as its text, which older clients read).
    fn reply(&self, outcome: Outcome, notes: Vec<String>) -> ToolResult {
        let mut all: Vec<String> = self.state.notes.clone();
        // What the server's own directory's project has ignored, read at each answer so that
        // a `sublaunch trust` while the server runs shows at once.
        let project = sublaunch::inputs::project::Project::open(&self.state.base, &self.state.env);
        let ignored = project.ignored().iter().map(ToString::to_string).collect::<Vec<_>>();
        for note in ignored.into_iter().chain(notes) {
            if !all.contains(&note) {
                all.push(note);
            }
        }
        let lines = || {
            ContentBlock::text(
                all.iter()
                    .map(|note| format!("note: {note}"))
                    .collect::<Vec<_>>()
                    .join("\n"),
            )
        };
        Ok(match outcome {
            Ok(mut value) => {
                drop_nulls(&mut value);
                let mut content = Vec::with_capacity(2);
                let trailer = match value.as_object_mut() {
                    Some(object) if !all.is_empty() => {
                        object.insert("notes".into(), json!(all));
                        None
                    }
                    _ => (!all.is_empty()).then(lines),
                };
                // Compact: every byte is a token the calling model pays for.
                content.push(ContentBlock::text(serde_json::to_string(&value).unwrap_or_default()));
                content.extend(trailer);
                let mut result = CallToolResult::success(content);
                if value.is_object() {
                    result.structured_content = Some(value);
                }
                result
            }
            Err(message) => {
                let mut content = vec![ContentBlock::text(message)];
                if !all.is_empty() {
                    content.push(lines());
                }
                CallToolResult::error(content)
            }
        })
    }
}

/// Why the `run` or `resume` tool started no run that went on (D3): refused before launch (bad
/// input, the server's limits), or made but not started.
#[derive(Debug)]
pub(super) struct NotLaunched {
    message: String,
    kind: FailureKind,
}

impl NotLaunched {
    /// A run that was made and did not start.
    fn not_started(message: String) -> Self {
        Self {
            message,
            kind: FailureKind::NotStarted,
        }
    }
}

impl From<String> for NotLaunched {
    /// Everything said before a run exists refuses the launch.
    fn from(message: String) -> Self {
        Self {
            message,
            kind: FailureKind::Refused,
        }
    }
}

/// What the `run` and `resume` tools answer.
type Launched = Result<Value, NotLaunched>;

/// Removes the null members of every object in `value` (an absent field reads as null to a
/// client, and says the same in fewer tokens); array elements keep their places.
fn drop_nulls(value: &mut Value) {
    match value {
        Value::Object(object) => {
            object.retain(|_, member| !member.is_null());
            object.values_mut().for_each(drop_nulls);
        }
        Value::Array(items) => items.iter_mut().for_each(drop_nulls),
        _ => {}
    }
}

#[tool_router(vis = "pub(super)")]
impl Server {
    /// Starts a run.
    #[tool(
        description = "Start a background run: an agent with a task, or a chain of steps (sequential, with {previous} passing each step's answer on, and parallel groups). Returns the run id at once; with wait=true, waits and returns the result (answer, per-step output, structured value, exit, error, usage). Directories and files stay inside the server's root; the agents tool marks agents this server may not start.",
        output_schema = super::schemas::launched(),
    )]
    async fn run(
        &self,
        Parameters(params): Parameters<RunParams>,
        meta: RequestMetaObject,
        peer: Peer<RoleServer>,
    ) -> ToolResult {
        let mut notes = Vec::new();
        let outcome = self.start(params, &meta, &peer, &mut notes).await;
        self.reply_launched(outcome, notes)
    }

    /// Continues a finished run.
    #[tool(
        description = "Continue a finished run as a new run: with task, the agent of its last step (or `step`) picks up its own conversation with that follow-up (Claude Code, Codex and pi keep their context); without task, its steps run again. Returns the new run id at once; with wait=true, waits and returns its result. The same limits as run apply.",
        output_schema = super::schemas::launched(),
    )]
    async fn resume(
        &self,
        Parameters(params): Parameters<ResumeParams>,
        meta: RequestMetaObject,
        peer: Peer<RoleServer>,
    ) -> ToolResult {
        let mut notes = Vec::new();
        let outcome = self.revive(params, &meta, &peer, &mut notes).await;
        self.reply_launched(outcome, notes)
    }

    /// Waits for runs to end.
    #[tool(
        description = "Wait until the given runs end (mode all, default) or the first of them ends (mode any), at most timeoutSeconds. Returns each ended run's result (answer, per-step output, structured value, exit, error, usage) and the ids still running. Sends progress notifications as runs end.",
        output_schema = super::schemas::waited(),
    )]
    async fn wait(
        &self,
        Parameters(params): Parameters<WaitParams>,
        meta: RequestMetaObject,
        peer: Peer<RoleServer>,
    ) -> ToolResult {
        let outcome: Outcome = async {
            if params.run_ids.is_empty() {
                return Err("runIds is empty: name the runs to wait for".to_owned());
            }
            let limit = params::seconds(params.timeout_seconds, "timeoutSeconds").map_err(said)?;
            let mut runs: Vec<(String, Arc<Dir>)> = Vec::new();
            for id in &params.run_ids {
                let opened = self.state.open(id)?;
                if !runs.iter().any(|(known, _)| *known == opened.0) {
                    runs.push(opened);
                }
            }
            let mode = params.mode.unwrap_or(WaitMode::All);
            Ok(self.wait_for(runs, mode, limit, &meta, &peer).await)
        }
        .await;
        self.reply(outcome, Vec::new())
    }

    /// A run's status.
    #[tool(
        description = "A run's status: state, agents, pid, times, error, usage; once it ended, its result.",
        output_schema = super::schemas::run_view()
    )]
    async fn status(&self, Parameters(params): Parameters<RunIdParams>) -> ToolResult {
        let outcome: Outcome = async {
            let (id, run) = self.state.open(&params.run_id)?;
            self.state.store.reconcile_run(&run);
            let status = sublaunch::runs::status_of(&run);
            let mut view = self.state.describe(&id, &run, status.as_ref());
            // The shim publishes the result just after the terminal status.
            if view.result.is_none()
                && status.as_ref().is_some_and(Status::is_terminal)
                && let Ok(payload) = settled_result(&self.state.store, &id, &run).await
            {
                view.result = Some(answer_json(&payload));
            }
            Ok(view.to_json())
        }
        .await;
        self.reply(outcome, Vec::new())
    }

    /// Reads the event stream.
    #[tool(
        description = "The event stream: every run's lifecycle events (launched, queued, started, step-started, step-ended, gate, ended, delivered, delivery-failed), in order, each with a cursor; an ended event carries the run's state, failureKind and deliveryId. Pass the cursor of the last event you handled as since to get only newer ones; waitSeconds (at most 300) waits for the next one. Returns {events, cursor, dropped}. Subscribe to the resource sublaunch://events to be told when there are new events.",
        output_schema = super::schemas::events()
    )]
    async fn events(&self, Parameters(params): Parameters<super::params::EventsParams>) -> ToolResult {
        let store = &self.state.store;
        // A run whose runner died has its end recorded by this look.
        store.reconcile_all();
        let root = store.root().root().path().to_owned();
        let outcome = super::stream::events(root, params).await;
        self.reply(outcome, Vec::new())
    }

    /// Lists runs.
    #[tool(
        description = "List the active runs, oldest first, with state, agents, times, error and usage. all=true: every run, newest first, as {runs, nextCursor}, a page of `limit` (default 50) at a time, filtered by state, agent, since (an age such as 7d, or an RFC 3339 time) and text; pass nextCursor as cursor for the next page."
    )]
    async fn list(&self, Parameters(params): Parameters<ListParams>) -> ToolResult {
        let store = &self.state.store;
        store.reconcile_all();
        let outcome = if params.all {
            list_every_run(store, params)
        } else if let Some(name) = params.filters_without_all() {
            Err(format!(
                "{name} applies to every run's list only: pass all=true with it"
            ))
        } else {
            list_active_runs(store)
        };
        self.reply(outcome, Vec::new())
    }

    /// What runs spent.
    #[tool(
        description = "What the runs of this state root spent, from the usage ledger: tokens and cost per group over a period, grouped by day (default), week, month, agent, model, provider, machine, run or tree (a run and every run launched from inside it). a group without costUsd is one whose steps reported no cost (unknown, not zero); stepsWithoutCost counts the steps whose cost is unknown. Runs removed by prune still count.",
        output_schema = super::schemas::usage(),
    )]
    async fn usage(&self, Parameters(params): Parameters<UsageParams>) -> ToolResult {
        let outcome = usage_summary(&self.state.store, params);
        self.reply(outcome, Vec::new())
    }

    /// A finished run's result.
    #[tool(
        description = "A finished run's result: its answer (the last step's output, or each task of a final parallel group) and every step's output, structured value, exit code, error, usage and agent session.",
        output_schema = super::schemas::result(),
    )]
    async fn result(&self, Parameters(params): Parameters<RunIdParams>) -> ToolResult {
        let outcome: Outcome = async {
            let (id, run) = self.state.open(&params.run_id)?;
            self.state.store.reconcile_run(&run);
            match settled_result(&self.state.store, &id, &run).await {
                Ok(payload) => Ok(answer_json(&payload)),
                Err(AnswerError::NotYet(_)) => {
                    let state = sublaunch::runs::status_of(&run)
                        .and_then(|s| s.state)
                        .map_or_else(|| "unknown".to_owned(), |s| s.as_str().to_owned());
                    Err(format!(
                        "run '{id}' has no result yet (it is {state}); the wait tool waits for it"
                    ))
                }
                Err(e) => Err(e.to_string()),
            }
        }
        .await;
        self.reply(outcome, Vec::new())
    }

    /// The end of a run's output.
    #[tool(
        description = "The last lines of a run's output (default 200, at most 2000): what each agent said and did, lines prefixed with their step when the run has several; raw=true gives the agents' output as printed.",
        output_schema = super::schemas::logs(),
    )]
    async fn logs(&self, Parameters(params): Parameters<LogsParams>) -> ToolResult {
        let outcome: Outcome = (|| {
            let tail = params::whole(params.tail_lines, "tailLines", 1, MAX_TAIL)
                .map_err(said)?
                .unwrap_or(DEFAULT_TAIL);
            let (id, run) = self.state.open(&params.run_id)?;
            let tail = usize::try_from(tail).unwrap_or(usize::MAX);
            let lines = crate::cli::logs::tail_lines(&run, tail, !params.raw);
            Ok(json!({"runId": id, "lines": lines}))
        })();
        self.reply(outcome, Vec::new())
    }

    /// Stops a run.
    #[tool(
        description = "Stop a run and its whole process tree; waits (default 15 s, at most a year) until the end is recorded and returns the run's state.",
        output_schema = super::schemas::run_view(),
    )]
    async fn stop(&self, Parameters(params): Parameters<StopParams>) -> ToolResult {
        let outcome: Outcome = async {
            let limit = params::seconds(params.timeout_seconds, "timeoutSeconds")
                .map_err(said)?
                .unwrap_or(DEFAULT_STOP_WAIT);
            let (id, run) = self.state.open(&params.run_id)?;
            if let Some(status) = sublaunch::runs::status_of(&run).filter(Status::is_terminal) {
                let mut ended = self.state.describe(&id, &run, Some(&status)).to_json();
                ended["alreadyEnded"] = json!(true);
                return Ok(ended);
            }
            let ended =
                sublaunch::runs::stop_and_wait(&self.state.store, &run, &id, MCP_SESSION_ID, &self.state.env, limit)
                    .await
                    .map_err(|e| format!("cannot request the stop of '{id}': {e}"))?;
            match ended {
                WaitEnd::Terminal(status) => {
                    let mut ended = self.state.describe(&id, &run, Some(&status));
                    if let Ok(payload) = settled_result(&self.state.store, &id, &run).await {
                        ended.result = Some(answer_json(&payload));
                    }
                    Ok(ended.to_json())
                }
                WaitEnd::TimedOut => Err(format!(
                    "run '{id}' did not record its end within {}s",
                    limit.as_secs_f64()
                )),
            }
        }
        .await;
        self.reply(outcome, Vec::new())
    }

    /// Integrates a run's branches.
    #[tool(
        description = "Merge the accepted work of an ended run's writers (steps with worktree=true) onto the branch sublaunch/<run>/integration: in step order, each branch checked for conflicts first and the merged tree gated (the steps' own verification commands, or gate), stopping at the first conflict or failed gate unless keepGoing. The branch moves only after its gate passed; the user's checkout is never touched. Returns each branch's outcome.",
        output_schema = super::schemas::integration(),
    )]
    async fn integrate(&self, Parameters(params): Parameters<IntegrateParams>) -> ToolResult {
        let outcome: Outcome = async {
            let state = &self.state;
            if let Some(gate) = &params.gate {
                state.policy.check_gates("gate", &[gate.as_str()]).map_err(said)?;
            }
            if params.gate.is_some() && params.no_gate {
                return Err("gate and noGate ask for opposite things: give one".to_owned());
            }
            let gate_timeout = params::seconds(params.gate_timeout_seconds, "gateTimeoutSeconds")
                .map_err(said)?
                .unwrap_or(sublaunch::integrate::gate::DEFAULT_TIMEOUT);
            let (id, run) = state.open(&params.run_id)?;
            // The repository the branches are in must be one this server may write.
            if let Ok(payload) = read_result(&state.store, &id)
                && let Ok(found) = sublaunch::integrate::Candidates::of(&payload)
            {
                state
                    .policy
                    .confine("the run's repository", &found.repository, &state.base)
                    .map_err(said)?;
            }
            drop(run);
            let git = sublaunch::worktrees::Git::find(&state.env, &state.base).map_err(said)?;
            let options = sublaunch::integrate::IntegrateOptions {
                onto: params.onto.clone(),
                gate: match (&params.gate, params.no_gate) {
                    (Some(command), _) => sublaunch::integrate::GateChoice::Command(command.clone()),
                    (None, true) => sublaunch::integrate::GateChoice::None,
                    (None, false) => sublaunch::integrate::GateChoice::Contracts,
                },
                gate_timeout,
                keep_going: params.keep_going,
                fast_forward: false,
            };
            let mut never = sublaunch::integrate::gate::Never;
            let integration = sublaunch::integrate::integrate(&state.store, &git, &id, &options, &mut never)
                .await
                .map_err(said)?;
            serde_json::to_value(&integration).map_err(said)
        }
        .await;
        self.reply(outcome, Vec::new())
    }

    /// The agents that can run.
    #[tool(
        description = "The agents that can run in a directory (default: the server's): name, description, runner (pi, Claude Code, Codex, Cursor, a command), model, thinking, tools, output schema, where each is defined, and whether this server may start it (allowed; notAllowed says why not).",
        output_schema = super::schemas::agents(),
    )]
    async fn agents(&self, Parameters(params): Parameters<AgentsParams>) -> ToolResult {
        let state = &self.state;
        let mut notes = Vec::new();
        let outcome: Outcome = (|| {
            let dir = match &params.cwd {
                Some(cwd) => state.policy.confine("cwd", cwd, &state.base).map_err(said)?,
                None => state.base.clone(),
            };
            let project = sublaunch::inputs::project::Project::open(&dir, &state.env);
            let catalog = sublaunch::inputs::agents::discover(&project, &state.env);
            notes.extend(
                project
                    .ignored()
                    .iter()
                    .chain(&catalog.ignored)
                    .map(ToString::to_string),
            );
            let agents: Vec<Value> = catalog
                .agents
                .iter()
                .map(|agent| {
                    let mut row = crate::cli::agents::agent_json(agent, false, &catalog);
                    let refused = state.policy.not_allowed(agent);
                    row["allowed"] = json!(refused.is_none());
                    if let Some(why) = refused {
                        row["notAllowed"] = json!(why.describe());
                    }
                    row
                })
                .collect();
            Ok(json!({
                "agents": agents,
                "root": state.policy.root(),
                "warnings": catalog.untrusted.iter().map(ToString::to_string).collect::<Vec<_>>(),
                "notLoaded": catalog.problems.iter().map(ToString::to_string).collect::<Vec<_>>(),
            }))
        })();
        self.reply(outcome, notes)
    }

    /// The model registry.
    #[tool(
        description = "Models the planner knows (provider/id, context window, reasoning, where the entry comes from); query filters by text.",
        output_schema = super::schemas::models(),
    )]
    async fn models(&self, Parameters(params): Parameters<ModelsParams>) -> ToolResult {
        let state = &self.state;
        let project = sublaunch::inputs::project::Project::open(&state.base, &state.env);
        let notes: Vec<String> = project.ignored().iter().map(ToString::to_string).collect();
        let outcome: Outcome = (|| {
            let limit = params::whole(params.limit, "limit", 0, MAX_MODELS)
                .map_err(said)?
                .unwrap_or(DEFAULT_MODELS);
            let registry = sublaunch::inputs::registry::Registry::load(&state.base, &project, None, &state.env)
                .map_err(|e| format!("{e:#}"))?;
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
            Ok(json!({
                "total": matching.len(),
                "models": matching.into_iter().take(usize::try_from(limit).unwrap_or(usize::MAX)).collect::<Vec<_>>(),
            }))
        })();
        self.reply(outcome, notes)
    }
}

impl RunParams {
    /// The run these arguments ask for, and the local directory it is checked against (a
    /// local `cwd` is resolved and confined here, once; a machine's is its own).
    fn into_request(self, state: &State) -> Result<(RunRequest, std::path::PathBuf), String> {
        let timeout = params::seconds(self.timeout_seconds, "timeoutSeconds").map_err(said)?;
        let checkpoint = params::seconds(
            self.checkpoint_before_deadline_seconds,
            "checkpointBeforeDeadlineSeconds",
        )
        .map_err(said)?;
        let max_tokens = params::whole(self.max_tokens, "maxTokens", 1, MAX_TOKENS).map_err(said)?;
        let max_cost_usd = params::dollars(self.max_cost_usd, "maxCostUsd").map_err(said)?;
        let max_tool_calls = params::whole(self.max_tool_calls, "maxToolCalls", 0, MAX_TOOL_CALLS)
            .map_err(said)?
            .map(|calls| u32::try_from(calls).unwrap_or(u32::MAX));
        let permissions = self.permissions()?;
        let work = match (self.agent, self.chain) {
            (Some(_), Some(_)) => return Err("give either agent (with task) or chain, not both".to_owned()),
            (None, None) => return Err("give an agent and a task, or a chain".to_owned()),
            (Some(agent), None) => match self.task {
                Some(task) => Work::Agent { agent, task },
                None => return Err(format!("agent '{agent}' needs a task")),
            },
            (None, Some(chain)) => Work::Chain {
                chain: parse_chain_file(Path::new("chain"), &chain.to_string()).map_err(said)?,
                task: self.task,
            },
        };
        let (dir, cwd) = match (self.cwd, &self.machine) {
            (Some(cwd), None) => {
                let dir = state.policy.confine("cwd", &cwd, &state.base).map_err(said)?;
                let cwd = dir.to_string_lossy().into_owned();
                (dir, Some(cwd))
            }
            (cwd, _) => (state.base.clone(), cwd),
        };
        let deadline_at = self
            .deadline_at
            .as_deref()
            .map(sublaunch::inputs::deadline::parse_deadline)
            .transpose()
            .map_err(|e| format!("deadline_at: {e}"))?;
        let request = RunRequest {
            work,
            model: self.model,
            thinking: self.thinking,
            max_thinking: None,
            machine: self.machine,
            cwd,
            models_file: None,
            timeout,
            deadline_at,
            run_id: None,
            concurrency: None,
            fail_fast: false,
            caller: Caller {
                session_id: Some(MCP_SESSION_ID.into()),
                ..Caller::default()
            },
            on_end: None,
            // SUBLAUNCH_MAX_ACTIVE of the server's environment, else the settings.
            max_active: None,
            no_queue: self.no_queue,
            worktree: self.worktree,
            worktree_base: self.base,
            require_clean: false,
            reads: self.reads.unwrap_or_default(),
            output: self.output,
            usage_budget: (max_tokens.is_some() || max_cost_usd.is_some()).then_some(
                sublaunch::contract::UsageBudget {
                    max_tokens,
                    max_cost_usd,
                },
            ),
            tool_budget: max_tool_calls,
            checkpoint_before_deadline: checkpoint,
            extensions: None,
            required_extensions: Vec::new(),
            skills: None,
            sandbox: sandbox_setting(self.sandbox, self.sandbox_ports, self.sandbox_best_effort)?,
            wait: self.wait,
            permissions,
            acceptance: self.acceptance,
            gate: self.gate.map(serde_json::Value::String),
        };
        Ok((request, dir))
    }
}

impl Server {
    /// The `run` tool: checks the request against the policy, plans, checks the plan, launches,
    /// and waits when asked. What the caller should be told (ignored agent files and hooks,
    /// project agents in place of built-in ones) is added to `notes` as soon as it is known, so
    /// that it goes with the answer, a refusal and the waited result alike.
    async fn start(
        &self,
        params: RunParams,
        meta: &RequestMetaObject,
        peer: &Peer<RoleServer>,
        notes: &mut Vec<String>,
    ) -> Launched {
        let state = &self.state;
        state.policy.check_depth(&state.env).map_err(said)?;
        let single = params.chain.is_none();
        let (request, dir) = params.into_request(state)?;
        let wait = request.wait;
        let gathered = Gathered::read(&dir, None, &state.env).map_err(said)?;
        notes.extend(gathered.warnings());
        notes.extend(gathered.ignored().iter().map(ToString::to_string));
        // The agents asked for, before planning (whose errors would hide the refusal); the
        // plan's steps are checked again below.
        for agent in requested_agents(&request.work) {
            state.policy.check_agent(agent, gathered.agents()).map_err(said)?;
        }
        let prepared = match prepare(request, gathered, &state.planner).await {
            Ok(prepared) => prepared,
            Err(StartError::Plan(error)) => return Err(format!("{} ({})", error.message, error.code.as_str()).into()),
            Err(e) => return Err(e.to_string().into()),
        };
        notes.extend(prepared.notes.iter().cloned());
        state.check_plan(&prepared.launch.plan, &prepared.launch.agents, &dir, single)?;
        self.launch_checked(prepared.launch, prepared.options, wait, meta, peer)
            .await
    }

    /// The `resume` tool: the revival the library prepares, held to the limits of `run` (the
    /// depth, the agents this server starts, directories inside its root).
    async fn revive(
        &self,
        params: ResumeParams,
        meta: &RequestMetaObject,
        peer: &Peer<RoleServer>,
        notes: &mut Vec<String>,
    ) -> Launched {
        let state = &self.state;
        state.policy.check_depth(&state.env).map_err(said)?;
        let (source_id, source) = state.open(&params.run_id)?;
        let request = ResumeRequest {
            task: params.task,
            step: params.step,
            on_end: None,
            max_active: None,
            caller: Caller {
                session_id: Some(MCP_SESSION_ID.into()),
                ..Caller::default()
            },
        };
        let resumed = sublaunch::runs::resume(&state.store, &source_id, &source, request, &state.env)
            .await
            .map_err(said)?;
        notes.extend(resumed.ignored.iter().map(ToString::to_string));
        let single = resumed.launch.plan.steps.len() == 1;
        state.check_plan(&resumed.launch.plan, &resumed.launch.agents, &state.base, single)?;
        self.launch_checked(resumed.launch, resumed.options, params.wait, meta, peer)
            .await
    }

    /// Launches a plan the server's limits were checked against: the run id once committed,
    /// or with `wait` its result.
    async fn launch_checked(
        &self,
        launch: launch::Launch,
        options: launch::LaunchOptions,
        wait: bool,
        meta: &RequestMetaObject,
        peer: &Peer<RoleServer>,
    ) -> Launched {
        let state = &self.state;
        let launched = launch::launch(launch, options)
            .await
            .map_err(|failure| failure.message())?;
        if let Err(e) = launched.handle.committed().await {
            return Err(NotLaunched::not_started(format!(
                "the run '{}' did not start: {e}",
                launched.run_id
            )));
        }
        // J6: a run on a cluster is launched once the engine accepted its job.
        let job = launched.handle.handed_over().await.map_err(|e| {
            NotLaunched::not_started(format!("the run '{}' could not be submitted: {e}", launched.run_id))
        })?;
        let run_id = launched.run_id.clone();
        let run_dir = launched.run_dir.clone();
        // The server observes the end of what it started (an `observed` proof) for as long as
        // it runs; the run does not depend on it.
        let handle = launched.handle;
        tokio::spawn(async move {
            let _ = handle.finished().await;
        });
        if !wait {
            let mut started = json!({"runId": run_id, "runDir": run_dir});
            if let Some(job) = job {
                started["jobId"] = json!(job.job_id);
            }
            return Ok(started);
        }
        let opened = state.open(&run_id)?;
        let mut waited = self.wait_for(vec![opened], WaitMode::All, None, meta, peer).await;
        Ok(match waited["ended"].get_mut(0).map(Value::take) {
            Some(result) => result,
            None => waited,
        })
    }

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
                None => json!({"runId": id, "state": status.state.as_ref().map(|s| s.as_str()), "error": status.error, "failureKind": status.failure_kind}),
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

    async fn list_resources(
        &self,
        _request: Option<rmcp::model::PaginatedRequestParams>,
        _context: rmcp::service::RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListResourcesResult, ErrorData> {
        Ok(rmcp::model::ListResourcesResult::with_all_items(vec![
            super::stream::resource(),
        ]))
    }

    async fn read_resource(
        &self,
        request: rmcp::model::ReadResourceRequestParams,
        _context: rmcp::service::RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ReadResourceResponse, ErrorData> {
        let root = self.state.store.root().root().path().to_owned();
        super::stream::read_resource(root, &request.uri)
            .await
            .map(Into::into)
            .map_err(|e| ErrorData::invalid_params(e, None))
    }

    #[allow(deprecated)]
    async fn subscribe(
        &self,
        request: rmcp::model::SubscribeRequestParams,
        context: rmcp::service::RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        if request.uri != super::stream::EVENTS_URI {
            return Err(ErrorData::invalid_params(
                format!(
                    "{} cannot be subscribed to ({})",
                    request.uri,
                    super::stream::EVENTS_URI
                ),
                None,
            ));
        }
        let root = self.state.store.root().root().path().to_owned();
        let mut follower = self.follower.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if follower.as_ref().is_none_or(tokio::task::JoinHandle::is_finished) {
            *follower = Some(tokio::spawn(super::stream::follow(root, context.peer.clone())));
        }
        Ok(())
    }

    #[allow(deprecated)]
    async fn unsubscribe(
        &self,
        _request: rmcp::model::UnsubscribeRequestParams,
        _context: rmcp::service::RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        if let Some(follower) = self
            .follower
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take()
        {
            follower.abort();
        }
        Ok(())
    }
}

/// The `usage` tool's answer.
fn usage_summary(store: &sublaunch::runs::RunStore, params: UsageParams) -> Outcome {
    use clap::ValueEnum;
    let by = match params.by.as_deref() {
        None => sublaunch::usage::Grouping::Day,
        Some(name) => sublaunch::usage::Grouping::from_str(name, true).map_err(|_| {
            format!("by: {name} is not a grouping (day, week, month, agent, model, provider, machine, run, tree)")
        })?,
    };
    let query = crate::cli::usage::query(
        params.since.as_deref(),
        params.until.as_deref(),
        by,
        params.tree,
        crate::cli::runs::now_ms(),
    )?;
    let summary = sublaunch::usage::summarize(store.root().layout().root(), &query)
        .map_err(|e| format!("cannot read the usage ledger: {e}"))?;
    serde_json::to_value(summary).map_err(said)
}

/// The active runs, oldest first.
fn list_active_runs(store: &sublaunch::runs::RunStore) -> Outcome {
    let ids = store.active_run_ids().map_err(|e| format!("cannot list runs: {e}"))?;
    let mut rows: Vec<(u64, Value)> = ids
        .iter()
        .filter_map(|id| {
            let run = store.run_dir(id).ok()??;
            let status = sublaunch::runs::status_of(&run);
            let started = status.as_ref().and_then(|s| s.started_at).unwrap_or(0);
            Some((started, RunView::new(id, &run, status.as_ref()).to_json()))
        })
        .collect();
    rows.sort_by_key(|(started, _)| *started);
    Ok(Value::Array(rows.into_iter().map(|(_, row)| row).collect()))
}

/// One page of every run, newest first, from the history index (what `list --all` prints).
fn list_every_run(store: &sublaunch::runs::RunStore, params: ListParams) -> Outcome {
    let limit = params::whole(params.limit, "limit", 1, MAX_LISTED)
        .map_err(said)?
        .unwrap_or(DEFAULT_LISTED);
    let since_ms = params
        .since
        .as_deref()
        .map(|text| crate::cli::list::parse_since(text).map(|since| since.start_ms(crate::cli::runs::now_ms())))
        .transpose()
        .map_err(|e| format!("since: {e}"))?;
    let cursor = params
        .cursor
        .as_deref()
        .map(str::parse)
        .transpose()
        .map_err(|e| format!("cursor: {e}"))?;
    let filter = HistoryFilter {
        state: params.state,
        agent: params.agent,
        since_ms,
        text: params.text,
    };
    let page = Page {
        limit: Some(usize::try_from(limit).unwrap_or(usize::MAX)),
        cursor,
    };
    let mut runs = Vec::new();
    let reasons = store.queue_reasons();
    let next = sublaunch::runs::history::list_all(store, &filter, &page, |listed| {
        let view = RunView::new(&listed.run_id, &listed.run, listed.status.as_ref()).with_queue_reason(&reasons);
        runs.push(view.to_json());
    })
    .map_err(|e| format!("cannot list runs: {e}"))?;
    Ok(json!({"runs": runs, "nextCursor": next.map(|cursor| cursor.to_string())}))
}

/// The `run` tool's `sandbox`, `sandboxPorts` and `sandboxBestEffort`, checked.
fn sandbox_setting(
    profile: Option<String>,
    ports: Option<Vec<u16>>,
    best_effort: Option<bool>,
) -> Result<Option<sublaunch::contract::SandboxSetting>, String> {
    if profile.is_none() && ports.is_none() && best_effort.is_none() {
        return Ok(None);
    }
    let profile = profile
        .map(|p| sublaunch::contract::sandbox::checked_profile(&p))
        .transpose()
        .map_err(|e| format!("sandbox: {e}"))?;
    if ports.as_ref().is_some_and(|p| p.contains(&0)) {
        return Err("sandboxPorts: 0 is not a TCP port (1 to 65535)".into());
    }
    Ok(Some(sublaunch::contract::SandboxSetting {
        profile,
        ports,
        best_effort,
        origin: Some("the run tool's sandbox".into()),
    }))
}
