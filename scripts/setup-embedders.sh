#!/usr/bin/env bash
# Installs what the embedder examples (examples/node, examples/python) and their tests
# (tests/suite/embedders.rs) need: jco and preview2-shim from npm into examples/node/node_modules,
# and wasmtime-py from PyPI into a venv at target/embedders/venv (or `pip install --user`
# when venv is unavailable). Versions are pinned by examples/node/package-lock.json and
# examples/python/requirements.txt.
#
# Idempotent: a stamp holding the hash of the pins skips the work when nothing changed.
# Usage: scripts/setup-embedders.sh   (.ci/run calls it before `cargo test`)
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf 'setup-embedders: %s\n' "$*"; }
die() { say "$*" >&2; exit 1; }
hash_of() { cat "$@" | sha256sum | cut -d' ' -f1; }

# --- Node: jco (transpiles the component) and preview2-shim -----------------------------
command -v node >/dev/null || die "node is not installed (Node.js 20 or later is needed)"
command -v npm >/dev/null || die "npm is not installed"
node_major=$(node -p 'process.versions.node.split(".")[0]')
((node_major >= 20)) || die "Node.js $(node --version) is too old: 20 or later is needed"

node_dir=examples/node
node_stamp=$node_dir/node_modules/.sublaunch-setup
node_want=$(hash_of "$node_dir/package.json" "$node_dir/package-lock.json")
if [[ -f $node_stamp && $(cat "$node_stamp") == "$node_want" ]]; then
    say "node packages are up to date"
else
    say "npm ci in $node_dir"
    (cd "$node_dir" && npm ci --no-audit --no-fund --loglevel=error)
    echo "$node_want" >"$node_stamp"
fi

# --- Python: wasmtime-py -------------------------------------------------------------------
command -v python3 >/dev/null || die "python3 is not installed (Python 3.9 or later is needed)"
requirements=examples/python/requirements.txt
venv=target/embedders/venv
py_want=$(hash_of "$requirements")
if [[ -x $venv/bin/python && -f $venv/.sublaunch-setup && $(cat "$venv/.sublaunch-setup") == "$py_want" ]]; then
    say "python packages are up to date ($venv)"
elif [[ -x $venv/bin/python ]] || python3 -m venv "$venv" 2>/dev/null; then
    say "pip install -r $requirements into $venv"
    "$venv/bin/python" -m pip install --disable-pip-version-check --quiet -r "$requirements"
    echo "$py_want" >"$venv/.sublaunch-setup"
else
    rm -rf "$venv"
    user_stamp=target/embedders/user-site.sublaunch-setup
    if [[ -f $user_stamp && $(cat "$user_stamp") == "$py_want" ]] && python3 -c 'import wasmtime' 2>/dev/null; then
        say "python packages are up to date (user site)"
    else
        say "venv is unavailable: pip install --user -r $requirements"
        python3 -m pip install --disable-pip-version-check --quiet --user -r "$requirements"
        mkdir -p target/embedders
        echo "$py_want" >"$user_stamp"
    fi
fi
say "ready"
