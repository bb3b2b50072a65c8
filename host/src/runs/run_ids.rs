//! Naming a run by a unique prefix of its id, as git and docker do: `shell-7k` stands for
//! `shell-7k2m9x4q` when no other run's id starts with it. An exact id always wins, even when
//! it is also the beginning of other ids.

use super::RunStore;
use std::fmt;
use sublaunch_protocol::files::layout::{InvalidRunId, validate_run_id};

/// How many candidates an ambiguous prefix's message names.
const LISTED_CANDIDATES: usize = 10;

/// Why a text does not name one run.
#[derive(Debug, thiserror::Error)]
pub enum RunIdError {
    /// Not a valid run id, nor the beginning of one.
    #[error(transparent)]
    Invalid(#[from] InvalidRunId),
    /// No run has this id or an id starting with it.
    #[error("unknown run '{0}'")]
    Unknown(String),
    /// Several runs' ids start with the prefix (and none is the prefix itself).
    #[error("run id prefix '{prefix}' is ambiguous: {}", Candidates(candidates))]
    Ambiguous {
        /// The prefix given.
        prefix: String,
        /// Every run id starting with it, sorted.
        candidates: Vec<String>,
    },
    /// The runs could not be read.
    #[error("cannot open run '{text}': {error}")]
    Io {
        /// The text given.
        text: String,
        /// The cause.
        error: std::io::Error,
    },
}

/// `a, b, c` — the first [`LISTED_CANDIDATES`], then `and N more`.
struct Candidates<'a>(&'a [String]);

impl fmt::Display for Candidates<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let shown = &self.0[..self.0.len().min(LISTED_CANDIDATES)];
        f.write_str(&shown.join(", "))?;
        match self.0.len() - shown.len() {
            0 => Ok(()),
            more => write!(f, " and {more} more"),
        }
    }
}

/// The id of the run `text` names: the run whose id is `text`, else the one run whose id starts
/// with it.
pub fn resolve_run_id(store: &RunStore, text: &str) -> Result<String, RunIdError> {
    validate_run_id(text)?;
    let io = |error| RunIdError::Io {
        text: text.to_owned(),
        error,
    };
    if store.run_dir(text).map_err(io)?.is_some() {
        return Ok(text.to_owned());
    }
    let mut candidates = store.runs_starting_with(text).map_err(io)?;
    match candidates.len() {
        0 => Err(RunIdError::Unknown(text.to_owned())),
        1 => Ok(candidates.remove(0)),
        _ => Err(RunIdError::Ambiguous {
            prefix: text.to_owned(),
            candidates,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_ambiguous_prefix_names_at_most_ten_candidates() {
        let candidates: Vec<String> = (0..13).map(|i| format!("shell-{i:02}")).collect();
        let error = RunIdError::Ambiguous {
            prefix: "shell-".into(),
            candidates,
        };
        assert_eq!(
            error.to_string(),
            "run id prefix 'shell-' is ambiguous: shell-00, shell-01, shell-02, shell-03, shell-04, \
             shell-05, shell-06, shell-07, shell-08, shell-09 and 3 more"
        );
        let two = RunIdError::Ambiguous {
            prefix: "s".into(),
            candidates: vec!["sa".into(), "sb".into()],
        };
        assert_eq!(two.to_string(), "run id prefix 's' is ambiguous: sa, sb");
    }
}
