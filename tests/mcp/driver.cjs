// Drives `sublaunch mcp` with the official MCP TypeScript SDK client, for tests/suite/mcp_cli.rs.
//
//   node driver.cjs SCRIPT.json
//
// SCRIPT: {"nodeModules": dir, "command": path, "args": [...], "env": {...}, "cwd": dir,
//          "calls": [{"tool": name, "arguments": {...}, "progress": bool, "timeoutMs": n}, ...]}
// A call may instead be {"subscribe": uri} (resources/subscribe), {"readResource": uri} (its
// text is the first content's text) or {"awaitUpdate": uri, "timeoutMs": n} (waits until a
// notifications/resources/updated for uri arrived since the last awaitUpdate); the output's
// "updated" lists every such notification's uri, in order.
// A string argument "${N.a.b}" is replaced by field a.b of the JSON answer of call N (0-based).
// Prints one JSON object: {"tools": [{name, description, inputSchema, outputSchema}], "calls": [{tool,
// isError, text, texts, json, structured, progress: [messages], protocolError}]}: `text` joins
// the text blocks, `json` is the first one parsed, `structured` the structured content (or null); a call the server answered with a protocol error,
// or not within its timeout (default 120 s), has `protocolError` and the script goes on.
const path = require("node:path");
const fs = require("node:fs");
const { createRequire } = require("node:module");

const script = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
const load = createRequire(path.join(script.nodeModules, "driver.cjs"));
const { Client } = load("@modelcontextprotocol/sdk/client/index.js");
const { StdioClientTransport } = load("@modelcontextprotocol/sdk/client/stdio.js");

function lookup(answers, reference) {
  const [index, ...fields] = reference.split(".");
  let value = answers[Number(index)];
  for (const field of fields) value = value == null ? undefined : value[field];
  if (value === undefined) throw new Error(`\${${reference}} is not in the answers`);
  return value;
}

function substitute(value, answers) {
  if (typeof value === "string") {
    const whole = value.match(/^\$\{([^}]+)\}$/);
    if (whole) return lookup(answers, whole[1]);
    return value.replace(/\$\{([^}]+)\}/g, (_, ref) => String(lookup(answers, ref)));
  }
  if (Array.isArray(value)) return value.map((v) => substitute(v, answers));
  if (value && typeof value === "object") {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, substitute(v, answers)]));
  }
  return value;
}

async function main() {
  const transport = new StdioClientTransport({
    command: script.command,
    args: script.args,
    env: script.env,
    cwd: script.cwd,
    stderr: "inherit",
  });
  const client = new Client({ name: "sublaunch-tests", version: "1.0.0" });
  await client.connect(transport);
  // The progress notifications are taken off the wire, as the server sent them: the SDK hands
  // a notification to its handler a microtask late, so one read holding the last notification
  // and the response delivers the response first, which unregisters the handler, and the
  // notification is dropped.
  let received = [];
  const updated = [];
  let unseen = 0;
  let wake = null;
  const deliver = transport.onmessage;
  transport.onmessage = (message, extra) => {
    if (message && message.method === "notifications/progress") received.push(message.params);
    if (message && message.method === "notifications/resources/updated") {
      updated.push(message.params.uri);
      unseen += 1;
      if (wake) wake();
    }
    deliver(message, extra);
  };
  const listed = await client.listTools();
  const answers = [];
  const calls = [];
  for (const call of script.calls) {
    if (call.subscribe || call.readResource || call.awaitUpdate) {
      const tool = call.subscribe ? "subscribe" : call.readResource ? "readResource" : "awaitUpdate";
      try {
        let text = "";
        if (call.subscribe) await client.subscribeResource({ uri: substitute(call.subscribe, answers) });
        if (call.readResource) {
          const read = await client.readResource({ uri: substitute(call.readResource, answers) });
          text = read.contents[0].text;
        }
        if (call.awaitUpdate) {
          const limit = Date.now() + (call.timeoutMs || 10000);
          while (unseen === 0 && Date.now() < limit) {
            await new Promise((resolve) => {
              wake = resolve;
              setTimeout(resolve, limit - Date.now());
            });
          }
          if (unseen === 0) throw new Error("no notifications/resources/updated arrived");
          unseen = 0;
        }
        let json = null;
        try {
          json = JSON.parse(text);
        } catch (_) {}
        answers.push(json);
        calls.push({ tool, isError: false, text, texts: [text], json, structured: null, progress: [], protocolError: null });
      } catch (error) {
        answers.push(null);
        calls.push({ tool, isError: true, text: "", texts: [], json: null, structured: null, progress: [], protocolError: String(error.message || error) });
      }
      continue;
    }
    const progress = [];
    received = progress;
    const timeout = call.timeoutMs || 120000;
    const options = call.progress
      ? { onprogress: () => {}, resetTimeoutOnProgress: true, timeout }
      : { timeout };
    let result;
    try {
      result = await client.callTool(
        { name: call.tool, arguments: substitute(call.arguments || {}, answers) },
        undefined,
        options,
      );
    } catch (error) {
      answers.push(null);
      calls.push({ tool: call.tool, isError: true, text: "", texts: [], json: null, structured: null, progress, protocolError: String(error.message || error) });
      continue;
    }
    const texts = (result.content || []).filter((c) => c.type === "text").map((c) => c.text);
    const text = texts.join("\n");
    let json = null;
    try {
      json = JSON.parse(texts[0]);
    } catch (_) {}
    answers.push(json);
    const structured = result.structuredContent === undefined ? null : result.structuredContent;
    calls.push({ tool: call.tool, isError: result.isError === true, text, texts, json, structured, progress, protocolError: null });
  }
  await client.close();
  process.stdout.write(
    JSON.stringify({
      tools: listed.tools.map((t) => ({ name: t.name, description: t.description, inputSchema: t.inputSchema, outputSchema: t.outputSchema })),
      calls,
      updated,
    }),
  );
}

main().catch((error) => {
  process.stderr.write(`driver: ${error.stack || error}\n`);
  process.exit(1);
});
