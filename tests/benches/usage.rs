//! What a `sublaunch usage` query costs as the ledger grows (issue 39): a state root whose
//! ledger holds N step entries (100 000 by default) over 90 days, 8 agents, 4 providers and
//! N/3 runs, against the same command over a period holding nothing (the floor: the process,
//! the state root and the month files' listing, no entry read), measured in the same run and
//! interleaved round by round. N/10 entries are measured too, to show how the cost grows.
//!
//! The entries are written in the ledger's own format (`encode`), not by launching runs: the
//! subject is the query, and 100 000 launches would measure the launches.
//!
//! Run: `scripts/bench-usage.sh` (builds the release binaries, then
//! `cargo bench -p sublaunch-tests --bench usage`). `SUBLAUNCH_BENCH_STEPS` sets N,
//! `SUBLAUNCH_BENCH_ROUNDS` the rounds (default 15).

use std::io::Write;
use std::time::{Duration, Instant};
use sublaunch_protocol::records::ledger::{Ledger, LedgerEntry, encode};
use sublaunch_protocol::records::usage::Usage;
use sublaunch_tests::bench::{self, median, ms};
use sublaunch_tests::cli::ok;
use sublaunch_tests::launch_harness::Scratch;

const DAY_MS: u64 = 86_400_000;

/// A root whose ledger holds `steps` entries spread over the 90 days before now.
fn seeded(name: &str, steps: u64) -> Scratch {
    let scratch = Scratch::new(name);
    scratch.create_root();
    let ledger = Ledger::under(&scratch.root());
    std::fs::create_dir_all(ledger.dir()).unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    let start = now - 90 * DAY_MS;
    let mut files: std::collections::BTreeMap<std::path::PathBuf, Vec<u8>> = Default::default();
    for i in 0..steps {
        let at = start + i * (90 * DAY_MS / steps.max(1));
        let entry = LedgerEntry {
            at,
            run: format!("run-{:08x}", i / 3),
            parent: (i % 7 == 0).then(|| format!("run-{:08x}", i / 21)),
            root: (i % 7 == 0).then(|| format!("run-{:08x}", i / 21)),
            step: (i % 3) as u32,
            agent: Some(format!("agent-{}", i % 8)),
            model: Some(format!("model-{}", i % 5)),
            provider: Some(["anthropic", "openai", "fake", "google"][(i % 4) as usize].to_owned()),
            machine: None,
            usage: Usage {
                input_tokens: 1000 + i % 97,
                output_tokens: 200 + i % 13,
                cache_read_tokens: 5000,
                cache_write_tokens: 300,
                cost_usd: (i % 4 != 1).then_some(0.0123),
            },
            partial: false,
        };
        files.entry(ledger.month_file(at)).or_default().extend(encode(&entry));
    }
    for (path, bytes) in files {
        std::fs::File::create(path).unwrap().write_all(&bytes).unwrap();
    }
    scratch
}

fn timed(scratch: &Scratch, args: &[&str]) -> Duration {
    let started = Instant::now();
    let output = scratch.cli(args).output().expect("sublaunch usage");
    let elapsed = started.elapsed();
    ok(&output);
    elapsed
}

fn main() {
    let Some(rounds) = bench::rounds(15) else { return };
    let steps: u64 = std::env::var("SUBLAUNCH_BENCH_STEPS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(100_000);
    let big = seeded("bench-usage-big", steps);
    let small = seeded("bench-usage-small", steps / 10);
    let queries: [(&str, &[&str]); 3] = [
        ("by day", &["usage", "--since", "90d", "--json"]),
        ("by agent", &["usage", "--since", "90d", "--by", "agent", "--json"]),
        ("by tree", &["usage", "--since", "90d", "--by", "tree", "--json"]),
    ];
    let floor_args: &[&str] = &["usage", "--until", "2000-01-01", "--json"];
    let mut floor = Vec::new();
    let mut samples = vec![(Vec::new(), Vec::new()); queries.len()];
    for _ in 0..rounds {
        floor.push(timed(&big, floor_args));
        for ((_, args), (on_big, on_small)) in queries.iter().zip(samples.iter_mut()) {
            on_big.push(timed(&big, args));
            on_small.push(timed(&small, args));
        }
    }
    let floor = median(floor);
    println!(
        "| `sublaunch usage` | {} steps | {} steps | floor: a period holding nothing | ratio ({} steps) |",
        steps / 10,
        steps,
        steps
    );
    println!("|---|---|---|---|---|");
    for ((name, _), (on_big, on_small)) in queries.iter().zip(samples) {
        let (big_ms, small_ms) = (median(on_big), median(on_small));
        println!(
            "| {name} | {} | {} | {} | {:.2}× |",
            ms(small_ms),
            ms(big_ms),
            ms(floor),
            big_ms.as_secs_f64() / floor.as_secs_f64()
        );
    }
}
