// Interop checks of Continuo against the official TypeScript MCP clients,
// which we did not write: @modelcontextprotocol/sdk (v1 API, protocol
// 2025-11-25) and @modelcontextprotocol/client (v2 API, which also speaks
// the stateless 2026-07-28 protocol).
//
// Usage:
//   node check.mjs --url URL --token TOKEN --bin CONTINUO_BIN \
//     --data-dir DIR --principal NAME --project NAME
//
// Prints "ok  NAME" or "FAIL NAME: REASON" per check, then exactly one line
// "N passed, M failed", and exits 1 if any check failed.

import { parseArgs } from "node:util";
import { Client as V1Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport as V1HTTP } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { StdioClientTransport as V1Stdio } from "@modelcontextprotocol/sdk/client/stdio.js";
import { Client as V2Client, StreamableHTTPClientTransport as V2HTTP } from "@modelcontextprotocol/client";
import { StdioClientTransport as V2Stdio } from "@modelcontextprotocol/client/stdio";

const { values: opt } = parseArgs({
  options: {
    url: { type: "string" },
    token: { type: "string" },
    bin: { type: "string" },
    "data-dir": { type: "string" },
    principal: { type: "string" },
    project: { type: "string" },
  },
});
for (const k of ["url", "token", "bin", "data-dir", "principal", "project"]) {
  if (!opt[k]) {
    console.error(`check.mjs: --${k} is required`);
    process.exit(2);
  }
}

const LEGACY = "2025-11-25";
const MODERN = "2026-07-28";
const TOOLS = [
  "list_projects", "work_on_project", "close_session", "list_sessions",
  "post_session_message", "resolve_session_message", "list_session_messages",
  "read_session_handoff",
];
const SCENARIO_TIMEOUT_MS = 20_000;
const CLOSE_TIMEOUT_MS = 5_000;

let passed = 0;
let failed = 0;
const info = { name: "continuo-interop-check", version: "0.0.1" };
const auth = { Authorization: `Bearer ${opt.token}` };
const shared = {}; // state handed from one scenario to the next

class Timeout extends Error {}

function withTimeout(promise, ms, what) {
  let timer;
  return Promise.race([
    promise,
    new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Timeout(`${what}: timed out after ${ms} ms`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

function assert(cond, msg) {
  if (!cond) throw new Error(msg);
}

function oneLine(s) {
  s = String(s).replace(/\s+/g, " ").trim();
  return s.length > 400 ? s.slice(0, 400) + "…" : s;
}

// A scenario is a list of named checks that share one client. The scenario
// has one deadline: once it has passed, every remaining check fails at once,
// so a hung server never hangs the run. Each check is reported exactly once.
async function scenario(name, body) {
  const deadline = Date.now() + SCENARIO_TIMEOUT_MS;
  let expired = false;
  const check = async (checkName, fn) => {
    const full = `${name}: ${checkName}`;
    try {
      if (expired) throw new Timeout("scenario timed out earlier");
      const left = deadline - Date.now();
      if (left <= 0) {
        expired = true;
        throw new Timeout(`scenario timed out after ${SCENARIO_TIMEOUT_MS} ms`);
      }
      const v = await withTimeout(Promise.resolve().then(fn), left, "check");
      console.log(`ok   ${full}`);
      passed++;
      return v;
    } catch (e) {
      if (e instanceof Timeout) expired = true;
      console.log(`FAIL ${full}: ${oneLine(e?.message ?? e)}`);
      failed++;
      return undefined;
    }
  };
  const closers = [];
  try {
    await body(check, (c) => closers.push(c));
  } catch (e) {
    // body() only throws on a bug in this script; still count it.
    console.log(`FAIL ${name}: ${oneLine(e?.stack ?? e)}`);
    failed++;
  } finally {
    for (const c of closers.reverse()) {
      try {
        await withTimeout(Promise.resolve().then(() => c.close()), CLOSE_TIMEOUT_MS, "close");
      } catch (e) {
        console.log(`FAIL ${name}: close: ${oneLine(e?.message ?? e)}`);
        failed++;
      }
    }
  }
}

// need returns v, or throws when an earlier check could not provide it.
function need(v, what) {
  if (v === undefined || v === null) throw new Error(`${what} unavailable (an earlier check failed)`);
  return v;
}

// ok asserts a successful tool result and returns its structuredContent.
function ok(res, tool) {
  assert(res && typeof res === "object", `${tool}: no result`);
  const sc = res.structuredContent;
  assert(!res.isError, `${tool}: isError: ${JSON.stringify(sc ?? res.content)}`);
  assert(sc && typeof sc === "object", `${tool}: no structuredContent`);
  assert(Array.isArray(res.content) && res.content.length > 0, `${tool}: no text content mirror`);
  return sc;
}

function checkToolList(tools) {
  const byName = new Map(tools.map((t) => [t.name, t]));
  const missing = TOOLS.filter((n) => !byName.has(n));
  assert(missing.length === 0, `missing tools: ${missing.join(", ")} (have ${[...byName.keys()].join(", ")})`);
  for (const n of TOOLS) {
    const t = byName.get(n);
    assert(t.inputSchema?.type === "object", `${n}: inputSchema type ${t.inputSchema?.type}`);
    assert(t.outputSchema?.type === "object", `${n}: no object outputSchema`);
    assert(t.annotations && typeof t.annotations === "object", `${n}: no annotations`);
  }
  return byName;
}

// --- v1 client, streamable HTTP (stateful, 2025-11-25) -------------------
await scenario("v1-http", async (check, closeLater) => {
  const transport = new V1HTTP(new URL(opt.url), { requestInit: { headers: auth } });
  const client = new V1Client(info, {});
  closeLater(client);
  await check("connect negotiates 2025-11-25 with a session id", async () => {
    await client.connect(transport);
    assert(transport.protocolVersion === LEGACY, `negotiated ${transport.protocolVersion}, want ${LEGACY}`);
    assert(typeof transport.sessionId === "string" && transport.sessionId.length > 0,
      `no Mcp-Session-Id assigned (sessionId=${transport.sessionId})`);
    assert(client.getServerVersion()?.name === "continuo", `serverInfo ${JSON.stringify(client.getServerVersion())}`);
    shared.v1HttpVersion = transport.protocolVersion;
  });
  await check("listTools: 8 tools with input/output schemas and annotations", async () => {
    const { tools } = await client.listTools();
    const byName = checkToolList(tools);
    assert(byName.get("list_projects").annotations.readOnlyHint === true, "list_projects readOnlyHint is not true");
    const post = byName.get("post_session_message").annotations;
    assert(post.readOnlyHint === false, `post_session_message readOnlyHint ${post.readOnlyHint}`);
  });
  await check("list_projects shows the project", async () => {
    const sc = ok(await client.callTool({ name: "list_projects", arguments: {} }), "list_projects");
    const p = (sc.projects ?? []).find((p) => p.name === opt.project);
    assert(p, `project ${opt.project} not in ${JSON.stringify(sc.projects)}`);
    assert(p.access === "write", `access ${p.access}`);
  });
  const started = await check("work_on_project starts a new session", async () => {
    const sc = ok(await client.callTool({ name: "work_on_project",
      arguments: { project: opt.project, instruction: "Interop check: record a decision" } }), "work_on_project");
    assert(typeof sc.session_id === "string" && sc.session_id, `no session_id: ${JSON.stringify(sc)}`);
    assert(sc.resumed === false, `resumed ${sc.resumed}`);
    assert(sc.lifecycle === "active", `lifecycle ${sc.lifecycle}`);
    shared.sessionId = sc.session_id;
    return sc;
  });
  const post = { name: "post_session_message", arguments: {
    session_id: started?.session_id, kind: "decision", text: "Speak MCP to every client", delivery_key: "interop-d1" } };
  const first = await check("post_session_message records a decision", async () => {
    need(started, "session");
    const sc = ok(await client.callTool(post), "post_session_message");
    assert(sc.replayed === false, `replayed ${sc.replayed} on first delivery`);
    assert(sc.message?.kind === "decision" && sc.message?.message_id, `message ${JSON.stringify(sc.message)}`);
    return sc;
  });
  await check("the same delivery_key replays", async () => {
    need(first, "first post");
    const sc = ok(await client.callTool(post), "post_session_message");
    assert(sc.replayed === true, `replayed ${sc.replayed}`);
    assert(sc.message?.message_id === first.message.message_id,
      `replay gave ${sc.message?.message_id}, first was ${first.message.message_id}`);
  });
  await check("read_session_handoff returns the brief (≤ 8192 bytes)", async () => {
    const sid = need(started, "session").session_id;
    const sc = ok(await client.callTool({ name: "read_session_handoff", arguments: { session_id: sid } }), "read_session_handoff");
    const brief = sc.handoff_brief;
    assert(brief?.session?.session_id === sid, `brief session ${JSON.stringify(brief?.session)}`);
    const size = Buffer.byteLength(JSON.stringify(brief));
    assert(size <= 8192, `brief is ${size} bytes`);
    assert(JSON.stringify(brief).includes("Speak MCP to every client"), "brief lacks the decision");
  });
  await check("prompts: continue_work lists the session, save_handoff asks for the handoff note", async () => {
    const sid = need(started, "session").session_id;
    const { prompts } = await client.listPrompts();
    assert(prompts.map((p) => p.name).sort().join() === "continue_work,save_handoff", `prompts ${JSON.stringify(prompts)}`);
    const cw = await client.getPrompt({ name: "continue_work", arguments: { project: opt.project } });
    assert(cw.messages?.[0]?.content?.text?.includes(sid), `continue_work ${JSON.stringify(cw)}`);
    const sh = await client.getPrompt({ name: "save_handoff", arguments: { session: sid } });
    assert(sh.messages?.[0]?.content?.text?.includes('tags=["handoff"]'), `save_handoff ${JSON.stringify(sh)}`);
  });
  await check("resources: the session's brief is listed and read", async () => {
    const sid = need(started, "session").session_id;
    const uri = `continuo://sessions/${sid}/handoff`;
    const { resources } = await client.listResources();
    assert(resources.some((r) => r.uri === uri), `resources ${JSON.stringify(resources)}`);
    const { contents } = await client.readResource({ uri });
    assert(contents?.[0]?.mimeType === "application/json" && JSON.parse(contents[0].text)?.session?.session_id === sid,
      `read ${JSON.stringify(contents)}`);
  });
  await check("an invalid kind is a structured invalid_input error", async () => {
    const sid = need(started, "session").session_id;
    // The v1 client validates structuredContent against the tool's
    // outputSchema even when isError is true: reaching the asserts means
    // the error body passed that validation.
    const res = await client.callTool({ name: "post_session_message",
      arguments: { session_id: sid, kind: "nope", text: "x" } });
    assert(res.isError === true, `isError ${res.isError}: ${JSON.stringify(res.structuredContent)}`);
    const err = res.structuredContent?.error;
    assert(err?.code === "invalid_input", `code ${err?.code}`);
    assert(err?.details?.field === "kind", `details ${JSON.stringify(err?.details)}`);
    assert(typeof err.message === "string" && err.message && typeof err.retry === "string", `error ${JSON.stringify(err)}`);
  });
});

// --- v1 client, stdio ----------------------------------------------------
await scenario("v1-stdio", async (check, closeLater) => {
  const transport = new V1Stdio({ command: opt.bin,
    args: ["stdio", "--data-dir", opt["data-dir"], "--principal", opt.principal], stderr: "pipe" });
  // The v1 client hands the negotiated version to the transport when the
  // transport can take it; the stdio transport has no such hook, so add one.
  transport.setProtocolVersion = (v) => { shared.v1StdioVersion = v; };
  const client = new V1Client(info, {});
  closeLater(client);
  await check("connect (2025-11-25) and listTools", async () => {
    await client.connect(transport);
    assert(shared.v1StdioVersion === LEGACY, `negotiated ${shared.v1StdioVersion}`);
    checkToolList((await client.listTools()).tools);
  });
  await check("list_sessions sees the HTTP session (same group)", async () => {
    const sid = need(shared.sessionId, "session from v1-http");
    const sc = ok(await client.callTool({ name: "list_sessions", arguments: { project: opt.project } }), "list_sessions");
    assert(sc.total_count >= 1, `total_count ${sc.total_count}`);
    assert(sc.sessions.some((s) => s.session_id === sid), `session ${sid} not listed`);
  });
});

// --- v2 client, HTTP pinned to 2026-07-28 (stateless) ---------------------
await scenario("v2-http-2026", async (check, closeLater) => {
  const transport = new V2HTTP(new URL(opt.url), { requestInit: { headers: auth } });
  const client = new V2Client(info, { versionNegotiation: { mode: { pin: MODERN } } });
  closeLater(client);
  await check("connect negotiates 2026-07-28", async () => {
    await client.connect(transport);
    const v = client.getNegotiatedProtocolVersion();
    assert(v === MODERN, `negotiated ${v}`);
    // Stateless: the server hands out no Mcp-Session-Id.
    assert(transport.sessionId === undefined, `stateless, yet session id ${transport.sessionId}`);
    shared.v2PinVersion = v;
  });
  await check("listTools", async () => {
    checkToolList((await client.listTools()).tools);
  });
  await check("list_sessions sees the session", async () => {
    const sid = need(shared.sessionId, "session from v1-http");
    const sc = ok(await client.callTool({ name: "list_sessions", arguments: { project: opt.project } }), "list_sessions");
    assert(sc.sessions.some((s) => s.session_id === sid), `session ${sid} not listed: ${JSON.stringify(sc)}`);
  });
  await check("read_session_handoff", async () => {
    const sid = need(shared.sessionId, "session from v1-http");
    const sc = ok(await client.callTool({ name: "read_session_handoff", arguments: { session_id: sid } }), "read_session_handoff");
    assert(sc.handoff_brief?.session?.session_id === sid, `brief ${JSON.stringify(sc.handoff_brief?.session)}`);
  });
  await check("resources/read and prompts/get on 2026-07-28", async () => {
    const sid = need(shared.sessionId, "session from v1-http");
    const { contents } = await client.readResource({ uri: `continuo://sessions/${sid}/handoff` });
    assert(JSON.parse(contents?.[0]?.text ?? "{}")?.session?.session_id === sid, `read ${JSON.stringify(contents)}`);
    const cw = await client.getPrompt({ name: "continue_work", arguments: { session: sid } });
    assert(cw.messages?.[0]?.content?.text?.includes(`"session_id":"${sid}"`), `continue_work ${JSON.stringify(cw)}`);
  });
  await check("an unknown session is a structured not_found error", async () => {
    // Validated by the v2 client against the outputSchema, like the v1 case.
    const res = await client.callTool({ name: "read_session_handoff", arguments: { session_id: "ses_01M8MM26XKEYJ9TMV42AY22V6A" } });
    assert(res.isError === true, `isError ${res.isError}`);
    assert(res.structuredContent?.error?.code === "not_found", `error ${JSON.stringify(res.structuredContent)}`);
  });
});

// --- v2 client, HTTP legacy mode (stateful 2025-11-25) --------------------
await scenario("v2-http-legacy", async (check, closeLater) => {
  const transport = new V2HTTP(new URL(opt.url), { requestInit: { headers: auth } });
  const client = new V2Client(info, { versionNegotiation: { mode: "legacy" } });
  closeLater(client);
  await check("connect negotiates 2025-11-25", async () => {
    await client.connect(transport);
    const v = client.getNegotiatedProtocolVersion();
    assert(v === LEGACY, `negotiated ${v}`);
    assert(typeof transport.sessionId === "string" && transport.sessionId.length > 0, "no Mcp-Session-Id assigned");
    shared.v2LegacyVersion = v;
  });
  await check("list_projects", async () => {
    const sc = ok(await client.callTool({ name: "list_projects", arguments: {} }), "list_projects");
    assert(sc.projects?.some((p) => p.name === opt.project), `projects ${JSON.stringify(sc.projects)}`);
  });
});

// --- v2 client, HTTP auto mode --------------------------------------------
// auto probes with server/discover (carrying Mcp-Protocol-Version:
// 2026-07-28), which the /mcp router sends to the stateless handler.
await scenario("v2-http-auto", async (check, closeLater) => {
  const transport = new V2HTTP(new URL(opt.url), { requestInit: { headers: auth } });
  const client = new V2Client(info, { versionNegotiation: { mode: "auto" } });
  closeLater(client);
  await check("connect negotiates 2026-07-28", async () => {
    await client.connect(transport);
    const v = client.getNegotiatedProtocolVersion();
    assert(v === MODERN, `negotiated ${v}`);
    shared.v2AutoVersion = v;
  });
});

// --- v2 client, stdio pinned to 2026-07-28 --------------------------------
// `continuo stdio` runs the go-sdk's StdioTransport, which answers the
// client's server/discover with 2026-07-28 among its supported versions, so
// the pin is asserted strictly (no fallback to another version is accepted).
await scenario("v2-stdio-2026", async (check, closeLater) => {
  const transport = new V2Stdio({ command: opt.bin,
    args: ["stdio", "--data-dir", opt["data-dir"], "--principal", opt.principal], stderr: "pipe" });
  const client = new V2Client(info, { versionNegotiation: { mode: { pin: MODERN } } });
  closeLater(client);
  await check("connect negotiates 2026-07-28", async () => {
    await client.connect(transport);
    const v = client.getNegotiatedProtocolVersion();
    assert(v === MODERN, `negotiated ${v}`);
    shared.v2StdioVersion = v;
  });
  await check("list_projects", async () => {
    const sc = ok(await client.callTool({ name: "list_projects", arguments: {} }), "list_projects");
    assert(sc.projects?.some((p) => p.name === opt.project), `projects ${JSON.stringify(sc.projects)}`);
  });
});

console.log(`negotiated: v1-http=${shared.v1HttpVersion} v1-stdio=${shared.v1StdioVersion} v2-http-pin=${shared.v2PinVersion} ` +
  `v2-http-legacy=${shared.v2LegacyVersion} v2-http-auto=${shared.v2AutoVersion} v2-stdio-pin=${shared.v2StdioVersion}`);
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed > 0 ? 1 : 0);
