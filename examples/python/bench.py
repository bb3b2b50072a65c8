"""Times warm plan-json calls through plan.py's Planner (scripts/bench-embedders.sh runs it):

    python bench.py PLANNER_WASM [CALLS] < request.json

prints {"calls": N, "microsPerCall": µs, "plan": "<the plan JSON>"}.
"""

import json
import sys
import time

from plan import Planner

calls = int(sys.argv[2]) if len(sys.argv) > 2 else 2000
request = sys.stdin.read()
planner = Planner(sys.argv[1])
_, first = planner.plan_json(request)  # instantiates once
for _ in range(calls // 10):  # warm-up
    planner.plan_json(request)
start = time.perf_counter()
for _ in range(calls):
    planner.plan_json(request)
micros = (time.perf_counter() - start) * 1e6 / calls
print(json.dumps({"calls": calls, "microsPerCall": micros, "plan": first}))
