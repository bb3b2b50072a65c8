#!/usr/bin/env bash
# What sublaunch adds to a run of the real agent CLIs: builds the release binaries the
# benchmark drives, installs the pinned CLIs when needed (scripts/setup-agents.sh), then runs
# tests/benches/real_agents.rs against the fake model server of the test support crate.
# Usage: scripts/bench-real-agents.sh   (SUBLAUNCH_BENCH_ROUNDS=N for more rounds)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup-agents.sh
cargo build --release --locked -p sublaunch -p sublaunch-shim
cargo bench --locked -p sublaunch-tests --bench real_agents
