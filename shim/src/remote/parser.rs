//! P-H10: reading a placed step's stdout. Lines before READY are dropped (login banners,
//! rc-file noise, a forged marker without the token); after it, the process-group, final
//! capture and git lines are taken out and every other line goes to the adapter's parser.

use super::script::Markers;
use crate::adapter::{Extracted, FINAL_MESSAGE_LIMIT, OutputParser, ParsedLine};
use serde_json::Value;
use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;
use sublaunch_protocol::records::step_record::RemoteGit;

/// What the supervisor learns about the remote side while the step runs.
#[derive(Clone, Debug, Default)]
pub struct RemoteState {
    /// READY was seen: the shell is in the machine's directory.
    pub ready: bool,
    /// The remote process group (for `stop`).
    pub pgid: Option<u32>,
    /// `{head, branch, dirty}` of the machine's work tree, when it is one.
    pub git: Option<RemoteGit>,
}

/// Shared between the parser and the supervisor.
pub type SharedState = Rc<RefCell<RemoteState>>;

/// The adapter's parser behind the P-H10 filter.
pub struct RemoteParser {
    inner: Box<dyn OutputParser>,
    markers: Markers,
    state: SharedState,
    /// Where a captured final message is written (Codex's local last-message file).
    capture_path: Option<String>,
    capture: Option<Vec<u8>>,
    capture_overflow: bool,
    /// The end of the forwarded lines, for the adapter's `finish`.
    tail: VecDeque<u8>,
    tail_cut: bool,
    /// What the never-READY failure says.
    machine: String,
    cwd: String,
}

impl RemoteParser {
    /// Filters `inner`'s input with `markers`; `capture_path` receives a captured message.
    pub fn new(
        inner: Box<dyn OutputParser>,
        markers: Markers,
        state: SharedState,
        capture_path: Option<String>,
        machine: &str,
        cwd: &str,
    ) -> Self {
        Self {
            inner,
            markers,
            state,
            capture_path,
            capture: None,
            capture_overflow: false,
            tail: VecDeque::new(),
            tail_cut: false,
            machine: machine.to_owned(),
            cwd: cwd.to_owned(),
        }
    }

    fn keep_in_tail(&mut self, line: &[u8]) {
        let limit = self.inner.tail_bytes();
        self.tail.extend(line);
        self.tail.push_back(b'\n');
        if self.tail.len() > limit {
            let excess = self.tail.len() - limit;
            self.tail.drain(..excess);
            self.tail_cut = true;
        }
    }

    fn end_capture(&mut self) {
        let Some(mut bytes) = self.capture.take() else { return };
        if bytes.ends_with(b"\n") {
            bytes.pop();
        }
        let blank = bytes.iter().all(u8::is_ascii_whitespace);
        if let Some(path) = &self.capture_path
            && !blank
            && !self.capture_overflow
        {
            // An absent remote message stays absent: the adapter's own failure applies.
            if let Err(e) = std::fs::write(path, &bytes) {
                eprintln!("sublaunch-shim: cannot write the captured final message to {path}: {e}");
            }
        }
    }
}

impl OutputParser for RemoteParser {
    fn line_retain_limit(&self) -> usize {
        let inner = self.inner.line_retain_limit();
        if self.capture_path.is_some() {
            inner.max(FINAL_MESSAGE_LIMIT)
        } else {
            inner
        }
    }

    fn needs_lines(&self) -> bool {
        true
    }

    fn tail_bytes(&self) -> usize {
        0
    }

    fn stdout_line(&mut self, line: &[u8], full_len: usize) -> ParsedLine {
        let text = String::from_utf8_lossy(line);
        if !self.state.borrow().ready {
            if let Some(pgid) = text.strip_prefix(self.markers.pgid.as_str()) {
                self.state.borrow_mut().pgid = pgid.trim().parse().ok().filter(|p| *p > 1);
            } else if text == self.markers.ready {
                self.state.borrow_mut().ready = true;
            }
            return ParsedLine::Ignore;
        }
        if let Some(capture) = &mut self.capture {
            if text == self.markers.final_end {
                self.end_capture();
            } else if capture.len() + full_len < FINAL_MESSAGE_LIMIT && full_len == line.len() {
                capture.extend_from_slice(line);
                capture.push(b'\n');
            } else {
                self.capture_overflow = true;
            }
            return ParsedLine::Ignore;
        }
        if text == self.markers.final_begin {
            self.capture = Some(Vec::new());
            return ParsedLine::Ignore;
        }
        if let Some(json) = text.strip_prefix(self.markers.git.as_str()) {
            self.state.borrow_mut().git = git_facts(json);
            return ParsedLine::Ignore;
        }
        self.keep_in_tail(line);
        self.inner.stdout_line(line, full_len)
    }

    fn finish(&mut self, _stdout_tail: &[u8], _tail_cut: bool) -> Extracted {
        if !self.state.borrow().ready {
            return Extracted::failed(never_ready(&self.machine, &self.cwd));
        }
        self.end_capture();
        let tail: Vec<u8> = self.tail.iter().copied().collect();
        self.inner.finish(&tail, self.tail_cut)
    }
}

/// The P-H10 failure when the stream ended without READY.
pub fn never_ready(machine: &str, cwd: &str) -> String {
    format!(
        "The remote side never entered {cwd} on machine '{machine}': no ready marker arrived (the ssh or shell error is in the step's stderr)."
    )
}

/// `remoteGit`: the probe's `head`, `branch` (non-empty strings) and `dirty` (boolean).
fn git_facts(json: &str) -> Option<RemoteGit> {
    let parsed: Value = serde_json::from_str(json.trim()).ok()?;
    let text = |key: &str| {
        parsed
            .get(key)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
    };
    Some(RemoteGit {
        head: text("head"),
        branch: text("branch"),
        dirty: parsed.get("dirty").and_then(Value::as_bool),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::adapter::TextParser;

    fn parser(state: &SharedState) -> RemoteParser {
        RemoteParser::new(
            Box::new(TextParser),
            Markers::new("00112233aabbccdd"),
            state.clone(),
            None,
            "box",
            "~/w",
        )
    }

    #[test]
    fn h10_noise_and_forged_markers_before_ready_are_dropped() {
        let state = SharedState::default();
        let mut p = parser(&state);
        let m = Markers::new("00112233aabbccdd");
        for line in [
            "Welcome to box!",
            "__pi_subagents_ready_ffffffffffffffff__",
            &format!("{}4242", m.pgid),
        ] {
            assert_eq!(p.stdout_line(line.as_bytes(), line.len()), ParsedLine::Ignore);
        }
        assert!(!state.borrow().ready, "a marker with another token is noise");
        assert_eq!(state.borrow().pgid, Some(4242));
        p.stdout_line(m.ready.as_bytes(), m.ready.len());
        assert!(state.borrow().ready);
        // After READY, the agent printing a ready line is just output.
        p.stdout_line(b"hello", 5);
        let git = format!("{}{{\"head\":\"abc1234\",\"branch\":\"\",\"dirty\":true}}", m.git);
        assert_eq!(p.stdout_line(git.as_bytes(), git.len()), ParsedLine::Ignore);
        assert_eq!(
            state.borrow().git,
            Some(RemoteGit {
                head: Some("abc1234".into()),
                branch: None,
                dirty: Some(true)
            })
        );
        assert_eq!(p.finish(b"ignored", false).output, "hello");
    }

    #[test]
    fn h10_a_stream_without_ready_fails_naming_the_machine_and_cwd() {
        let state = SharedState::default();
        let mut p = parser(&state);
        p.stdout_line(b"bash: cd: no such directory", 27);
        let failure = p.finish(b"", false).failure.unwrap();
        assert!(failure.contains("never entered ~/w on machine 'box'"), "{failure}");
    }
}
