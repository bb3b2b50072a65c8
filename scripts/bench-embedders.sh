#!/usr/bin/env bash
# Measures the per-call latency of a warm `plan-json` call on the same request in Rust (the
# sublaunch host library's `Planner::plan_json`: one engine, a fresh Store per call), Node
# (jco, instantiated once) and Python (wasmtime-py, instantiated once), and prints a Markdown
# table with each runtime's ratio to the Rust figure.
#
# Usage: scripts/bench-embedders.sh [REQUEST.json] [CALLS]
#        (defaults: examples/plan/chain.json, 2000 calls after a 10 % warm-up)
#
# It runs the ignored `benchmark_warm_plan_calls` test of tests/suite/embedders.rs in the release
# profile, so the Rust row is the host library as it ships.
set -euo pipefail
cd "$(dirname "$0")/.."

request=$(realpath "${1:-examples/plan/chain.json}")
calls=${2:-2000}

bash scripts/setup-embedders.sh >/dev/null
mkdir -p target/embedders
# The benchmark needs the workspace's binaries (`sublaunch component` writes the component);
# both commands select the whole workspace, so they share one build.
cargo test --release --workspace --locked --no-run -q 2>/dev/null || cargo test --release --workspace --locked --no-run
SUBLAUNCH_BENCH_REQUEST=$request SUBLAUNCH_BENCH_CALLS=$calls \
    cargo test --release --workspace --locked -q --test suite -- \
    --ignored --exact embedders::benchmark_warm_plan_calls --nocapture 2>&1 | tee target/embedders/bench.log |
    awk '/^Warm /{p=1} p&&!/^(Warm |\||$)/{p=0} p' || { cat target/embedders/bench.log >&2; exit 1; }
