//! `sublaunch list [--all] [--json]`: active runs (every run with `--all`), with how many of
//! each run's steps ended (`STEPS 1/3`); a queued run has not started (`STARTED -`) and is
//! listed after the running ones, in its order in the queue. Listing first
//! reconciles: orphan temp files are swept (A12), runs whose shim died unobserved get their
//! proof (S13, a still-running status becomes `failed`), phantom markers are released (I5),
//! the capacity queue is settled. A run waiting for capacity shows its place: `queued (2nd)`,
//! `queuePosition` in `--json`.
//!
//! `--all` lists newest first from the history index (I10–I13, [`sublaunch::runs::history`]),
//! filtered by `--state`, `--agent`, `--since`, `--text`, a page at a time with `--limit` and
//! `--cursor` (the next page's cursor goes to stderr, so stdout keeps its shape). The runs
//! are streamed: `--json` prints each run as it is read.

use super::runs::say;
use super::runs::{agents, duration, elapsed, fail, now_ms, open_store, state_with_place, state_with_wait, status_of};
use std::collections::HashMap;
use std::process::ExitCode;
use std::time::Duration;
use sublaunch::runs::history::{HistoryError, list_all};
use sublaunch::runs::{HistoryFilter, Page, RunView};
use sublaunch_protocol::os::clock::iso8601_utc;
use sublaunch_protocol::records::history::Cursor;
use sublaunch_protocol::records::status::{RunState, Status};

/// Arguments of `sublaunch list`.
#[derive(clap::Args)]
pub struct Args {
    /// List every run, not only the active ones (newest first).
    #[arg(long)]
    all: bool,
    /// Print a JSON array.
    #[arg(short, long)]
    json: bool,
    /// With --all: only runs in this state (complete, failed, stopped, running …).
    #[arg(long, value_name = "STATE", requires = "all")]
    state: Option<String>,
    /// With --all: only runs with a step of this agent.
    #[arg(long, value_name = "AGENT", requires = "all")]
    agent: Option<String>,
    /// With --all: only runs started since then: an age (`30m`, `12h`, `7d`) or an RFC 3339
    /// time (`2026-12-01T09:00:00Z`).
    #[arg(long, value_name = "WHEN", requires = "all", value_parser = parse_since)]
    since: Option<Since>,
    /// With --all: only runs whose id, agents, cwd, session or error contain this text (any case).
    #[arg(long, value_name = "TEXT", requires = "all")]
    text: Option<String>,
    /// With --all: at most this many runs; when there are more, the cursor of the next page is
    /// printed on stderr.
    #[arg(long, value_name = "N", requires = "all")]
    limit: Option<usize>,
    /// With --all: the page after the one that printed this cursor.
    #[arg(long, value_name = "CURSOR", requires = "all")]
    cursor: Option<Cursor>,
}

/// When `--since` begins.
#[derive(Clone, Copy, Debug)]
pub(super) enum Since {
    /// This long before now.
    Age(Duration),
    /// This wall time (ms).
    At(u64),
}

impl Since {
    /// The wall time (ms) it begins at, `now_ms` being now.
    pub(super) fn start_ms(self, now_ms: u64) -> u64 {
        match self {
            Since::Age(age) => now_ms.saturating_sub(u64::try_from(age.as_millis()).unwrap_or(u64::MAX)),
            Since::At(at) => at,
        }
    }
}

/// `30m` (an age) or `2026-12-01T09:00:00Z` (a time).
pub(super) fn parse_since(text: &str) -> Result<Since, String> {
    if text.contains(['T', 't', ' ']) {
        return sublaunch::inputs::deadline::parse_deadline(text)
            .map(Since::At)
            .map_err(|e| e.to_string());
    }
    super::duration::parse_duration(text).map(Since::Age)
}

/// Runs `sublaunch list`.
pub fn run(args: Args) -> ExitCode {
    let store = match open_store("list") {
        Ok(store) => store,
        Err(code) => return code,
    };
    for warning in store.reconcile_all() {
        eprintln!("sublaunch list: warning: {warning}");
    }
    if args.all {
        let mut out = Output::new(args.json, queue_places(&store), store.queue_reasons());
        let now = now_ms();
        let filter = HistoryFilter {
            state: args.state,
            agent: args.agent,
            since_ms: args.since.map(|since| since.start_ms(now)),
            text: args.text,
        };
        let page = Page {
            limit: args.limit,
            cursor: args.cursor,
        };
        let next = match list_all(&store, &filter, &page, |listed| {
            out.row(&listed.run_id, &listed.run, listed.status.as_ref());
        }) {
            Ok(next) => next,
            Err(e @ HistoryError::Cursor(_)) => {
                eprintln!("sublaunch list: {e}");
                return ExitCode::from(super::EXIT_USAGE);
            }
            Err(e) => return fail("list", e),
        };
        out.finish("No runs.");
        if let Some(next) = next {
            eprintln!("sublaunch list: more runs: --cursor {next}");
        }
        return ExitCode::SUCCESS;
    }
    let ids = match store.active_run_ids() {
        Ok(ids) => ids,
        Err(e) => return fail("list", e),
    };
    let mut out = Output::new(args.json, queue_places(&store), store.queue_reasons());
    let mut rows = Vec::new();
    for id in ids {
        if let Ok(Some(run)) = store.run_dir(&id) {
            let status = status_of(&run);
            rows.push((id, run, status));
        }
    }
    // By arrival: the runs that started, then the queued ones in their order in the queue
    // (a queued run's status was written when it arrived, before the running ones started).
    rows.sort_by_key(|(id, _, status)| {
        let place = out.place(id, status.as_ref());
        (
            place.is_some(),
            place.unwrap_or(0),
            status.as_ref().and_then(|s| s.started_at).unwrap_or(0),
            id.clone(),
        )
    });
    for (id, run, status) in &rows {
        out.row(id, run, status.as_ref());
    }
    // The history is read only when there is nothing else to show.
    out.finish_with(|| match ended_count(&store) {
        Some(EndedCount { runs: 0, .. }) | None => "No active runs.".to_owned(),
        Some(EndedCount { runs, more: false }) => format!("No active runs ({runs} ended: sublaunch list --all)."),
        Some(EndedCount { runs, more: true }) => {
            format!("No active runs (more than {runs} ended: sublaunch list --all).")
        }
    });
    ExitCode::SUCCESS
}

/// At most this many ended runs are counted for the empty list's hint, so that `list` costs
/// the same with 100 000 ended runs as with one (the history is read newest first and the
/// count stops here).
const ENDED_COUNTED: usize = 1000;

/// What the empty list's hint says of the ended runs.
struct EndedCount {
    /// Ended runs counted.
    runs: usize,
    /// Whether the count stopped at [`ENDED_COUNTED`].
    more: bool,
}

/// How many runs have ended, from the newest entries of the history index (no run directory
/// opened; a root whose index was never built is walked once to build it, as `list --all`
/// would). `None` when it cannot be read.
fn ended_count(store: &sublaunch::runs::RunStore) -> Option<EndedCount> {
    let history = sublaunch::runs::history::open_or_rebuild(store).ok()?;
    let mut seen = std::collections::HashSet::new();
    let mut count = EndedCount { runs: 0, more: false };
    for (entry, _) in history.newest_first(None).ok()? {
        if !seen.insert(entry.run_id.clone()) || entry.pruned || !entry.is_terminal() {
            continue;
        }
        if count.runs == ENDED_COUNTED {
            count.more = true;
            break;
        }
        count.runs += 1;
    }
    Some(count)
}

/// `1/3`: the steps that ended out of all of them.
fn steps_done(status: &Status) -> String {
    let steps: Vec<_> = status.steps.iter().flatten().collect();
    let ended = steps
        .iter()
        .filter(|s| !matches!(s.status.as_deref(), None | Some("pending" | "running")))
        .count();
    format!("{ended}/{}", steps.len())
}

/// The place of each run waiting for capacity (the queue settled first).
fn queue_places(store: &sublaunch::runs::RunStore) -> HashMap<String, usize> {
    store.queue_positions().unwrap_or_else(|e| {
        eprintln!("sublaunch list: warning: cannot read the capacity queue: {e}");
        Default::default()
    })
}

/// What `list` prints, row by row: a JSON array streamed one run at a time (byte for byte
/// what `serde_json::to_string_pretty` prints of the whole array), or a table (held until the
/// end, as its columns are as wide as their widest cell).
struct Output {
    json: bool,
    places: HashMap<String, usize>,
    /// Why each queued cluster job waits, by job id (J7).
    reasons: std::collections::BTreeMap<String, String>,
    /// JSON runs printed so far.
    printed: usize,
    table: Vec<[String; 6]>,
    now: u64,
}

impl Output {
    fn new(json: bool, places: HashMap<String, usize>, reasons: std::collections::BTreeMap<String, String>) -> Self {
        Self {
            json,
            places,
            reasons,
            printed: 0,
            table: Vec::new(),
            now: now_ms(),
        }
    }

    /// The place of a queued run in the capacity queue.
    fn place(&self, id: &str, status: Option<&Status>) -> Option<usize> {
        self.places
            .get(id)
            .copied()
            .filter(|_| status.is_some_and(|s| s.state == Some(RunState::Queued)))
    }

    fn row(&mut self, id: &str, run: &sublaunch_protocol::files::dir::Dir, status: Option<&Status>) {
        let place = self.place(id, status);
        if self.json {
            let mut view = RunView::new(id, run, status).with_queue_reason(&self.reasons);
            view.queue_position = place;
            let pretty = serde_json::to_string_pretty(&view.to_json()).unwrap_or_default();
            // An element of a pretty array: after `[` or `,`, on its own lines, indented by two.
            let indented: Vec<String> = pretty.lines().map(|line| format!("  {line}")).collect();
            say!("{}", if self.printed == 0 { "[" } else { "," });
            print_raw(&indented.join("\n"));
            self.printed += 1;
            return;
        }
        let reason = status
            .and_then(|s| s.cluster.as_ref())
            .and_then(|job| self.reasons.get(&job.job_id))
            .map(String::as_str);
        // U10: what an active run waits for.
        let waiting = status.and_then(|s| sublaunch::runs::view::active_wait(run, s));
        let state = |s: &Status| state_with_wait(state_with_place(s, place, reason), waiting.as_ref(), self.now);
        self.table.push(match status {
            Some(s) if s.state == Some(RunState::Queued) => [
                id.to_owned(),
                state(s),
                agents(s),
                steps_done(s),
                "-".into(),
                "-".into(),
            ],
            Some(s) => [
                id.to_owned(),
                state(s),
                agents(s),
                steps_done(s),
                s.started_at.map(iso8601_utc).unwrap_or_default(),
                elapsed(s, self.now).map(duration).unwrap_or_default(),
            ],
            None => [
                id.to_owned(),
                "unknown".into(),
                String::new(),
                String::new(),
                String::new(),
                String::new(),
            ],
        });
    }

    /// Ends the array, or prints the table (`empty` when there is no row).
    fn finish(self, empty: &str) {
        self.finish_with(|| empty.to_owned());
    }

    /// [`Output::finish`], the text of an empty table made only when it is needed.
    fn finish_with(self, empty: impl FnOnce() -> String) {
        if self.json {
            if self.printed == 0 {
                say!("[]");
            } else {
                say!("\n]");
            }
            return;
        }
        if self.table.is_empty() {
            say!("{}", empty());
            return;
        }
        super::print_table(
            ["RUN ID", "STATE", "AGENTS", "STEPS", "STARTED", "DURATION"],
            &self.table,
        );
    }
}

/// Prints `text` on stdout without a newline (a closed stdout is not an error worth a panic).
fn print_raw(text: &str) {
    use std::io::Write as _;
    let _ = write!(std::io::stdout(), "{text}");
}
