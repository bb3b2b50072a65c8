//! What spend limits add to a launch (issue 39, U9): `sublaunch run --agent shell --task true
//! --wait` under three limits in the user's settings (per day, per month for a provider, per
//! run tree) against the same command without limits (the floor), interleaved round by round
//! in the same run. With limits the launch builds the run's estimate from the ledger's last
//! lines, looks once whether it fits, and the runner takes its reservation under the usage
//! lock and settles it when the run ends. The ledger holds 0, 10 000 and 100 000 entries of
//! the current month: the totals beside it make the look cost what was appended since, not
//! the month.
//!
//! Run: `scripts/bench-spend.sh` (builds the release binaries, then
//! `cargo bench -p sublaunch-tests --bench spend`). `SUBLAUNCH_BENCH_ROUNDS` sets the rounds
//! (default 101). The added cost is the median of the rounds' differences.

use std::time::{Duration, Instant};
use sublaunch_protocol::records::ledger::{Ledger, LedgerEntry, encode};
use sublaunch_protocol::records::usage::Usage;
use sublaunch_tests::bench::{self, median, ms};
use sublaunch_tests::cli::{ok, write};
use sublaunch_tests::launch_harness::Scratch;

const LIMITS: &str = r#"{"subagents": {"limits": [
  {"per": "day", "costUsd": 1000000},
  {"per": "month", "tokens": 1000000000000, "provider": "anthropic"},
  {"per": "tree", "costUsd": 1000000}
]}}"#;

/// A root whose ledger holds `entries` steps of this month, up to now.
fn seeded(entries: u64) -> Scratch {
    let scratch = Scratch::new(&format!("bench-spend-{entries}"));
    scratch.create_root();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    let ledger = Ledger::under(&scratch.root());
    let mut bytes = Vec::new();
    for i in 0..entries {
        let entry = LedgerEntry {
            // Spread over the last few hours: every entry is in this month's file.
            at: now - (entries - i) * 100,
            run: format!("run-{:08x}", i / 3),
            agent: Some(["shell", "claude", "pi"][(i % 3) as usize].to_owned()),
            provider: Some(["anthropic", "openai"][(i % 2) as usize].to_owned()),
            usage: Usage {
                input_tokens: 1000,
                output_tokens: 100,
                cost_usd: Some(0.001),
                ..Usage::default()
            },
            ..LedgerEntry::default()
        };
        bytes.extend(encode(&entry));
    }
    if entries > 0 {
        std::fs::create_dir_all(ledger.dir()).unwrap();
        std::fs::write(ledger.month_file(now), bytes).unwrap();
    }
    scratch
}

fn settings(scratch: &Scratch, limited: bool) {
    let text = if limited { LIMITS } else { "{}" };
    write(&scratch.path().join("home/.config/sublaunch/settings.json"), text);
}

fn timed(scratch: &Scratch) -> Duration {
    let started = Instant::now();
    let output = scratch
        .cli(&["run", "--agent", "shell", "--task", "true", "--wait"])
        .output()
        .unwrap();
    let elapsed = started.elapsed();
    ok(&output);
    elapsed
}

fn main() {
    let Some(rounds) = bench::rounds(101) else { return };
    println!("| ledger entries this month | without limits (floor) | with three limits | added | × floor |");
    println!("|---|---|---|---|---|");
    for entries in [0, 10_000, 100_000] {
        let scratch = seeded(entries);
        // The first look builds the month's totals; what a launch pays after that is measured.
        settings(&scratch, true);
        timed(&scratch);
        let (mut plain, mut limited, mut added) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..rounds {
            settings(&scratch, false);
            let floor = timed(&scratch);
            settings(&scratch, true);
            let with = timed(&scratch);
            plain.push(floor);
            limited.push(with);
            // Paired round by round: what the limits add, free of the drift between rounds.
            added.push(with.as_secs_f64() - floor.as_secs_f64());
        }
        let (plain, limited) = (median(plain), median(limited));
        added.sort_by(f64::total_cmp);
        let added = added[added.len() / 2];
        println!(
            "| {entries} | {} | {} | {:+.2} ms | {:.2} |",
            ms(plain),
            ms(limited),
            added * 1e3,
            limited.as_secs_f64() / plain.as_secs_f64()
        );
    }
}
