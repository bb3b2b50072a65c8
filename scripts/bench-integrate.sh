#!/usr/bin/env bash
# What `sublaunch integrate` costs for 2, 8 and 32 writers, with and without a gate, against
# the same branches merged by hand with git in the same run: builds the release binaries,
# then runs tests/benches/integrate.rs.
# Usage: scripts/bench-integrate.sh   (SUBLAUNCH_BENCH_ROUNDS=N for more samples per case)
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --locked -p sublaunch -p sublaunch-shim
cargo bench --locked -p sublaunch-tests --bench integrate
