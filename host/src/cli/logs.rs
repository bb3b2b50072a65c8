//! `sublaunch logs RUN_ID [--follow] [--raw]`: prints the run's `output-<n>.log` files in step
//! order; `--follow` keeps streaming what is appended until the run is terminal. A run with
//! several steps (a chain, parallel tasks) gets each line prefixed with its step and agent
//! (`[2.1 reviewer (lexer)] …`, as progress names it), so the lines of tasks running side by side stay apart. Agent output
//! is printed line by line with escape sequences and control characters neutralised
//! ([`super::terminal_text`]), and the JSON event streams of pi, Claude Code, Codex and
//! Cursor's agent as what the agent said and did ([`super::agent_text`]); `--raw` prints the
//! bytes as they are.

use super::runs::{async_runtime, fail, open_run, status_of};
use std::io::{Read, Seek, SeekFrom, Write};
use std::process::ExitCode;
use std::sync::Arc;
use sublaunch::launch::tokio;
use sublaunch::runs::RunStore;
use sublaunch::runs::RunWatcher;
use sublaunch::runs::look_and_watch;
use sublaunch_protocol::files::dir::Dir;
use sublaunch_protocol::files::layout::names;
use sublaunch_protocol::records::status::StepStatus;

/// Arguments of `sublaunch logs`.
#[derive(clap::Args)]
pub struct Args {
    /// The run id.
    run_id: String,
    /// Keep printing new output until the run ends.
    #[arg(long, short = 'f')]
    follow: bool,
    /// Print the output bytes as they are: agents' JSON event streams unrendered, no
    /// `[step agent]` line prefixes (runs with several steps get them by default) and escape
    /// sequences left in.
    #[arg(long)]
    raw: bool,
}

/// Runs `sublaunch logs`.
pub fn run(args: Args) -> ExitCode {
    logs(&args).unwrap_or_else(|code| code)
}

fn logs(args: &Args) -> Result<ExitCode, ExitCode> {
    let (store, run, _) = open_run(&args.run_id, "logs")?;
    let mut streams = Streams::new(!args.raw);
    streams
        .copy_new_output(&run, !args.follow)
        .map_err(|e| fail("logs", e))?;
    if !args.follow {
        return Ok(ExitCode::SUCCESS);
    }
    let runtime = async_runtime("logs")?;
    Ok(runtime.block_on(follow(&Arc::new(store), &Arc::new(run), streams)))
}

async fn follow(store: &Arc<RunStore>, run: &Arc<Dir>, mut streams: Streams) -> ExitCode {
    let mut watcher = RunWatcher::new(run.path());
    loop {
        // Ends only once the run is terminal; the final copy catches the last bytes.
        let ended = look_and_watch(store, run, &mut watcher).await.is_some();
        let dir = run.clone();
        let copied = tokio::task::spawn_blocking(move || (streams.copy_new_output(&dir, ended), streams)).await;
        match copied {
            Ok((Ok(()), moved)) => streams = moved,
            Ok((Err(e), _)) => return fail("logs", e),
            Err(e) => return fail("logs", e),
        }
        if ended {
            return ExitCode::SUCCESS;
        }
        watcher.changed().await;
    }
}

/// What has been printed of each step's `output-<n>.log`.
struct Streams {
    /// Readable mode: lines neutralised for the terminal, and with several steps prefixed
    /// `[label agent] `. Otherwise the bytes are copied as they are.
    readable: bool,
    /// Bytes printed (or held in `partial`) per step.
    offsets: Vec<u64>,
    /// An unfinished last line per step, held until it ends (prefixed mode).
    partial: Vec<Vec<u8>>,
    /// Step labels from the launch plan, once read.
    labels: Option<Vec<String>>,
}

impl Streams {
    fn new(readable: bool) -> Self {
        Self {
            readable,
            offsets: Vec::new(),
            partial: Vec::new(),
            labels: None,
        }
    }

    /// Copies what was appended to each step's output since the last call, in step order.
    /// With several steps every line is prefixed with its step; a step's unfinished last line
    /// is held until it is finished, the step has ended, or `flush` (the run ended).
    fn copy_new_output(&mut self, run: &Dir, flush: bool) -> std::io::Result<()> {
        let status = status_of(run);
        let steps = status
            .as_ref()
            .map_or_else(|| count_output_files(run), |s| s.step_count());
        self.offsets.resize(self.offsets.len().max(steps), 0);
        self.partial.resize(self.offsets.len(), Vec::new());
        let prefixed = self.readable && self.offsets.len() > 1;
        if prefixed && self.labels.is_none() {
            self.labels = super::progress::step_labels(run);
        }
        let mut stdout = std::io::stdout().lock();
        for step in 0..self.offsets.len() {
            let Some(mut file) = run.open_read(&names::output_log(step))? else {
                continue;
            };
            file.seek(SeekFrom::Start(self.offsets[step]))?;
            let mut buffer = Vec::new();
            file.read_to_end(&mut buffer)?;
            self.offsets[step] += u64::try_from(buffer.len()).unwrap_or(0);
            if !self.readable {
                stdout.write_all(&buffer)?;
                continue;
            }
            let info = status.as_ref().and_then(|s| s.steps.as_ref()).and_then(|s| s.get(step));
            let step_ended = info
                .and_then(|s| s.status.as_deref())
                .is_some_and(|state| !matches!(state, "pending" | "running"));
            let prefix = if !prefixed {
                String::new()
            } else {
                prefix_of(self.labels.as_deref(), step, info)
            };
            let events = super::agent_text::renders(info.and_then(|s| s.facts.adapter.as_deref()));
            let pending = &mut self.partial[step];
            pending.extend_from_slice(&buffer);
            let complete = pending.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
            let mut lines: Vec<&[u8]> = pending[..complete].split_inclusive(|b| *b == b'\n').collect();
            let unfinished = !pending[complete..].is_empty() && (flush || step_ended);
            if unfinished {
                lines.push(&pending[complete..]);
            }
            for line in lines {
                for shown in readable_lines(line, events) {
                    stdout.write_all(prefix.as_bytes())?;
                    stdout.write_all(shown.as_bytes())?;
                    stdout.write_all(b"\n")?;
                }
            }
            if unfinished {
                pending.clear();
            } else {
                pending.drain(..complete);
            }
        }
        stdout.flush()
    }
}

/// How much of the end of each output log [`tail_lines`] reads.
const TAIL_READ_BYTES: u64 = 1024 * 1024;

/// The last `count` lines of the run's output as `logs` shows them (readable: agents' event
/// streams rendered, control characters neutralised, `[step agent] ` prefixes for runs of
/// several steps), reading at most the last MiB of each step's log; steps in order.
pub fn tail_lines(run: &Dir, count: usize, readable: bool) -> Vec<String> {
    let status = status_of(run);
    let steps = status
        .as_ref()
        .map_or_else(|| count_output_files(run), |s| s.step_count());
    let labels = (steps > 1).then(|| super::progress::step_labels(run)).flatten();
    let mut lines = Vec::new();
    for step in 0..steps {
        let Ok(Some(mut file)) = run.open_read(&names::output_log(step)) else {
            continue;
        };
        let length = file.metadata().map_or(0, |m| m.len());
        let mut bytes = Vec::new();
        if file
            .seek(SeekFrom::Start(length.saturating_sub(TAIL_READ_BYTES)))
            .is_err()
            || file.take(TAIL_READ_BYTES).read_to_end(&mut bytes).is_err()
        {
            continue;
        }
        let info = status.as_ref().and_then(|s| s.steps.as_ref()).and_then(|s| s.get(step));
        let events = readable && super::agent_text::renders(info.and_then(|s| s.facts.adapter.as_deref()));
        let prefix = match &labels {
            Some(labels) if readable => prefix_of(Some(labels), step, info),
            _ => String::new(),
        };
        for line in bytes.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
            if readable {
                lines.extend(readable_lines(line, events).into_iter().map(|l| format!("{prefix}{l}")));
            } else {
                lines.push(String::from_utf8_lossy(line).into_owned());
            }
        }
    }
    let skip = lines.len().saturating_sub(count);
    lines.split_off(skip)
}

/// `[2.1 reviewer (lexer)] `: the step's position and how progress names it.
fn prefix_of(labels: Option<&[String]>, step: usize, info: Option<&StepStatus>) -> String {
    let position = labels
        .and_then(|l| l.get(step))
        .cloned()
        .unwrap_or_else(|| (step + 1).to_string());
    let agent = info.and_then(|s| s.agent.as_deref()).unwrap_or("?");
    let shown = super::progress::shown_agent(
        agent,
        info.and_then(|s| s.facts.phase.as_deref()),
        info.and_then(|s| s.facts.label.as_deref()),
    );
    super::terminal_text::for_terminal(&format!("[{position} {shown}] "))
}

/// One line of agent output as it may be shown on a terminal (an agent's JSON event as what
/// it says, when `events`).
fn readable_lines(line: &[u8], events: bool) -> Vec<String> {
    let text = String::from_utf8_lossy(line);
    let text = text.strip_suffix('\n').unwrap_or(&text);
    if events {
        super::agent_text::lines(text)
            .iter()
            .map(|l| super::terminal_text::for_terminal(l))
            .collect()
    } else {
        vec![super::terminal_text::for_terminal(text)]
    }
}

/// Without a status: the number of consecutive `output-<n>.log` files from 0.
fn count_output_files(run: &Dir) -> usize {
    (0..)
        .take_while(|n| run.stat(&names::output_log(*n)).ok().flatten().is_some())
        .count()
}
