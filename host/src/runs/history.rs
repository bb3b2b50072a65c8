//! Every run, newest first, for `list --all` (I10–I13): the runs of the active-run index
//! (running, queued, or ended and not yet released) from their status, then the ended runs
//! from the history index ([`History`]), streamed segment by segment until the limit.
//!
//! The index is believed only to find candidates: each run shown is read from its directory
//! (a pruned run's tombstone voids its entries, and an entry whose directory is gone anyway is
//! dropped; its status decides what is
//! shown and whether the filter holds). A missing, unreadable or other-version index is rebuilt
//! from the run directories first ([`rebuild`]). A run is never in neither index: the entry is
//! written before the marker is removed (I13), so an ended run without an entry still has its
//! marker and is listed from it.

use super::{RunStore, status_of};
use std::collections::HashSet;
use std::io;
use sublaunch_protocol::files::dir::Dir;
use sublaunch_protocol::records::history::{Cursor, CursorError, History, HistoryEntry};
use sublaunch_protocol::records::status::Status;

/// Which runs to list; `None` fields do not filter.
#[derive(Clone, Debug, Default)]
pub struct HistoryFilter {
    /// Only runs in this state (`complete`, `failed`, `running` …).
    pub state: Option<String>,
    /// Only runs with a step of this agent.
    pub agent: Option<String>,
    /// Only runs started at or after this wall time (ms).
    pub since_ms: Option<u64>,
    /// Only runs whose id, agents, cwd, session or error contain this text (any case).
    pub text: Option<String>,
}

impl HistoryFilter {
    /// Whether the run `entry` describes passes.
    pub fn matches(&self, entry: &HistoryEntry) -> bool {
        let state = entry.state.as_deref().unwrap_or("unknown");
        self.state.as_deref().is_none_or(|wanted| wanted == state)
            && self
                .agent
                .as_deref()
                .is_none_or(|wanted| entry.agents.iter().any(|a| a == wanted))
            && self
                .since_ms
                .is_none_or(|since| entry.started_at.is_some_and(|started| started >= since))
            && self.text.as_deref().is_none_or(|text| mentions(entry, text))
    }
}

/// Whether `text` occurs, in any case, in what `--text` searches.
fn mentions(entry: &HistoryEntry, text: &str) -> bool {
    let needle = text.to_lowercase();
    std::iter::once(entry.run_id.as_str())
        .chain(entry.agents.iter().map(String::as_str))
        .chain(entry.cwd.as_deref())
        .chain(entry.session_id.as_deref())
        .chain(entry.error.as_deref())
        .any(|hay| hay.to_lowercase().contains(&needle))
}

/// One page: how many runs it takes at most, and where it starts.
#[derive(Clone, Debug, Default)]
pub struct Page {
    /// At most this many runs (all without a limit).
    pub limit: Option<usize>,
    /// Continue after this position (the cursor [`list_all`] returned for the page before);
    /// the runs of the active-run index are on the first page only.
    pub cursor: Option<Cursor>,
}

/// What [`list_all`] shows of one run.
pub struct Listed {
    /// The run id.
    pub run_id: String,
    /// Its directory.
    pub run: Dir,
    /// Its status, when readable.
    pub status: Option<Status>,
}

/// Why [`list_all`] could not list.
#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    /// The `--cursor` cannot be used.
    #[error(transparent)]
    Cursor(#[from] CursorError),
    /// The runs or the index could not be read, nor the index rebuilt.
    #[error(transparent)]
    Io(#[from] io::Error),
}

/// Lists the runs `filter` selects, newest first, handing each to `emit`; returns the cursor of
/// the next page when the limit cut the listing short.
pub fn list_all(
    store: &RunStore,
    filter: &HistoryFilter,
    page: &Page,
    mut emit: impl FnMut(Listed),
) -> Result<Option<Cursor>, HistoryError> {
    let history = open_or_rebuild(store)?;
    // Validated before anything is shown: a stale cursor is refused, not an empty page.
    let mut entries = history.newest_first(page.cursor.as_ref())?;
    let limit = page.limit.unwrap_or(usize::MAX);
    let mut shown = 0;
    let marked: HashSet<String> = match store.index().list()? {
        Some(markers) => markers.into_iter().map(|m| m.run_id).collect(),
        None => HashSet::new(),
    };
    if page.cursor.is_none() {
        let mut first = Vec::new();
        for id in &marked {
            if let Some(listed) = read_run(store, id, filter) {
                first.push(listed);
            }
        }
        first.sort_by_key(|l| std::cmp::Reverse((l.status.as_ref().and_then(|s| s.started_at), l.run_id.clone())));
        for listed in first.into_iter().take(limit) {
            emit(listed);
            shown += 1;
        }
    }
    if shown >= limit {
        // The history is not begun: its newest entry starts the next page.
        return Ok(entries.next().map(|_| history.start_cursor()));
    }
    let mut seen = HashSet::new();
    for (entry, cursor) in entries.by_ref() {
        // A marked run was listed from its status; a run ended twice, from its newest entry; a
        // pruned run's tombstone voids its older entries.
        if marked.contains(&entry.run_id) || !seen.insert(entry.run_id.clone()) || entry.pruned {
            continue;
        }
        // A terminal entry's fields are final; any other is checked against the status only.
        if entry.is_terminal() && !filter.matches(&entry) {
            continue;
        }
        let Some(listed) = read_run(store, &entry.run_id, filter) else {
            continue;
        };
        emit(listed);
        shown += 1;
        if shown >= limit {
            return Ok(Some(cursor));
        }
    }
    match entries.take_error() {
        Some(e) => Err(e.into()),
        None => Ok(None),
    }
}

/// Run `run_id` as its directory says, when it still exists and passes `filter`.
fn read_run(store: &RunStore, run_id: &str, filter: &HistoryFilter) -> Option<Listed> {
    let run = store.run_dir(run_id).ok().flatten()?;
    let status = status_of(&run);
    filter
        .matches(&HistoryEntry::from_status(run_id, status.as_ref()))
        .then(|| Listed {
            run_id: run_id.to_owned(),
            run,
            status,
        })
}

/// The history index of `store`, rebuilt first when it is missing, unreadable or of another
/// version.
pub fn open_or_rebuild(store: &RunStore) -> io::Result<History> {
    match History::open(store.root().runs()) {
        Ok(history) => Ok(history),
        Err(why) => {
            log::info!("rebuilding the history index: {why}");
            rebuild(store)
        }
    }
}

/// Rebuilds the history index of `store` from one walk of its run directories (I12).
///
/// A run made after the walk passed its place and ended before the new manifest was written
/// appended its entry to the generation being replaced, or to none: a second listing of the
/// run names, after the switch, records the runs the walk did not see. A run the walk saw
/// still running has a non-terminal entry, which readers check against its status.
pub fn rebuild(store: &RunStore) -> io::Result<History> {
    rebuild_around(store, || ())
}

/// [`rebuild`], calling `after_walk` between the walk and the switch (the window tests fill).
fn rebuild_around(store: &RunStore, after_walk: impl FnOnce()) -> io::Result<History> {
    let runs = store.root().runs();
    let mut walked = HashSet::new();
    let mut entries = Vec::new();
    for id in store.run_ids()? {
        if let Some(run) = store.run_dir(&id)? {
            entries.push(HistoryEntry::from_status(&id, status_of(&run).as_ref()));
            walked.insert(id);
        }
    }
    after_walk();
    let history = History::rebuild(runs, entries, store.policy())?;
    for id in store.run_ids()? {
        if walked.contains(&id) {
            continue;
        }
        if let Some(run) = store.run_dir(&id)? {
            History::append(
                runs,
                &HistoryEntry::from_status(&id, status_of(&run).as_ref()),
                store.policy(),
            )?;
        }
    }
    Ok(history)
}

#[cfg(test)]
mod tests {
    use super::*;
    use sublaunch_protocol::files::atomic::Durability;
    use sublaunch_protocol::files::layout::Layout;
    use sublaunch_protocol::records::status::{RunState, write_status};

    /// A run directory with a terminal status, as a run that just ended leaves it.
    fn ended(store: &RunStore, id: &str) {
        let dir = store.root().runs().ensure_child(id).unwrap();
        let status = Status {
            run_id: Some(id.to_owned()),
            state: Some(RunState::Complete),
            started_at: Some(1),
            ended_at: Some(2),
            ..Status::default()
        };
        write_status(&dir, &status, Durability::Atomic).unwrap();
    }

    fn listed(store: &RunStore) -> Vec<String> {
        let mut ids = Vec::new();
        list_all(store, &HistoryFilter::default(), &Page::default(), |l| {
            ids.push(l.run_id)
        })
        .unwrap();
        ids.sort();
        ids
    }

    #[test]
    fn i12_a_run_that_ends_while_the_index_is_rebuilt_is_in_the_new_one() {
        let tmp = tempfile::tempdir().unwrap();
        let env = crate::Environment::from_vars(Vec::<(String, String)>::new());
        let store = RunStore::open(&Layout::new(tmp.path().join("root")), &env).unwrap();
        ended(&store, "before-rebuild");
        rebuild(&store).unwrap();
        // Made and ended after the walk passed: its own append goes to the generation being
        // replaced, as a run's release would.
        rebuild_around(&store, || {
            ended(&store, "during-rebuild");
            let entry = HistoryEntry::from_status(
                "during-rebuild",
                status_of(&store.run_dir("during-rebuild").unwrap().unwrap()).as_ref(),
            );
            History::append(store.root().runs(), &entry, store.policy()).unwrap();
        })
        .unwrap();
        assert_eq!(listed(&store), ["before-rebuild", "during-rebuild"]);
    }
}
