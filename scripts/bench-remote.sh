#!/usr/bin/env bash
# Remote launch benchmark: builds the release binaries the benchmark drives, then
# runs it against a loopback sshd. Needs openssh-server and openssh-client (.ci/run installs
# them). Usage: scripts/bench-remote.sh   (SUBLAUNCH_BENCH_ROUNDS=N for more rounds)
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --locked -p sublaunch -p sublaunch-shim
cargo bench --locked -p sublaunch-tests --bench remote
