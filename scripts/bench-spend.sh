#!/usr/bin/env bash
# What spend limits add to a launch: `run --wait` of a trivial shell step with three limits in
# settings against the same run without, over ledgers of 0, 10 000 and 100 000 entries this
# month, measured in the same run: builds the release binaries, then runs tests/benches/spend.rs.
# Usage: scripts/bench-spend.sh   (SUBLAUNCH_BENCH_ROUNDS=N rounds)
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --locked -p sublaunch -p sublaunch-shim
cargo bench --locked -p sublaunch-tests --bench spend
