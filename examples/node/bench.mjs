// Times warm plan-json calls through plan.mjs's loader (scripts/bench-embedders.sh runs it):
//
//   node bench.mjs PLANNER_DIR [CALLS] < request.json
//
// prints {"calls": N, "microsPerCall": µs, "plan": "<the plan JSON>"}.
import { readFileSync } from 'node:fs';
import { loadPlanner } from './plan.mjs';

const [dir, calls = '2000'] = process.argv.slice(2);
const n = Number(calls);
const request = readFileSync(0, 'utf8');
const planner = await loadPlanner(dir);
const first = await planner.planJson(request); // instantiates once
for (let i = 0; i < n / 10; i++) await planner.planJson(request); // warm-up (JIT tiers)
const start = process.hrtime.bigint();
for (let i = 0; i < n; i++) await planner.planJson(request);
const micros = Number(process.hrtime.bigint() - start) / 1000 / n;
console.log(JSON.stringify({ calls: n, microsPerCall: micros, plan: first.output }));
