//! `sublaunch usage [--since WHEN] [--until WHEN] [--by GROUPING] [--tree RUN] [--json]`:
//! what the runs of this state root spent, from the usage ledger (U3, U4) — a table of tokens and cost
//! per group, with a bar chart of the cost (or, where no cost was reported, the tokens) when
//! grouped by time.

use super::runs::say;
use super::runs::{fail, now_ms, open_store};
use std::process::ExitCode;
use sublaunch::usage::{Grouping, Query, Summary, Totals, local_day_start, summarize};
use sublaunch_protocol::os::clock::days_from_civil;
use sublaunch_protocol::records::usage::usd;

/// Arguments of `sublaunch usage`.
#[derive(clap::Args)]
pub struct Args {
    /// From this local date (`2026-12-01`) or this long ago (`7d`, `12h`); default 30 days
    /// (today and the 29 days before it).
    #[arg(long, value_name = "WHEN")]
    since: Option<String>,
    /// Up to this local date (the day itself excluded) or this long ago; default now.
    #[arg(long, value_name = "WHEN")]
    until: Option<String>,
    /// Group by day, week, month, agent, model, provider, machine, run or tree (a run and
    /// every run launched from inside it).
    #[arg(
        long,
        value_enum,
        value_name = "GROUPING",
        default_value = "day",
        hide_possible_values = true
    )]
    by: Grouping,
    /// Only this run and the runs launched from inside it (its full id).
    #[arg(long, value_name = "RUN")]
    tree: Option<String>,
    /// Print one JSON object.
    #[arg(short, long)]
    json: bool,
}

/// Runs `sublaunch usage`.
pub fn run(args: Args) -> ExitCode {
    let store = match open_store("usage") {
        Ok(store) => store,
        Err(code) => return code,
    };
    let query = match query(
        args.since.as_deref(),
        args.until.as_deref(),
        args.by,
        args.tree,
        now_ms(),
    ) {
        Ok(query) => query,
        Err(e) => return usage_error(&e),
    };
    let summary = match summarize(store.root().layout().root(), &query) {
        Ok(summary) => summary,
        Err(e) => return fail("usage", format!("cannot read the usage ledger: {e}")),
    };
    if args.json {
        say!("{}", serde_json::to_string_pretty(&summary).unwrap_or_default());
    } else {
        print_table(&summary);
    }
    if summary.damaged > 0 {
        eprintln!(
            "sublaunch usage: {} damaged ledger line(s) left out (a write cut short, e.g. by a power loss)",
            summary.damaged
        );
    }
    ExitCode::SUCCESS
}

/// The query `--since`, `--until`, `--by` and `--tree` (or the MCP tool's parameters) ask
/// for, at `now` (epoch ms); what is wrong with a time, naming it.
pub(crate) fn query(
    since: Option<&str>,
    until: Option<&str>,
    by: Grouping,
    tree_of: Option<String>,
    now: u64,
) -> Result<Query, String> {
    let offset = sublaunch::usage::local_utc_offset_s(now);
    let from = match since {
        None => local_day_start(now, 29, offset),
        Some(text) => when(text, now, offset).map_err(|e| format!("since {text}: {e}"))?,
    };
    let to = match until {
        None => now.saturating_add(1),
        Some(text) => when(text, now, offset).map_err(|e| format!("until {text}: {e}"))?,
    };
    Ok(Query {
        from,
        to,
        by,
        tree_of,
        utc_offset_s: offset,
    })
}

fn usage_error(message: &str) -> ExitCode {
    eprintln!("sublaunch usage: {message}");
    ExitCode::from(super::EXIT_USAGE)
}

/// A local date `YYYY-MM-DD` (its midnight) or a duration before `now`.
fn when(text: &str, now: u64, offset: i64) -> Result<u64, String> {
    if let Some(date) = parse_date(text) {
        let (year, month, day) = date;
        let local_midnight = days_from_civil(year, month, day) * 86_400 - offset;
        return u64::try_from(local_midnight * 1000).map_err(|_| "a date before 1970".to_owned());
    }
    let ago = super::duration::parse_duration(text)
        .map_err(|e| format!("neither a date (YYYY-MM-DD) nor a duration: {e}"))?;
    Ok(now.saturating_sub(u64::try_from(ago.as_millis()).unwrap_or(u64::MAX)))
}

fn parse_date(text: &str) -> Option<(i64, u32, u32)> {
    let mut parts = text.splitn(3, '-');
    let (year, month, day) = (parts.next()?, parts.next()?, parts.next()?);
    if year.len() != 4 || month.len() != 2 || day.len() != 2 {
        return None;
    }
    let (year, month, day) = (year.parse().ok()?, month.parse().ok()?, day.parse().ok()?);
    ((1..=12).contains(&month) && (1..=31).contains(&day)).then_some((year, month, day))
}

/// `$1.23`, `$1.23 + unknown` (some steps reported no cost) or `unknown`.
fn cost(totals: &Totals) -> String {
    match (totals.cost_usd, totals.steps_without_cost) {
        (None, _) => "unknown".to_owned(),
        (Some(c), 0) => usd(c),
        (Some(c), _) => format!("{} + unknown", usd(c)),
    }
}

fn tokens(n: u64) -> String {
    if n >= 1_000_000 {
        format!("{:.1}M", n as f64 / 1e6)
    } else if n >= 10_000 {
        format!("{:.1}k", n as f64 / 1e3)
    } else {
        n.to_string()
    }
}

fn print_table(summary: &Summary) {
    if summary.groups.is_empty() {
        say!("no usage recorded in this period");
        return;
    }
    let by_time = matches!(summary.by, Grouping::Day | Grouping::Week | Grouping::Month);
    // The chart shows cost where every group has one, else tokens.
    let charted: Vec<f64> = if summary.groups.iter().all(|g| g.totals.cost_usd.is_some()) {
        summary
            .groups
            .iter()
            .map(|g| g.totals.cost_usd.unwrap_or(0.0))
            .collect()
    } else {
        summary.groups.iter().map(|g| g.totals.total_tokens as f64).collect()
    };
    let most = charted.iter().copied().fold(0.0_f64, f64::max);
    let key_width = summary.groups.iter().map(|g| g.key.len()).max().unwrap_or(0).max(5);
    say!(
        "{:<key_width$}  {:>5}  {:>8}  {:>8}  {:>8}  {:>8}  {:>18}",
        format!("{:?}", summary.by).to_uppercase(),
        "STEPS",
        "INPUT",
        "OUTPUT",
        "CACHED",
        "TOKENS",
        "COST"
    );
    for (group, value) in summary.groups.iter().zip(&charted) {
        let t = &group.totals;
        let bar = if by_time && most > 0.0 {
            let cells = ((value / most) * 30.0).round() as usize;
            format!("  {}", "█".repeat(cells.max(usize::from(*value > 0.0))))
        } else {
            String::new()
        };
        say!("{}{bar}", row(&group.key, t, key_width));
    }
    say!("{}", row("total", &summary.total, key_width));
}

/// One line of the table: the key, then the counts and the cost.
fn row(key: &str, t: &Totals, key_width: usize) -> String {
    format!(
        "{key:<key_width$}  {:>5}  {:>8}  {:>8}  {:>8}  {:>8}  {:>18}",
        t.steps,
        tokens(t.input_tokens),
        tokens(t.output_tokens),
        tokens(t.cache_read_tokens + t.cache_write_tokens),
        tokens(t.total_tokens),
        cost(t)
    )
}
