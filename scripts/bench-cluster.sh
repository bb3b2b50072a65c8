#!/usr/bin/env bash
# What placing runs on Slurm costs against bare Slurm commands on the same single-node test
# cluster: submissions per second, `list` with 500 queued runs, and the time from a job's end
# to the run's end. Builds the release binaries, then runs tests/benches/cluster.rs.
# Usage: scripts/bench-cluster.sh   (SUBLAUNCH_BENCH_ROUNDS=N for more samples of the timings)
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --locked -p sublaunch -p sublaunch-shim
cargo bench --locked -p sublaunch-tests --bench cluster
