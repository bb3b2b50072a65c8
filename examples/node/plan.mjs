#!/usr/bin/env node
// Plans a sublaunch launch from Node: the planner WebAssembly component, run through jco.
//
//   node plan.mjs PLANNER_DIR < request.json
//
// reads one PlanRequest (JSON) on standard input and prints exactly what `sublaunch plan`
// prints: the LaunchPlan (exit 0) or {"error": {"code", "message"}} (exit 1).
//
// PLANNER_DIR holds the component transpiled to JavaScript by jco (once, ahead of time):
//
//   sublaunch component --out planner.wasm
//   npx jco transpile planner.wasm -o PLANNER_DIR --name planner --instantiation async
//
// The output is an ES module, so PLANNER_DIR must sit inside a package with
// {"type": "module"} (this directory has one) or hold such a package.json itself.
//
// The guest gets no host environment, no filesystem, no clocks and no real stdio: jco's
// `--instantiation async` lets us hand it our own import objects instead of preview2-shim,
// and they expose nothing but an empty environment and a stderr that fills a buffer (std
// writes panic messages there). jco has no fuel or memory cap: a planner that spins blocks
// this thread; run it in a worker_threads Worker and terminate it to get a deadline.
//
// `--batch` (used by the tests) plans one request per input line and writes one line per
// request: {"exit": 0|1, "output": "<what the single mode prints>"}.
//
// `--session REGISTRY.json` (after the other arguments) plans in one `planner-session`
// holding that model registry (a JSON array of availableModels entries): the registry
// crosses into the component once, and a request without availableModels uses it.

import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { createInterface } from 'node:readline';

/**
 * Loads the transpiled planner; `planJson(text)` then returns {exit, output}. With `registry`
 * (availableModels entries), every plan runs in one planner session holding it.
 */
export async function loadPlanner(dir, registry = null) {
  const { instantiate } = await import(pathToFileURL(join(resolve(dir), 'planner.js')).href);
  const modules = new Map(); // compiled once, even when a trap forces a new instance
  const getCoreModule = (name) => {
    if (!modules.has(name)) modules.set(name, WebAssembly.compile(readFileSync(join(dir, name))));
    return modules.get(name);
  };
  let instance = null;
  let sandbox = null;
  let session = null;

  return {
    async planJson(request) {
      if (instance === null) {
        sandbox = wasiStubs();
        instance = await instantiate(getCoreModule, sandbox.imports);
        session = registry === null ? null : new instance.planner.PlannerSession(registry.map(modelEntry));
      }
      sandbox.clearStderr();
      try {
        return ok(session === null ? instance.planner.planJson(request) : session.planJson(request));
      } catch (error) {
        if (error?.payload?.code) return failure(error.payload); // the typed plan-error
        // A trap (a panic ends in one): the instance may be broken, so use a fresh one next.
        instance = null;
        const stderr = sandbox.stderr();
        return failure({
          code: 'planner-fault',
          message: `The planner trapped: ${error?.message ?? error}.` + (stderr ? ` Guest stderr: ${stderr}` : ''),
        });
      }
    },
  };
}

const ok = (plan) => ({ exit: 0, output: plan });

/** An availableModels entry (JSON) as the WIT record `model-entry` (absent fields: none). */
const modelEntry = (entry) => ({
  provider: entry.provider,
  id: entry.id,
  name: entry.name ?? undefined,
  reasoning: entry.reasoning ?? undefined,
  thinkingLevels: entry.thinkingLevels ?? undefined,
  contextWindow: entry.contextWindow ?? undefined,
});
// `sublaunch plan` prints errors as two-space pretty JSON with the keys in this order.
const failure = ({ code, message }) => ({ exit: 1, output: JSON.stringify({ error: { code, message } }, null, 2) });

/** The only imports the component has (what Rust's std needs on wasm32-wasip2), backed by nothing. */
function wasiStubs() {
  const limit = 64 * 1024;
  let stderr = [];
  let stderrBytes = 0;

  class Error {} // wasi:io/error: never created
  class Pollable {
    block() {} // every stream is always ready
  }
  class InputStream {} // stdin: the guest imports no read method, so it cannot read
  class OutputStream {
    constructor(sink) {
      this.sink = sink;
    }
    checkWrite() {
      return BigInt(limit);
    }
    write(bytes) {
      this.sink(bytes);
    }
    blockingFlush() {}
    subscribe() {
      return new Pollable();
    }
  }
  class TerminalInput {}
  class TerminalOutput {}
  const toStderr = (bytes) => {
    if (stderrBytes < limit) stderr.push(Buffer.from(bytes.slice(0, limit - stderrBytes)));
    stderrBytes += bytes.length;
  };
  const discard = () => {};

  // jco looks the interfaces up without their @version.
  const imports = {
    'wasi:cli/environment': { getEnvironment: () => [] },
    'wasi:cli/exit': {
      exit: () => {
        throw new globalThis.Error('the planner called exit');
      },
    },
    'wasi:cli/stdin': { getStdin: () => new InputStream() },
    'wasi:cli/stdout': { getStdout: () => new OutputStream(discard) },
    'wasi:cli/stderr': { getStderr: () => new OutputStream(toStderr) },
    'wasi:cli/terminal-input': { TerminalInput },
    'wasi:cli/terminal-output': { TerminalOutput },
    'wasi:cli/terminal-stdin': { getTerminalStdin: () => undefined },
    'wasi:cli/terminal-stdout': { getTerminalStdout: () => undefined },
    'wasi:cli/terminal-stderr': { getTerminalStderr: () => undefined },
    'wasi:io/error': { Error },
    'wasi:io/poll': { Pollable },
    'wasi:io/streams': { InputStream, OutputStream },
  };
  return {
    imports,
    stderr: () => Buffer.concat(stderr).toString('utf8').trim(),
    clearStderr: () => {
      stderr = [];
      stderrBytes = 0;
    },
  };
}

async function main(argv) {
  const args = [...argv];
  let registry = null;
  const at = args.indexOf('--session');
  if (at !== -1) {
    registry = JSON.parse(readFileSync(args[at + 1] ?? '', 'utf8'));
    args.splice(at, 2);
  }
  const [dir, flag] = args;
  if (!dir || (flag && flag !== '--batch')) {
    process.stderr.write('usage: node plan.mjs PLANNER_DIR [--batch] [--session REGISTRY.json] < request.json\n');
    return 2;
  }
  const planner = await loadPlanner(dir, registry);
  if (flag === '--batch') {
    for await (const line of createInterface({ input: process.stdin, crlfDelay: Infinity })) {
      if (line.trim() === '') continue;
      process.stdout.write(JSON.stringify(await planner.planJson(line)) + '\n');
    }
    return 0;
  }
  const { exit, output } = await planner.planJson(readFileSync(0, 'utf8'));
  process.stdout.write(output + '\n');
  return exit;
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  process.exitCode = await main(process.argv.slice(2));
}
