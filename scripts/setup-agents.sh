#!/usr/bin/env bash
# Installs the real agent CLIs the test suite runs behind a fake model server
# (tests/suite/real_agents.rs): Claude Code, Codex and pi, plus a Node.js 22 binary (pi needs
# Node 22 or later), and the official MCP client SDK the MCP tests drive `sublaunch mcp` with
# (tests/mcp), from npm into target/agents/node_modules. Versions are pinned by
# tests/agents/package.json and tests/agents/package-lock.json.
#
# Idempotent: a stamp holding the hash of the pins skips the work when nothing changed.
# Usage: scripts/setup-agents.sh   (.ci/run calls it before `cargo test`)
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf 'setup-agents: %s\n' "$*"; }
die() { say "$*" >&2; exit 1; }
hash_of() { cat "$@" | sha256sum | cut -d' ' -f1; }

command -v node >/dev/null || die "node is not installed (Node.js 20 or later is needed to run npm)"
command -v npm >/dev/null || die "npm is not installed"

pins=tests/agents
dest=target/agents
stamp=$dest/node_modules/.sublaunch-setup
want=$(hash_of "$pins/package.json" "$pins/package-lock.json")
if [[ -f $stamp && $(cat "$stamp") == "$want" ]]; then
    say "agent CLIs are up to date ($dest)"
else
    mkdir -p "$dest"
    cp "$pins/package.json" "$pins/package-lock.json" "$dest/"
    say "npm ci in $dest"
    (cd "$dest" && npm ci --no-audit --no-fund --loglevel=error)
    echo "$want" >"$stamp"
fi

bin=$dest/node_modules/.bin
for cli in claude codex pi node; do
    [[ -x $bin/$cli ]] || die "$bin/$cli is missing after npm ci"
done
[[ -f $dest/node_modules/@modelcontextprotocol/sdk/package.json ]] || die "the MCP SDK is missing after npm ci"
say "ready: $("$bin/claude" --version), $("$bin/codex" --version), pi $(PATH="$PWD/$bin:$PATH" "$bin/pi" --version)"
