//! D2: each running agent's text so far, saved beside the run at most every [`SAVE_EVERY`]
//! when it changed ([`sublaunch_protocol::records::partial`]), so that a runner killed with its
//! agent — or a machine that went down — leaves it for whoever repairs the run. The files go
//! once the result, which holds the text, is published.

use super::Supervisor;
use crate::step::child::ChildRun;
use std::hash::{Hash, Hasher};
use std::time::{Duration, Instant};
use sublaunch_protocol::records::partial;

/// How often a running agent's text is saved at most.
pub const SAVE_EVERY: Duration = Duration::from_secs(2);

impl Supervisor {
    /// Saves `child`'s text so far when it changed and [`SAVE_EVERY`] passed since the last save.
    pub(super) fn save_partial(&mut self, child: &mut ChildRun, now: Instant) {
        // One look every SAVE_EVERY, whether or not the last found text: an agent that says
        // nothing (or whose session is never known) costs nothing between looks.
        if child
            .partial_saved
            .is_some_and(|(at, _)| now.duration_since(at) < SAVE_EVERY)
        {
            return;
        }
        let saved = child.partial_saved.map(|(_, digest)| digest);
        child.partial_saved = Some((now, saved.unwrap_or(0)));
        self.record_session(child);
        let Some(text) = child.io.parser.partial() else { return };
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        text.hash(&mut hasher);
        let digest = hasher.finish();
        if saved == Some(digest) {
            return;
        }
        if let Err(e) = partial::save(self.run_dir(), child.index, &text) {
            eprintln!("sublaunch-shim: cannot save step {}'s partial output: {e}", child.index);
        }
        child.partial_saved = Some((now, digest));
    }

    /// Writes the agent's conversation handle into the status once it is known, so that a run
    /// whose runner dies can still be resumed.
    fn record_session(&mut self, child: &mut ChildRun) {
        if child.session_recorded {
            return;
        }
        let Some(session) = child.io.parser.session() else {
            return;
        };
        if let Some(step) = self.book.status.steps.as_mut().and_then(|s| s.get_mut(child.index)) {
            step.facts.agent_session = Some(session);
            self.book.update();
        }
        child.session_recorded = true;
    }
}
