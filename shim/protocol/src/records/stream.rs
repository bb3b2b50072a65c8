//! The event stream (D4, D5): every lifecycle event of every run under a state root, in one
//! ordered, bounded log that consumers (`sublaunch events`, the MCP server, dashboards) read
//! from a cursor and resume from after they or the machine restarted.
//!
//! Layout: `<root>/events/<first cursor, 20 digits>.log` segments, each a sequence of lines
//! `<crc32 as 8 hex digits> <StreamEvent JSON>\n` (as the usage ledger's). Every event has a
//! cursor, one more than the event before it. Appends happen under an exclusive `flock` on
//! `<root>/events/.lock`, so cursors are dense and ordered; the next cursor is read back from
//! the last valid line of the newest segment, so it never depends on state a crash can lose.
//!
//! Bounded: a segment is closed at [`SEGMENT_BYTES`] and only the newest [`KEEP_SEGMENTS`] are
//! kept; a consumer whose cursor is older than the oldest kept event is told how many it missed.
//!
//! Durable where it matters: a run's end ([`record_end`]) is fdatasynced, which also makes
//! every earlier line of its segment durable. Other events are written without a sync of their
//! own (a power loss can lose the last of them, never an end that was reported).
//!
//! Exactly one `ended` event per end of a run (D6): [`record_end`] writes an intent before it
//! appends, and whoever takes the lock next finishes an intent its writer died in. The run's
//! `<run>/end.json` ([`EndMarker`]) says which end was recorded, so a second recorder — the
//! runner and a lister that repaired it race — finds it done.

use crate::files::checked_lines;
use crate::files::dir::Dir;
use crate::files::doc::ReadDoc;
use crate::files::durability::{DocKind, DurabilityPolicy};
use crate::files::lock::FileLock;
use crate::records::events::has_run_started;
use crate::records::failure::FailureKind;
use crate::records::hook;
use crate::records::outbox::{self, Delivery};
use crate::records::status::{Status, read_status};
use serde::{Deserialize, Serialize};
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// `<root>/events`.
pub const STREAM_DIR: &str = "events";
/// The appenders' lock, in [`STREAM_DIR`].
const LOCK_FILE: &str = ".lock";
/// The pending end, in [`STREAM_DIR`]: what [`record_end`] is about to write.
const INTENT_FILE: &str = ".intent";
/// `<run>/end.json`: the run's last recorded end.
pub const END_MARKER: &str = "end.json";
/// A segment is closed once it holds this many bytes.
pub const SEGMENT_BYTES: u64 = 4 * 1024 * 1024;
/// How many segments are kept (the log holds at most about 64 MiB).
pub const KEEP_SEGMENTS: usize = 16;
/// The longest error text an event carries (an agent's error can be long; the run has it all).
const MAX_ERROR_CHARS: usize = 1000;
/// How much of a segment's end is read to find its last cursor.
const TAIL_BYTES: u64 = 4 * 1024;
const EXTENSION: &str = "log";

/// One event of the stream.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StreamEvent {
    /// Its place in the stream: one more than the event before it.
    pub cursor: u64,
    /// Wall ms when it happened.
    pub at: u64,
    /// The run it is about.
    pub run_id: String,
    /// What happened.
    #[serde(flatten)]
    pub what: What,
}

/// What happened to a run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case", rename_all_fields = "camelCase")]
pub enum What {
    /// The run was launched (its directory and first status exist).
    Launched {
        /// The first step's agent.
        agent: String,
        /// `single`, `chain` or `parallel`.
        mode: String,
        /// Where its agents run.
        cwd: String,
        /// The run that launched it, for a nested run.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        parent: Option<String>,
    },
    /// The launch waits (capacity, a provider's cooldown, a spend limit).
    Queued {
        /// Why, in words.
        reason: String,
    },
    /// Its runner started.
    Started {
        /// The runner's pid.
        pid: u32,
    },
    /// A step started.
    StepStarted {
        /// The step (flat order, from 0).
        step: usize,
        /// Its agent.
        agent: String,
    },
    /// A step ended.
    StepEnded {
        /// The step.
        step: usize,
        /// Its agent.
        agent: String,
        /// `complete`, `failed`, `stopped`, `paused`.
        state: String,
        /// Why it did not complete (D1).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        failure_kind: Option<FailureKind>,
    },
    /// An acceptance gate of a step was checked.
    Gate {
        /// The step.
        step: usize,
        /// The gate's id.
        gate: String,
        /// Whether it passed.
        passed: bool,
    },
    /// The run ended (once per end; D6).
    Ended {
        /// Its terminal state.
        state: String,
        /// Why it did not complete (D1).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        failure_kind: Option<FailureKind>,
        /// The end's idempotency key: `<runId>.<end seq>` (D7).
        delivery_id: String,
        /// The run's error, its first 1 000 characters.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
    /// A consumer got the end.
    Delivered {
        /// The end's key.
        delivery_id: String,
        /// Who got it (`hook`).
        consumer: String,
        /// Which attempt succeeded (from 1).
        attempt: u32,
    },
    /// A consumer did not get the end; it is tried again.
    DeliveryFailed {
        /// The end's key.
        delivery_id: String,
        /// Who did not get it.
        consumer: String,
        /// Which attempt failed.
        attempt: u32,
        /// What went wrong.
        error: String,
        /// When it is tried again (wall ms); absent once it is given up.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        next_attempt_at: Option<u64>,
    },
}

impl What {
    /// The event's type word (`launched`, `step-ended`, …).
    pub fn type_word(&self) -> &'static str {
        match self {
            Self::Launched { .. } => "launched",
            Self::Queued { .. } => "queued",
            Self::Started { .. } => "started",
            Self::StepStarted { .. } => "step-started",
            Self::StepEnded { .. } => "step-ended",
            Self::Gate { .. } => "gate",
            Self::Ended { .. } => "ended",
            Self::Delivered { .. } => "delivered",
            Self::DeliveryFailed { .. } => "delivery-failed",
        }
    }
}

/// `<run>/end.json`: the run's last end that is in the stream.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EndMarker {
    /// How many times the run ended (a resumed run can end again).
    pub seq: u32,
    /// The end's `endedAt`.
    pub ended_at: u64,
    /// Its `ended` event.
    pub cursor: u64,
    /// `<runId>.<seq>`.
    pub delivery_id: String,
}

/// An end being recorded: written before the append, cleared after the marker.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Intent {
    run_dir: PathBuf,
    line: String,
    cursor: u64,
    marker: EndMarker,
    #[serde(default)]
    delivery: Option<Delivery>,
}

/// What a read returned.
#[derive(Debug, Default)]
pub struct Batch {
    /// The events after the cursor, in order.
    pub events: Vec<StreamEvent>,
    /// How many events after the cursor are no longer kept (the log is bounded).
    pub dropped: u64,
    /// Lines that did not pass their checksum (a torn append).
    pub damaged: u64,
}

/// The event stream of one state root.
#[derive(Clone, Debug)]
pub struct Stream {
    dir: PathBuf,
}

impl Stream {
    /// The stream under `root`.
    pub fn under(root: &Path) -> Self {
        Self {
            dir: root.join(STREAM_DIR),
        }
    }

    /// `<root>/events`.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Creates `<root>/events` (0700) when missing.
    pub fn ensure_dir(&self) -> io::Result<()> {
        checked_lines::ensure_private_dir(&self.dir)
    }

    /// Appends one event (not synced; see the module doc) and returns its cursor.
    pub fn append(&self, run_id: &str, at: u64, what: What) -> io::Result<u64> {
        let mut appender = self.appender()?;
        appender.push(run_id, at, what, false)
    }

    /// The events after `after` (all that are kept for `None`), at most `max`.
    pub fn read(&self, after: Option<u64>, max: usize) -> io::Result<Batch> {
        Reader::new(self.clone(), after).next(max)
    }

    /// The cursor of the newest event (0 when there is none).
    pub fn last_cursor(&self) -> io::Result<u64> {
        let segments = self.segments()?;
        last_cursor_of(&segments)
    }

    /// The segments, oldest first, by their first cursor.
    fn segments(&self) -> io::Result<Vec<(u64, PathBuf)>> {
        let entries = match std::fs::read_dir(&self.dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(e),
        };
        let mut segments: Vec<(u64, PathBuf)> = entries
            .filter_map(Result::ok)
            .filter_map(|entry| {
                let name = entry.file_name().into_string().ok()?;
                let first = name.strip_suffix(".log")?.parse().ok()?;
                Some((first, entry.path()))
            })
            .collect();
        segments.sort();
        Ok(segments)
    }

    /// Takes the appenders' lock (creating the directory), and finishes an end whose
    /// recorder died.
    fn appender(&self) -> io::Result<Appender<'_>> {
        checked_lines::ensure_private_dir(&self.dir)?;
        let dir = Dir::open(&self.dir)?;
        let lock = FileLock::exclusive(&dir, LOCK_FILE)?;
        let mut appender = Appender {
            stream: self,
            _lock: lock,
        };
        appender.redo()?;
        Ok(appender)
    }
}

/// A consumer's place in the stream: reads on from where it stopped (the segment and the byte
/// in it), so following the stream costs what is new, not what is kept.
#[derive(Debug)]
pub struct Reader {
    stream: Stream,
    /// The cursor of the last event returned.
    after: Option<u64>,
    /// The segment being read (its first cursor) and how far.
    at: Option<(u64, u64)>,
}

impl Reader {
    /// A reader of the events after `after` (every kept event for `None`).
    pub fn new(stream: Stream, after: Option<u64>) -> Self {
        Self {
            stream,
            after,
            at: None,
        }
    }

    /// The cursor of the last event returned (or the one it started after).
    pub fn cursor(&self) -> Option<u64> {
        self.after
    }

    /// The next events, at most `max` (none when nothing new was appended).
    pub fn next(&mut self, max: usize) -> io::Result<Batch> {
        let mut batch = Batch::default();
        let segments = self.stream.segments()?;
        let Some((oldest, _)) = segments.first() else {
            return Ok(batch);
        };
        let want = self.after.map_or(1, |c| c.saturating_add(1));
        let here = self
            .at
            .and_then(|(first, _)| segments.iter().position(|(f, _)| *f == first));
        let mut index = match here {
            Some(index) => index,
            None => {
                // Starting, or our segment was dropped by rotation: find the cursor.
                if self.after.is_some() && want < *oldest {
                    batch.dropped = oldest - want;
                }
                let index = segments.iter().rposition(|(first, _)| *first <= want).unwrap_or(0);
                self.at = Some((segments[index].0, 0));
                index
            }
        };
        loop {
            let (first, path) = &segments[index];
            let offset = self.at.map_or(0, |(_, offset)| offset);
            let bytes = match read_from(path, offset) {
                Ok(bytes) => bytes,
                Err(e) if e.kind() == io::ErrorKind::NotFound => Vec::new(),
                Err(e) => return Err(e),
            };
            let mut used = 0usize;
            for line in bytes.split_inclusive(|b| *b == b'\n') {
                if line.last() != Some(&b'\n') {
                    break;
                }
                used += line.len();
                match decode(&line[..line.len() - 1]) {
                    Some(event) if self.after.is_none_or(|after| event.cursor > after) => {
                        self.after = Some(event.cursor);
                        batch.events.push(event);
                    }
                    Some(_) => {}
                    None if line.len() > 1 => batch.damaged += 1,
                    None => {}
                }
                if batch.events.len() >= max {
                    break;
                }
            }
            self.at = Some((*first, offset + used as u64));
            if batch.events.len() >= max || index + 1 >= segments.len() {
                return Ok(batch);
            }
            // Only the newest segment grows: an older one read to its end is done.
            if used == bytes.len() {
                index += 1;
                self.at = Some((segments[index].0, 0));
            } else {
                return Ok(batch);
            }
        }
    }
}

/// The bytes of `path` from `offset` to its end.
fn read_from(path: &Path, offset: u64) -> io::Result<Vec<u8>> {
    use std::io::{Read, Seek, SeekFrom};
    let mut file = File::open(path)?;
    file.seek(SeekFrom::Start(offset))?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// The lock holder.
struct Appender<'a> {
    stream: &'a Stream,
    _lock: FileLock,
}

impl Appender<'_> {
    /// The cursor the next event gets.
    fn next_cursor(&self) -> io::Result<u64> {
        Ok(self.stream.last_cursor()? + 1)
    }

    /// Appends `what` at the next cursor; `durable` syncs the segment.
    fn push(&mut self, run_id: &str, at: u64, what: What, durable: bool) -> io::Result<u64> {
        let cursor = self.next_cursor()?;
        let event = StreamEvent {
            cursor,
            at,
            run_id: run_id.to_owned(),
            what,
        };
        self.write_line(&encode(&event), cursor, durable)?;
        Ok(cursor)
    }

    /// Appends one encoded line whose cursor is `cursor`, starting a segment when the newest
    /// is full (and dropping the oldest beyond [`KEEP_SEGMENTS`]).
    fn write_line(&mut self, line: &[u8], cursor: u64, durable: bool) -> io::Result<()> {
        let segments = self.stream.segments()?;
        let (path, created) = match segments.last() {
            Some((_, path)) if std::fs::metadata(path).map(|m| m.len()).unwrap_or(0) < SEGMENT_BYTES => {
                (path.clone(), false)
            }
            _ => (self.stream.dir.join(format!("{cursor:020}.{EXTENSION}")), true),
        };
        let file = OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&path)?;
        let mut bytes = Vec::with_capacity(line.len() + 1);
        if !checked_lines::ends_with_newline(&file)? {
            // A torn line of a dead appender stays a line of its own (its checksum fails).
            bytes.push(b'\n');
        }
        bytes.extend_from_slice(line);
        (&file).write_all(&bytes)?;
        if durable {
            file.sync_data()?;
        }
        if created {
            if durable {
                File::open(&self.stream.dir)?.sync_all()?;
            }
            let mut all = self.stream.segments()?;
            while all.len() > KEEP_SEGMENTS {
                let (_, oldest) = all.remove(0);
                let _ = std::fs::remove_file(oldest);
            }
        }
        Ok(())
    }

    /// Finishes an end whose recorder died between its intent and its marker.
    fn redo(&mut self) -> io::Result<()> {
        let path = self.stream.dir.join(INTENT_FILE);
        let bytes = match std::fs::read(&path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(e),
        };
        if bytes.is_empty() {
            return Ok(());
        }
        // A torn intent was never acted on: its line is appended only after it is whole.
        if let Ok(intent) = serde_json::from_slice::<Intent>(&bytes) {
            if self.stream.last_cursor()? < intent.cursor {
                let mut line = intent.line.clone().into_bytes();
                line.push(b'\n');
                self.write_line(&line, intent.cursor, true)?;
            }
            if let Ok(run) = Dir::open(&intent.run_dir) {
                finish_end(&run, &intent, true)?;
            }
        }
        clear(&path)
    }
}

/// Writes the end's outbox entry and marker, unless its marker says it is done.
fn finish_end(run: &Dir, intent: &Intent, redo: bool) -> io::Result<()> {
    let done = matches!(
        run.read_doc::<EndMarker>(END_MARKER),
        Ok(ReadDoc::Present(marker)) if marker.seq >= intent.marker.seq
    );
    if done {
        return Ok(());
    }
    if let Some(delivery) = &intent.delivery {
        let root = intent
            .run_dir
            .parent()
            .and_then(Path::parent)
            .map(Path::to_owned)
            .unwrap_or_default();
        let outbox = outbox::Outbox::under(&root);
        // A redo leaves alone a delivery someone may have made since.
        if !redo || outbox::may_put_again(run, &outbox, delivery) {
            outbox.put(delivery)?;
        }
    }
    run.write_doc(
        END_MARKER,
        &intent.marker,
        DurabilityPolicy::standard().for_kind(DocKind::Other),
    )
}

/// Replaces the contents of `path` (created 0600, never followed).
fn write_private(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)?;
    file.write_all(bytes)
}

fn clear(path: &Path) -> io::Result<()> {
    match OpenOptions::new().write(true).open(path) {
        Ok(file) => file.set_len(0),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

/// The run's recorded end, if any.
pub fn end_marker(run: &Dir) -> Option<EndMarker> {
    run.read_doc::<EndMarker>(END_MARKER).ok().and_then(ReadDoc::present)
}

/// Whether `status`'s end is in the stream (the run's marker is of this end).
pub fn end_recorded(run: &Dir, status: &Status) -> bool {
    end_marker(run).is_some_and(|m| m.ended_at == ended_at(status))
}

fn ended_at(status: &Status) -> u64 {
    status.ended_at.or(status.last_update).unwrap_or(0)
}

/// What [`record_end`] needs to know about the run's consumers.
#[derive(Clone, Copy, Debug, Default)]
pub struct Consumers {
    /// The run has a completion hook to deliver the end to (it started and has `hook.json`).
    pub hook: bool,
}

/// Records the end of the run in `run` (under `root`), whose status is `status` (terminal):
/// the `ended` event (synced), the outbox entry of each consumer, then the run's marker.
/// Idempotent: an end already recorded returns its marker. Returns `None` for a status that
/// is not terminal.
pub fn record_end(root: &Path, run: &Dir, status: &Status, consumers: Consumers) -> io::Result<Option<EndMarker>> {
    if !status.is_terminal() {
        return Ok(None);
    }
    let stream = Stream::under(root);
    let ended_at = ended_at(status);
    if let Some(marker) = end_marker(run).filter(|m| m.ended_at == ended_at) {
        return Ok(Some(marker));
    }
    let mut appender = stream.appender()?;
    // Under the lock: somebody may have recorded it meanwhile.
    let previous = end_marker(run);
    if let Some(marker) = previous.clone().filter(|m| m.ended_at == ended_at) {
        return Ok(Some(marker));
    }
    let run_id = status.run_id.clone().unwrap_or_else(|| {
        run.path()
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    });
    let seq = previous.map_or(1, |m| m.seq + 1);
    let delivery_id = format!("{run_id}.{seq}");
    let cursor = appender.next_cursor()?;
    let state = status.state.as_ref().map_or("failed", |s| s.as_str()).to_owned();
    let event = StreamEvent {
        cursor,
        at: ended_at,
        run_id: run_id.clone(),
        what: What::Ended {
            state: state.clone(),
            failure_kind: status.failure_kind,
            delivery_id: delivery_id.clone(),
            error: status.error.as_deref().map(clip),
        },
    };
    let mut line = encode(&event);
    line.pop();
    let run_dir = std::path::absolute(run.path()).unwrap_or_else(|_| run.path().to_owned());
    let intent = Intent {
        run_dir: run_dir.clone(),
        line: String::from_utf8_lossy(&line).into_owned(),
        cursor,
        marker: EndMarker {
            seq,
            ended_at,
            cursor,
            delivery_id: delivery_id.clone(),
        },
        delivery: consumers
            .hook
            .then(|| Delivery::new(&delivery_id, &run_id, &run_dir, &state, status.failure_kind, cursor)),
    };
    let intent_path = stream.dir.join(INTENT_FILE);
    write_private(&intent_path, &serde_json::to_vec(&intent).map_err(io::Error::other)?)?;
    line.push(b'\n');
    appender.write_line(&line, cursor, true)?;
    finish_end(run, &intent, false)?;
    clear(&intent_path)?;
    Ok(Some(intent.marker))
}

/// [`record_end`] for the run in `run` when its status is terminal, with its completion hook as
/// a consumer when it has one and the run started (a launch that failed before its run started
/// was reported to its caller and delivers nothing).
pub fn record_end_if_ended(root: &Path, run: &Dir) -> io::Result<Option<EndMarker>> {
    let Ok(ReadDoc::Present(status)) = read_status(run) else {
        return Ok(None);
    };
    if !status.is_terminal() {
        return Ok(None);
    }
    if let Some(marker) = end_marker(run).filter(|m| m.ended_at == ended_at(&status)) {
        return Ok(Some(marker));
    }
    let hook = match hook::read_spec(run) {
        Ok(Some(spec)) => has_run_started(run, &spec.run_id).unwrap_or(false),
        _ => false,
    };
    record_end(root, run, &status, Consumers { hook })
}

fn clip(text: &str) -> String {
    match text.char_indices().nth(MAX_ERROR_CHARS) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}

/// The last cursor in `segments` (0 when they hold no event).
fn last_cursor_of(segments: &[(u64, PathBuf)]) -> io::Result<u64> {
    for (first, path) in segments.iter().rev() {
        let file = match File::open(path) {
            Ok(file) => file,
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e),
        };
        let len = file.metadata()?.len();
        let mut window = TAIL_BYTES.min(len);
        loop {
            let mut bytes = vec![0u8; usize::try_from(window).unwrap_or(usize::MAX)];
            file.read_exact_at(&mut bytes, len - window)?;
            // The first piece of a window that does not start the file may be half a line.
            let lines: Vec<&[u8]> = complete_lines(&bytes).collect();
            let skip_first = usize::from(window < len);
            if let Some(event) = lines.iter().skip(skip_first).rev().find_map(|l| decode(l)) {
                return Ok(event.cursor);
            }
            if window == len {
                break;
            }
            window = (window * 4).min(len);
        }
        // A segment with no valid line yet: the events before it end just before it.
        if let Some(cursor) = first.checked_sub(1)
            && cursor > 0
        {
            return Ok(cursor);
        }
    }
    Ok(0)
}

/// The lines of `bytes` that end in a newline (a line still being written is left out).
fn complete_lines(bytes: &[u8]) -> impl Iterator<Item = &[u8]> {
    let end = bytes.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
    bytes[..end].split(|b| *b == b'\n').filter(|l| !l.is_empty())
}

/// One line of the log: checksum, space, the event's JSON, newline.
pub fn encode(event: &StreamEvent) -> Vec<u8> {
    checked_lines::encode(event)
}

/// The event of one line (without its newline), when its checksum matches.
pub fn decode(line: &[u8]) -> Option<StreamEvent> {
    checked_lines::decode(line)
}

#[cfg(test)]
mod tests;
