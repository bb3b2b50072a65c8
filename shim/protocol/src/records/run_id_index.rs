//! The run-id index (I14): `<runs>/.ids/<group>/<bucket>`, so that a run named by a prefix of
//! its id (`shell-7k` for `shell-7k2m9x4q`) is found without listing every run directory.
//!
//! An id is split at its last `-`: the *group* is everything up to and including it (the
//! agent's slug, `shell-`), or `=` for an id without one; the *bucket* is the first
//! two characters of the rest, padded with `=` when shorter. A bucket file holds one id per
//! line, appended `O_APPEND` in one write before the run directory is created, so an existing
//! run is always in its bucket. Lines are never removed: a reader keeps only ids that start
//! with the prefix and whose directory exists (a pruned run, a launch that never created its
//! directory, a duplicate line from two builders cost a line, never a wrong answer).
//!
//! A root whose index was never built (no `.ids/.built`: written by an older version) is
//! listed once by the first reader, which records every run it finds, then marks it built.

use crate::errors::has_errno;
use crate::files::dir::Dir;
use crate::files::layout::{names, validate_run_id};
use crate::records::index::retry_enoent;
use rustix::fs::FileType;
use rustix::io::Errno;
use std::collections::BTreeSet;
use std::io::{self, Write};

/// The group of ids without a `-` (not a character ids may hold, so no slug can be named so).
const NO_GROUP: &str = "=";
/// Pads a bucket name when the part after the last `-` is shorter than two characters.
const PAD: char = '=';
/// How many characters after the group name a bucket.
const BUCKET_CHARS: usize = 2;

/// The run-id index of one `<runs>` directory.
#[derive(Debug)]
pub struct RunIdIndex<'a> {
    runs: &'a Dir,
}

/// What the index knows of the ids starting with a prefix.
#[derive(Debug, PartialEq, Eq)]
pub enum Lookup {
    /// The existing runs whose id starts with the prefix, sorted.
    Found(Vec<String>),
    /// The index was never built under this root: list the run directories instead.
    NotBuilt,
}

impl<'a> RunIdIndex<'a> {
    /// The index of `runs` (`<root>/runs`).
    pub fn new(runs: &'a Dir) -> Self {
        Self { runs }
    }

    /// Records `run_id` (one appended line; the directories made on demand). Called before the
    /// run's directory is created (I14).
    pub fn record(&self, run_id: &str) -> io::Result<()> {
        let (group, bucket) = place(run_id);
        // A leading newline too: a line torn by a crash never runs into this one.
        let line = format!("\n{run_id}\n");
        retry_enoent(|| {
            let dir = self.runs.ensure_path_synced(&[names::RUN_ID_INDEX_DIR, group])?;
            // One write of one whole line: appenders interleave lines, never bytes.
            dir.open_append(&bucket)?.write_all(line.as_bytes())
        })
    }

    /// Records every id of `ids` and marks the index built: the one walk of a root an older
    /// version wrote. Runs created meanwhile record themselves, so none is missed.
    pub fn build(&self, ids: &[String]) -> io::Result<()> {
        for id in ids {
            self.record(id)?;
        }
        retry_enoent(|| {
            self.runs
                .ensure_path_synced(&[names::RUN_ID_INDEX_DIR])?
                .touch(names::RUN_ID_INDEX_BUILT)
        })
    }

    /// The existing runs whose id starts with `prefix` (itself a valid run id, or the beginning
    /// of one). Reads the group names, then only the buckets that can hold such ids.
    pub fn starting_with(&self, prefix: &str) -> io::Result<Lookup> {
        let Some(index) = self.open_index()? else {
            return Ok(Lookup::NotBuilt);
        };
        let (own_group, rest) = match prefix.rfind('-') {
            Some(dash) => (&prefix[..=dash], &prefix[dash + 1..]),
            None => (NO_GROUP, prefix),
        };
        let mut found = BTreeSet::new();
        for group in subdirectories(&index)? {
            // An id in `group` starts with `prefix` either because the group name does (the
            // prefix ends inside the slug: every bucket), or because the prefix's own group is
            // this one and the rest of the id starts with what follows its last `-`.
            let wanted = if group != NO_GROUP && group.starts_with(prefix) {
                ""
            } else if group == own_group {
                rest
            } else {
                continue;
            };
            let Some(dir) = index.open_child(&group)? else { continue };
            for bucket in dir.entries()? {
                if bucket.file_type != FileType::RegularFile {
                    continue;
                }
                let Ok(name) = bucket.name.into_string() else { continue };
                if !bucket_may_hold(&name, wanted) {
                    continue;
                }
                let Some(bytes) = dir.read(&name)? else { continue };
                for line in bytes.split(|&b| b == b'\n') {
                    if let Ok(id) = std::str::from_utf8(line)
                        && id.starts_with(prefix)
                        && validate_run_id(id).is_ok()
                    {
                        found.insert(id.to_owned());
                    }
                }
            }
        }
        let mut existing = Vec::with_capacity(found.len());
        for id in found {
            if self
                .runs
                .stat(&id)?
                .is_some_and(|stat| FileType::from_raw_mode(stat.st_mode) == FileType::Directory)
            {
                existing.push(id);
            }
        }
        Ok(Lookup::Found(existing))
    }

    /// `.ids` when it is built; `None` when it is missing, not a directory (I8) or not built.
    fn open_index(&self) -> io::Result<Option<Dir>> {
        let index = match self.runs.open_child(names::RUN_ID_INDEX_DIR) {
            Ok(Some(dir)) => dir,
            Ok(None) => return Ok(None),
            Err(e) if has_errno(&e, Errno::NOTDIR) || has_errno(&e, Errno::LOOP) => return Ok(None),
            Err(e) => return Err(e),
        };
        Ok(index.stat(names::RUN_ID_INDEX_BUILT)?.is_some().then_some(index))
    }
}

/// The group and bucket names of `run_id`.
fn place(run_id: &str) -> (&str, String) {
    let (group, rest) = match run_id.rfind('-') {
        Some(dash) => (&run_id[..=dash], &run_id[dash + 1..]),
        None => (NO_GROUP, run_id),
    };
    let mut bucket: String = rest.chars().take(BUCKET_CHARS).collect();
    while bucket.len() < BUCKET_CHARS {
        bucket.push(PAD);
    }
    (group, bucket)
}

/// Whether bucket `name` can hold an id whose part after the group starts with `wanted`.
fn bucket_may_hold(name: &str, wanted: &str) -> bool {
    let shared = wanted.len().min(BUCKET_CHARS);
    name.len() == BUCKET_CHARS && name.as_bytes()[..shared] == wanted.as_bytes()[..shared]
}

/// The names of the directories in `dir`.
fn subdirectories(dir: &Dir) -> io::Result<Vec<String>> {
    Ok(dir
        .entries()?
        .into_iter()
        .filter(|e| e.file_type == FileType::Directory)
        .filter_map(|e| e.name.into_string().ok())
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runs() -> (tempfile::TempDir, Dir) {
        let temp = tempfile::tempdir().unwrap();
        let dir = Dir::open(temp.path()).unwrap();
        (temp, dir)
    }

    /// A run as the launch makes it: recorded, then its directory.
    fn make(runs: &Dir, id: &str) {
        RunIdIndex::new(runs).record(id).unwrap();
        runs.ensure_child(id).unwrap();
    }

    fn found(runs: &Dir, prefix: &str) -> Vec<String> {
        match RunIdIndex::new(runs).starting_with(prefix).unwrap() {
            Lookup::Found(ids) => ids,
            Lookup::NotBuilt => panic!("the index is built"),
        }
    }

    #[test]
    fn places_split_at_the_last_dash() {
        assert_eq!(place("shell-7k2m9x4q"), ("shell-", "7k".to_owned()));
        assert_eq!(place("claude-code-ab"), ("claude-code-", "ab".to_owned()));
        assert_eq!(place("solo"), (NO_GROUP, "so".to_owned()));
        assert_eq!(place("a-b"), ("a-", "b=".to_owned()));
        assert_eq!(place("trailing-"), ("trailing-", "==".to_owned()));
    }

    #[test]
    fn i14_every_prefix_finds_exactly_the_existing_runs_that_start_with_it() {
        let (_temp, runs) = runs();
        RunIdIndex::new(&runs).build(&[]).unwrap();
        let ids = [
            "shell-7k2m9x4q",
            "shell-7k9aaaaa",
            "shell-7z000000",
            "shell-x",
            "shell-",
            "shellfish-ab",
            "claude-code-7k000000",
            "claude-x-1",
            "solo",
            "so",
        ];
        for id in ids {
            make(&runs, id);
        }
        // A recorded id whose directory was never made (or was pruned) is not a run.
        RunIdIndex::new(&runs).record("shell-7kgone00").unwrap();
        for prefix in [
            "s",
            "sh",
            "shell",
            "shell-",
            "shell-7",
            "shell-7k",
            "shell-7k2",
            "shell-x",
            "shellf",
            "c",
            "claude-",
            "claude-c",
            "claude-x-",
            "claude-code-7k",
            "so",
            "sol",
            "solo",
            "z",
            "shell-7kgone00",
        ] {
            let mut expected: Vec<String> = ids
                .iter()
                .filter(|id| id.starts_with(prefix))
                .map(|id| id.to_string())
                .collect();
            expected.sort();
            assert_eq!(found(&runs, prefix), expected, "prefix {prefix}");
        }
    }

    #[test]
    fn i14_an_unbuilt_index_says_so_and_a_built_one_holds_the_walked_runs() {
        let (_temp, runs) = runs();
        runs.ensure_child("shell-old00000").unwrap();
        assert_eq!(
            RunIdIndex::new(&runs).starting_with("shell-o").unwrap(),
            Lookup::NotBuilt
        );
        make(&runs, "shell-new00000");
        // Still not built: a run recorded by a new version does not make the old ones known.
        assert_eq!(
            RunIdIndex::new(&runs).starting_with("shell-").unwrap(),
            Lookup::NotBuilt
        );
        RunIdIndex::new(&runs)
            .build(&["shell-old00000".to_owned(), "shell-new00000".to_owned()])
            .unwrap();
        assert_eq!(found(&runs, "shell-"), ["shell-new00000", "shell-old00000"]);
    }

    #[test]
    fn i14_a_torn_or_foreign_line_is_ignored() {
        let (_temp, runs) = runs();
        RunIdIndex::new(&runs).build(&[]).unwrap();
        make(&runs, "shell-ab000000");
        let bucket = runs
            .open_child(names::RUN_ID_INDEX_DIR)
            .unwrap()
            .unwrap()
            .open_child("shell-")
            .unwrap()
            .unwrap();
        let mut file = bucket.open_append("ab").unwrap();
        file.write_all(b"shell-ab0\xff\n../../etc\nshell-ab1").unwrap();
        make(&runs, "shell-ab111111");
        assert_eq!(found(&runs, "shell-ab"), ["shell-ab000000", "shell-ab111111"]);
    }
}
