#!/usr/bin/env bash
# What a managed worktree adds to a launch, against `git worktree add` and a plain launch
# measured in the same run: builds the release binaries, then runs tests/benches/worktrees.rs.
# Usage: scripts/bench-worktrees.sh   (SUBLAUNCH_BENCH_ROUNDS=N for more rounds)
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --locked -p sublaunch -p sublaunch-shim
cargo bench --locked -p sublaunch-tests --bench worktrees
