#!/usr/bin/env python3
"""Do two sublaunch builds leave the same records? (issue 33: typed records, same JSON)

Usage: scripts/compare-records.py BASE_DIR NEW_DIR
  BASE_DIR and NEW_DIR each hold a `sublaunch` and a `sublaunch-shim`.

Each build runs the same work in a fresh state root: a 4-step chain (a parallel group with a
failing task, so the last step is skipped) and a single run. The status and result documents
they leave are compared path by path (every key, every array index); values that differ run by
run (ids, times, pids, paths) are compared by type only. Prints each difference and a count.
"""
import json, os, subprocess, sys, tempfile, glob
chain = {"steps": [{"agent": "shell", "task": "echo one"}, {"parallel": [{"agent": "shell", "task": "echo a"}, {"agent": "shell", "task": "exit 3"}]}, {"agent": "shell", "task": "echo last"}]}
def run(build, tmp):
    root = os.path.join(tmp, "root"); os.makedirs(root)
    cf = os.path.join(tmp, "chain.json"); json.dump(chain, open(cf, "w"))
    env = dict(os.environ, SUBLAUNCH_ROOT=root, SUBLAUNCH_SHIM=os.path.join(build, "sublaunch-shim"), SUBLAUNCH_CACHE_DIR=os.path.join(tmp, "cache"))
    subprocess.run([os.path.join(build, "sublaunch"), "run", "--wait", "--chain", cf, "--task", "x"], env=env, capture_output=True)
    subprocess.run([os.path.join(build, "sublaunch"), "run", "--wait", "--agent", "shell", "--task", "echo hi"], env=env, capture_output=True)
    docs = {}
    for kind, pattern in [("status", "runs/*/status.json"), ("result", "results/*.json")]:
        for i, p in enumerate(sorted(glob.glob(os.path.join(root, pattern)), key=lambda p: json.load(open(p)).get("mode", "") + str(len(json.load(open(p)).get("steps", json.load(open(p)).get("results", [])))))):
            docs[f"{kind}{i}"] = json.load(open(p))
    return docs
def shape(v, path=""):
    out = {}
    if isinstance(v, dict):
        for k, x in v.items(): out.update(shape(x, f"{path}.{k}"))
    elif isinstance(v, list):
        for i, x in enumerate(v): out.update(shape(x, f"{path}[{i}]"))
    else:
        out[path] = type(v).__name__ if not isinstance(v, (str, bool)) or path.endswith(("Id", "pid", "At", "Identity", "Scope", "asyncDir", "cwd", "outputFile", "file", "summary", "processInstanceId")) else repr(v)
    return out
base = run(sys.argv[1], tempfile.mkdtemp()); new = run(sys.argv[2], tempfile.mkdtemp())
diffs = 0
for name in sorted(set(base) | set(new)):
    a, b = shape(base.get(name, {})), shape(new.get(name, {}))
    for k in sorted(set(a) | set(b)):
        if a.get(k) != b.get(k) and not any(s in k for s in ("Id", "At", "Ms", "pid", "Pid", "runId", "id", "async", "timestamp", "durationMs", "processGroupId", "Identity", "file", "summary", "cwd", "Scope", "asyncDir")):
            diffs += 1; print(name, k, "base:", a.get(k), "new:", b.get(k))
print("documents:", sorted(base), "differences:", diffs)
allkeys = set()
for d in new.values(): allkeys |= set(shape(d))
print("paths compared:", len(allkeys))
for probe in ["stepIndex", "taskIndex", "adapter", "externalProcess", "parallelGroups", "launchHostPid", "skipped", "exitCode"]:
    print(probe, sum(probe in k for k in allkeys))
