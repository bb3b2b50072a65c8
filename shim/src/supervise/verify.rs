//! Keeping a step's acceptance contract once its agent ended (G77, G78): the checks against
//! git, then the verification commands one after another, each run like an agent — in a
//! process tree of its own (contained in a PID namespace, in the step's OS sandbox when it
//! has one), its output kept in `gate-<step>-<id>.log`, its time limit, the run's stop and
//! timeout, the whole-tree kill and the X8 sweep — and memoised per tree state, so that the
//! same command on an unchanged tree is not run twice in a run. Then, when the contract has
//! a review gate and all that passed, the reviewer agent (G81), started and supervised the
//! same way, its `review-findings` block deciding a required review.

use super::Supervisor;
use crate::acceptance::tree::{self, Place, StartPoint, TreeError};
use crate::adapter::{self, AgentCommand, LiveOptions, StepInput, TEXT_LINE_RETAIN, TextParser};
use crate::context::Ctx;
use crate::process::pipe::Pipe;
use crate::process::reaper::ExitInfo;
use crate::process::streams::OutputLog;
use crate::step::acceptance as judged;
use crate::step::child::{ChildIo, ChildRun};
use crate::step::end::StepEnd;
use crate::step::gate::{Gate, ReviewRun};
use std::path::Path;
use std::time::{Duration, Instant};
use sublaunch_protocol::records::acceptance::{
    EvidenceStatus, ReviewRecord, ReviewStatus, TreeEvidence, VerifyResult, VerifyStatus,
};
use sublaunch_protocol::records::config::{AcceptanceLevel, AcceptancePlan, AdapterId, VerifyCommand};
use sublaunch_protocol::records::status::{RunState, derive_terminal_state};
use sublaunch_protocol::records::stream::What;

/// How long a verification command, or a reviewer, may run when its contract gives no limit.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30 * 60);
/// The most of the step's diff its reviewer is shown (G81); a longer one is cut, saying so.
pub const REVIEW_DIFF_CAP: usize = 200 * 1024;

/// What happens after a step's agent ended.
#[derive(Debug)]
pub enum AfterAgent {
    /// The step's end is final.
    Done(Box<StepEnd>),
    /// A verification command runs; its end comes back through [`Supervisor::finish_gate`].
    Verifying(Box<ChildRun>),
}

impl Supervisor {
    /// Where git starts counting step `index`'s work: taken before its agent starts when its
    /// contract checks the tree.
    pub fn note_tree_start(&mut self, ctx: &Ctx, index: usize) {
        let step = &ctx.cfg.steps[index];
        let checked = |plan: &AcceptancePlan| plan.level >= AcceptanceLevel::Checked && plan.report;
        let memoised = |plan: &AcceptancePlan| plan.verify.iter().any(|v| memo_worth(ctx, index, v));
        if step
            .acceptance
            .as_ref()
            .is_some_and(|plan| checked(plan) || memoised(plan))
        {
            let start = tree::start_point(place(ctx, index));
            self.tree_starts.insert(index, start);
        }
    }

    /// The agent of `end` ended: its checks, then its first verification command, if any.
    pub fn start_acceptance(&mut self, ctx: &mut Ctx, mut end: StepEnd) -> AfterAgent {
        let Some(plan) = ctx.cfg.steps[end.index].acceptance.clone() else {
            return AfterAgent::Done(Box::new(end));
        };
        // Only an agent that finished well is judged; its own failure says enough.
        if derive_terminal_state(&end.facts()) != RunState::Complete || end.validation.is_some() || end.budget.is_some()
        {
            return AfterAgent::Done(Box::new(end));
        }
        let record = end.acceptance.get_or_insert_with(|| judged::new_record(&plan));
        // A bare gate is its whole contract: its step is not checked against git (and may
        // run outside a repository).
        if plan.level >= AcceptanceLevel::Checked && plan.report {
            let evidence = self.tree_evidence(ctx, end.index);
            judged::judge_tree(record, &plan, evidence);
        }
        if plan.verify.is_empty() || !record.problems.is_empty() {
            if !plan.verify.is_empty() {
                record
                    .problems
                    .push("the verification commands were not run: the evidence was already short".into());
            }
            return self.review_or_conclude(ctx, end, plan);
        }
        self.next_gate(ctx, end, plan, 0)
    }

    /// A verification command's child is done: its result, then the next command or the
    /// verdict.
    pub fn finish_gate(&mut self, ctx: &mut Ctx, mut child: ChildRun) -> AfterAgent {
        let Some(gate) = child.gate.take() else {
            return AfterAgent::Done(Box::new(self.finish_child(ctx, child)));
        };
        if gate.review.is_some() {
            return self.finish_review(ctx, child, *gate);
        }
        let Gate {
            mut end,
            plan,
            at,
            timed_out,
            cwd,
            tree_state,
            log,
            ..
        } = *gate;
        let command = &plan.verify[at];
        let exit = self.reaper.exit_of(child.pid).cloned();
        self.reaper.forget(child.pid);
        crate::sandbox::step::remove_tmpdir(&ctx.cfg, end.index);
        let tail = crate::step::end::excerpt(&[child.io.stdout_tail.bytes(), child.io.stderr_tail.bytes()].concat());
        let stopped = self.requests.ending().is_some();
        let mut status = match &exit {
            _ if timed_out => VerifyStatus::TimedOut,
            _ if stopped => VerifyStatus::Stopped,
            Some(ExitInfo { code: Some(0), .. }) => VerifyStatus::Passed,
            _ => VerifyStatus::Failed,
        };
        // G80: a typed gate's output is the step's structured value, once it is the JSON its
        // schema asks for.
        let mut error = None;
        if command.json && status == VerifyStatus::Passed {
            match typed_output(&child, command) {
                Ok(value) => end.structured = Some(value),
                Err(why) => {
                    status = VerifyStatus::Failed;
                    error = Some(why);
                }
            }
        }
        let result = VerifyResult {
            id: command.id.clone(),
            command: command.command.clone(),
            cwd,
            status,
            exit_code: exit.as_ref().and_then(|e| e.code),
            signal: exit.as_ref().and_then(ExitInfo::signal_name),
            duration_ms: sublaunch_protocol::os::clock::elapsed_ms(child.started, Instant::now()),
            output_file: Some(ctx.paths.run.join(&log).to_string_lossy().into_owned()),
            output_tail: tail,
            error,
            memoized: false,
            tree_state,
        };
        // A typed gate's value is the step's, so it is never taken from the memo.
        if let Some(state) = &result.tree_state
            && !command.json
            && matches!(result.status, VerifyStatus::Passed | VerifyStatus::Failed)
        {
            self.verified
                .insert(memo_key(&result.cwd, &result.command, state), result.clone());
        }
        // The run's stop (or timeout) during verification ends the step as it ends agents.
        self.apply_requests_to(&mut end);
        let failed = result.status != VerifyStatus::Passed;
        // D4: each gate's verdict is a lifecycle event.
        ctx.publish(What::Gate {
            step: end.index,
            gate: result.id.clone(),
            passed: !failed,
        });
        end.acceptance
            .get_or_insert_with(|| judged::new_record(&plan))
            .verify
            .push(result);
        if failed || at + 1 >= plan.verify.len() || self.requests.ends_run() {
            return self.review_or_conclude(ctx, *end, plan);
        }
        self.next_gate(ctx, *end, plan, at + 1)
    }

    /// Runs `plan.verify[at..]` from the memo while it can, then starts the first one that
    /// must really run.
    fn next_gate(&mut self, ctx: &mut Ctx, mut end: StepEnd, plan: AcceptancePlan, mut at: usize) -> AfterAgent {
        let index = end.index;
        let cwd = ctx.cfg.step_cwd(index).to_owned();
        while at < plan.verify.len() {
            let command = plan.verify[at].clone();
            // The tree's state costs a few git commands: asked only when another step could
            // take this command's end from the memo.
            let state = if memo_worth(ctx, index, &command) {
                self.tree_state(ctx, index)
            } else {
                None
            };
            let remembered = state
                .as_ref()
                .filter(|_| !command.json)
                .and_then(|state| self.verified.get(&memo_key(&cwd, &command.command, state)))
                .cloned();
            if let Some(mut result) = remembered {
                result.id.clone_from(&command.id);
                result.memoized = true;
                let failed = result.status != VerifyStatus::Passed;
                ctx.publish(What::Gate {
                    step: end.index,
                    gate: result.id.clone(),
                    passed: !failed,
                });
                record_of(&mut end, &plan).verify.push(result);
                if failed {
                    break;
                }
                at += 1;
                continue;
            }
            match self.spawn_gate(ctx, &end, &command, &cwd) {
                Ok((mut child, log)) => {
                    let event = sublaunch_protocol::records::events::step_verifying(
                        ctx.now_wall(),
                        &ctx.cfg.id,
                        index,
                        &command.id,
                        &command.command,
                        &log,
                    );
                    self.events.append(&end.with_position(event));
                    let limit = command.timeout_ms.map_or(DEFAULT_TIMEOUT, Duration::from_millis);
                    child.gate = Some(Box::new(Gate {
                        end: Box::new(end),
                        plan,
                        at,
                        deadline: Instant::now() + limit,
                        timed_out: false,
                        cwd,
                        tree_state: state,
                        log,
                        review: None,
                    }));
                    return AfterAgent::Verifying(Box::new(child));
                }
                Err(error) => {
                    record_of(&mut end, &plan).verify.push(VerifyResult {
                        id: command.id.clone(),
                        command: command.command.clone(),
                        cwd: cwd.clone(),
                        status: VerifyStatus::NotStarted,
                        exit_code: None,
                        signal: None,
                        duration_ms: 0,
                        output_file: None,
                        output_tail: String::new(),
                        error: Some(error),
                        memoized: false,
                        tree_state: state,
                    });
                    break;
                }
            }
        }
        self.review_or_conclude(ctx, end, plan)
    }

    /// The checks and commands are done: the reviewer starts when the contract has one and
    /// they passed (G81); otherwise the verdict.
    fn review_or_conclude(&mut self, ctx: &mut Ctx, mut end: StepEnd, plan: AcceptancePlan) -> AfterAgent {
        let Some(gate) = plan.review.clone() else {
            return AfterAgent::Done(Box::new(conclude(end, &plan)));
        };
        let record = record_of(&mut end, &plan);
        judged::judge_command_claims(record);
        judged::conclude(record, &plan);
        // A rejected step needs no review; a run that ends starts nothing more.
        if record.status == EvidenceStatus::Rejected || self.requests.ends_run() {
            return AfterAgent::Done(Box::new(conclude(end, &plan)));
        }
        match self.spawn_reviewer(ctx, &end, &plan) {
            Ok((mut child, log, diff_cut)) => {
                let event = sublaunch_protocol::records::events::step_verifying(
                    ctx.now_wall(),
                    &ctx.cfg.id,
                    end.index,
                    "review",
                    &format!("review by {}", gate.agent),
                    &log,
                );
                self.events.append(&end.with_position(event));
                let cwd = ctx.cfg.step_cwd(end.index).to_owned();
                child.gate = Some(Box::new(Gate {
                    end: Box::new(end),
                    plan,
                    at: 0,
                    deadline: Instant::now() + DEFAULT_TIMEOUT,
                    timed_out: false,
                    cwd,
                    tree_state: None,
                    log,
                    review: Some(ReviewRun {
                        agent: gate.agent,
                        required: gate.required,
                        diff_cut,
                    }),
                }));
                AfterAgent::Verifying(Box::new(child))
            }
            Err(error) => {
                record_of(&mut end, &plan).review = Some(ReviewRecord {
                    agent: gate.agent,
                    required: gate.required,
                    status: ReviewStatus::NotStarted,
                    verdict: None,
                    findings: Vec::new(),
                    findings_problems: Vec::new(),
                    error: Some(format!("the reviewer could not start: {error}")),
                    output_file: None,
                    exit_code: None,
                    signal: None,
                    duration_ms: 0,
                    diff_cut: false,
                });
                AfterAgent::Done(Box::new(conclude(end, &plan)))
            }
        }
    }

    /// Starts the reviewer of the step of `end` (G81) in the step's directory and sandbox,
    /// told the task, the criteria and the diff; the child, its log's name and whether the
    /// diff was cut.
    fn spawn_reviewer(
        &mut self,
        ctx: &mut Ctx,
        end: &StepEnd,
        plan: &AcceptancePlan,
    ) -> Result<(ChildRun, String, bool), String> {
        let index = end.index;
        let step = ctx.cfg.steps[index].clone();
        let reviewer = step
            .reviewer
            .as_deref()
            .ok_or("the runner's configuration has no reviewer for the step")?;
        let adapter = reviewer.adapter.as_ref().map_or(AdapterId::Shell, |spec| spec.id);
        // A shell step's task is a script: the prompt must never become one.
        if matches!(adapter, AdapterId::Shell | AdapterId::ExternalJob) {
            return Err(format!(
                "its adapter ({adapter}) runs its task as a script, not as a prompt"
            ));
        }
        let start = match self.tree_starts.get(&index) {
            Some(Ok(start)) => start.clone(),
            Some(Err(error)) => return Err(format!("the step's diff cannot be read: {error}")),
            None => return Err("the step's start was not recorded".into()),
        };
        let diff = tree::diff(place(ctx, index), &start, REVIEW_DIFF_CAP)
            .map_err(|e| format!("the step's diff cannot be read: {e}"))?;
        let task = judged::review_prompt(plan, step.task.as_deref().unwrap_or_default(), &diff.text, diff.cut);
        let cwd = ctx.cfg.step_cwd(index).to_owned();
        let input = StepInput {
            // The reviewer's own files (system prompt, session) never meet its step's.
            index: ctx.cfg.steps.len() + index,
            step: reviewer,
            spec: reviewer.adapter.as_ref(),
            task: &task,
            script_values: None,
            cwd: &cwd,
            run: self.book.run(),
            live: LiveOptions {
                cost_cap_usd: None,
                streamed_input: false,
                project_config: ctx.cfg.project_config,
            },
        };
        let parser = adapter::parser(adapter, &input);
        let mut command = adapter::command(adapter, &input)
            .and_then(|command| adapter::check_argv(&command.argv).map(|()| command))?;
        let sandbox = crate::sandbox::step::prepare(&ctx.cfg, index, adapter, &ctx.paths.run, &ctx.paths.root)?;
        if let Some(prepared) = &sandbox {
            crate::sandbox::step::environment(&mut command, prepared);
        }
        let policy = crate::step::spawn::ContainmentPolicy {
            required: ctx.cfg.containment_required || sandbox.as_ref().is_some_and(|p| !p.applied.best_effort),
            refuse: ctx.faults.refuse_containment(),
            placed: false,
            vendor_sandbox: crate::adapter::codex::uses_own_sandbox(adapter, reviewer),
        };
        let program = command.argv.first().cloned().unwrap_or_default();
        let spawned = crate::step::spawn::spawn(&command, ctx.cfg.agent_umask, policy, sandbox.as_ref())
            .map_err(|e| format!("cannot start '{program}': {e}"))?;
        match spawned.init {
            Some((init, status)) => self.reaper.watch_contained(spawned.pid, init, status),
            None => self.reaper.watch(spawned.pid),
        }
        let log = review_log_name(index);
        let io = ChildIo::new(
            Pipe::new(spawned.stdout, parser.line_retain_limit()),
            Pipe::new(spawned.stderr, TEXT_LINE_RETAIN),
            parser,
            OutputLog::open_named(self.run_dir(), &log, self.log_cap),
        );
        Ok((
            ChildRun::started(
                index,
                format!("{} review by {}", end.agent, reviewer.agent.as_deref().unwrap_or("?")),
                spawned.pid,
                ctx.now_wall(),
                io,
                None,
                spawned.containment,
                spawned.host_pid,
            ),
            log,
            diff.cut,
        ))
    }

    /// The reviewer's child is done (G81): its findings, or why it gave none, then the
    /// verdict.
    fn finish_review(&mut self, ctx: &mut Ctx, mut child: ChildRun, gate: Gate) -> AfterAgent {
        let Gate {
            mut end,
            plan,
            timed_out,
            log,
            review,
            ..
        } = gate;
        let Some(review) = review else {
            return AfterAgent::Done(Box::new(conclude(*end, &plan)));
        };
        let exit = self.reaper.exit_of(child.pid).cloned();
        self.reaper.forget(child.pid);
        crate::sandbox::step::remove_tmpdir(&ctx.cfg, end.index);
        let stopped = self.requests.ending().is_some();
        let tail = child.io.stdout_tail.bytes();
        let tail_cut = child.io.stdout.total() > tail.len() as u64;
        let extracted = child.io.parser.finish(&tail, tail_cut);
        let mut record = ReviewRecord {
            agent: review.agent,
            required: review.required,
            status: ReviewStatus::Failed,
            verdict: None,
            findings: Vec::new(),
            findings_problems: Vec::new(),
            error: None,
            output_file: Some(ctx.paths.run.join(&log).to_string_lossy().into_owned()),
            exit_code: exit.as_ref().and_then(|e| e.code),
            signal: exit.as_ref().and_then(ExitInfo::signal_name),
            duration_ms: sublaunch_protocol::os::clock::elapsed_ms(child.started, Instant::now()),
            diff_cut: review.diff_cut,
        };
        let how = match (&record.exit_code, &record.signal) {
            (Some(code), _) => format!("exit {code}"),
            (None, Some(signal)) => format!("killed by {signal}"),
            _ => "no exit status".to_owned(),
        };
        let error = if timed_out {
            Some(format!("the reviewer ran out of time ({how})"))
        } else if stopped {
            record.status = ReviewStatus::Stopped;
            Some("the reviewer was stopped with the run".to_owned())
        } else if record.exit_code != Some(0) {
            Some(format!("the reviewer failed ({how})"))
        } else if let Some(failure) = &extracted.failure {
            Some(format!("the reviewer failed: {failure}"))
        } else {
            match sublaunch_protocol::acceptance::review::extract(&extracted.output) {
                None => Some("the reviewer's answer has no review-findings block".to_owned()),
                Some(Err(problems)) => {
                    let first = problems.first().map(ToString::to_string).unwrap_or_default();
                    record.findings_problems = problems;
                    Some(format!("the reviewer's review-findings block is unusable ({first})"))
                }
                Some(Ok(findings)) => {
                    record.status = if findings.passes() {
                        ReviewStatus::Passed
                    } else {
                        ReviewStatus::Rejected
                    };
                    record.verdict = Some(findings.verdict);
                    record.findings = findings.findings;
                    None
                }
            }
        };
        record.error = error;
        self.apply_requests_to(&mut end);
        record_of(&mut end, &plan).review = Some(record);
        AfterAgent::Done(Box::new(conclude(*end, &plan)))
    }

    /// Starts `command` for the step of `end`; the child and its log's name.
    fn spawn_gate(
        &mut self,
        ctx: &mut Ctx,
        end: &StepEnd,
        command: &VerifyCommand,
        cwd: &str,
    ) -> Result<(ChildRun, String), String> {
        let index = end.index;
        let sandbox =
            crate::sandbox::step::prepare(&ctx.cfg, index, AdapterId::Shell, &ctx.paths.run, &ctx.paths.root)?;
        let mut agent_command = AgentCommand {
            argv: vec!["sh".into(), "-c".into(), "--".into(), command.command.clone()],
            env: std::collections::BTreeMap::new(),
            cwd: cwd.to_owned(),
            stdin: None,
            clear_env: false,
            streamed_stdin: false,
        };
        if let Some(prepared) = &sandbox {
            crate::sandbox::step::environment(&mut agent_command, prepared);
        }
        let policy = crate::step::spawn::ContainmentPolicy {
            required: ctx.cfg.containment_required || sandbox.as_ref().is_some_and(|p| !p.applied.best_effort),
            refuse: ctx.faults.refuse_containment(),
            placed: false,
            vendor_sandbox: false,
        };
        let spawned = crate::step::spawn::spawn(&agent_command, ctx.cfg.agent_umask, policy, sandbox.as_ref())
            .map_err(|e| format!("cannot start sh: {e}"))?;
        match spawned.init {
            Some((init, status)) => self.reaper.watch_contained(spawned.pid, init, status),
            None => self.reaper.watch(spawned.pid),
        }
        let log = gate_log_name(index, &command.id);
        let io = ChildIo::new(
            Pipe::new(spawned.stdout, TEXT_LINE_RETAIN),
            Pipe::new(spawned.stderr, TEXT_LINE_RETAIN),
            Box::new(TextParser),
            OutputLog::open_named(self.run_dir(), &log, self.log_cap),
        );
        Ok((
            ChildRun::started(
                index,
                format!("{} gate {}", end.agent, command.id),
                spawned.pid,
                ctx.now_wall(),
                io,
                None,
                spawned.containment,
                spawned.host_pid,
            ),
            log,
        ))
    }

    /// What git shows of step `index`'s work since its start.
    fn tree_evidence(&self, ctx: &Ctx, index: usize) -> Result<Option<TreeEvidence>, String> {
        let Some(start) = self.tree_starts.get(&index) else {
            return Err("the step's start was not recorded".into());
        };
        let start = match start {
            Ok(start) => start,
            Err(TreeError::NotGit { .. }) => return Ok(None),
            Err(error) => return Err(error.to_string()),
        };
        match tree::facts(place(ctx, index), start) {
            Ok(facts) => Ok(Some(TreeEvidence {
                changed_files: facts.changed_files,
                staged_files: facts.staged_files,
                tests_touched: facts.tests_touched,
                insertions: facts.insertions,
                deletions: facts.deletions,
            })),
            Err(TreeError::NotGit { .. }) => Ok(None),
            Err(error) => Err(error.to_string()),
        }
    }

    /// The state of step `index`'s tree now (`None`: not in git, or git could not say).
    fn tree_state(&self, ctx: &Ctx, index: usize) -> Option<String> {
        let start: &StartPoint = self.tree_starts.get(&index)?.as_ref().ok()?;
        tree::facts(place(ctx, index), start).ok().map(|facts| facts.state_key)
    }
}

/// A typed gate's output, parsed and checked against its schema (G80).
fn typed_output(child: &ChildRun, command: &VerifyCommand) -> Result<serde_json::Value, String> {
    let stdout = child.io.stdout_tail.bytes();
    if child.io.stdout.total() > stdout.len() as u64 {
        return Err(format!(
            "printed more than {} bytes; a typed gate's output is one JSON value",
            stdout.len()
        ));
    }
    let schema = match &command.schema {
        Some(text) => serde_json::from_str(text).map_err(|e| format!("has a schema that is not JSON: {e}"))?,
        None => serde_json::json!({}),
    };
    crate::step::validator::check(&String::from_utf8_lossy(&stdout), &schema)
        .map_err(|e| e.message(&format!("the gate '{}'", command.id)))
}

/// Whether `command` of step `index` may be run again on the same tree in this run: another
/// step in the same directory has the same command (a typed gate's value is never memoised).
fn memo_worth(ctx: &Ctx, index: usize, command: &VerifyCommand) -> bool {
    if command.json {
        return false;
    }
    let cwd = ctx.cfg.step_cwd(index);
    let same = |(i, step): &(usize, &sublaunch_protocol::records::config::StepConfig)| {
        ctx.cfg.step_cwd(*i) == cwd
            && step
                .acceptance
                .as_ref()
                .is_some_and(|plan| plan.verify.iter().any(|v| !v.json && v.command == command.command))
    };
    ctx.cfg.steps.iter().enumerate().filter(same).count() > 1
}

/// The step's directory as git sees it: its managed worktree, or the user's checkout.
fn place(ctx: &Ctx, index: usize) -> Place<'_> {
    match &ctx.cfg.steps[index].worktree {
        Some(worktree) => Place::Worktree(worktree),
        None => Place::Checkout(Path::new(ctx.cfg.step_cwd(index))),
    }
}

/// The end with its acceptance record concluded (G79).
fn conclude(mut end: StepEnd, plan: &AcceptancePlan) -> StepEnd {
    let record = end.acceptance.get_or_insert_with(|| judged::new_record(plan));
    judged::judge_command_claims(record);
    judged::conclude(record, plan);
    judged::judge_review(record, plan);
    end
}

/// The acceptance record of `end`, made when it has none yet.
fn record_of<'e>(
    end: &'e mut StepEnd,
    plan: &AcceptancePlan,
) -> &'e mut sublaunch_protocol::records::acceptance::AcceptanceRecord {
    end.acceptance.get_or_insert_with(|| judged::new_record(plan))
}

/// `review-<step>.log`: the reviewer's output (G81).
pub fn review_log_name(index: usize) -> String {
    format!("review-{index}.log")
}

/// `gate-<step>-<id>.log`.
pub fn gate_log_name(index: usize, id: &str) -> String {
    format!("gate-{index}-{id}.log")
}

fn memo_key(cwd: &str, command: &str, state: &str) -> String {
    format!("{cwd}\0{command}\0{state}")
}
