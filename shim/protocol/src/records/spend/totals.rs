//! What the ledger's entries add up to, per local day, agent and provider and per run tree, kept
//! beside each month's ledger file (`<root>/usage/.<YYYY-MM>.totals`) so that a launch checks
//! its limits without reading a month of entries: the file remembers the byte offset it has
//! summed up to, and a reader adds the lines appended since. It is derived data: a missing,
//! unreadable or outdated file (another time zone, a ledger file that shrank) is rebuilt from
//! the ledger. Only the most recent [`TREES_KEPT`] run trees of a month are remembered.

use super::{Amount, Per, SpendLimit, counts};
use crate::files::atomic::Durability;
use crate::files::dir::Dir;
use crate::files::doc::ReadDoc;
use crate::os::clock::Period;
use crate::records::ledger::{Ledger, LedgerEntry, month_number};
use serde::{Deserialize, Serialize};
use std::io;
use std::path::Path;

/// How many run trees a month's totals remember (the most recently active).
pub const TREES_KEPT: usize = 256;

/// The totals of one month's ledger file.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct MonthTotals {
    /// The time zone the days are local to (seconds east of UTC).
    pub utc_offset_s: i64,
    /// The ledger file's bytes summed so far.
    pub end: u64,
    /// Per local day, agent and provider.
    pub days: Vec<DayTotal>,
    /// Per run tree (its root run), the most recently active first.
    pub trees: Vec<TreeTotal>,
}

/// One day's spend of one agent at one provider.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct DayTotal {
    /// Days since 1970-01-01, local.
    pub day: i64,
    /// The agent.
    pub agent: Option<String>,
    /// The provider.
    pub provider: Option<String>,
    /// What was spent.
    pub amount: Amount,
}

/// One run tree's spend.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct TreeTotal {
    /// The tree's root run.
    pub tree: String,
    /// The latest entry's time.
    pub last_at: u64,
    /// What was spent.
    pub amount: Amount,
}

impl MonthTotals {
    /// Adds one entry.
    pub fn add(&mut self, entry: &LedgerEntry) {
        let amount = Amount::of(&entry.usage);
        let day = Period::Day.first_day(entry.at, self.utc_offset_s);
        match self
            .days
            .iter_mut()
            .find(|d| d.day == day && d.agent == entry.agent && d.provider == entry.provider)
        {
            Some(total) => total.amount = total.amount.plus(amount),
            None => self.days.push(DayTotal {
                day,
                agent: entry.agent.clone(),
                provider: entry.provider.clone(),
                amount,
            }),
        }
        let tree = entry.root.as_deref().unwrap_or(&entry.run);
        match self.trees.iter().position(|t| t.tree == tree) {
            Some(at) => {
                let mut total = self.trees.remove(at);
                total.amount = total.amount.plus(amount);
                total.last_at = total.last_at.max(entry.at);
                self.trees.insert(0, total);
            }
            None => {
                self.trees.insert(
                    0,
                    TreeTotal {
                        tree: tree.to_owned(),
                        last_at: entry.at,
                        amount,
                    },
                );
                self.trees.truncate(TREES_KEPT);
            }
        }
    }

    /// What counts against `limit` for a run of tree `own_tree` from `from` (epoch ms) on.
    fn used(&self, limit: &SpendLimit, own_tree: &str, from: u64) -> Amount {
        if limit.per == Per::Tree {
            // A tree's spend is not split by agent or provider.
            return self
                .trees
                .iter()
                .find(|t| t.tree == own_tree)
                .map_or_else(Amount::default, |t| t.amount);
        }
        let first_day = Period::Day.first_day(from, self.utc_offset_s);
        self.days
            .iter()
            .filter(|d| d.day >= first_day)
            .filter(|d| counts(limit, d.agent.as_deref(), d.provider.as_deref(), own_tree, own_tree))
            .fold(Amount::default(), |sum, d| sum.plus(d.amount))
    }
}

/// The totals of the month file `ledger_file`, brought up to date with the lines
/// appended since they were saved, and saved again when they moved. Call under the usage lock.
pub fn month_totals(usage: &Dir, ledger_file: &Path, utc_offset_s: i64) -> io::Result<MonthTotals> {
    let name = totals_name(ledger_file);
    let mut totals = match usage.read_doc::<MonthTotals>(&name)? {
        ReadDoc::Present(totals) if totals.utc_offset_s == utc_offset_s => totals,
        _ => MonthTotals {
            utc_offset_s,
            ..MonthTotals::default()
        },
    };
    let tail = Ledger::read_from(ledger_file, totals.end)?;
    if tail.restarted {
        totals = MonthTotals {
            utc_offset_s,
            ..MonthTotals::default()
        };
    }
    if tail.end != totals.end {
        for entry in &tail.read.entries {
            totals.add(entry);
        }
        totals.end = tail.end;
        usage.write_doc(&name, &totals, Durability::Atomic)?;
    }
    Ok(totals)
}

/// `.2026-12.totals` beside `2026-12.ledger`.
fn totals_name(ledger_file: &Path) -> String {
    let stem = ledger_file.file_stem().and_then(|s| s.to_str()).unwrap_or("month");
    format!(".{stem}.totals")
}

/// What the ledger holds against each of `limits` for a run of tree `own_tree` at `now`: its
/// period's spend (a run tree's: this month's and last month's). Call under the usage lock.
pub fn ledger_used(
    usage: &Dir,
    ledger: &Ledger,
    limits: &[SpendLimit],
    own_tree: &str,
    now: u64,
    utc_offset_s: i64,
) -> io::Result<Vec<Amount>> {
    let mut used = vec![Amount::default(); limits.len()];
    if limits.is_empty() {
        return Ok(used);
    }
    // The earliest moment any limit looks back to: a month's start, or last month for trees.
    let from = |limit: &SpendLimit| match limit.per.period() {
        Some(period) => period.start_ms(now, utc_offset_s),
        None => Period::Month.start_ms(
            Period::Month.start_ms(now, utc_offset_s).saturating_sub(1),
            utc_offset_s,
        ),
    };
    let earliest = limits.iter().map(from).min().unwrap_or(now);
    // Local periods are a few hours off UTC months: one month file more on either side.
    let (first, last) = (month_number(earliest.saturating_sub(86_400_000)), month_number(now));
    for (month, path) in ledger.month_files()? {
        if month < first || month > last {
            continue;
        }
        let totals = month_totals(usage, &path, utc_offset_s)?;
        for (limit, sum) in limits.iter().zip(used.iter_mut()) {
            *sum = sum.plus(totals.used(limit, own_tree, from(limit)));
        }
    }
    Ok(used)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::usage::Usage;

    const DEC_5: u64 = 1_796_504_400_000;

    fn entry(at: u64, run: &str, root: Option<&str>, agent: &str, cost: f64) -> LedgerEntry {
        LedgerEntry {
            at,
            run: run.into(),
            root: root.map(str::to_owned),
            agent: Some(agent.into()),
            provider: Some("anthropic".into()),
            usage: Usage {
                input_tokens: 100,
                output_tokens: 10,
                cost_usd: Some(cost),
                ..Usage::default()
            },
            ..LedgerEntry::default()
        }
    }

    #[test]
    fn totals_follow_the_ledger_and_survive_their_own_loss() {
        let tmp = tempfile::tempdir().unwrap();
        let ledger = Ledger::under(tmp.path());
        ledger
            .append(&entry(DEC_5 - 86_400_000, "old", None, "a", 9.0))
            .unwrap();
        ledger.append(&entry(DEC_5, "r1", None, "a", 1.0)).unwrap();
        ledger.append(&entry(DEC_5 + 1, "c1", Some("r1"), "b", 2.0)).unwrap();
        let usage = Dir::open(ledger.dir()).unwrap();
        let day = SpendLimit {
            per: Per::Day,
            cost_usd: Some(10.0),
            tokens: None,
            provider: None,
            agent: None,
        };
        let only_b = SpendLimit {
            agent: Some("b".into()),
            ..day.clone()
        };
        let tree = SpendLimit {
            per: Per::Tree,
            ..day.clone()
        };
        let limits = [day, only_b, tree];
        let used = |tree: &str| ledger_used(&usage, &ledger, &limits, tree, DEC_5 + 2, 0).unwrap();
        let costs = |amounts: Vec<Amount>| amounts.iter().map(|a| a.cost_usd).collect::<Vec<_>>();
        assert_eq!(costs(used("r1")), [3.0, 2.0, 3.0]);
        assert_eq!(used("r1")[0].tokens, 220);
        // Appended since: only the new line is read.
        ledger.append(&entry(DEC_5 + 3, "r2", None, "a", 0.5)).unwrap();
        assert_eq!(costs(used("r2")), [3.5, 2.0, 0.5]);
        // The totals lost: rebuilt from the ledger, the same.
        for file in std::fs::read_dir(ledger.dir()).unwrap() {
            let path = file.unwrap().path();
            if path.to_string_lossy().ends_with(".totals") {
                std::fs::write(&path, b"{torn").unwrap();
            }
        }
        assert_eq!(costs(used("r2")), [3.5, 2.0, 0.5]);
    }
}
