#!/usr/bin/env bash
# What a gate adds to a run, outside git and in repositories of 100 and 2 000 files, and what
# a checked contract adds, measured against a bare run in the same run: builds the release
# binaries, then runs tests/benches/acceptance.rs.
# Usage: scripts/bench-acceptance.sh   (SUBLAUNCH_BENCH_ROUNDS=N for more runs per case)
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --locked -p sublaunch -p sublaunch-shim
cargo bench --locked -p sublaunch-tests --bench acceptance
