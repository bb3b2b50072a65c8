#!/usr/bin/env bash
# What finding the ceilings of the parent runs costs a launch, at the top level and one and two
# runs deep, measured in the same run: builds the release binaries, then runs
# tests/benches/nested.rs.
# Usage: scripts/bench-nested.sh   (SUBLAUNCH_BENCH_ROUNDS=N for more launches per depth)
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --locked -p sublaunch -p sublaunch-shim
cargo bench --locked -p sublaunch-tests --bench nested
