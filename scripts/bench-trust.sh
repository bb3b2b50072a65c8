#!/usr/bin/env bash
# What project trust costs a command, against the same command without project
# configuration measured in the same run: builds the release binaries, then runs
# tests/benches/trust.rs.
# Usage: scripts/bench-trust.sh   (SUBLAUNCH_BENCH_ROUNDS=N for more rounds)
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --locked -p sublaunch -p sublaunch-shim
cargo bench --locked -p sublaunch-tests --bench trust
