// Chat Swarm workers on the official TypeScript MCP clients, which we did
// not write: the v1 SDK at 2025-11-25, whose MCP session is its carrier,
// and the v2 client pinned to the stateless 2026-07-28, whose carrier is a
// carrier_key it makes. Each joins the swarm and loops chat_swarm_next →
// ack → submit (a result derived from the prompt) until the owner closes
// the swarm.
//
// Usage:
//   node swarm-worker.mjs --url URL --token TOKEN --swarm SWARM_ID --invite INVITE
//
// Prints "ok   NAME" or "FAIL NAME: REASON" per task, then exactly one line
// "N passed, M failed", and exits 1 if any check failed.

import { parseArgs } from "node:util";
import { randomBytes } from "node:crypto";
import { Client as V1Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport as V1HTTP } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { Client as V2Client, StreamableHTTPClientTransport as V2HTTP } from "@modelcontextprotocol/client";

const { values: opt } = parseArgs({
  options: { url: { type: "string" }, token: { type: "string" }, swarm: { type: "string" }, invite: { type: "string" } },
});
const init = { requestInit: { headers: { Authorization: `Bearer ${opt.token}` } } };
const info = { name: "continuo-interop-swarm", version: "0.0.1" };
let passed = 0;
let failed = 0;

function report(name, err) {
  if (err === undefined) {
    passed++;
    console.log(`ok   ${name}`);
  } else {
    failed++;
    console.log(`FAIL ${name}: ${String(err?.message ?? err).replace(/\s+/g, " ").slice(0, 400)}`);
  }
}

async function tool(client, name, args) {
  const res = await client.callTool({ name, arguments: args });
  if (res.isError) throw new Error(`${name}: ${JSON.stringify(res.structuredContent)}`);
  return res.structuredContent;
}

// work joins as label (with carrier_key key, on the stateless protocol) and
// works until the swarm closes; a task delivered twice fails it.
async function work(label, client, key) {
  const carrier = key ? { carrier_key: key } : {};
  const seen = new Set();
  try {
    const { worker } = await tool(client, "chat_swarm_join", { swarm_id: opt.swarm, invite: opt.invite, label, ...carrier });
    const me = { worker_id: worker.worker_id, epoch: worker.epoch, ...carrier };
    for (;;) {
      const next = await tool(client, "chat_swarm_next", { ...me, wait_secs: 25 });
      if (next.state === "closed") break;
      if (next.state !== "task") continue;
      const { task_id, task_key, prompt } = next.task;
      if (seen.has(task_id)) throw new Error(`task ${task_id} delivered twice`);
      seen.add(task_id);
      await tool(client, "chat_swarm_ack", { ...me, task_id });
      await tool(client, "chat_swarm_submit", { ...me, task_id, result: `done: ${prompt} by ${worker.worker_id}` });
      report(`${label}: ${task_key}`);
    }
    report(`${label}: the swarm closed after ${seen.size} tasks`);
  } catch (e) {
    report(label, e);
  }
}

const v1 = new V1Client(info, {});
await v1.connect(new V1HTTP(new URL(opt.url), init));
const v2 = new V2Client(info, { versionNegotiation: { mode: { pin: "2026-07-28" } } });
await v2.connect(new V2HTTP(new URL(opt.url), init));
await Promise.all([work("ts-v1", v1), work("ts-v2", v2, randomBytes(24).toString("base64url"))]);
await Promise.all([v1.close(), v2.close()]);
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
