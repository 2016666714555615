// A scripted ACP agent for Continuo's tests, built on the official
// TypeScript SDK (@agentclientprotocol/sdk, protocol v1, newline-delimited
// JSON-RPC on stdin and stdout). It calls no model: what it does in a turn
// is chosen by the prompt's first word, else by ACP_SCRIPT, else "stream".
//
//   stream      message chunks "Hello", ", ", "world", "!" with a thought,
//               a tool call and its update and a plan between; end_turn
//   slow        "pid <pid>", then a chunk every 20 ms (it has started a
//               child that sleeps, in its process group) until
//               session/cancel; then stopReason cancelled
//               (it says "stopping: cancelled" first)
//   stubborn    like slow, but it ignores session/cancel
//   cancelask   like slow; once cancelled it asks permission for a read,
//               and says what it was told ("read: <optionId>")
//   child       "pid <pid>" (it has started a child that sleeps, in its
//               process group), then end_turn
//   permission  asks permission for a tool call of kind read, then one of
//               kind edit, and says what it was told: "read: <optionId>",
//               "edit: <optionId>" ("cancelled" for that outcome)
//   noreject    asks for an edit, offering only allow options
//   crash       a chunk, then exits with status 3 mid-prompt
//   refuse, maxtokens, maxturns, cancelled
//               end with that stop reason (cancelled without being asked)
//   error       answers the prompt with a JSON-RPC error whose message and
//               data hold ACP_SECRET (or "agent-secret")
//   echo-env [NAME]
//               prints every environment variable (names and values) to
//               stderr, and sends "env <names, sorted, comma-separated>"
//               and, given NAME, "NAME=<value>" as chunks
//   mcp         reports the MCP servers session/new gave it, one chunk
//               each: "mcp <type> <name> <url> with-authorization|without-authorization"
//               (never a header's value), or "mcp none"
//   caps        reports what the client offered and where it runs:
//               "fs.read=<bool> fs.write=<bool> terminal=<bool>",
//               "cwd <process cwd>", "session-cwd <session/new cwd>"
//
// At initialize it advertises mcpCapabilities.http only when
// ACP_MCP_HTTP=1. ACP_INIT=error answers initialize with an error and
// ACP_INIT=exit exits with status 4 before answering it.

import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import { agent, methods, ndJsonStream, PROTOCOL_VERSION, RequestError } from "@agentclientprotocol/sdk";

const sessions = new Map(); // sessionId → { cwd, mcpServers, cancelled, onCancel }
let clientCaps = {};
let nextSession = 1;

const wait = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function chunk(client, sessionId, text) {
  return client.notify(methods.client.session.update, {
    sessionId,
    update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text } },
  });
}

function update(client, sessionId, u) {
  return client.notify(methods.client.session.update, { sessionId, update: u });
}

async function ask(client, sessionId, toolCall, options) {
  await update(client, sessionId, { sessionUpdate: "tool_call", status: "pending", ...toolCall });
  const res = await client.request(methods.client.session.requestPermission, { sessionId, toolCall, options });
  const told = res.outcome.outcome === "selected" ? res.outcome.optionId : res.outcome.outcome;
  const ok = told.startsWith("allow");
  await update(client, sessionId, {
    sessionUpdate: "tool_call_update",
    toolCallId: toolCall.toolCallId,
    status: ok ? "completed" : "failed",
  });
  return told;
}

const allOptions = [
  { optionId: "allow-once", name: "Allow", kind: "allow_once" },
  { optionId: "allow-always", name: "Always allow", kind: "allow_always" },
  { optionId: "reject-once", name: "Reject", kind: "reject_once" },
  { optionId: "reject-always", name: "Always reject", kind: "reject_always" },
];

// sleeper starts a child in the agent's process group that holds its
// stdout, which only a stop of the whole group ends, and says the pid.
async function sleeper(client, sessionId) {
  spawn("sleep", ["300"], { stdio: ["ignore", "inherit", "ignore"] });
  await chunk(client, sessionId, `pid ${process.pid}\n`);
}

// ticks sends a chunk every 20 ms until the session is cancelled (or, when
// stubborn, for ever), then ends the turn as cancelled.
async function ticks(client, sessionId, s, stubborn) {
  await sleeper(client, sessionId);
  for (let i = 0; stubborn || !s.cancelled; i++) {
    await chunk(client, sessionId, `tick ${i}\n`);
    await wait(20);
  }
  await chunk(client, sessionId, "stopping: cancelled\n");
  return { stopReason: "cancelled" };
}

const scripts = {
  async stream(client, sessionId) {
    await chunk(client, sessionId, "Hello");
    await update(client, sessionId, {
      sessionUpdate: "agent_thought_chunk",
      content: { type: "text", text: "thinking about the greeting" },
    });
    await chunk(client, sessionId, ", ");
    await update(client, sessionId, {
      sessionUpdate: "tool_call",
      toolCallId: "call-1",
      title: "List\nfiles",
      kind: "search",
      status: "in_progress",
    });
    await update(client, sessionId, { sessionUpdate: "tool_call_update", toolCallId: "call-1", status: "completed" });
    await update(client, sessionId, {
      sessionUpdate: "plan",
      entries: [
        { content: "greet", priority: "high", status: "completed" },
        { content: "wave", priority: "low", status: "in_progress" },
        { content: "leave", priority: "low", status: "pending" },
      ],
    });
    await update(client, sessionId, {
      sessionUpdate: "available_commands_update",
      availableCommands: [{ name: "help", description: "ignored by the client" }],
    });
    await chunk(client, sessionId, "world");
    await chunk(client, sessionId, "!");
    return { stopReason: "end_turn" };
  },
  slow: (client, sessionId, s) => ticks(client, sessionId, s, false),
  stubborn: (client, sessionId, s) => ticks(client, sessionId, s, true),
  async cancelask(client, sessionId, s) {
    await sleeper(client, sessionId);
    for (let i = 0; !s.cancelled; i++) {
      await chunk(client, sessionId, `tick ${i}\n`);
      await wait(20);
    }
    const read = await ask(client, sessionId, { toolCallId: "late-read", title: "Read late", kind: "read" }, allOptions);
    await chunk(client, sessionId, `read: ${read}\n`);
    return { stopReason: "cancelled" };
  },
  async child(client, sessionId) {
    await sleeper(client, sessionId);
    return { stopReason: "end_turn" };
  },
  async permission(client, sessionId) {
    const read = await ask(
      client,
      sessionId,
      { toolCallId: "perm-read", title: "Read README.md", kind: "read" },
      allOptions,
    );
    await chunk(client, sessionId, `read: ${read}\n`);
    const edit = await ask(
      client,
      sessionId,
      { toolCallId: "perm-edit", title: "Edit main.go", kind: "edit" },
      allOptions,
    );
    await chunk(client, sessionId, `edit: ${edit}\n`);
    return { stopReason: "end_turn" };
  },
  async noreject(client, sessionId) {
    const edit = await ask(
      client,
      sessionId,
      { toolCallId: "perm-edit", title: "Edit main.go", kind: "edit" },
      allOptions.filter((o) => o.kind.startsWith("allow")),
    );
    await chunk(client, sessionId, `edit: ${edit}\n`);
    return { stopReason: "end_turn" };
  },
  async crash(client, sessionId) {
    await chunk(client, sessionId, "about to crash\n");
    process.exit(3);
  },
  refuse: async () => ({ stopReason: "refusal" }),
  maxtokens: async () => ({ stopReason: "max_tokens" }),
  maxturns: async () => ({ stopReason: "max_turn_requests" }),
  cancelled: async () => ({ stopReason: "cancelled" }),
  async error() {
    const secret = process.env.ACP_SECRET ?? "agent-secret";
    throw new RequestError(-32603, `internal failure near ${secret}`, { secret });
  },
  async "echo-env"(client, sessionId, s, args) {
    const names = Object.keys(process.env).sort();
    for (const n of names) console.error(`${n}=${process.env[n]}`);
    await chunk(client, sessionId, `env ${names.join(",")}\n`);
    if (args[0]) await chunk(client, sessionId, `${args[0]}=${process.env[args[0]] ?? "(unset)"}\n`);
    return { stopReason: "end_turn" };
  },
  async mcp(client, sessionId, s) {
    if (s.mcpServers.length === 0) await chunk(client, sessionId, "mcp none\n");
    for (const m of s.mcpServers) {
      const auth = (m.headers ?? []).some((h) => h.name.toLowerCase() === "authorization" && /^Bearer \S+$/.test(h.value));
      await chunk(client, sessionId, `mcp ${m.type ?? "stdio"} ${m.name} ${m.url ?? m.command} ${auth ? "with-authorization" : "without-authorization"}\n`);
    }
    return { stopReason: "end_turn" };
  },
  async caps(client, sessionId, s) {
    const fs = clientCaps.fs ?? {};
    await chunk(client, sessionId, `fs.read=${!!fs.readTextFile} fs.write=${!!fs.writeTextFile} terminal=${!!clientCaps.terminal}\n`);
    await chunk(client, sessionId, `cwd ${process.cwd()}\n`);
    await chunk(client, sessionId, `session-cwd ${s.cwd}\n`);
    return { stopReason: "end_turn" };
  },
};

if (process.env.ACP_INIT === "exit") {
  // Exit before the client's initialize is read.
  process.exit(4);
}

agent({ name: "continuo-test-agent" })
  .onRequest(methods.agent.initialize, ({ params }) => {
    if (process.env.ACP_INIT === "error") {
      throw new RequestError(-32603, `cannot start: ${process.env.ACP_SECRET ?? "agent-secret"}`);
    }
    clientCaps = params.clientCapabilities ?? {};
    return {
      protocolVersion: PROTOCOL_VERSION,
      agentCapabilities: {
        loadSession: false,
        mcpCapabilities: { http: process.env.ACP_MCP_HTTP === "1", sse: false },
      },
      authMethods: [],
    };
  })
  .onRequest(methods.agent.session.new, ({ params }) => {
    const sessionId = `session-${nextSession++}`;
    sessions.set(sessionId, { cwd: params.cwd, mcpServers: params.mcpServers ?? [], cancelled: false });
    return { sessionId };
  })
  .onNotification(methods.agent.session.cancel, ({ params }) => {
    const s = sessions.get(params.sessionId);
    if (s) s.cancelled = true;
  })
  .onRequest(methods.agent.session.prompt, ({ params, client }) => {
    const s = sessions.get(params.sessionId);
    if (!s) throw RequestError.sessionNotFound(params.sessionId);
    const text = params.prompt
      .filter((b) => b.type === "text")
      .map((b) => b.text)
      .join(" ");
    let [word, ...args] = text.trim().split(/\s+/);
    if (!Object.hasOwn(scripts, word)) {
      word = process.env.ACP_SCRIPT ?? "stream";
      args = [];
    }
    return scripts[word](client, params.sessionId, s, args);
  })
  .connect(ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin)));
