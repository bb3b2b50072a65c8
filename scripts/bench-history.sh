#!/usr/bin/env bash
# Every command on a state root of N ended runs (clones of one real trivial run) plus a few
# active ones, against the same commands on a root of one ended run, measured in the same
# run: builds the release binaries, then runs tests/benches/history.rs.
# Usage: scripts/bench-history.sh   (SUBLAUNCH_BENCH_RUNS=N ended runs, default 1000, 100000
# for the record; SUBLAUNCH_BENCH_ROUNDS=N rounds, default 10)
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --locked -p sublaunch -p sublaunch-shim
cargo bench --locked -p sublaunch-tests --bench history
