//! Drawing snapshots on stderr: a live block of per-step lines redrawn in place (a terminal,
//! through indicatif: one progress line per step in a `MultiProgress`), a plain line per step
//! state change, or a JSON object per step state change.

use super::snapshot::{Snapshot, StepView};
use crate::cli::colour::Paint;
use crate::cli::columns;
use crate::cli::runs::duration;
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle, TermLike};
use serde_json::json;
use std::fmt;
use std::io::Write;
use std::sync::{Arc, Mutex};

/// Where output goes, shared by the live block's terminal and the summary line.
type Out = Arc<Mutex<Box<dyn Write + Send>>>;

/// The terminal width, in columns.
type Width = Arc<dyn Fn() -> usize + Send + Sync>;

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
    /// The live block: one line per step, redrawn by indicatif.
    block: MultiProgress,
    /// The block's lines, in step order.
    lines: Vec<ProgressBar>,
    /// Frames drawn, for the spinner.
    frame: usize,
    /// The states already reported, per step (plain and JSON).
    reported: Vec<String>,
    out: Out,
    width: Width,
    /// Colours of the live block.
    paint: Paint,
}

impl Renderer {
    /// A renderer writing to stderr, the live block coloured when `paint` is on.
    pub fn stderr(style: Style, run_id: &str, paint: Paint) -> Self {
        let mut renderer = Self::new(style, run_id, Box::new(std::io::stderr()), Arc::new(terminal_width));
        renderer.paint = paint;
        renderer
    }

    /// A renderer writing to `out`, with lines at most `width()` columns wide (live style),
    /// without colour.
    pub fn new(style: Style, run_id: &str, out: Box<dyn Write + Send>, width: Width) -> Self {
        let out: Out = Arc::new(Mutex::new(out));
        let terminal = WriterTerm {
            out: out.clone(),
            width: width.clone(),
        };
        let block = MultiProgress::with_draw_target(ProgressDrawTarget::term_like_with_hz(Box::new(terminal), 10));
        Self {
            style,
            run_id: run_id.to_owned(),
            block,
            lines: Vec::new(),
            frame: 0,
            reported: Vec::new(),
            out,
            width,
            paint: Paint::default(),
        }
    }

    /// Shows `snapshot`: redraws the live block, or reports the steps whose state changed.
    pub fn update(&mut self, snapshot: &Snapshot) {
        match self.style {
            Style::Live => self.redraw(snapshot),
            Style::Plain | Style::Json => self.report_changes(snapshot),
        }
        self.flush();
    }

    /// Shows the final `snapshot` and, except for JSON, a summary line.
    pub fn finish(&mut self, snapshot: &Snapshot) {
        self.update(snapshot);
        // Finishing draws the final frame at once (updates are limited to 10 a second).
        for line in &self.lines {
            line.finish();
        }
        if self.style != Style::Json
            && let Ok(mut out) = self.out.lock()
        {
            let _ = writeln!(out, "{}", summary(snapshot));
        }
        self.flush();
    }

    fn flush(&self) {
        if let Ok(mut out) = self.out.lock() {
            let _ = out.flush();
        }
    }

    fn redraw(&mut self, snapshot: &Snapshot) {
        self.frame += 1;
        let width = (self.width)().max(20);
        let text = live_lines(snapshot, SPINNER[self.frame % SPINNER.len()], width, self.paint);
        while self.lines.len() < text.len() {
            let line = self.block.add(ProgressBar::new_spinner());
            line.set_style(ProgressStyle::with_template("{msg}").expect("a fixed template"));
            self.lines.push(line);
        }
        for (line, text) in self.lines.iter().zip(text) {
            line.set_message(text);
        }
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
            if let Ok(mut out) = self.out.lock() {
                let _ = writeln!(out, "{line}");
            }
        }
    }
}

/// `step 2.1 reviewer: failed after 1.02s (exit code 3): <error>`.
fn plain_line(step: &StepView) -> String {
    let mut line = format!("step {} {}: {}", step.label, safe(&step.shown_agent()), step.state);
    if step.state != "running"
        && let Some(ms) = step.elapsed_ms
    {
        line.push_str(&format!(" after {}", duration(ms)));
    }
    if let Some(code) = step.exit_code.filter(|c| *c != 0) {
        line.push_str(&format!(" (exit code {code})"));
    }
    if let Some(usage) = &step.usage {
        line.push_str(&format!(" [{}]", usage.brief()));
    }
    if let Some(error) = &step.error {
        line.push_str(&format!(": {}", safe(&headline(error))));
    }
    line
}

/// The fewest columns the agent column is shrunk to before the last line loses its room.
const MIN_AGENT_COLUMNS: usize = 8;
/// The room kept for the last line of output when the agent column is shrunk.
const MIN_DETAIL_COLUMNS: usize = 16;
/// The state column (`complete`, `running`, …).
const STATE_COLUMNS: usize = 8;
/// The elapsed-time column (`12m04s`, `1.25s`).
const ELAPSED_COLUMNS: usize = 7;

/// The live block: one line per step, at most `width - 1` columns wide (a line filling the
/// last column would make some terminals wrap). At a narrow width the agent column (with its
/// `(label)`) is shrunk first, so the state and the elapsed time stay visible. Marks and
/// states are coloured when `paint` is on.
pub fn live_lines(snapshot: &Snapshot, spinner: char, width: usize, paint: Paint) -> Vec<String> {
    let room = width.saturating_sub(1);
    let shown: Vec<String> = snapshot.steps.iter().map(|s| safe(&s.shown_agent())).collect();
    let label_width = snapshot
        .steps
        .iter()
        .map(|s| columns::width(&s.label))
        .max()
        .unwrap_or(1);
    let widest_agent = shown.iter().map(|a| columns::width(a)).max().unwrap_or(0);
    // `m label  agent  state  elapsed  detail`: everything but the agent and the detail.
    let fixed = 2 + label_width + 2 + 2 + STATE_COLUMNS + 2 + ELAPSED_COLUMNS + 2;
    let agent_width = widest_agent.min(
        room.saturating_sub(fixed + MIN_DETAIL_COLUMNS)
            .max(MIN_AGENT_COLUMNS.min(widest_agent)),
    );
    snapshot
        .steps
        .iter()
        .zip(&shown)
        .map(|(step, agent)| {
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
                .map(|error| safe(&headline(error)))
                .or_else(|| step.last_line.clone())
                .unwrap_or_default();
            let agent = columns::pad(&columns::cut(agent, agent_width), agent_width);
            let label = columns::pad(&step.label, label_width);
            let state = columns::pad(&step.state, STATE_COLUMNS);
            let elapsed = format!("{elapsed:>ELAPSED_COLUMNS$}");
            let head_width = columns::width(&format!("{label}  {agent}  {state}  {elapsed}"));
            if 2 + head_width + 2 > room {
                // Too narrow for the columns: the whole line cut, uncoloured.
                let plain = format!("{mark} {label}  {agent}  {state}  {elapsed}  {detail}");
                return columns::cut(plain.trim_end(), room);
            }
            let detail = columns::cut(&detail, room - 2 - head_width - 2);
            let line = format!(
                "{} {label}  {agent}  {}  {elapsed}  {detail}",
                paint.state(&step.state, &mark.to_string()),
                paint.state(&step.state, &state),
            );
            line.trim_end().to_owned()
        })
        .collect()
}

/// Text from a run's files (an agent's name, its error) as one line safe on a terminal: no
/// escape sequence of its own can move the cursor or colour the line, no tab widens it.
fn safe(text: &str) -> String {
    crate::cli::terminal_text::for_terminal(text).replace('\t', " ")
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
    if let Some(usage) = &snapshot.usage {
        line.push_str(&format!(", {}", usage.brief()));
    }
    line
}

/// The line of a step's error worth showing on its one line: the first, unless it only says
/// how the agent exited (the exit code is shown beside it) and the agent or the API said why
/// below it; a first line ending in `:` (a list follows) keeps the list's first item.
pub fn headline(error: &str) -> String {
    let mut lines = error.lines().map(str::trim).filter(|l| !l.is_empty());
    let Some(first) = lines.next() else {
        return String::new();
    };
    let generic_exit = first.starts_with("Subagent exited with code ") && first.ends_with('.');
    if generic_exit && let Some(why) = lines.next() {
        return why.to_owned();
    }
    if first.ends_with(':')
        && let Some(item) = lines.next()
    {
        return format!("{first} {}", item.trim_start_matches("- "));
    }
    first.to_owned()
}

/// The terminal indicatif draws the live block on: ANSI cursor movement and line clearing
/// written to the renderer's output.
struct WriterTerm {
    out: Out,
    width: Width,
}

impl fmt::Debug for WriterTerm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WriterTerm").finish_non_exhaustive()
    }
}

impl WriterTerm {
    fn out(&self) -> std::io::Result<std::sync::MutexGuard<'_, Box<dyn Write + Send>>> {
        self.out
            .lock()
            .map_err(|_| std::io::Error::other("output lock poisoned"))
    }

    fn write(&self, text: &str) -> std::io::Result<()> {
        self.out()?.write_all(text.as_bytes())
    }

    fn cursor(&self, n: usize, code: char) -> std::io::Result<()> {
        if n == 0 {
            Ok(())
        } else {
            self.write(&format!("\x1b[{n}{code}"))
        }
    }
}

impl TermLike for WriterTerm {
    fn width(&self) -> u16 {
        u16::try_from((self.width)()).unwrap_or(u16::MAX)
    }

    fn move_cursor_up(&self, n: usize) -> std::io::Result<()> {
        self.cursor(n, 'A')
    }

    fn move_cursor_down(&self, n: usize) -> std::io::Result<()> {
        self.cursor(n, 'B')
    }

    fn move_cursor_right(&self, n: usize) -> std::io::Result<()> {
        self.cursor(n, 'C')
    }

    fn move_cursor_left(&self, n: usize) -> std::io::Result<()> {
        self.cursor(n, 'D')
    }

    fn write_line(&self, line: &str) -> std::io::Result<()> {
        self.write(&format!("{line}\n"))
    }

    fn write_str(&self, text: &str) -> std::io::Result<()> {
        self.write(text)
    }

    fn clear_line(&self) -> std::io::Result<()> {
        self.write("\r\x1b[2K")
    }

    fn flush(&self) -> std::io::Result<()> {
        self.out()?.flush()
    }
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
        let mut renderer = Renderer::new(Style::Plain, "r", Box::new(buffer.clone()), Arc::new(|| 80));
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
        let mut renderer = Renderer::new(Style::Json, "r-1", Box::new(buffer.clone()), Arc::new(|| 80));
        renderer.finish(&snapshot(vec![step("1", "complete", Some(5), None)]));
        let line: serde_json::Value = serde_json::from_str(buffer.text().trim()).unwrap();
        assert_eq!(line["runId"], "r-1");
        assert_eq!(line["state"], "complete");
        assert_eq!(line["elapsedMs"], 5);
    }

    #[test]
    fn the_live_block_is_redrawn_in_place_and_cut_to_the_width() {
        let buffer = Buffer::default();
        let mut renderer = Renderer::new(Style::Live, "r", Box::new(buffer.clone()), Arc::new(|| 40));
        renderer.update(&snapshot(vec![
            step(
                "1",
                "running",
                Some(1_000),
                Some("a rather long line of output that will not fit"),
            ),
            step("2", "pending", None, None),
        ]));
        renderer.flush();
        // indicatif pads each line to the terminal's width and lets the terminal wrap it.
        let first = buffer.text();
        assert!(first.contains("1  shell  running     1.00s  a rathe…"), "{first:?}");
        assert!(!first.contains("a rather"), "cut to the width: {first:?}");
        renderer.finish(&snapshot(vec![
            step("1", "complete", Some(2_000), Some("done")),
            step("2", "complete", Some(5), None),
        ]));
        let all = buffer.text();
        let moves_up = all.match_indices("\x1b[").any(|(at, _)| {
            let rest = &all[at + 2..];
            let digits = rest.chars().take_while(char::is_ascii_digit).count();
            digits > 0 && rest[digits..].starts_with('A')
        });
        assert!(moves_up, "the block is redrawn in place: {all:?}");
        assert!(all.contains("✓ 1  shell  complete    2.00s  done"), "{all:?}");
        assert!(all.ends_with("2 steps: 2 complete in 1.50s\n"), "{all:?}");
    }

    #[test]
    fn step_lines_carry_no_escape_of_the_run_and_colour_only_when_on() {
        let mut failed = step("1", "failed", Some(10), None);
        failed.agent = "ev\u{1b}]0;title\u{7}il".into();
        failed.error = Some("Subagent exited with code 1.\n\nAPI \u{1b}[2JError: 400\tbad".into());
        let plain = live_lines(&snapshot(vec![failed.clone()]), '*', 100, Paint::default());
        assert_eq!(plain, ["✗ 1  evil  failed      0.01s  API Error: 400 bad"]);
        let coloured = live_lines(&snapshot(vec![failed]), '*', 100, Paint { on: true });
        assert_eq!(
            coloured,
            ["\u{1b}[31m✗\u{1b}[0m 1  evil  \u{1b}[31mfailed  \u{1b}[0m    0.01s  API Error: 400 bad"]
        );
    }

    #[test]
    fn headlines_say_why_first() {
        assert_eq!(
            headline("Subagent exited with code 1.\n\nAPI Error: 400"),
            "API Error: 400"
        );
        assert_eq!(headline("Subagent exited with code 1."), "Subagent exited with code 1.");
        assert_eq!(
            headline("Structured output of step 1 r does not match its output schema (1 error):\n- $.v: bad"),
            "Structured output of step 1 r does not match its output schema (1 error): $.v: bad"
        );
        assert_eq!(headline("one\ntwo"), "one");
    }
}
