//! The checkpoint before the deadline: agents that take messages are asked, once, to wrap up
//! a configured time before the run's deadline.

use super::Supervisor;
use crate::adapter;
use crate::context::Ctx;
use crate::step::child::ChildRun;
use std::time::{Duration, Instant};
use sublaunch_protocol::records::config::InputFormat;
use sublaunch_protocol::records::events;

impl Supervisor {
    /// When the agents are asked to wrap up: the checkpoint's time before the deadline.
    pub(super) fn checkpoint_at(&self) -> Option<Instant> {
        let (deadline, _) = self.deadline?;
        let before = Duration::from_millis(self.checkpoint?);
        Some(deadline.checked_sub(before).unwrap_or(self.started))
    }

    /// Writes the checkpoint to every running agent that takes messages, once, when it is
    /// due and the agent has not answered yet.
    pub(super) fn checkpoint_due(&mut self, ctx: &Ctx, running: &mut [ChildRun], now: Instant) {
        let (Some(at), Some(ms)) = (self.checkpoint_at(), self.checkpoint) else {
            return;
        };
        if now < at {
            return;
        }
        for child in running.iter_mut() {
            if child.io.checkpointed || !ask(ctx, child, &checkpoint_message(ms)) {
                continue;
            }
            child.io.checkpointed = true;
            let event = events::step_checkpoint(ctx.now_wall(), &ctx.cfg.id, child.index, &child.agent, ms);
            self.events.append(&event);
        }
    }
}

/// Writes `text` to the input of an agent that takes messages and has not answered yet; says
/// whether it could be asked.
pub(super) fn ask(ctx: &Ctx, child: &mut ChildRun, text: &str) -> bool {
    let io = &mut child.io;
    if io.parser.answered() || child.exit_seen.is_some() {
        return false;
    }
    let Some(input) = io.input.as_mut().filter(|i| i.is_open() && !i.closing()) else {
        return false;
    };
    io.parser.input_sent();
    input.send(&match adapter::for_step(&ctx.cfg, child.index).input_format() {
        Some(InputFormat::PiRpc) => crate::adapter::pi_rpc_line("steer", text),
        _ => crate::adapter::claude_user_line(text),
    });
    true
}

/// What an agent is told when the deadline nears.
fn checkpoint_message(ms: u64) -> String {
    let seconds = ms.div_ceil(1000);
    format!(
        "[sublaunch] This run ends in {seconds} s. Wrap up now: stop starting new work, finish or \
         abandon what is in progress, and give your final answer with what you have, saying \
         what is left undone."
    )
}
