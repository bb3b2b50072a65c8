#!/usr/bin/env python3
"""Interleaved A/B of two sublaunch builds, whole CLI processes.

Usage: scripts/bench-ab.py [--own-roots] [--chain STEPS] BASE_DIR NEW_DIR [N]
  BASE_DIR and NEW_DIR each hold a `sublaunch` and a `sublaunch-shim` (release builds, e.g.
  copies of target/release from two commits).
  --own-roots: each build keeps its own two state roots instead of sharing two, for a change
  that leaves a mark on the root (a directory flag) which the other build would then enjoy.
  --chain STEPS: also `run --wait` a chain of STEPS shell steps, for what a run's records cost
  as its steps grow (each step adds a status entry and a result entry).

Samples alternate base-new and new-base, so that the machine's drift (this VM's fsync latency
moves by tens of percent within minutes) and any advantage of running second fall on both
alike. Prints the medians
and p90 of `run` (until committed) and `run --wait` (end to end) for each build, with the
spawn + exit of /bin/true measured in the same rounds as the floor, and the CPU time per
`run --wait` (user + system of the CLI and everything it reaps: the shim and the agent),
taken from the same interleaved samples.
"""
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

arguments = sys.argv[1:]
own_roots = "--own-roots" in arguments
arguments = [a for a in arguments if a != "--own-roots"]
chain_steps = None
if "--chain" in arguments:
    at = arguments.index("--chain")
    chain_steps = int(arguments[at + 1])
    del arguments[at : at + 2]
if len(arguments) < 2:
    sys.exit(__doc__)
builds = {"base": arguments[0], "new": arguments[1]}
samples = int(arguments[2]) if len(arguments) > 2 else 60
scratch = tempfile.mkdtemp(prefix="sublaunch-ab-")
commands = {
    "run": ["run", "--agent", "shell", "--task", "true"],
    "run --wait": ["run", "--wait", "--agent", "shell", "--task", "true"],
}
if chain_steps:
    chain_file = os.path.join(scratch, "chain.json")
    with open(chain_file, "w") as out:
        out.write('{"steps": [' + ", ".join(['{"agent": "shell", "task": "true"}'] * chain_steps) + "]}")
    commands[f"run --wait, {chain_steps}-step chain"] = ["run", "--wait", "--chain", chain_file, "--task", "x"]


def env_for(name, root):
    # The state roots are swapped between the builds sample by sample: where a directory lands
    # on the disk (its inode group) alone moved one build's system time by 20 %.
    return dict(
        os.environ,
        SUBLAUNCH_ROOT=os.path.join(scratch, f"root-{name}-{root}" if own_roots else f"root-{root}"),
        SUBLAUNCH_SHIM=os.path.join(builds[name], "sublaunch-shim"),
        SUBLAUNCH_CACHE_DIR=os.path.join(scratch, name, "cache"),
    )


cpu = {name: [0.0, 0.0, 0] for name in builds}


def run(argv, env=None, cpu_of=None):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, check=False)
    elapsed = (time.perf_counter() - start) * 1e3
    if cpu_of is not None:
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu[cpu_of][0] += after.ru_utime - before.ru_utime
        cpu[cpu_of][1] += after.ru_stime - before.ru_stime
        cpu[cpu_of][2] += 1
    return elapsed


def summary(values):
    values = sorted(values)
    return f"{statistics.median(values):.2f} ms | {values[int(len(values) * 0.9)]:.2f} ms"


try:
    envs = {(name, root): env_for(name, root) for name in builds for root in (0, 1)}
    for name, path in builds.items():
        # Warm the component cache, then let the entry age past the stamp's settle time.
        run([os.path.join(path, "sublaunch")] + commands["run"], envs[(name, 0)])
    time.sleep(2.5)
    times = {(name, label): [] for name in builds for label in commands}
    floor = []
    for label, args in commands.items():
        for name, path in builds.items():
            for root in (0, 1):
                run([os.path.join(path, "sublaunch")] + args, envs[(name, root)])
        for sample in range(samples):
            floor.append(run(["/bin/true"]))
            # The order alternates: whichever build runs second in a pair was measured up to
            # ~10 % faster (two runs of the same binary showed it), so neither may always be.
            order = list(builds.items())
            if sample % 2:
                order.reverse()
            for index, (name, path) in enumerate(order):
                env = envs[(name, (sample // 2 + index) % 2)]
                cpu_of = name if label == "run --wait" else None
                times[(name, label)].append(run([os.path.join(path, "sublaunch")] + args, env, cpu_of))
    floor_median = statistics.median(floor)
    print("| measurement | median | p90 | × floor |")
    print("|---|---|---|---|")
    print(f"| floor: spawn + exit of /bin/true | {summary(floor)} | 1.00 |")
    for (name, label), values in sorted(times.items(), key=lambda item: item[0][1]):
        print(f"| {name}: `sublaunch {label}` | {summary(values)} | {statistics.median(values) / floor_median:.2f} |")
    for name, (user, system, count) in cpu.items():
        print(f"| {name}: CPU per `run --wait` | user {user / count * 1e3:.2f} ms, system {system / count * 1e3:.2f} ms | | |")
finally:
    shutil.rmtree(scratch, ignore_errors=True)
