//! Drawing snapshots on stderr: a live block of per-step lines redrawn in place (a terminal),
//! a plain line per step state change, or a JSON object per step state change.

use super::snapshot::{Snapshot, StepView};
use crate::cli::runs::duration;
use serde_json::json;
use std::io::Write;

/// How progress is shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Style {
    /// A block of per-step lines redrawn in place, then a summary (stderr is a terminal).
    Live,
    /// One line per step state change, then a summary.
    Plain,
    /// One JSON object per step state change (JSON lines).
    Json,
}

/// Spinner frames for running steps on a terminal.
const SPINNER: [char; 10] = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

/// Draws snapshots of one run.
pub struct Renderer {
    style: Style,
    run_id: String,
    /// Lines of the live block currently on screen.
    drawn: usize,
    /// Frames drawn, for the spinner.
    frame: usize,
    /// The states already reported, per step (plain and JSON).
    reported: Vec<String>,
    out: Box<dyn Write + Send>,
    width: Box<dyn Fn() -> usize + Send>,
}

impl Renderer {
    /// A renderer writing to stderr.
    pub fn stderr(style: Style, run_id: &str) -> Self {
        Self::new(style, run_id, Box::new(std::io::stderr()), Box::new(terminal_width))
    }

    /// A renderer writing to `out`, with lines at most `width()` columns wide (live style).
    pub fn new(style: Style, run_id: &str, out: Box<dyn Write + Send>, width: Box<dyn Fn() -> usize + Send>) -> Self {
        Self {
            style,
            run_id: run_id.to_owned(),
            drawn: 0,
            frame: 0,
            reported: Vec::new(),
            out,
            width,
        }
    }

    /// Shows `snapshot`: redraws the live block, or reports the steps whose state changed.
    pub fn update(&mut self, snapshot: &Snapshot) {
        match self.style {
            Style::Live => self.redraw(snapshot),
            Style::Plain | Style::Json => self.report_changes(snapshot),
        }
        let _ = self.out.flush();
    }

    /// Shows the final `snapshot` and, except for JSON, a summary line.
    pub fn finish(&mut self, snapshot: &Snapshot) {
        self.update(snapshot);
        if self.style != Style::Json {
            let _ = writeln!(self.out, "{}", summary(snapshot));
        }
        let _ = self.out.flush();
    }

    fn redraw(&mut self, snapshot: &Snapshot) {
        self.frame += 1;
        let width = (self.width)().max(20);
        let lines = live_lines(snapshot, SPINNER[self.frame % SPINNER.len()], width);
        let mut text = String::new();
        if self.drawn > 0 {
            // Back to the first line of the block, then rewrite it.
            text.push_str(&format!("\r\x1b[{}A", self.drawn));
        }
        for line in &lines {
            text.push_str("\x1b[2K");
            text.push_str(line);
            text.push('\n');
        }
        // Lines of a longer previous block.
        text.push_str("\x1b[J");
        self.drawn = lines.len();
        let _ = self.out.write_all(text.as_bytes());
    }

    fn report_changes(&mut self, snapshot: &Snapshot) {
        self.reported
            .resize(snapshot.steps.len().max(self.reported.len()), "pending".into());
        for (index, step) in snapshot.steps.iter().enumerate() {
            if self.reported[index] == step.state {
                continue;
            }
            self.reported[index].clone_from(&step.state);
            let line = match self.style {
                Style::Json => {
                    let mut line = step.json();
                    line["runId"] = json!(self.run_id);
                    line["index"] = json!(index);
                    line.to_string()
                }
                _ => plain_line(step),
            };
            let _ = writeln!(self.out, "{line}");
        }
    }
}

/// `step 2.1 reviewer: failed after 1.02s (exit code 3): <error>`.
fn plain_line(step: &StepView) -> String {
    let mut line = format!("step {} {}: {}", step.label, step.agent, step.state);
    if step.state != "running"
        && let Some(ms) = step.elapsed_ms
    {
        line.push_str(&format!(" after {}", duration(ms)));
    }
    if let Some(code) = step.exit_code.filter(|c| *c != 0) {
        line.push_str(&format!(" (exit code {code})"));
    }
    if let Some(error) = &step.error {
        line.push_str(&format!(": {}", first_line(error)));
    }
    line
}

/// The live block: one line per step, cut to `width` columns.
pub fn live_lines(snapshot: &Snapshot, spinner: char, width: usize) -> Vec<String> {
    let widest = |field: fn(&StepView) -> &str| {
        snapshot
            .steps
            .iter()
            .map(|s| field(s).chars().count())
            .max()
            .unwrap_or(1)
    };
    let (label_width, agent_width) = (widest(|s| &s.label), widest(|s| &s.agent));
    snapshot
        .steps
        .iter()
        .map(|step| {
            let mark = match step.state.as_str() {
                "complete" => '✓',
                "failed" | "rejected" => '✗',
                "stopped" | "paused" => '■',
                "running" => spinner,
                _ => '·',
            };
            let elapsed = step.elapsed_ms.map(duration).unwrap_or_default();
            let detail = step
                .error
                .as_deref()
                .map(first_line)
                .or(step.last_line.as_deref())
                .unwrap_or("");
            let line = format!(
                "{mark} {:<label_width$}  {:<agent_width$}  {:<8}  {elapsed:>7}  {detail}",
                step.label, step.agent, step.state
            );
            cut(line.trim_end(), width - 1)
        })
        .collect()
}

/// `3 steps: 2 complete, 1 failed in 4.20s`.
pub fn summary(snapshot: &Snapshot) -> String {
    let mut counts: Vec<(&str, usize)> = Vec::new();
    for step in &snapshot.steps {
        match counts.iter_mut().find(|(state, _)| *state == step.state) {
            Some((_, count)) => *count += 1,
            None => counts.push((step.state.as_str(), 1)),
        }
    }
    let n = snapshot.steps.len();
    let states: Vec<String> = counts.iter().map(|(state, count)| format!("{count} {state}")).collect();
    let mut line = format!("{n} step{}: {}", if n == 1 { "" } else { "s" }, states.join(", "));
    if let Some(ms) = snapshot.elapsed_ms {
        line.push_str(&format!(" in {}", duration(ms)));
    }
    line
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or("")
}

/// `text` cut to `width` characters (the last one an ellipsis when cut).
fn cut(text: &str, width: usize) -> String {
    if text.chars().count() <= width {
        return text.to_owned();
    }
    let mut out: String = text.chars().take(width.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// The terminal's width in columns (stderr's, else `$COLUMNS`, else 80).
fn terminal_width() -> usize {
    rustix::termios::tcgetwinsize(std::io::stderr())
        .ok()
        .map(|size| usize::from(size.ws_col))
        .filter(|cols| *cols > 0)
        .or_else(|| std::env::var("COLUMNS").ok()?.parse().ok())
        .unwrap_or(80)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    #[derive(Clone, Default)]
    struct Buffer(Arc<Mutex<Vec<u8>>>);

    impl Write for Buffer {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl Buffer {
        fn text(&self) -> String {
            String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
        }
    }

    fn step(label: &str, state: &str, elapsed: Option<u64>, last: Option<&str>) -> StepView {
        StepView {
            label: label.into(),
            agent: "shell".into(),
            state: state.into(),
            elapsed_ms: elapsed,
            last_line: last.map(Into::into),
            ..StepView::default()
        }
    }

    fn snapshot(steps: Vec<StepView>) -> Snapshot {
        Snapshot {
            elapsed_ms: Some(1_500),
            steps,
            ..Snapshot::default()
        }
    }

    #[test]
    fn plain_lines_report_each_state_change_once() {
        let buffer = Buffer::default();
        let mut renderer = Renderer::new(Style::Plain, "r", Box::new(buffer.clone()), Box::new(|| 80));
        renderer.update(&snapshot(vec![
            step("1", "running", Some(10), None),
            step("2", "pending", None, None),
        ]));
        renderer.update(&snapshot(vec![
            step("1", "running", Some(20), None),
            step("2", "pending", None, None),
        ]));
        let mut failed = step("2", "failed", Some(1_020), None);
        failed.exit_code = Some(3);
        failed.error = Some("boom\nmore".into());
        renderer.finish(&snapshot(vec![step("1", "complete", Some(300), None), failed]));
        assert_eq!(
            buffer.text(),
            "step 1 shell: running\nstep 1 shell: complete after 0.30s\n\
             step 2 shell: failed after 1.02s (exit code 3): boom\n2 steps: 1 complete, 1 failed in 1.50s\n"
        );
    }

    #[test]
    fn json_lines_are_objects() {
        let buffer = Buffer::default();
        let mut renderer = Renderer::new(Style::Json, "r-1", Box::new(buffer.clone()), Box::new(|| 80));
        renderer.finish(&snapshot(vec![step("1", "complete", Some(5), None)]));
        let line: serde_json::Value = serde_json::from_str(buffer.text().trim()).unwrap();
        assert_eq!(line["runId"], "r-1");
        assert_eq!(line["state"], "complete");
        assert_eq!(line["elapsedMs"], 5);
    }

    #[test]
    fn the_live_block_is_redrawn_in_place_and_cut_to_the_width() {
        let buffer = Buffer::default();
        let mut renderer = Renderer::new(Style::Live, "r", Box::new(buffer.clone()), Box::new(|| 40));
        renderer.update(&snapshot(vec![
            step(
                "1",
                "running",
                Some(1_000),
                Some("a rather long line of output that will not fit"),
            ),
            step("2", "pending", None, None),
        ]));
        let first = buffer.text();
        assert!(!first.contains("\x1b[2A"), "{first:?}");
        let lines: Vec<&str> = first.lines().filter(|l| l.starts_with("\x1b[2K")).collect();
        assert_eq!(lines.len(), 2, "{first:?}");
        assert!(
            first.ends_with("\n\x1b[J"),
            "then clears what a longer block left: {first:?}"
        );
        assert!(
            lines[0].trim_start_matches("\x1b[2K").chars().count() <= 39,
            "{:?}",
            lines[0]
        );
        assert!(lines[0].ends_with('…'), "{:?}", lines[0]);
        renderer.finish(&snapshot(vec![
            step("1", "complete", Some(2_000), Some("done")),
            step("2", "complete", Some(5), None),
        ]));
        let all = buffer.text();
        assert!(all.contains("\r\x1b[2A"), "moves up over the block: {all:?}");
        assert!(all.contains("✓ 1  shell  complete    2.00s  done"), "{all:?}");
        assert!(all.ends_with("2 steps: 2 complete in 1.50s\n"), "{all:?}");
    }
}
