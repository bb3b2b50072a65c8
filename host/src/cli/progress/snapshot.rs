//! One look at a run for the progress display: the run's state and, per step, its agent,
//! state, elapsed time and last output line.

use crate::cli::runs::status_of;
use std::io::{Read, Seek, SeekFrom};
use sublaunch::launch::plan_record::read_plan_record;
use sublaunch_protocol::files::dir::Dir;
use sublaunch_protocol::files::doc::ReadDoc;
use sublaunch_protocol::files::layout::names;
use sublaunch_protocol::records::status::{RunState, StepStatus};
use sublaunch_protocol::records::usage::Usage;

/// How much of the end of an output log is read to find its last line.
const TAIL_BYTES: u64 = 4096;
/// The same for agents' JSON event streams, whose lines are longer.
const EVENT_TAIL_BYTES: u64 = 64 * 1024;

/// One step (or task of a parallel group) as shown.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StepView {
    /// `1`, `2`, or `2.1` for the first task of the group that is step 2.
    pub label: String,
    /// The agent.
    pub agent: String,
    /// `pending`, `running`, `complete`, `failed`, … (as `status.json` says).
    pub state: String,
    /// How long it ran (or has been running), when it started.
    pub elapsed_ms: Option<u64>,
    /// The agent's exit code, once known.
    pub exit_code: Option<i64>,
    /// The step's error.
    pub error: Option<String>,
    /// The last non-empty line of its output, without control characters.
    pub last_line: Option<String>,
    /// Tokens and cost its agent reported, once it ended.
    pub usage: Option<Usage>,
    /// The step's own label (`label:` in a chain file).
    pub name: Option<String>,
    /// The workflow phase it belongs to.
    pub phase: Option<String>,
}

impl StepView {
    /// The agent as progress shows it: `reviewer (review: lexer)` with a phase and a label.
    pub fn shown_agent(&self) -> String {
        shown_agent(&self.agent, self.phase.as_deref(), self.name.as_deref())
    }

    /// `{step, agent, state, elapsedMs, exitCode, error}` (`--json` progress and end).
    pub fn json(&self) -> serde_json::Value {
        serde_json::json!({
            "step": self.label,
            "agent": self.agent,
            "state": self.state,
            "elapsedMs": self.elapsed_ms,
            "exitCode": self.exit_code,
            "error": self.error,
            "usage": self.usage,
            "label": self.name,
            "phase": self.phase,
        })
    }
}

/// `agent (phase: label)`, `agent (label)` or `agent`: how every view names a step after its
/// position (`2.1 reviewer (review: lexer)`).
pub fn shown_agent(agent: &str, phase: Option<&str>, label: Option<&str>) -> String {
    match (phase, label) {
        (Some(phase), Some(label)) => format!("{agent} ({phase}: {label})"),
        (Some(tag), None) | (None, Some(tag)) => format!("{agent} ({tag})"),
        (None, None) => agent.to_owned(),
    }
}

/// The run as shown.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Snapshot {
    /// The run's state (`None` before `status.json` is readable).
    pub state: Option<RunState>,
    /// How long the run took or has been running.
    pub elapsed_ms: Option<u64>,
    /// The run's error.
    pub error: Option<String>,
    /// The steps, in execution order.
    pub steps: Vec<StepView>,
    /// The steps' usage, summed.
    pub usage: Option<Usage>,
}

/// Step labels from the run's `launch-plan.json`, once it is readable: `1`, `2`, … for
/// sequential steps and `2.1` for the first task of the parallel group that is step 2 (a run
/// that is one parallel group too: `1.1`, `1.2`, …). The one scheme of progress, `status`,
/// `logs`, the `--wait` headings and the runner's error messages.
pub fn labels(run: &Dir) -> Option<Vec<String>> {
    let ReadDoc::Present(record) = read_plan_record(run).ok()? else {
        return None;
    };
    Some(
        record
            .plan
            .steps
            .iter()
            .map(|step| match step.task_index {
                Some(task) => format!("{}.{}", step.step_index + 1, task + 1),
                None => (step.step_index + 1).to_string(),
            })
            .collect(),
    )
}

/// A text a step's status entry carries, without control characters.
fn printable(text: Option<&String>) -> Option<String> {
    Some(text?.chars().filter(|c| !c.is_control()).collect())
}

/// Reads the run now (`now` in wall ms); output tails only with `with_output`.
pub fn read(run: &Dir, labels: Option<&[String]>, with_output: bool, now: u64) -> Snapshot {
    let Some(status) = status_of(run) else {
        return Snapshot::default();
    };
    let steps = status
        .steps
        .iter()
        .flatten()
        .enumerate()
        .map(|(index, step)| StepView {
            label: labels
                .and_then(|l| l.get(index))
                .cloned()
                .unwrap_or_else(|| (index + 1).to_string()),
            agent: step.agent.clone().unwrap_or_default(),
            state: step.status.clone().unwrap_or_else(|| "pending".into()),
            elapsed_ms: step_elapsed(step, now),
            exit_code: step.exit_code,
            error: step.error.clone(),
            last_line: if with_output {
                let events = crate::cli::agent_text::renders(step.facts.adapter.as_deref());
                last_line(run, index, events)
            } else {
                None
            },
            usage: step.facts.usage.clone(),
            name: printable(step.facts.label.as_ref()),
            phase: printable(step.facts.phase.as_ref()),
        })
        .collect();
    let terminal = status.is_terminal();
    Snapshot {
        elapsed_ms: status.started_at.map(|started| {
            let end = status.ended_at.filter(|_| terminal).unwrap_or(now);
            end.saturating_sub(started)
        }),
        usage: status.usage(),
        state: status.state,
        error: status.error,
        steps,
    }
}

fn step_elapsed(step: &StepStatus, now: u64) -> Option<u64> {
    let started = step.started_at?;
    if let Some(duration) = step.duration_ms {
        return Some(duration);
    }
    let end = step.ended_at.unwrap_or(if step.status.as_deref() == Some("running") {
        now
    } else {
        started
    });
    Some(end.saturating_sub(started))
}

/// The last non-empty line of `output-<index>.log` (of an agent's JSON event stream, the
/// last line of what it said or did).
fn last_line(run: &Dir, index: usize, events: bool) -> Option<String> {
    let tail_bytes = if events { EVENT_TAIL_BYTES } else { TAIL_BYTES };
    let mut file = run.open_read(&names::output_log(index)).ok()??;
    let length = file.metadata().ok()?.len();
    file.seek(SeekFrom::Start(length.saturating_sub(tail_bytes))).ok()?;
    let mut tail = Vec::new();
    file.take(tail_bytes).read_to_end(&mut tail).ok()?;
    let text = String::from_utf8_lossy(&tail);
    if events {
        return text.split('\n').rev().find_map(|line| {
            crate::cli::agent_text::said_or_done(line)
                .iter()
                .rev()
                .map(|l| clean(l))
                .find(|l| !l.is_empty())
        });
    }
    // A carriage return redraws a line (progress bars): keep what was drawn last.
    text.split('\n')
        .map(|line| {
            let line = line.trim_end_matches('\r');
            clean(line.rsplit('\r').next().unwrap_or(line))
        })
        .rfind(|line| !line.is_empty())
}

/// A line without escape sequences and control characters (tabs become spaces).
pub fn clean(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\u{1b}' => {
                // CSI `ESC [ … final` or a two-character escape.
                if chars.peek() == Some(&'[') {
                    chars.next();
                    for c in chars.by_ref() {
                        if ('@'..='~').contains(&c) {
                            break;
                        }
                    }
                } else {
                    chars.next();
                }
            }
            '\t' => out.push(' '),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out.trim().to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_lose_escapes_and_control_characters() {
        assert_eq!(clean("\u{1b}[1;32mok\u{1b}[0m\tdone\u{7}  "), "ok done");
        assert_eq!(clean("  "), "");
    }

    #[test]
    fn step_elapsed_prefers_the_duration() {
        let step = |status: &str, started, ended, duration| StepStatus {
            status: Some(status.into()),
            started_at: started,
            ended_at: ended,
            duration_ms: duration,
            ..StepStatus::default()
        };
        assert_eq!(
            step_elapsed(&step("running", Some(1_000), None, None), 3_500),
            Some(2_500)
        );
        assert_eq!(
            step_elapsed(&step("complete", Some(1_000), Some(2_000), Some(900)), 9_000),
            Some(900)
        );
        assert_eq!(
            step_elapsed(&step("failed", Some(1_000), Some(2_000), None), 9_000),
            Some(1_000)
        );
        assert_eq!(step_elapsed(&step("pending", None, None, None), 9_000), None);
    }
}
