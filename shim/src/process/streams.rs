//! Bounded handling of the agent's output (R11): a line splitter that keeps at most a fixed
//! prefix of a line in memory while counting its full length (the 16 MiB protocol limit), a
//! tail ring buffer (stderr: the last 128 KiB), and the capped `output-<n>.log` writer.

use std::collections::VecDeque;
use std::io::Write;
use sublaunch_protocol::files::dir::Dir;
use sublaunch_protocol::files::layout::names;

/// R11: a pending stdout line longer than this without a newline is a protocol failure.
pub const PROTOCOL_LINE_LIMIT: usize = 16 * 1024 * 1024;
/// R11: bytes of stderr kept in memory.
pub const STDERR_TAIL_BYTES: usize = 128 * 1024;

/// The output-log cap variable (⊕ R11).
pub const OUTPUT_LOG_MAX_ENV: &str = "SUBLAUNCH_OUTPUT_LOG_MAX_BYTES";
/// Its default (256 MiB).
pub const DEFAULT_OUTPUT_LOG_MAX: u64 = 268_435_456;

/// `protocol_output_limit: child stdout line exceeded 16777216 bytes (observed at least <n>
/// bytes without a newline).`
pub fn protocol_limit_message(observed: usize) -> String {
    format!(
        "protocol_output_limit: child stdout line exceeded {PROTOCOL_LINE_LIMIT} bytes (observed at least {observed} bytes without a newline)."
    )
}

/// Splits a byte stream into lines, retaining at most `retain` bytes of each.
#[derive(Debug)]
pub struct LineSplitter {
    buf: Vec<u8>,
    pending: usize,
    retain: usize,
}

impl LineSplitter {
    /// A splitter keeping at most `retain` bytes of a line.
    pub fn new(retain: usize) -> Self {
        Self {
            buf: Vec::new(),
            pending: 0,
            retain,
        }
    }

    /// Bytes of the current (unterminated) line.
    pub fn pending(&self) -> usize {
        self.pending
    }

    /// Feeds `chunk`; calls `on_line(retained_bytes, full_length)` for every complete line.
    pub fn push(&mut self, chunk: &[u8], mut on_line: impl FnMut(&[u8], usize)) {
        let mut rest = chunk;
        while let Some(i) = rest.iter().position(|b| *b == b'\n') {
            let part = &rest[..i];
            if self.pending == 0 && part.len() <= self.retain {
                on_line(part, part.len());
            } else {
                self.keep(part);
                self.pending += part.len();
                on_line(&self.buf, self.pending);
                if self.buf.capacity() > 64 * 1024 {
                    self.buf = Vec::new();
                } else {
                    self.buf.clear();
                }
                self.pending = 0;
            }
            rest = &rest[i + 1..];
        }
        self.keep(rest);
        self.pending += rest.len();
    }

    /// Feeds `chunk` only to count the current line (no callbacks, nothing retained).
    pub fn skip(&mut self, chunk: &[u8]) {
        match chunk.iter().rposition(|b| *b == b'\n') {
            Some(i) => {
                self.buf = Vec::new();
                self.pending = chunk.len() - i - 1;
            }
            None => self.pending += chunk.len(),
        }
    }

    /// At EOF: the unterminated last line, if any.
    pub fn finish(&mut self, mut on_line: impl FnMut(&[u8], usize)) {
        if self.pending > 0 {
            on_line(&self.buf, self.pending);
        }
        self.buf = Vec::new();
        self.pending = 0;
    }

    /// Drops everything retained (after a protocol failure).
    pub fn abandon(&mut self) {
        self.buf = Vec::new();
    }

    fn keep(&mut self, bytes: &[u8]) {
        let room = self.retain.saturating_sub(self.buf.len());
        self.buf.extend_from_slice(&bytes[..bytes.len().min(room)]);
    }
}

/// The last `cap` bytes of a stream.
#[derive(Debug)]
pub struct Tail {
    buf: VecDeque<u8>,
    cap: usize,
}

impl Tail {
    /// An empty tail of at most `cap` bytes.
    pub fn new(cap: usize) -> Self {
        Self {
            buf: VecDeque::new(),
            cap,
        }
    }

    /// Appends `bytes`, dropping the oldest beyond the cap.
    pub fn push(&mut self, bytes: &[u8]) {
        let bytes = &bytes[bytes.len().saturating_sub(self.cap)..];
        let overflow = (self.buf.len() + bytes.len()).saturating_sub(self.cap);
        self.buf.drain(..overflow);
        self.buf.extend(bytes);
    }

    /// The kept bytes.
    pub fn bytes(&self) -> Vec<u8> {
        self.buf.iter().copied().collect()
    }
}

/// `output-<n>.log`: everything the agent wrote, capped (⊕ R11). Past the cap one line
/// `[output truncated after <n> bytes]` is written and further output is only counted.
/// Write failures (ELOOP on a planted symlink, ENOSPC) are logged once; counting goes on.
#[derive(Debug)]
pub struct OutputLog {
    file: Option<std::fs::File>,
    name: String,
    cap: u64,
    written: u64,
    total: u64,
    truncated: bool,
    last_byte: Option<u8>,
}

impl OutputLog {
    /// Opens (append, no symlink followed, 0600) `output-<step>.log` in `run`.
    pub fn open(run: &Dir, step: usize, cap: u64) -> Self {
        Self::open_named(run, &names::output_log(step), cap)
    }

    /// Opens (append, no symlink followed, 0600) the log `name` in `run` (a verification
    /// command's, say).
    pub fn open_named(run: &Dir, name: &str, cap: u64) -> Self {
        let name = name.to_owned();
        let file = match run.open_append(&name) {
            Ok(file) => Some(file),
            Err(e) => {
                eprintln!("sublaunch-shim: cannot open {name}: {e}");
                None
            }
        };
        Self {
            file,
            name,
            cap,
            written: 0,
            total: 0,
            truncated: false,
            last_byte: None,
        }
    }

    /// The cap from `SUBLAUNCH_OUTPUT_LOG_MAX_BYTES`, else the default.
    pub fn cap_from_env() -> u64 {
        std::env::var(OUTPUT_LOG_MAX_ENV)
            .ok()
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(DEFAULT_OUTPUT_LOG_MAX)
    }

    /// All bytes seen (written or not).
    pub fn total(&self) -> u64 {
        self.total
    }

    /// Appends `bytes` within the cap.
    pub fn write(&mut self, bytes: &[u8]) {
        self.total += bytes.len() as u64;
        if self.truncated {
            return;
        }
        let room = usize::try_from(self.cap.saturating_sub(self.written)).unwrap_or(usize::MAX);
        let (now, over) = if bytes.len() <= room {
            (bytes, false)
        } else {
            (&bytes[..room], true)
        };
        if !now.is_empty() {
            self.append(now);
            self.written += now.len() as u64;
            self.last_byte = now.last().copied();
        }
        if over {
            self.truncated = true;
            let newline = if self.last_byte.is_some_and(|b| b != b'\n') {
                "\n"
            } else {
                ""
            };
            let line = format!("{newline}[output truncated after {} bytes]\n", self.cap);
            self.append(line.as_bytes());
        }
    }

    fn append(&mut self, bytes: &[u8]) {
        let Some(file) = &mut self.file else { return };
        if let Err(e) = file.write_all(bytes) {
            eprintln!("sublaunch-shim: cannot append to {}: {e}", self.name);
            self.file = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(splitter: &mut LineSplitter, chunks: &[&[u8]]) -> Vec<(Vec<u8>, usize)> {
        let mut out = Vec::new();
        for chunk in chunks {
            splitter.push(chunk, |line, full| out.push((line.to_vec(), full)));
        }
        out
    }

    #[test]
    fn r11_lines_across_chunks_and_retention() {
        let mut s = LineSplitter::new(4);
        let got = lines(&mut s, &[b"ab", b"c\nde", b"fghij\n", b"xy"]);
        assert_eq!(got, vec![(b"abc".to_vec(), 3), (b"defg".to_vec(), 7)]);
        assert_eq!(s.pending(), 2);
        let mut last = Vec::new();
        s.finish(|line, full| last.push((line.to_vec(), full)));
        assert_eq!(last, vec![(b"xy".to_vec(), 2)]);
    }

    #[test]
    fn r11_skip_counts_the_open_line() {
        let mut s = LineSplitter::new(4);
        s.skip(b"aaaa");
        assert_eq!(s.pending(), 4);
        s.skip(b"a\nbbb");
        assert_eq!(s.pending(), 3);
    }

    #[test]
    fn r11_tail_keeps_the_last_bytes() {
        let mut t = Tail::new(5);
        t.push(b"abc");
        t.push(b"defg");
        assert_eq!(t.bytes(), b"cdefg");
        t.push(b"0123456789");
        assert_eq!(t.bytes(), b"56789");
    }

    #[test]
    fn r11_output_log_is_capped_with_one_truncation_line() {
        let tmp = tempfile::tempdir().unwrap();
        let run = Dir::open(tmp.path()).unwrap();
        let mut log = OutputLog::open(&run, 0, 10);
        log.write(b"12345678");
        log.write(b"abcdef");
        log.write(b"more");
        assert_eq!(log.total(), 18);
        assert_eq!(
            std::fs::read_to_string(tmp.path().join("output-0.log")).unwrap(),
            "12345678ab\n[output truncated after 10 bytes]\n"
        );
    }
}
