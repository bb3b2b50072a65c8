#!/usr/bin/env bash
# What budgets and the checkpoint add to a run of the real pi and Claude Code: builds the
# release binaries, installs the pinned CLIs when needed (scripts/setup-agents.sh), then runs
# tests/benches/limits.rs against the fake model server of the test support crate.
# Usage: scripts/bench-limits.sh   (SUBLAUNCH_BENCH_ROUNDS=N for more rounds)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup-agents.sh
cargo build --release --locked -p sublaunch -p sublaunch-shim
cargo bench --locked -p sublaunch-tests --bench limits
