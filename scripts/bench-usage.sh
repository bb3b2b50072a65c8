#!/usr/bin/env bash
# A `sublaunch usage` query over a ledger of N steps (default 100 000) and N/10, against the
# same command over an empty period, measured in the same run: builds the release binaries,
# then runs tests/benches/usage.rs.
# Usage: scripts/bench-usage.sh   (SUBLAUNCH_BENCH_STEPS=N, SUBLAUNCH_BENCH_ROUNDS=N rounds)
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --locked -p sublaunch -p sublaunch-shim
cargo bench --locked -p sublaunch-tests --bench usage
