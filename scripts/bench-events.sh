#!/usr/bin/env bash
# What the event stream and the outbox add to `sublaunch run --wait` (issue 40): the syncs one
# run makes on them (under strace), the cost of an append and of a recorded end as the log
# grows to 100 000 events against one synced line measured in the same run, and `run --wait`
# on an empty and a long log: builds the release binaries, then runs tests/benches/events.rs.
# Usage: scripts/bench-events.sh   (SUBLAUNCH_BENCH_ROUNDS=N rounds)
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --locked -p sublaunch -p sublaunch-shim
cargo bench --locked -p sublaunch-tests --bench events
