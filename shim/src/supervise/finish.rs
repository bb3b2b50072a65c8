//! The end of an agent that is done: its exit and the run's requests, its output judged by
//! the adapter's verdict, its budget, the copy of its answer, its worktree, and its writer
//! record (R13).

use super::launch::step_end;
use super::{Request, StopBy, Supervisor};
use crate::context::Ctx;
use crate::context::faults::Fired;
use crate::process::reaper::ExitInfo;
use crate::process::tree::Ladder;
use crate::step::child::ChildRun;
use crate::step::end::{RemoteEnd, StepEnd, process_tree};
use std::time::Instant;
use sublaunch_protocol::os::faults::ShimPoint;
use sublaunch_protocol::os::random::uuid_v4;
use sublaunch_protocol::records::proof::WriterRecord;
use sublaunch_protocol::records::status::RunState;

impl Supervisor {
    /// The end of an agent that [`ChildRun::is_done`]: exit, requests, output, writer record.
    pub fn finish_child(&mut self, ctx: &mut Ctx, mut child: ChildRun) -> StepEnd {
        let step = ctx.cfg.steps[child.index].clone();
        let ended_wall = ctx.now_wall();
        let mut end = StepEnd {
            pid: Some(child.host_pid),
            containment: Some(child.containment.as_str()),
            exit: self.reaper.exit_of(child.pid).cloned(),
            ..step_end(ctx, child.index, child.started_wall)
        };
        self.apply_requests_to(&mut end);
        end.sandbox = self
            .book
            .status
            .steps
            .as_ref()
            .and_then(|s| s.get(child.index))
            .and_then(|s| s.facts.sandbox.clone());
        crate::sandbox::step::remove_tmpdir(&ctx.cfg, child.index);
        end.drained = child
            .killer
            .as_ref()
            .is_some_and(|k| k.ladder() == Ladder::Drain && k.signalled());
        end.cancel = child.cancel.take();
        end.protocol = child.protocol.take();
        let tail = child.io.stdout_tail.bytes();
        let tail_cut = child.io.stdout.total() > tail.len() as u64;
        let spent = child.io.parser.spent();
        child.spent = spent.clone();
        if spent.rate_limited.is_some() && spent.rate_limited != child.rate_limited {
            // Reported in the agent's last lines, after the loop last looked.
            self.check_rate_limits(ctx, std::slice::from_mut(&mut child));
        }
        end.rate_limited.clone_from(&spent.rate_limited);
        end.worked = spent.worked;
        end.rate_limit_stopped = child.rate_limit_stop;
        end.ledgered = std::mem::take(&mut child.ledgered);
        // D2: what the agent said before an end without its final answer.
        let partial = (!child.io.parser.answered())
            .then(|| child.io.parser.partial())
            .flatten();
        let mut extracted = child.io.parser.finish(&tail, tail_cut);
        // An agent stopped before its final event still reported what it spent so far.
        if extracted.usage.is_none() {
            extracted.usage.clone_from(&spent.usage);
        }
        end.budget = child
            .budget
            .take()
            .or_else(|| self.final_budget_check(ctx, child.index, &extracted, &spent));
        if let Some(usage) = &extracted.usage {
            self.run_spent.add(usage);
        }
        end.remote = child.remote.as_ref().map(|r| RemoteEnd {
            placement: r.placement.clone(),
            state: r.state.borrow().clone(),
        });
        crate::step::verdict::judge(&mut end, &step, extracted);
        if let Some(text) = partial.filter(|_| end.state() != RunState::Complete) {
            end.output = text;
            end.output_partial = true;
        }
        if let Some(path) = &step.output_file
            && end.state() == RunState::Complete
        {
            let answer = crate::step::placeholders::handoff(&end);
            match crate::step::output_file::write(path, &answer, ctx.cfg.agent_umask) {
                Ok(()) => end.output_file = Some(path.clone()),
                Err(problem) => {
                    end.validation = Some(format!("The step completed, but its answer {problem}."));
                    end.validation_kind = Some(sublaunch_protocol::records::failure::FailureKind::OutputInvalid);
                }
            }
        }
        if let Some(worktree) = &step.worktree {
            let start = self
                .worktree_heads
                .get(&worktree.path)
                .unwrap_or(&worktree.base_commit)
                .clone();
            let left = crate::step::worktree::capture(worktree, ctx.cfg.step_cwd(child.index), &start);
            if let Some(head) = &left.head {
                self.worktree_heads.insert(worktree.path.clone(), head.clone());
            }
            end.worktree = Some(left);
        }
        end.stderr_tail = child.io.stderr_tail.bytes();
        end.stdout_bytes = child.io.stdout.total();
        end.stderr_bytes = child.io.stderr.total();
        end.ended_wall = ended_wall;
        end.duration_ms = sublaunch_protocol::os::clock::elapsed_ms(child.started, Instant::now());
        let outcome = child.killer.as_ref().and_then(|k| k.outcome().cloned());
        end.writer = Some(WriterRecord {
            process_instance_id: uuid_v4(ctx.os.random.as_ref()),
            attempt: 0,
            close_observed_at: ended_wall,
            exit_code: end.exit.as_ref().and_then(|e| e.code),
            signal: end.exit.as_ref().and_then(ExitInfo::signal_name),
            process_tree: process_tree(child.pid, outcome, &child.swept.take().unwrap_or_default()),
            extra: serde_json::Map::new(),
        });
        self.reaper.forget(child.pid);
        if let Fired::Stopped(signal) = ctx.fire(ShimPoint::AfterAgentExit) {
            self.requests.receive(Request::Stop(StopBy::Signal(signal)));
        }
        end
    }
}
