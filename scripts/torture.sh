#!/usr/bin/env bash
# The torture run for long sessions: the suite's chaos test with larger bounds. Concurrent
# launchers (single runs, chains, parallel groups, revivals), list/status/wait loops, random
# stops and SIGKILLs of hosts, shims, agents and listers; then every invariant is checked and
# the counts are printed. Exit 0 only with zero violations.
# Usage: scripts/torture.sh [--runs N] [--seconds S] [--seed SEED] [--launchers N] [--observers N]
set -euo pipefail
cd "$(dirname "$0")/.."
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) export SUBLAUNCH_TORTURE_RUNS="$2"; shift 2 ;;
    --seconds) export SUBLAUNCH_TORTURE_SECONDS="$2"; shift 2 ;;
    --seed) export SUBLAUNCH_TORTURE_SEED="$2"; shift 2 ;;
    --launchers) export SUBLAUNCH_TORTURE_LAUNCHERS="$2"; shift 2 ;;
    --observers) export SUBLAUNCH_TORTURE_OBSERVERS="$2"; shift 2 ;;
    *) echo "usage: $0 [--runs N] [--seconds S] [--seed SEED] [--launchers N] [--observers N]" >&2; exit 2 ;;
  esac
done
# The suite drives the binaries built with the fault hooks (as `cargo test --workspace` does).
cargo test --locked --workspace --no-run
exec cargo test --locked -p sublaunch-tests --test suite chaos::torture -- --nocapture --exact \
  chaos::torture_no_run_stuck_no_wrong_proof_no_orphaned_agent
