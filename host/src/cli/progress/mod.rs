//! Live progress of a run for `run --wait`, `resume --wait` and `wait`, on stderr:
//!
//! - on a terminal, a block with a line per step (agent, state, elapsed time, the last line
//!   of its output) redrawn in place as `status.json` and the output logs change, at most ten
//!   times a second, then a summary line;
//! - otherwise (or with `SUBLAUNCH_PROGRESS=plain`), a plain line per step state change and
//!   the summary;
//! - with `--json`, a JSON object per step state change (JSON lines).
//!
//! The display re-reads the run ten times a second (its refresh rate) instead of watching it
//! with inotify: the end of the run comes from the caller (the shim's exit), and closing an
//! inotify instance that watched anything waits for a kernel grace period (15–18 ms here) —
//! at the exit of every `run --wait`, after the run had ended.

mod render;
mod snapshot;

pub use render::Style;
pub use snapshot::{Snapshot, StepView, shown_agent};

use super::colour::Paint;
use super::runs::now_ms;
use render::Renderer;
use std::io::IsTerminal;
use std::sync::Arc;
use std::time::Duration;
use sublaunch::launch::tokio;
use sublaunch_protocol::files::dir::Dir;

/// The shortest time between two refreshes (at most 10 Hz).
const MIN_INTERVAL: Duration = Duration::from_millis(100);
/// `SUBLAUNCH_PROGRESS`: `live`, `plain`, `json` or `off`, overriding the detection.
const PROGRESS_ENV: &str = "SUBLAUNCH_PROGRESS";

impl Style {
    /// The style for this process: JSON with `--json`; else live when stderr is a terminal
    /// (and `TERM` is not `dumb`), plain otherwise. `SUBLAUNCH_PROGRESS` overrides it; `None`
    /// means no progress (`off`).
    pub fn detect(json: bool) -> Option<Self> {
        match std::env::var(PROGRESS_ENV).as_deref() {
            Ok("off") => return None,
            Ok("plain") => return Some(Self::Plain),
            Ok("live") => return Some(Self::Live),
            Ok("json") => return Some(Self::Json),
            _ => {}
        }
        if json {
            return Some(Self::Json);
        }
        let dumb = std::env::var("TERM").is_ok_and(|t| t == "dumb");
        Some(if std::io::stderr().is_terminal() && !dumb {
            Self::Live
        } else {
            Self::Plain
        })
    }
}

/// The progress display of one run.
pub struct Progress {
    run: Arc<Dir>,
    run_id: String,
    renderer: Option<Renderer>,
    live: bool,
    labels: Option<Arc<Vec<String>>>,
}

impl Progress {
    /// Progress of the run in `run`, shown in `style` (`None`: nothing is shown, but
    /// [`Progress::finish`] still returns the final snapshot).
    pub fn new(run: Arc<Dir>, run_id: &str, style: Option<Style>) -> Self {
        Self {
            run,
            run_id: run_id.to_owned(),
            live: style == Some(Style::Live),
            renderer: style.map(|style| {
                // Colour only where the live block is drawn, and only when stderr allows it.
                let paint = if style == Style::Live {
                    Paint::stderr()
                } else {
                    Paint::default()
                };
                Renderer::stderr(style, run_id, paint)
            }),
            labels: None,
        }
    }

    /// Shows changes until dropped (run it in a `select!` against the end of the run). On
    /// Ctrl-C it says that the run goes on and how to stop it, and exits 130: waiting ends,
    /// the run (in a session of its own) does not.
    pub async fn follow(&mut self) {
        let interrupted = async {
            match tokio::signal::ctrl_c().await {
                Ok(()) => (),
                // No handler could be installed: Ctrl-C keeps its default (the process ends).
                Err(_) => std::future::pending().await,
            }
        };
        tokio::pin!(interrupted);
        if self.renderer.is_none() {
            interrupted.await;
            self.interrupted();
        }
        loop {
            self.refresh().await;
            tokio::select! {
                () = &mut interrupted => self.interrupted(),
                () = tokio::time::sleep(MIN_INTERVAL) => {}
            }
        }
    }

    /// Ctrl-C: the message, below the live block, then exit 130 (128 + SIGINT, as a shell
    /// reports a command Ctrl-C ended).
    fn interrupted(&self) -> ! {
        use std::io::Write as _;
        let id = &self.run_id;
        let below = if self.live { "\n" } else { "" };
        let _ = writeln!(
            std::io::stderr(),
            "{below}^C: {id} goes on in the background; `sublaunch stop {id}` ends it, `sublaunch wait {id}` waits again"
        );
        std::process::exit(130);
    }

    /// Shows the final state and the summary; returns the final snapshot.
    pub async fn finish(&mut self) -> Snapshot {
        let snapshot = self.snapshot().await;
        if let Some(renderer) = &mut self.renderer {
            renderer.finish(&snapshot);
        }
        snapshot
    }

    async fn refresh(&mut self) {
        let snapshot = self.snapshot().await;
        if let Some(renderer) = &mut self.renderer {
            renderer.update(&snapshot);
        }
    }

    /// Reads the run on the blocking pool.
    async fn snapshot(&mut self) -> Snapshot {
        let (run, known, live) = (self.run.clone(), self.labels.clone(), self.live);
        let read = tokio::task::spawn_blocking(move || {
            let labels = known.or_else(|| snapshot::labels(&run).map(Arc::new));
            let snapshot = snapshot::read(&run, labels.as_deref().map(Vec::as_slice), live, now_ms());
            (snapshot, labels)
        })
        .await;
        match read {
            Ok((snapshot, labels)) => {
                self.labels = labels;
                snapshot
            }
            Err(_) => Snapshot::default(),
        }
    }
}

/// Step labels (`1`, `2`, `2.1` for the first task of the group that is step 2) from the
/// run's launch plan, in the order of `status.steps` and the `output-<n>.log` files.
pub fn step_labels(run: &Dir) -> Option<Vec<String>> {
    snapshot::labels(run)
}

/// The run as it is now, with each step's last line of output (`status`).
pub fn look(run: &Dir, now: u64) -> Snapshot {
    let labels = snapshot::labels(run);
    snapshot::read(run, labels.as_deref(), true, now)
}

/// A line per step, as the live block draws them, at most `width - 1` columns wide.
pub fn step_lines(snapshot: &Snapshot, running_mark: char, width: usize, paint: Paint) -> Vec<String> {
    render::live_lines(snapshot, running_mark, width, paint)
}

/// The width of the terminal stdout is, when it is one.
pub fn stdout_width() -> Option<usize> {
    if !std::io::stdout().is_terminal() {
        return None;
    }
    rustix::termios::tcgetwinsize(std::io::stdout())
        .ok()
        .map(|size| usize::from(size.ws_col))
        .filter(|cols| *cols > 0)
}

/// The per-step part of a final `--json` object: `[{step, agent, state, elapsedMs, exitCode,
/// error}]`.
pub fn steps_json(snapshot: &Snapshot) -> serde_json::Value {
    snapshot.steps.iter().map(StepView::json).collect()
}
