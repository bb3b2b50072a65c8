//! The torture run (see `sublaunch_tests::chaos`), bounded for CI: about a minute of
//! concurrent launches, observers, stops and SIGKILLs, then zero invariant violations.
//! `scripts/torture.sh --runs N --seconds S` runs the same test longer; the variables
//! `SUBLAUNCH_TORTURE_SEED`, `_RUNS`, `_SECONDS`, `_LAUNCHERS` and `_OBSERVERS` override the
//! bounds, and the seed is printed so a failure replays.

use std::time::Duration;
use sublaunch_tests::chaos::{TortureConfig, torture};

fn setting(name: &str, default: u64) -> u64 {
    std::env::var(format!("SUBLAUNCH_TORTURE_{name}"))
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[test]
fn torture_no_run_stuck_no_wrong_proof_no_orphaned_agent() {
    let clock_seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(1, |d| d.as_nanos() as u64);
    let config = TortureConfig {
        seed: setting("SEED", clock_seed),
        runs: usize::try_from(setting("RUNS", 400)).unwrap(),
        duration: Duration::from_secs(setting("SECONDS", 45)),
        launchers: usize::try_from(setting("LAUNCHERS", 4)).unwrap(),
        observers: usize::try_from(setting("OBSERVERS", 2)).unwrap(),
    };
    let report = torture(&config);
    eprintln!("torture (seed {}): {:#?}", config.seed, report.counts);
    let kills: usize = report
        .counts
        .iter()
        .filter(|(k, _)| k.starts_with("kills-"))
        .map(|(_, n)| n)
        .sum();
    assert!(
        report.counts.get("runs").copied().unwrap_or(0) > 0,
        "no run was launched"
    );
    assert!(kills > 0, "nothing was killed: {:?}", report.counts);
    assert!(
        report.counts.get("sandboxed").copied().unwrap_or(0) > 0,
        "no run was sandboxed: {:?}",
        report.counts
    );
    assert!(
        report.counts.get("gated").copied().unwrap_or(0) > 0,
        "no run was verified by a gate: {:?}",
        report.counts
    );
    assert!(
        report.counts.get("nested").copied().unwrap_or(0) > 0,
        "no agent launched a nested run: {:?}",
        report.counts
    );
    assert!(
        report.counts.get("reviews-passed").copied().unwrap_or(0) > 0,
        "no step was reviewed: {:?}",
        report.counts
    );
    assert!(
        report.counts.get("on-cluster").copied().unwrap_or(0) > 0,
        "no run was a Slurm job: {:?}",
        report.counts
    );
    assert!(
        report.counts.get("integrations-checked").copied().unwrap_or(0) > 0,
        "no writers' work was integrated: {:?}",
        report.counts
    );
    assert!(
        report.counts.get("reservations-checked").copied().unwrap_or(0) > 0,
        "the reservations were not checked: {:?}",
        report.violations
    );
    assert!(
        report.violations.is_empty(),
        "seed {}: {} violation(s):\n{}",
        config.seed,
        report.violations.len(),
        report.violations.join("\n")
    );
}
