//! The usage ledger (U1, U2): every step's tokens and cost — what it added while it ran, at
//! most every few seconds, then the rest when it ended — kept across runs in
//! `<root>/usage/<YYYY-MM>.ledger` (the UTC month of the entry), so that what was spent can be
//! summed over days and months without reading run directories (which `prune` removes).
//!
//! A ledger file is a sequence of lines `<crc32 as 8 hex digits> <entry JSON>\n`, each
//! appended with one `write` to a file opened `O_APPEND` (appenders never interleave), then
//! fsynced. A power loss can leave the last line cut short or its bytes zeroed: a reader skips
//! every line whose checksum does not match, and an appender that finds the file not ending
//! in a newline starts its line with one, so a torn line never swallows the next entry. The
//! last entry may be lost; the file is never unreadable.

use crate::files::checked_lines;
use crate::os::clock::civil_from_days;
use crate::records::usage::Usage;
use serde::{Deserialize, Serialize};
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// `<root>/usage`.
pub const LEDGER_DIR: &str = "usage";

/// The extension of a month's file.
const EXTENSION: &str = "ledger";

/// What one step spent, as recorded when it ended.
#[serde_with_macros::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LedgerEntry {
    /// When the step ended (epoch ms).
    pub at: u64,
    /// The run.
    pub run: String,
    /// The run this run was launched from (by an agent of that run), when any.
    pub parent: Option<String>,
    /// The run at the top of its run tree, when it is not the run itself.
    pub root: Option<String>,
    /// The step's flat index in its run.
    pub step: u32,
    /// The agent.
    pub agent: Option<String>,
    /// The model as planned (or as the agent reported it, when it reported one).
    pub model: Option<String>,
    /// The provider the model was called at (`anthropic`, `openai`, a pi provider).
    pub provider: Option<String>,
    /// The machine the step ran on, when it was placed on one (absent: this machine).
    pub machine: Option<String>,
    /// What the agent reported: the whole step's, or what it added since the entries before
    /// it for the same step.
    pub usage: Usage,
    /// Recorded while the step ran, not at its end: part of a step (the entries of one step
    /// add up to what it spent; only the last is counted as a step).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub partial: bool,
}

/// The ledger of one state root.
#[derive(Clone, Debug)]
pub struct Ledger {
    dir: PathBuf,
}

/// The entries read from the ledger, and how many lines were skipped as damaged.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LedgerRead {
    /// The entries, in file order (months ascending).
    pub entries: Vec<LedgerEntry>,
    /// Lines whose checksum or JSON was wrong (a torn last write), left out.
    pub damaged: usize,
}

impl Ledger {
    /// The ledger under `<root>`.
    pub fn under(root: &Path) -> Self {
        Self {
            dir: root.join(LEDGER_DIR),
        }
    }

    /// `<root>/usage`.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The file of the UTC month of `epoch_ms`: `2026-12.ledger`.
    pub fn month_file(&self, epoch_ms: u64) -> PathBuf {
        let (year, month) = month_of(epoch_ms);
        self.dir.join(format!("{year:04}-{month:02}.{EXTENSION}"))
    }

    /// Appends `entry` durably (the line written with one `write`, then fsynced); creates
    /// the directory (0700) and the month's file (0600) when missing.
    pub fn append(&self, entry: &LedgerEntry) -> io::Result<()> {
        self.ensure_dir()?;
        let path = self.month_file(entry.at);
        // Readable too: the last byte is checked before the append.
        let file = OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&path)?;
        let mut line = Vec::with_capacity(256);
        if !checked_lines::ends_with_newline(&file)? {
            line.push(b'\n');
        }
        line.extend_from_slice(&encode(entry));
        (&file).write_all(&line)?;
        file.sync_data()
    }

    /// Creates `<root>/usage` (0700) when missing; refuses a symbolic link or a file there.
    fn ensure_dir(&self) -> io::Result<()> {
        checked_lines::ensure_private_dir(&self.dir)
    }

    /// Every entry whose time is in `from..to` (epoch ms), reading only the months that
    /// range touches.
    pub fn read(&self, from: u64, to: u64) -> io::Result<LedgerRead> {
        let mut read = LedgerRead::default();
        let files = self.month_files()?;
        let (first, last) = (month_key(from), month_key(to.saturating_sub(1)));
        for (month, path) in files {
            if month < first || month > last {
                continue;
            }
            let bytes = match std::fs::read(&path) {
                Ok(bytes) => bytes,
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(e) => return Err(e),
            };
            decode_parallel(&bytes, from, to, &mut read);
        }
        Ok(read)
    }
}

impl Ledger {
    /// The entries of the month file `path` from byte `offset` on, and the offset after the
    /// last complete line (where the next read starts); a file shorter than `offset` was
    /// replaced, and is read from its start (`restarted`).
    pub fn read_from(path: &Path, offset: u64) -> io::Result<Tail> {
        let file = match File::open(path) {
            Ok(file) => file,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Tail::default()),
            Err(e) => return Err(e),
        };
        let len = file.metadata()?.len();
        let restarted = len < offset;
        let start = if restarted { 0 } else { offset };
        let mut bytes = vec![0u8; usize::try_from(len - start).unwrap_or(0)];
        file.read_exact_at(&mut bytes, start)?;
        // A line still being written (or torn) is left for the next read.
        let complete = bytes.iter().rposition(|b| *b == b'\n').map_or(0, |at| at + 1);
        let mut read = LedgerRead::default();
        decode_into(&bytes[..complete], 0, u64::MAX, &mut read);
        Ok(Tail {
            read,
            end: start + complete as u64,
            restarted,
        })
    }

    /// The month files there are, oldest first, with their month numbers (`year * 12 + month - 1`).
    pub fn month_files(&self) -> io::Result<Vec<(u64, PathBuf)>> {
        let mut files: Vec<(u64, PathBuf)> = match std::fs::read_dir(&self.dir) {
            Ok(dir) => dir
                .filter_map(Result::ok)
                .filter_map(|e| {
                    let name = e.file_name().into_string().ok()?;
                    Some((parse_month_name(&name)?, e.path()))
                })
                .collect(),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(e),
        };
        files.sort();
        Ok(files)
    }
}

impl Ledger {
    /// The entries in the last `max_bytes` of the newest month file: the most recent steps,
    /// read at a bounded cost.
    pub fn recent(&self, max_bytes: u64) -> io::Result<Vec<LedgerEntry>> {
        let Some((_, newest)) = self.month_files()?.pop() else {
            return Ok(Vec::new());
        };
        let len = match std::fs::metadata(&newest) {
            Ok(meta) => meta.len(),
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(e),
        };
        // The first line read may be cut: its checksum leaves it out.
        Ok(Self::read_from(&newest, len.saturating_sub(max_bytes))?.read.entries)
    }
}

/// What [`Ledger::read_from`] read.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Tail {
    /// The entries of the complete lines.
    pub read: LedgerRead,
    /// The offset after the last complete line.
    pub end: u64,
    /// The file was shorter than the offset asked for, and was read from its start.
    pub restarted: bool,
}

/// The month number (`year * 12 + month - 1`, UTC) of epoch ms.
pub fn month_number(epoch_ms: u64) -> u64 {
    month_key(epoch_ms)
}

/// One ledger line: checksum, space, JSON, newline.
pub fn encode(entry: &LedgerEntry) -> Vec<u8> {
    checked_lines::encode(entry)
}

/// Adds the entries of one file's bytes in `from..to` to `read`.
fn decode_into(bytes: &[u8], from: u64, to: u64, read: &mut LedgerRead) {
    for line in bytes.split(|b| *b == b'\n') {
        if line.is_empty() {
            continue;
        }
        match decode(line) {
            Some(entry) if entry.at >= from && entry.at < to => read.entries.push(entry),
            Some(_) => {}
            None => read.damaged += 1,
        }
    }
}

/// Below this many bytes one thread decodes: starting others costs more than it saves.
const PARALLEL_FROM: usize = 256 * 1024;

/// [`decode_into`] on the machine's cores: `bytes` cut at line ends into one piece per core,
/// each decoded by a thread of its own, the entries kept in the file's order (a query over
/// months of steps is mostly checking and parsing lines, which is independent per line).
fn decode_parallel(bytes: &[u8], from: u64, to: u64, read: &mut LedgerRead) {
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    if cores < 2 || bytes.len() < PARALLEL_FROM {
        return decode_into(bytes, from, to, read);
    }
    let mut pieces = Vec::with_capacity(cores);
    let mut rest = bytes;
    for left in (1..=cores).rev() {
        let cut = if left == 1 {
            rest.len()
        } else {
            let at = rest.len() / left;
            rest[at..]
                .iter()
                .position(|b| *b == b'\n')
                .map_or(rest.len(), |p| at + p + 1)
        };
        let (piece, after) = rest.split_at(cut);
        pieces.push(piece);
        rest = after;
    }
    let parts: Vec<LedgerRead> = std::thread::scope(|scope| {
        let workers: Vec<_> = pieces
            .into_iter()
            .map(|piece| {
                scope.spawn(move || {
                    let mut part = LedgerRead::default();
                    decode_into(piece, from, to, &mut part);
                    part
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().unwrap_or_default()).collect()
    });
    for part in parts {
        read.entries.extend(part.entries);
        read.damaged += part.damaged;
    }
}

/// One line (without its newline), when its checksum and JSON are right.
fn decode(line: &[u8]) -> Option<LedgerEntry> {
    checked_lines::decode(line)
}

/// (year, month) of epoch ms, UTC.
fn month_of(epoch_ms: u64) -> (i64, u32) {
    let days = i64::try_from(epoch_ms / 86_400_000).unwrap_or(i64::MAX);
    let (year, month, _) = civil_from_days(days);
    (year, month)
}

/// A sortable month number: `year * 12 + month - 1`.
fn month_key(epoch_ms: u64) -> u64 {
    let (year, month) = month_of(epoch_ms);
    u64::try_from(year * 12 + i64::from(month) - 1).unwrap_or(0)
}

/// The month key of `2026-12.ledger`.
fn parse_month_name(name: &str) -> Option<u64> {
    let stem = name.strip_suffix(EXTENSION)?.strip_suffix('.')?;
    let (year, month) = stem.split_once('-')?;
    let (year, month): (u64, u64) = (year.parse().ok()?, month.parse().ok()?);
    (year >= 1970 && (1..=12).contains(&month) && stem.len() == 7).then(|| year * 12 + month - 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    const DEC_5: u64 = 1_796_504_212_669;

    fn entry(at: u64, run: &str, tokens: u64) -> LedgerEntry {
        LedgerEntry {
            at,
            run: run.to_owned(),
            agent: Some("worker".to_owned()),
            usage: Usage {
                input_tokens: tokens,
                cost_usd: Some(0.01),
                ..Usage::default()
            },
            ..LedgerEntry::default()
        }
    }

    #[test]
    fn a_large_ledger_decodes_on_several_threads_as_on_one() {
        let mut bytes = Vec::new();
        let mut n = 0u64;
        while bytes.len() < 3 * PARALLEL_FROM {
            bytes.extend(encode(&entry(DEC_5 + n, &format!("run-{n}"), n)));
            n += 1;
            if n == 1000 {
                bytes.extend_from_slice(b"0000dead {\"torn\"\n");
            }
        }
        let (mut one, mut many) = (LedgerRead::default(), LedgerRead::default());
        decode_into(&bytes, DEC_5 + 10, u64::MAX, &mut one);
        decode_parallel(&bytes, DEC_5 + 10, u64::MAX, &mut many);
        assert_eq!(one.entries.len() as u64, n - 10);
        assert_eq!((one.damaged, many.damaged), (1, 1));
        assert_eq!(one, many);
    }

    #[test]
    fn entries_come_back_by_month_and_range() {
        let root = tempfile::tempdir().unwrap();
        let ledger = Ledger::under(root.path());
        let nov = DEC_5 - 10 * 86_400_000;
        for (at, run) in [(nov, "a"), (DEC_5, "b"), (DEC_5 + 1, "c")] {
            ledger.append(&entry(at, run, 5)).unwrap();
        }
        assert!(ledger.dir().join("2026-11.ledger").is_file());
        assert!(ledger.dir().join("2026-12.ledger").is_file());
        let all = ledger.read(0, u64::MAX).unwrap();
        let runs: Vec<&str> = all.entries.iter().map(|e| e.run.as_str()).collect();
        assert_eq!(runs, ["a", "b", "c"]);
        let december = ledger.read(DEC_5, DEC_5 + 1).unwrap();
        assert_eq!(december.entries, vec![entry(DEC_5, "b", 5)]);
        assert_eq!(december.damaged, 0);
    }

    #[test]
    fn a_torn_or_zeroed_last_line_loses_only_that_entry() {
        let root = tempfile::tempdir().unwrap();
        let ledger = Ledger::under(root.path());
        ledger.append(&entry(DEC_5, "a", 1)).unwrap();
        ledger.append(&entry(DEC_5, "b", 2)).unwrap();
        let path = ledger.month_file(DEC_5);
        let bytes = std::fs::read(&path).unwrap();
        // Every cut of the last line (a power loss mid-write) leaves the first entry readable,
        // and the next append is readable too. (Only its newline lost, the line is whole.)
        let first_len = bytes.iter().position(|b| *b == b'\n').unwrap() + 1;
        for cut in first_len..bytes.len() - 1 {
            std::fs::write(&path, &bytes[..cut]).unwrap();
            let read = ledger.read(0, u64::MAX).unwrap();
            assert_eq!(read.entries, vec![entry(DEC_5, "a", 1)], "cut at {cut}");
            ledger.append(&entry(DEC_5, "c", 3)).unwrap();
            let runs: Vec<String> = ledger
                .read(0, u64::MAX)
                .unwrap()
                .entries
                .into_iter()
                .map(|e| e.run)
                .collect();
            assert_eq!(runs, ["a", "c"], "cut at {cut}");
        }
        // Zeros where the last line was (a file whose size was committed before its data).
        let mut zeroed = bytes.clone();
        zeroed[first_len..].fill(0);
        std::fs::write(&path, &zeroed).unwrap();
        let read = ledger.read(0, u64::MAX).unwrap();
        assert_eq!(read.entries.len(), 1);
        assert_eq!(read.damaged, 1);
    }

    #[test]
    fn a_flipped_byte_is_caught_by_the_checksum() {
        let mut line = encode(&entry(DEC_5, "a", 10));
        line.pop();
        assert!(decode(&line).is_some());
        let digit = line.iter().rposition(|b| *b == b'1').unwrap();
        line[digit] = b'9';
        assert!(decode(&line).is_none());
    }

    #[test]
    fn only_month_files_are_read() {
        assert_eq!(parse_month_name("2026-12.ledger"), Some(2026 * 12 + 11));
        for name in [
            "2026-13.ledger",
            "2026-1.ledger",
            "x.ledger",
            "2026-12.ledger.tmp",
            "lock",
        ] {
            assert_eq!(parse_month_name(name), None, "{name}");
        }
    }
}
