//! The history index (I10–I13): one small typed entry per ended run, so `list --all` answers
//! from a few kilobytes instead of reading every run directory.
//!
//! Layout: `<runs>/.history/manifest.json` (`version`, `generation`) and append-only segment
//! files `<runs>/.history/<generation>-<8-digit seq>.jsonl`, one JSON entry per line. Why:
//!
//! - **Newest N is cheap.** Entries are appended in the order runs end, so the newest are at
//!   the end of the segment with the highest number. A reader reads segments newest → oldest,
//!   one at a time (a segment is at most about [`SEGMENT_BYTES`]), and stops at its limit: the
//!   newest 50 of 100 000 runs cost one small file, the whole history is streamed.
//! - **Appends are crash-safe without a lock.** Each entry is one `write` of one complete line
//!   to a file opened `O_APPEND`, so concurrent writers interleave whole lines; a crash can only
//!   leave the last line torn, and a line without its newline (or one that does not parse) is
//!   ignored (I11). A run recorded twice (a resumed run ends again) has several lines: the
//!   newest wins, a reader keeps the first it meets.
//! - **Positions are stable.** A segment only grows, so `(segment, line)` is a page cursor
//!   that stays valid while runs keep ending ([`Cursor`]); a rebuild starts a new generation and
//!   cursors of the old one are refused instead of silently skipping runs.
//! - **The index is a cache, never the truth** (I12). It is rebuilt from the run directories
//!   when it is missing, its manifest cannot be read, or it is of another version
//!   ([`History::rebuild`]: the base segments written atomically, then the manifest, so a
//!   crash mid-rebuild leaves the old index or none). Readers show what the run directory says
//!   and drop entries whose run directory is gone; `prune` appends a tombstone for each run it
//!   removes ([`History::record_pruned`]), so readers skip it without looking.
//!
//! The entry is written by [`crate::records::index::ActiveRunIndex::release`] before it
//! removes the run's active marker (I13), whoever releases it (the shim at its end, the host's
//! finalization, a repair, a launch that failed): a run is always either marked active or has
//! an entry, so a crash between the terminal status and the entry loses nothing — the marker
//! stays, listers show the run from it, and the release that follows writes the entry.

use crate::files::atomic::Durability;
use crate::files::dir::Dir;
use crate::files::doc::ReadDoc;
use crate::files::durability::{DocKind, DurabilityPolicy};
use crate::files::layout::names;
use crate::records::status::{RunState, Status};
use rustix::fs::FileType;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::io::{self, Write as _};
use std::time::Duration;

/// The version of the index this crate writes and reads (I10).
pub const HISTORY_VERSION: u32 = 1;
/// `<runs>/.history/manifest.json`.
pub const MANIFEST: &str = "manifest.json";
/// Appends go to a new segment once the newest is this large.
pub const SEGMENT_BYTES: u64 = 128 * 1024;
/// The longest error text an entry keeps for `--text` (longer ones are cut).
pub const TEXT_CHARS: usize = 200;
/// How much of the newest segment an append reads to find the same entry written just before
/// (by the run's other releaser) and a torn last line.
pub const TAIL_BYTES: u64 = 8 * 1024;
/// A segment of another generation older than this is left over from an earlier rebuild and
/// is removed by the next one (a younger one may belong to a rebuild still running).
pub const STALE_GENERATION: Duration = Duration::from_secs(600);

/// One ended run (I10).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HistoryEntry {
    /// The run id.
    pub run_id: String,
    /// The state its status had when the entry was written (`None`: no readable status).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
    /// The agent of each step, in order.
    #[serde(default)]
    pub agents: Vec<String>,
    /// Wall ms.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub started_at: Option<u64>,
    /// Wall ms.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ended_at: Option<u64>,
    /// `endedAt - startedAt`, when both are known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    /// The caller's session.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// The run's working directory.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// The start of the failure text, for `--text`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// A tombstone: the run was pruned, its older lines are void (I12).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub pruned: bool,
}

impl HistoryEntry {
    /// The entry of run `run_id` as `status` describes it.
    pub fn from_status(run_id: &str, status: Option<&Status>) -> Self {
        let Some(status) = status else {
            return Self {
                run_id: run_id.to_owned(),
                ..Self::default()
            };
        };
        Self {
            run_id: run_id.to_owned(),
            state: Some(status.state.as_ref().map_or("unknown", RunState::as_str).to_owned()),
            agents: status.steps.iter().flatten().filter_map(|s| s.agent.clone()).collect(),
            started_at: status.started_at,
            ended_at: status.ended_at,
            duration_ms: status
                .started_at
                .zip(status.ended_at)
                .map(|(start, end)| end.saturating_sub(start)),
            session_id: status.session_id.clone(),
            cwd: status.cwd.clone(),
            error: status.error.as_ref().map(|e| e.chars().take(TEXT_CHARS).collect()),
            pruned: false,
        }
    }

    /// Whether the entry says the run ended (then its state is final and filters may trust
    /// it; otherwise the reader asks the run's status).
    pub fn is_terminal(&self) -> bool {
        self.state.as_deref().is_some_and(|s| RunState::parse(s).is_terminal())
    }

    /// Where entries are sorted in a rebuilt index: by end (else start), then id.
    fn order_key(&self) -> (u64, &str) {
        (self.ended_at.or(self.started_at).unwrap_or(0), &self.run_id)
    }
}

/// `manifest.json`.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Manifest {
    version: u32,
    generation: String,
}

/// Why [`History::open`] found no usable index (each one means: rebuild it).
#[derive(Debug)]
pub enum OpenError {
    /// There is no index (a new or older state root).
    Missing,
    /// The manifest cannot be parsed.
    Damaged(String),
    /// The index is of another version.
    OtherVersion(u32),
    /// Reading failed.
    Io(io::Error),
}

impl fmt::Display for OpenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Missing => write!(f, "there is no history index"),
            Self::Damaged(e) => write!(f, "the history index's manifest is damaged: {e}"),
            Self::OtherVersion(v) => write!(f, "the history index is of version {v}, not {HISTORY_VERSION}"),
            Self::Io(e) => write!(f, "cannot read the history index: {e}"),
        }
    }
}

impl std::error::Error for OpenError {}

/// A position in the index, printed as `<generation>.<segment>.<line>`: the next page holds
/// the entries before it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cursor {
    generation: String,
    position: Position,
}

/// A line of a segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Position {
    segment: u32,
    line: usize,
}

/// Why a `--cursor` value cannot be used.
#[derive(Debug, PartialEq, Eq)]
pub enum CursorError {
    /// Not of the form `<generation>.<segment>.<line>`.
    Malformed(String),
    /// It belongs to an index that has since been rebuilt.
    Stale(String),
}

impl fmt::Display for CursorError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Malformed(c) => write!(f, "invalid cursor '{c}'"),
            Self::Stale(c) => write!(
                f,
                "the cursor '{c}' belongs to a history index that was rebuilt since; list again without it"
            ),
        }
    }
}

impl std::error::Error for CursorError {}

impl std::str::FromStr for Cursor {
    type Err = CursorError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let malformed = || CursorError::Malformed(s.to_owned());
        let mut parts = s.rsplitn(3, '.');
        let line = parts.next().and_then(|p| p.parse().ok()).ok_or_else(malformed)?;
        let segment = parts.next().and_then(|p| p.parse().ok()).ok_or_else(malformed)?;
        let generation = parts.next().filter(|g| valid_generation(g)).ok_or_else(malformed)?;
        Ok(Self {
            generation: generation.to_owned(),
            position: Position { segment, line },
        })
    }
}

impl fmt::Display for Cursor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}.{}.{}",
            self.generation, self.position.segment, self.position.line
        )
    }
}

/// A generation is hex digits (it names files and sits in cursors).
fn valid_generation(generation: &str) -> bool {
    !generation.is_empty() && generation.len() <= 32 && generation.bytes().all(|b| b.is_ascii_hexdigit())
}

/// `<generation>-<8-digit seq>.jsonl`.
fn segment_name(generation: &str, segment: u32) -> String {
    format!("{generation}-{segment:08}.jsonl")
}

/// The generation and number of a segment's file name.
fn parse_segment_name(name: &str) -> Option<(&str, u32)> {
    let (generation, seq) = name.strip_suffix(".jsonl")?.rsplit_once('-')?;
    (valid_generation(generation) && seq.len() == 8).then_some(())?;
    Some((generation, seq.parse().ok()?))
}

/// An open history index of one `<runs>` directory.
#[derive(Debug)]
pub struct History {
    dir: Dir,
    generation: String,
}

impl History {
    /// Opens the index of `runs`; any error means it must be rebuilt ([`History::rebuild`]).
    pub fn open(runs: &Dir) -> Result<Self, OpenError> {
        let dir = match runs.open_child(names::HISTORY_DIR) {
            Ok(Some(dir)) => dir,
            Ok(None) => return Err(OpenError::Missing),
            Err(e) => return Err(OpenError::Io(e)),
        };
        let manifest = match dir.read_doc::<Manifest>(MANIFEST) {
            Ok(ReadDoc::Present(manifest)) => manifest,
            Ok(ReadDoc::Absent) => return Err(OpenError::Missing),
            Ok(ReadDoc::Corrupt(c)) => return Err(OpenError::Damaged(c.error)),
            Err(e) => return Err(OpenError::Io(e)),
        };
        if manifest.version != HISTORY_VERSION {
            return Err(OpenError::OtherVersion(manifest.version));
        }
        if !valid_generation(&manifest.generation) {
            return Err(OpenError::Damaged(format!(
                "invalid generation '{}'",
                manifest.generation
            )));
        }
        Ok(Self {
            dir,
            generation: manifest.generation,
        })
    }

    /// Replaces the index of `runs` with `entries` (one walk of the run directories, done by
    /// the caller): a new generation whose base segments are each written atomically, then the
    /// manifest naming it (I12). Segments of the generation it replaces are removed; a crash in
    /// between leaves only files no manifest names.
    pub fn rebuild(runs: &Dir, mut entries: Vec<HistoryEntry>, policy: DurabilityPolicy) -> io::Result<Self> {
        let replaced = Self::open(runs).ok().map(|h| h.generation);
        let dir = runs.ensure_child_synced(names::HISTORY_DIR)?;
        let now = runs.os().clock.wall_ms();
        let generation = format!("{now:x}{:x}", std::process::id());
        entries.sort_by(|a, b| a.order_key().cmp(&b.order_key()));
        let durability = policy.for_kind(DocKind::TerminalRunEntry);
        // Segments no larger than appends make them, so that reading the newest few stays cheap.
        let mut segment = 0;
        let mut base = Vec::new();
        for entry in &entries {
            base.extend_from_slice(&line_of(entry));
            if base.len() as u64 >= SEGMENT_BYTES {
                dir.write(&segment_name(&generation, segment), &base, durability)?;
                segment += 1;
                base.clear();
            }
        }
        dir.write(&segment_name(&generation, segment), &base, durability)?;
        let manifest = Manifest {
            version: HISTORY_VERSION,
            generation: generation.clone(),
        };
        dir.write_doc(MANIFEST, &manifest, durability)?;
        for entry in dir.entries()? {
            let Some(name) = entry.name.to_str() else { continue };
            let Some((theirs, _)) = parse_segment_name(name) else {
                continue;
            };
            if theirs == generation {
                continue;
            }
            let stale = dir.stat(name).ok().flatten().is_some_and(|stat| {
                #[allow(clippy::useless_conversion)] // the field type differs between platforms
                let mtime_ms = u64::try_from(stat.st_mtime).unwrap_or(0) * 1000;
                now.saturating_sub(mtime_ms) > STALE_GENERATION.as_millis() as u64
            });
            if replaced.as_deref() == Some(theirs) || stale {
                dir.remove(name)?;
            }
        }
        Ok(Self { dir, generation })
    }

    /// Appends `entry` to the index of `runs` (I11, I13). Without a usable index nothing is
    /// written: the rebuild that the next reader does finds the run in its directory.
    pub fn append(runs: &Dir, entry: &HistoryEntry, policy: DurabilityPolicy) -> io::Result<()> {
        let history = match Self::open(runs) {
            Ok(history) => history,
            Err(OpenError::Io(e)) => return Err(e),
            Err(_) => return Ok(()),
        };
        let newest = history.segments()?.last().copied().unwrap_or(0);
        let size = history
            .dir
            .stat(&segment_name(&history.generation, newest))?
            .map_or(0, |stat| u64::try_from(stat.st_size).unwrap_or(0));
        let mut line = line_of(entry);
        let tail = history.tail(&segment_name(&history.generation, newest), size)?;
        if recorded_in(&tail, size, &line) {
            // Each releaser of a run records it (the shim, then the host that finalizes it):
            // the same entry again is left out, so a run costs one line, not two.
            return Ok(());
        }
        let segment = if size >= SEGMENT_BYTES { newest + 1 } else { newest };
        if segment == newest && !tail.is_empty() && !tail.ends_with(b"\n") {
            // A writer crashed mid-line: end that torn line, so it alone is lost (I11).
            line.insert(0, b'\n');
        }
        let name = segment_name(&history.generation, segment);
        let mut file = history.dir.open_append(&name)?;
        // One write of one whole line: appenders interleave lines, never bytes (I11).
        file.write_all(&line)?;
        if policy.for_kind(DocKind::TerminalRunEntry) != Durability::Atomic {
            file.sync_data()?;
        }
        Ok(())
    }

    /// Writes the entry of run `run_id` from its terminal `status` (see [`Self::append`]); a
    /// capacity error is returned, others too — the caller decides what is fatal.
    pub fn record_end(runs: &Dir, run_id: &str, status: &Status, policy: DurabilityPolicy) -> io::Result<()> {
        Self::append(runs, &HistoryEntry::from_status(run_id, Some(status)), policy)
    }

    /// The last [`TAIL_BYTES`] (at most) of the `size` bytes of segment `name`.
    fn tail(&self, name: &str, size: u64) -> io::Result<Vec<u8>> {
        use std::os::unix::fs::FileExt as _;
        let Some(file) = self.dir.open_read(name)? else {
            return Ok(Vec::new());
        };
        let start = size.saturating_sub(TAIL_BYTES);
        let mut tail = vec![0u8; usize::try_from(size - start).unwrap_or(0)];
        let read = file.read_at(&mut tail, start)?;
        tail.truncate(read);
        Ok(tail)
    }

    /// Records that run `run_id` was pruned: a tombstone line, newer than its entries, so
    /// readers skip the run without looking for its directory (see [`Self::append`]).
    pub fn record_pruned(runs: &Dir, run_id: &str, policy: DurabilityPolicy) -> io::Result<()> {
        let tombstone = HistoryEntry {
            run_id: run_id.to_owned(),
            pruned: true,
            ..HistoryEntry::default()
        };
        Self::append(runs, &tombstone, policy)
    }

    /// The index's generation (cursors of another one are refused).
    pub fn generation(&self) -> &str {
        &self.generation
    }

    /// The cursor of a page that starts at the newest entry (for a first page that the
    /// active runs filled).
    pub fn start_cursor(&self) -> Cursor {
        Cursor {
            generation: self.generation.clone(),
            position: Position {
                segment: u32::MAX,
                line: usize::MAX,
            },
        }
    }

    /// The entries, newest first, from just before `cursor` (from the newest without one).
    /// Each comes with the cursor that resumes after it. Segments are read one at a time.
    pub fn newest_first(&self, cursor: Option<&Cursor>) -> Result<NewestFirst<'_>, CursorError> {
        let start = match cursor {
            Some(c) if c.generation != self.generation => return Err(CursorError::Stale(c.to_string())),
            Some(c) => Some(c.position),
            None => None,
        };
        let mut segments = self.segments().unwrap_or_default();
        if let Some(start) = start {
            segments.retain(|s| *s <= start.segment);
        }
        Ok(NewestFirst {
            history: self,
            segments,
            start,
            current: Vec::new(),
            segment: 0,
            error: None,
        })
    }

    /// The segment numbers of this generation, ascending.
    fn segments(&self) -> io::Result<Vec<u32>> {
        let mut out: Vec<u32> = self
            .dir
            .entries()?
            .into_iter()
            .filter(|e| e.file_type == FileType::RegularFile)
            .filter_map(|e| {
                let name = e.name.to_str()?;
                let (generation, seq) = parse_segment_name(name)?;
                (generation == self.generation).then_some(seq)
            })
            .collect();
        out.sort_unstable();
        Ok(out)
    }

    /// The complete lines of one segment, parsed; a torn last line or a line that does not
    /// parse is `None` (I11).
    fn read_segment(&self, segment: u32) -> io::Result<Vec<Option<HistoryEntry>>> {
        let Some(bytes) = self.dir.read(&segment_name(&self.generation, segment))? else {
            return Ok(Vec::new());
        };
        let mut lines: Vec<&[u8]> = bytes.split(|b| *b == b'\n').collect();
        // What follows the last newline is a torn line (or nothing).
        lines.pop();
        Ok(lines
            .into_iter()
            .map(|line| serde_json::from_slice::<HistoryEntry>(line).ok())
            .collect())
    }
}

/// Whether `line` is a whole line of `tail`, the end of a segment of `size` bytes.
fn recorded_in(tail: &[u8], size: u64, line: &[u8]) -> bool {
    let whole_file = tail.len() as u64 == size;
    (whole_file && tail.starts_with(line)) || tail.windows(line.len() + 1).any(|w| w[0] == b'\n' && &w[1..] == line)
}

/// The serialized line of `entry`, newline included.
fn line_of(entry: &HistoryEntry) -> Vec<u8> {
    let mut line = serde_json::to_vec(entry).unwrap_or_default();
    line.push(b'\n');
    line
}

/// The entries of a [`History`], newest first ([`History::newest_first`]).
pub struct NewestFirst<'a> {
    history: &'a History,
    /// Segments still to read, ascending (the newest is popped first).
    segments: Vec<u32>,
    start: Option<Position>,
    /// The entries of the segment being read, oldest first (popped from the end).
    current: Vec<Option<HistoryEntry>>,
    segment: u32,
    error: Option<io::Error>,
}

impl NewestFirst<'_> {
    /// The read error that ended the iteration early, if any.
    pub fn take_error(&mut self) -> Option<io::Error> {
        self.error.take()
    }
}

impl Iterator for NewestFirst<'_> {
    type Item = (HistoryEntry, Cursor);

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(entry) = self.current.pop() {
                let Some(entry) = entry else { continue };
                let cursor = Cursor {
                    generation: self.history.generation.clone(),
                    position: Position {
                        segment: self.segment,
                        line: self.current.len(),
                    },
                };
                return Some((entry, cursor));
            }
            let segment = self.segments.pop()?;
            match self.history.read_segment(segment) {
                Ok(mut lines) => {
                    if let Some(start) = self.start.filter(|s| s.segment == segment) {
                        lines.truncate(start.line);
                    }
                    self.current = lines;
                    self.segment = segment;
                }
                Err(e) => {
                    self.error = Some(e);
                    self.segments.clear();
                    return None;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests;
