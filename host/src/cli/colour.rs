//! Colour on a terminal: a failed step's red ✗ must not look like a complete step's green ✓.
//! Colour is on only when the stream is a terminal, `TERM` is not `dumb` and `NO_COLOR` is
//! unset or empty (no-color.org); the decision is made here, once, and passed down.

use std::io::IsTerminal;

/// Whether and how to colour text for one stream.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Paint {
    /// Colour is on.
    pub on: bool,
}

/// A colour for a state or a mark.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hue {
    /// Complete.
    Green,
    /// Failed, rejected.
    Red,
    /// Stopped, paused, queued.
    Yellow,
    /// Running.
    Cyan,
    /// Pending, secondary text.
    Dim,
}

impl Paint {
    /// Colour for stderr, as this process's environment and stderr allow.
    pub fn stderr() -> Self {
        Self::detect(std::io::stderr().is_terminal())
    }

    /// Colour for stdout, as this process's environment and stdout allow.
    pub fn stdout() -> Self {
        Self::detect(std::io::stdout().is_terminal())
    }

    fn detect(terminal: bool) -> Self {
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        let dumb = std::env::var("TERM").is_ok_and(|t| t == "dumb");
        Self {
            on: terminal && !no_color && !dumb,
        }
    }

    /// `text` in `hue` (as it is when colour is off).
    pub fn paint(self, hue: Hue, text: &str) -> String {
        if !self.on || text.is_empty() {
            return text.to_owned();
        }
        let code = match hue {
            Hue::Green => "32",
            Hue::Red => "31",
            Hue::Yellow => "33",
            Hue::Cyan => "36",
            Hue::Dim => "2",
        };
        format!("\x1b[{code}m{text}\x1b[0m")
    }

    /// A state word in its colour (as it is for a state without one).
    pub fn state(self, state: &str, text: &str) -> String {
        match state_hue(state) {
            Some(hue) => self.paint(hue, text),
            None => text.to_owned(),
        }
    }
}

/// The colour of a run's or a step's state word.
pub fn state_hue(state: &str) -> Option<Hue> {
    match state {
        "complete" => Some(Hue::Green),
        "failed" | "rejected" => Some(Hue::Red),
        "stopped" | "paused" | "queued" => Some(Hue::Yellow),
        "running" => Some(Hue::Cyan),
        "pending" => Some(Hue::Dim),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colour_is_an_escape_only_when_on() {
        let on = Paint { on: true };
        assert_eq!(on.state("failed", "✗"), "\x1b[31m✗\x1b[0m");
        assert_eq!(on.state("complete", "✓"), "\x1b[32m✓\x1b[0m");
        assert_eq!(Paint::default().state("failed", "✗"), "✗");
        assert_eq!(on.state("weird", "x"), "x");
    }
}
