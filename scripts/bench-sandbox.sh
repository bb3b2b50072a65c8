#!/usr/bin/env bash
# What the OS sandbox adds to a launch and to `run --wait`, against the same runs unsandboxed
# measured in the same run: builds the release binaries, then runs tests/benches/sandbox.rs.
# Usage: scripts/bench-sandbox.sh   (SUBLAUNCH_BENCH_ROUNDS=N for more rounds)
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --locked -p sublaunch -p sublaunch-shim
cargo bench --locked -p sublaunch-tests --bench sandbox
