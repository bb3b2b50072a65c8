//! What runs spent (U3, U4), summed from the usage ledger
//! ([`sublaunch_protocol::records::ledger`]): totals over a period, grouped by day, week,
//! month, agent, model, provider, machine, run or run tree. Cost an agent did not report is
//! counted apart (a group whose steps reported none has an unknown cost, never zero); tokens
//! are always summed.

use serde::Serialize;
use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use sublaunch_protocol::os::clock::{Period, civil_from_days, local_midnight_ms};
use sublaunch_protocol::records::ledger::{Ledger, LedgerEntry};

/// How the entries are grouped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Grouping {
    /// Local calendar days (`2026-12-05`).
    Day,
    /// Weeks starting on Monday, named by their Monday.
    Week,
    /// Calendar months (`2026-12`).
    Month,
    /// The agent.
    Agent,
    /// The model.
    Model,
    /// The provider.
    Provider,
    /// The machine (`local` for this one).
    Machine,
    /// The run.
    Run,
    /// The run tree: a run and every run launched from inside it, named by its top run.
    Tree,
}

/// What a group spent.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Totals {
    /// Steps counted.
    pub steps: u64,
    /// Input tokens not read from the cache.
    pub input_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
    /// Input tokens read from the cache.
    pub cache_read_tokens: u64,
    /// Input tokens written to the cache.
    pub cache_write_tokens: u64,
    /// Every token.
    pub total_tokens: u64,
    /// The cost the steps reported (`None`: none of them reported one).
    pub cost_usd: Option<f64>,
    /// Steps that reported no cost: their cost is unknown, not zero.
    pub steps_without_cost: u64,
}

impl Totals {
    fn add(&mut self, entry: &LedgerEntry) {
        let usage = &entry.usage;
        // What a step added while it ran is summed; the step is counted at its end.
        self.steps += u64::from(!entry.partial);
        self.input_tokens += usage.input_tokens;
        self.output_tokens += usage.output_tokens;
        self.cache_read_tokens += usage.cache_read_tokens;
        self.cache_write_tokens += usage.cache_write_tokens;
        self.total_tokens += usage.total_tokens();
        match usage.cost_usd {
            Some(cost) => *self.cost_usd.get_or_insert(0.0) += cost,
            None if !entry.partial => self.steps_without_cost += 1,
            None => {}
        }
    }
}

/// One group's key and totals.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Group {
    /// The day, agent, run … the group stands for.
    pub key: String,
    /// What it spent.
    #[serde(flatten)]
    pub totals: Totals,
}

/// The answer to a usage query.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    /// The grouping.
    pub by: Grouping,
    /// The groups, in key order (time order for days, weeks and months).
    pub groups: Vec<Group>,
    /// Everything in the period.
    pub total: Totals,
    /// Ledger lines left out as damaged (a write cut short by a power loss).
    pub damaged: usize,
}

/// A usage query.
#[derive(Clone, Debug)]
pub struct Query {
    /// The period, epoch ms: `from..to`.
    pub from: u64,
    /// End of the period (exclusive).
    pub to: u64,
    /// The grouping.
    pub by: Grouping,
    /// Only this run and the runs launched from inside it.
    pub tree_of: Option<String>,
    /// The local time zone's offset from UTC, seconds (days, weeks and months are local).
    pub utc_offset_s: i64,
}

/// Reads the ledger under `root` and sums it as `query` asks.
pub fn summarize(root: &Path, query: &Query) -> std::io::Result<Summary> {
    let read = Ledger::under(root).read(query.from, query.to)?;
    Ok(summarize_entries(&read.entries, read.damaged, query))
}

/// Sums `entries` as `query` asks (the period is the caller's).
pub fn summarize_entries<'a>(entries: &'a [LedgerEntry], damaged: usize, query: &Query) -> Summary {
    // Entries name their tree's top run; the parents are walked only for a subtree and for
    // entries that do not name it.
    let walk_needed = query.tree_of.is_some() || entries.iter().any(|e| e.root.is_none() && e.parent.is_some());
    let parents: HashMap<&'a str, &'a str> = if walk_needed {
        entries
            .iter()
            .filter_map(|e| Some((e.run.as_str(), e.parent.as_deref()?)))
            .collect()
    } else {
        HashMap::new()
    };
    // The runs from `run` up its parents, bounded: a cycle (records written by hand) cannot
    // hang the query.
    let ancestry = |run: &'a str| std::iter::successors(Some(run), |r| parents.get(r).copied()).take(64);
    let top = |entry: &'a LedgerEntry| -> &'a str {
        match &entry.root {
            Some(root) => root,
            None => ancestry(&entry.run).last().unwrap_or(entry.run.as_str()),
        }
    };
    let in_tree = |entry: &'a LedgerEntry| match &query.tree_of {
        None => true,
        Some(wanted) => entry.root.as_ref() == Some(wanted) || ancestry(&entry.run).any(|r| r == wanted),
    };
    // Keyed without allocating per entry (a day by its number, a name by reference): the
    // query reads every entry of the period, and months of them are 100 000 steps.
    let mut by_day: HashMap<i64, Totals> = HashMap::new();
    let mut by_name: HashMap<&str, Totals> = HashMap::new();
    let mut total = Totals::default();
    fn named<'n>(name: &'n Option<String>, none: &'static str) -> &'n str {
        name.as_deref().unwrap_or(none)
    }
    for entry in entries.iter().filter(|e| in_tree(e)) {
        let totals = match query.by {
            Grouping::Day | Grouping::Week | Grouping::Month => by_day
                .entry(calendar_day(entry.at, query.by, query.utc_offset_s))
                .or_default(),
            Grouping::Agent => by_name.entry(named(&entry.agent, "(no agent)")).or_default(),
            Grouping::Model => by_name.entry(named(&entry.model, "(default model)")).or_default(),
            Grouping::Provider => by_name.entry(named(&entry.provider, "(unknown)")).or_default(),
            Grouping::Machine => by_name.entry(named(&entry.machine, "local")).or_default(),
            Grouping::Run => by_name.entry(entry.run.as_str()).or_default(),
            Grouping::Tree => by_name.entry(top(entry)).or_default(),
        };
        totals.add(entry);
        total.add(entry);
    }
    let mut groups: BTreeMap<String, Totals> = by_name.into_iter().map(|(k, t)| (k.to_owned(), t)).collect();
    groups.extend(by_day.into_iter().map(|(day, t)| (calendar_name(day, query.by), t)));
    Summary {
        by: query.by,
        groups: groups.into_iter().map(|(key, totals)| Group { key, totals }).collect(),
        total,
        damaged,
    }
}

/// The local day of `epoch_ms` that names its group: the day itself, its week's Monday, or
/// the first of its month.
fn calendar_day(epoch_ms: u64, by: Grouping, utc_offset_s: i64) -> i64 {
    let period = match by {
        Grouping::Week => Period::Week,
        Grouping::Month => Period::Month,
        _ => Period::Day,
    };
    period.first_day(epoch_ms, utc_offset_s)
}

/// `2026-12-05` (a day or a week's Monday) or `2026-12` (a month).
fn calendar_name(days: i64, by: Grouping) -> String {
    let (year, month, day) = civil_from_days(days);
    match by {
        Grouping::Month => format!("{year:04}-{month:02}"),
        _ => format!("{year:04}-{month:02}-{day:02}"),
    }
}

#[cfg(test)]
fn calendar_key(epoch_ms: u64, by: Grouping, utc_offset_s: i64) -> String {
    calendar_name(calendar_day(epoch_ms, by, utc_offset_s), by)
}

/// The start (epoch ms) of the local day `days_ago` days before the one holding `now_ms`.
pub fn local_day_start(now_ms: u64, days_ago: u64, utc_offset_s: i64) -> u64 {
    let day = Period::Day.first_day(now_ms, utc_offset_s) - i64::try_from(days_ago).unwrap_or(i64::MAX / 2);
    local_midnight_ms(day, utc_offset_s)
}

/// The local time zone's offset from UTC at `now_ms`, in seconds.
pub fn local_utc_offset_s(now_ms: u64) -> i64 {
    let time: libc::time_t = libc::time_t::try_from(now_ms / 1000).unwrap_or(0);
    // SAFETY: `tm` is a plain C struct of integers and a pointer; all zeroes is valid.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    // SAFETY: localtime_r reads `time` and writes only into `tm`, both live locals.
    let converted = unsafe { libc::localtime_r(&time, &mut tm) };
    if converted.is_null() { 0 } else { tm.tm_gmtoff }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sublaunch_protocol::records::usage::Usage;

    const DEC_5_2100Z: u64 = 1_796_504_400_000;

    fn entry(at: u64, run: &str, parent: Option<&str>, agent: &str, cost: Option<f64>) -> LedgerEntry {
        LedgerEntry {
            at,
            run: run.to_owned(),
            parent: parent.map(str::to_owned),
            agent: Some(agent.to_owned()),
            usage: Usage {
                input_tokens: 10,
                output_tokens: 5,
                cost_usd: cost,
                ..Usage::default()
            },
            ..LedgerEntry::default()
        }
    }

    fn query(by: Grouping) -> Query {
        Query {
            from: 0,
            to: u64::MAX,
            by,
            tree_of: None,
            utc_offset_s: 0,
        }
    }

    #[test]
    fn a_cost_nobody_reported_is_unknown_not_zero() {
        let entries = [
            entry(DEC_5_2100Z, "a", None, "claude", Some(0.5)),
            entry(DEC_5_2100Z, "b", None, "codex", None),
            entry(DEC_5_2100Z, "c", None, "claude", Some(0.25)),
        ];
        let summary = summarize_entries(&entries, 0, &query(Grouping::Agent));
        let codex = &summary.groups[1];
        assert_eq!((codex.key.as_str(), codex.totals.cost_usd), ("codex", None));
        assert_eq!(codex.totals.total_tokens, 15);
        assert_eq!(summary.groups[0].totals.cost_usd, Some(0.75));
        assert_eq!(summary.total.cost_usd, Some(0.75));
        assert_eq!(summary.total.steps_without_cost, 1);
    }

    #[test]
    fn days_and_weeks_are_local() {
        // 21:00 UTC on Saturday 5 December is already Sunday the 6th at UTC+5.
        assert_eq!(calendar_key(DEC_5_2100Z, Grouping::Day, 0), "2026-12-05");
        assert_eq!(calendar_key(DEC_5_2100Z, Grouping::Day, 5 * 3600), "2026-12-06");
        assert_eq!(calendar_key(DEC_5_2100Z, Grouping::Week, 0), "2026-11-30");
        assert_eq!(calendar_key(DEC_5_2100Z, Grouping::Month, 0), "2026-12");
        assert_eq!(local_day_start(DEC_5_2100Z, 0, 0), 1_796_428_800_000);
        assert_eq!(local_day_start(DEC_5_2100Z, 1, 3600), 1_796_338_800_000);
    }

    #[test]
    fn a_tree_holds_its_run_and_every_run_launched_inside_it() {
        let entries = [
            entry(1, "top", None, "a", Some(1.0)),
            entry(2, "child", Some("top"), "a", Some(2.0)),
            entry(3, "grandchild", Some("child"), "a", Some(4.0)),
            entry(4, "other", None, "a", Some(8.0)),
        ];
        let trees = summarize_entries(&entries, 0, &query(Grouping::Tree));
        let keys: Vec<(&str, Option<f64>)> = trees
            .groups
            .iter()
            .map(|g| (g.key.as_str(), g.totals.cost_usd))
            .collect();
        assert_eq!(keys, [("other", Some(8.0)), ("top", Some(7.0))]);
        // A run that names its top run counts there even when the runs between are not in
        // the period read.
        let mut late = entry(5, "late", Some("gone"), "a", Some(16.0));
        late.root = Some("top".to_owned());
        let with_late = [entries[0].clone(), late];
        let trees = summarize_entries(&with_late, 0, &query(Grouping::Tree));
        assert_eq!(trees.groups.len(), 1);
        assert_eq!(
            (trees.groups[0].key.as_str(), trees.groups[0].totals.cost_usd),
            ("top", Some(17.0))
        );
        let mut of_top = query(Grouping::Run);
        of_top.tree_of = Some("top".to_owned());
        assert_eq!(summarize_entries(&with_late, 0, &of_top).total.cost_usd, Some(17.0));
        let mut of_child = query(Grouping::Run);
        of_child.tree_of = Some("child".to_owned());
        let runs = summarize_entries(&entries, 0, &of_child);
        assert_eq!(runs.total.cost_usd, Some(6.0));
        assert_eq!(runs.groups.len(), 2);
    }
}
