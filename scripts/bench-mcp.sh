#!/usr/bin/env bash
# `sublaunch mcp`'s `tools/call run` round trip against `sublaunch run` as a process:
# builds the release binaries the benchmark drives, then runs tests/benches/mcp.rs.
# Usage: scripts/bench-mcp.sh   (SUBLAUNCH_BENCH_ROUNDS=N for more rounds)
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --locked -p sublaunch -p sublaunch-shim
cargo bench --locked -p sublaunch-tests --bench mcp
