//! Starting a step's agent (R10): the step's status entry, its command from the adapter (placed
//! on its machine when the plan says so), the spawn, and the agent's pipes and parser; the
//! end of a step that cannot start or never runs.

use super::{Request, StopBy, Supervisor};
use crate::adapter::{self, ScriptValues, StepInput, TEXT_LINE_RETAIN};
use crate::context::Ctx;
use crate::context::faults::Fired;
use crate::process::input::AgentInput;
use crate::process::pipe::Pipe;
use crate::process::streams::OutputLog;
use crate::step::child::{ChildIo, ChildRun};
use crate::step::end::StepEnd;
use std::time::Instant;
use sublaunch_protocol::os::faults::ShimPoint;
use sublaunch_protocol::records::events;
use sublaunch_protocol::records::lease::WriterState;
use sublaunch_protocol::records::step_record::ExternalProcess;

impl Supervisor {
    /// The end of step `index` when it never runs (`reason`: `Not run: …`).
    pub fn not_run(ctx: &Ctx, index: usize, reason: &str) -> StepEnd {
        StepEnd {
            not_run: Some(reason.to_owned()),
            closed: true,
            ended_wall: ctx.now_wall(),
            ..step_end(ctx, index, ctx.now_wall())
        }
    }

    /// Starts step `index` with its substituted `task`. A step that cannot start (the run is
    /// ending, the command cannot be built, the spawn fails) returns its end at once.
    pub fn start_child(
        &mut self,
        ctx: &mut Ctx,
        index: usize,
        task: &str,
        script_values: Option<&ScriptValues>,
    ) -> Result<ChildRun, Box<StepEnd>> {
        let adapter = adapter::for_step(&ctx.cfg, index);
        let started = Instant::now();
        let step = ctx.cfg.steps[index].clone();
        let mut end = step_end(ctx, index, ctx.now_wall());
        if let Fired::Stopped(signal) = ctx.fire(ShimPoint::BeforeAgentSpawn) {
            self.requests.receive(Request::Stop(StopBy::Signal(signal)));
        }
        if self.run_is_ending() {
            self.apply_requests_to(&mut end);
            end.ended_wall = ctx.now_wall();
            return Err(Box::new(end));
        }
        self.step_running(ctx, index, end.started_wall);
        // G77: where the step's work starts, before its agent can change anything.
        self.note_tree_start(ctx, index);
        let event = events::step_started(ctx.now_wall(), &ctx.cfg.id, end.index, &end.agent);
        self.events.append(&end.with_position(event));
        // D4: and in the state root's event stream.
        ctx.publish(sublaunch_protocol::records::stream::What::StepStarted {
            step: end.index,
            agent: end.agent.clone(),
        });
        ctx.set_writer(WriterState::Spawning, None);
        let spec = step.adapter.clone();
        let cwd = ctx.cfg.step_cwd(index).to_owned();
        let live = adapter::LiveOptions {
            cost_cap_usd: self.cost_cap(ctx, &step),
            streamed_input: self.checkpoint.is_some() && step.placement.is_none() && adapter.takes_input(),
            project_config: ctx.cfg.project_config,
        };
        // G76: an agent (not shell code) asked for an acceptance report is told what it must
        // show and in which shape.
        let task = match step
            .acceptance
            .as_ref()
            .filter(|plan| plan.report && !adapter.runs_shell_code())
        {
            Some(plan) => format!("{task}\n{}", crate::step::acceptance::prompt_section(plan)),
            None => task.to_owned(),
        };
        let task = task.as_str();
        // pi reads its files as arguments (outside its RPC mode); every other agent is told
        // which to read.
        let task = if adapter.takes_file_arguments() && !live.streamed_input {
            task.to_owned()
        } else {
            crate::adapter::reads::with_preamble(task, &step.reads)
        };
        let input = StepInput {
            index,
            step: &step,
            spec: spec.as_ref(),
            task: &task,
            script_values,
            cwd: &cwd,
            run: self.book.run(),
            live,
        };
        let parser = adapter::parser(adapter, &input);
        let built =
            adapter::command(adapter, &input).and_then(|command| adapter::check_argv(&command.argv).map(|()| command));
        // J11: a cluster step of a run that stays here runs through `srun`.
        let built = match (built, &step.cluster) {
            (Ok(command), Some(cluster)) => Ok(crate::remote::srun::wrap(
                command,
                cluster,
                &crate::remote::srun::job_name(&ctx.cfg.id, index),
            )),
            (built, _) => built,
        };
        let (built, parser, remote) = match (built, step.placement.clone()) {
            (Ok(command), Some(placement)) => match crate::remote::place(command, placement, adapter, parser) {
                Ok((command, parser, remote)) => (Ok(command), parser, Some(remote)),
                Err(error) => (Err(error), adapter::parser(adapter, &input), None),
            },
            (built, _) => (built, parser, None),
        };
        // The OS sandbox (G28): prepared before the fork, applied in the forked agent.
        let sandbox = crate::sandbox::step::prepare(&ctx.cfg, index, adapter, &ctx.paths.run, &ctx.paths.root);
        if let Ok(Some(prepared)) = &sandbox {
            self.note_sandbox(index, &prepared.applied);
            end.sandbox = Some(prepared.applied.clone());
        }
        let spawned = built.and_then(|mut command| {
            let prepared = sandbox?;
            if let Some(prepared) = &prepared {
                crate::sandbox::step::environment(&mut command, prepared);
            }
            let policy = crate::step::spawn::ContainmentPolicy {
                // G49: a sandboxed tree is always contained, unless the user accepted best effort.
                required: ctx.cfg.containment_required || prepared.as_ref().is_some_and(|p| !p.applied.best_effort),
                refuse: ctx.faults.refuse_containment(),
                // G48: a placed step's ssh keeps its ControlMaster for later launches.
                placed: step.placement.is_some(),
                vendor_sandbox: crate::adapter::codex::uses_own_sandbox(adapter, &step),
            };
            crate::step::spawn::spawn(&command, ctx.cfg.agent_umask, policy, prepared.as_ref())
                .map(|spawned| (spawned, command.stdin))
                .map_err(|e| spawn_error(&command.argv, &e))
        });
        let (spawned, first_input) = match spawned {
            Ok(spawned) => spawned,
            Err(error) => {
                ctx.set_writer(WriterState::None, None);
                crate::sandbox::step::remove_tmpdir(&ctx.cfg, index);
                end.spawn_error = Some(error);
                end.ended_wall = ctx.now_wall();
                end.duration_ms = sublaunch_protocol::os::clock::elapsed_ms(started, Instant::now());
                return Err(Box::new(end));
            }
        };
        let pid = spawned.pid;
        // G43: which containment it got, for its records.
        let containment = spawned.containment;
        // G36: without a namespace an offline agent has no network namespace either.
        if containment == crate::process::namespace::Containment::ProcessGroup
            && let Some(applied) = end.sandbox.as_mut()
            && crate::sandbox::lost_network_namespace(applied)
        {
            let applied = applied.clone();
            self.note_sandbox(index, &applied);
        }
        ctx.set_writer(WriterState::Running, Some(pid));
        match spawned.init {
            Some((init, status)) => self.reaper.watch_contained(pid, init, status),
            None => self.reaper.watch(pid),
        }
        self.note_pid(ctx, index, spawned.host_pid, spawned.containment, spawned.fallback);
        let mut io = ChildIo::new(
            Pipe::new(spawned.stdout, parser.line_retain_limit()),
            Pipe::new(spawned.stderr, TEXT_LINE_RETAIN),
            parser,
            OutputLog::open(self.run_dir(), index, self.log_cap),
        );
        io.input = spawned
            .stdin
            .map(|fd| AgentInput::new(fd, first_input.unwrap_or_default()));
        let mut child = ChildRun::started(
            index,
            end.agent,
            pid,
            end.started_wall,
            io,
            remote,
            containment,
            spawned.host_pid,
        );
        // Its time counts from before the spawn, as its step's does.
        child.started = started;
        Ok(child)
    }

    fn step_running(&mut self, ctx: &Ctx, index: usize, wall: u64) {
        let output_file = ctx
            .paths
            .run
            .join(sublaunch_protocol::files::layout::names::output_log(index));
        let status = &mut self.book.status;
        status.current_step = u32::try_from(index).ok();
        status.last_update = Some(wall);
        status.output_file = Some(output_file.to_string_lossy().into_owned());
        if let Some(step) = status.steps.as_mut().and_then(|s| s.get_mut(index)) {
            step.status = Some("running".into());
            step.started_at = Some(wall);
            step.agent.get_or_insert_with(|| ctx.agent_name(index));
            // Recorded at the start, not only at the end: a reader of a running step (the live
            // display) needs it to read the agent's event stream as text.
            step.facts
                .adapter
                .get_or_insert_with(|| adapter::for_step(&ctx.cfg, index).to_string());
        }
        // Written with the agent's pid right after the spawn (`note_pid`), or with the step's
        // end when it cannot start: one status write per step start instead of two.
        self.book.changed();
    }

    /// Records the sandbox the agent is about to run in; written with its pid.
    fn note_sandbox(&mut self, index: usize, applied: &sublaunch_protocol::records::sandbox::AppliedSandbox) {
        if let Some(step) = self.book.status.steps.as_mut().and_then(|s| s.get_mut(index)) {
            step.facts.sandbox = Some(applied.clone());
        }
    }

    fn note_pid(
        &mut self,
        ctx: &Ctx,
        index: usize,
        pid: u32,
        containment: crate::process::namespace::Containment,
        fallback: Option<String>,
    ) {
        let wall = ctx.now_wall();
        if let Some(step) = self.book.status.steps.as_mut().and_then(|s| s.get_mut(index)) {
            // The start identity lets whoever finds this runner dead end the agent's group
            // without ever signalling a process that reused the pid (X8).
            let identity = sublaunch_protocol::procinfo::start_identity(pid).ok().flatten();
            step.external_process = Some(ExternalProcess {
                pid,
                started_at: Some(wall),
                start_identity: identity,
                containment: Some(containment.as_str().to_owned()),
                containment_note: fallback,
                ..ExternalProcess::default()
            });
        }
        self.book.update();
    }
}

/// The end of step `index`, started at `started_wall`, as far as it is known before it runs.
pub(super) fn step_end(ctx: &Ctx, index: usize, started_wall: u64) -> StepEnd {
    StepEnd {
        index,
        agent: ctx.agent_name(index),
        position: ctx
            .cfg
            .steps
            .get(index)
            .map_or((None, None), |s| (s.step_index, s.task_index)),
        adapter: adapter::for_step(&ctx.cfg, index).to_string(),
        tag: ctx.cfg.steps.get(index).and_then(|s| s.label.clone()),
        phase: ctx.cfg.steps.get(index).and_then(|s| s.phase.clone()),
        started_wall,
        ..StepEnd::default()
    }
}

/// An OS spawn error, saying which program and, when it was not found, where it was looked for.
fn spawn_error(argv: &[String], error: &std::io::Error) -> String {
    let program = argv.first().map_or("", String::as_str);
    if error.kind() == std::io::ErrorKind::NotFound && !program.contains('/') {
        format!("Cannot start '{program}': {error}. Is it installed and on PATH?")
    } else {
        format!("Cannot start '{program}': {error}")
    }
}
