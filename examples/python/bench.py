"""Times warm plan-json calls through plan.py's Planner (scripts/bench-embedders.sh runs it):

    python bench.py PLANNER_WASM [CALLS] [ROUNDS] < request.json

prints {"rounds": [µs per call of each round], "plan": "<the plan JSON>"}.
"""

import json
import sys
import time

from plan import Planner

calls = int(sys.argv[2]) if len(sys.argv) > 2 else 2000
rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 5
request = sys.stdin.read()
planner = Planner(sys.argv[1])
_, first = planner.plan_json(request)  # instantiates once
for _ in range(calls // 10):  # warm-up
    planner.plan_json(request)
results = []
for _ in range(rounds):
    start = time.perf_counter()
    for _ in range(calls):
        planner.plan_json(request)
    results.append((time.perf_counter() - start) * 1e6 / calls)
print(json.dumps({"rounds": results, "plan": first}))
