// Times warm plan-json calls through plan.mjs's loader (scripts/bench-embedders.sh runs it):
//
//   node bench.mjs PLANNER_DIR [CALLS] [ROUNDS] < request.json
//
// prints {"rounds": [µs per call of each round], "plan": "<the plan JSON>"}.
import { readFileSync } from 'node:fs';
import { loadPlanner } from './plan.mjs';

const [dir, calls = '2000', rounds = '5'] = process.argv.slice(2);
const n = Number(calls);
const request = readFileSync(0, 'utf8');
const planner = await loadPlanner(dir);
const first = await planner.planJson(request); // instantiates once
for (let i = 0; i < n / 10; i++) await planner.planJson(request); // warm-up (JIT tiers)
const results = [];
for (let round = 0; round < Number(rounds); round++) {
  const start = process.hrtime.bigint();
  for (let i = 0; i < n; i++) await planner.planJson(request);
  results.push(Number(process.hrtime.bigint() - start) / 1000 / n);
}
console.log(JSON.stringify({ rounds: results, plan: first.output }));
