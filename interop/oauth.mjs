// The OAuth 2.1 flow of the official TypeScript MCP SDK
// (@modelcontextprotocol/sdk, v1 API) against a real `continuo serve`:
// an in-memory OAuthClientProvider, StreamableHTTPClientTransport with
// authProvider, and this script playing the person at the browser over
// plain HTTP with a cookie jar (sign-in form, consent page).
//
// Usage:
//   node oauth.mjs --url MCP_URL --alice-code CTO_LNK --bob-code CTO_LNK --project NAME
//
// alice and bob are principals of one group that may write the project.
// Prints "ok   NAME" or "FAIL NAME: REASON" per check, then exactly one
// line "N passed, M failed", and exits 1 if any check failed.

import { parseArgs } from "node:util";
import { randomUUID } from "node:crypto";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { auth, UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";

const { values: opt } = parseArgs({
  options: {
    url: { type: "string" },
    "alice-code": { type: "string" },
    "bob-code": { type: "string" },
    project: { type: "string" },
  },
});
for (const k of ["url", "alice-code", "bob-code", "project"]) {
  if (!opt[k]) {
    console.error(`oauth.mjs: --${k} is required`);
    process.exit(2);
  }
}
const mcpURL = new URL(opt.url);
const issuer = mcpURL.origin; // a loopback server is its own issuer
const RUN_TIMEOUT_MS = 60_000;
const info = { name: "continuo-oauth-interop", version: "0.0.1" };

let passed = 0;
let failed = 0;
const deadline = Date.now() + RUN_TIMEOUT_MS;
const closers = [];

function assert(cond, msg) {
  if (!cond) throw new Error(msg);
}

function oneLine(s) {
  s = String(s).replace(/\s+/g, " ").trim();
  return s.length > 400 ? s.slice(0, 400) + "…" : s;
}

// check runs one named step. The steps build on each other: once one
// fails, the ones that need its result fail with "unavailable" (need), and
// once the run's deadline has passed every remaining step fails at once.
async function check(name, fn) {
  try {
    const left = deadline - Date.now();
    if (left <= 0) throw new Error(`the run's ${RUN_TIMEOUT_MS} ms have passed`);
    let timer;
    const v = await Promise.race([
      Promise.resolve().then(fn),
      new Promise((_, reject) => { timer = setTimeout(() => reject(new Error(`timed out after ${left} ms`)), left); }),
    ]).finally(() => clearTimeout(timer));
    console.log(`ok   ${name}`);
    passed++;
    return v ?? true;
  } catch (e) {
    console.log(`FAIL ${name}: ${oneLine(e?.message ?? e)}`);
    failed++;
    return undefined;
  }
}

function need(v, what) {
  if (v === undefined || v === null) throw new Error(`${what} unavailable (an earlier check failed)`);
  return v;
}

// MemoryProvider is an OAuthClientProvider that keeps everything in
// memory: a public client registered dynamically (no clientMetadataUrl),
// with a loopback redirect URI nothing listens on — the browser's last
// redirect is read, not followed.
class MemoryProvider {
  constructor(name) {
    this.name = name;
    this.redirect = "http://127.0.0.1:8976/callback";
    this.invalidated = [];
    this.registrations = 0;
  }
  get redirectUrl() { return this.redirect; }
  get clientMetadata() {
    return { client_name: this.name, redirect_uris: [this.redirect], grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"], token_endpoint_auth_method: "none" };
  }
  state() { this.lastState = randomUUID(); return this.lastState; }
  clientInformation() { return this.client; }
  saveClientInformation(c) {
    if (c.client_id !== this.client?.client_id) this.registrations++;
    this.client = c;
  }
  tokens() { return this.tok; }
  saveTokens(t) { this.tok = t; }
  redirectToAuthorization(u) { this.authUrl = u; }
  saveCodeVerifier(v) { this.verifier = v; }
  codeVerifier() { return need(this.verifier, "code verifier"); }
  invalidateCredentials(scope) {
    this.invalidated.push(scope);
    if (scope === "all" || scope === "tokens") this.tok = undefined;
    if (scope === "all" || scope === "client") this.client = undefined;
    if (scope === "all" || scope === "verifier") this.verifier = undefined;
  }
}

// Browser is a person's browser on the issuer's site: a cookie jar, and
// redirects handed back to be looked at.
class Browser {
  constructor() { this.jar = new Map(); }
  async request(target, init = {}) {
    const u = new URL(target, issuer);
    const headers = new Headers(init.headers);
    if (u.origin === issuer && this.jar.size > 0) {
      headers.set("cookie", [...this.jar].map(([k, v]) => `${k}=${v}`).join("; "));
    }
    const res = await fetch(u, { ...init, headers, redirect: "manual" });
    if (u.origin === issuer) {
      for (const c of res.headers.getSetCookie()) {
        const [pair, ...attrs] = c.split(";");
        const i = pair.indexOf("=");
        const name = pair.slice(0, i).trim();
        const value = pair.slice(i + 1).trim();
        const age = attrs.map((a) => a.trim().toLowerCase()).find((a) => a.startsWith("max-age="));
        if (value === "" || (age && Number(age.slice(8)) <= 0)) this.jar.delete(name);
        else this.jar.set(name, value);
      }
    }
    return { status: res.status, location: res.headers.get("location"), body: await res.text() };
  }
  get(target) { return this.request(target); }
  post(path, form) {
    return this.request(path, { method: "POST", body: form.toString(),
      headers: { "content-type": "application/x-www-form-urlencoded", origin: issuer } });
  }
}

function unescapeHTML(s) {
  return s.replace(/&(#x[0-9a-f]+|#[0-9]+|amp|lt|gt|quot|apos);/gi, (_, e) => {
    const named = { amp: "&", lt: "<", gt: ">", quot: '"', apos: "'" }[e.toLowerCase()];
    if (named) return named;
    return String.fromCodePoint(e[1].toLowerCase() === "x" ? parseInt(e.slice(2), 16) : parseInt(e.slice(1), 10));
  });
}

// formFields returns the hidden fields of the page's form with the given
// id, and in the consent form each checked scope as grant_scope.
function formFields(page, id) {
  for (const m of page.matchAll(/<form [^>]*id="([^"]+)"[^>]*>([\s\S]*?)<\/form>/g)) {
    if (m[1] !== id) continue;
    const f = new URLSearchParams();
    for (const h of m[2].matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)) {
      f.append(unescapeHTML(h[1]), unescapeHTML(h[2]));
    }
    for (const c of m[2].matchAll(/<input type="checkbox" name="grant_scope" value="([^"]+)"[^>]*?( checked)?>/g)) {
      if (c[2]) f.append("grant_scope", unescapeHTML(c[1]));
    }
    return f;
  }
  throw new Error(`no form ${id} on the page: ${oneLine(page)}`);
}

// playUser opens the authorization URL the SDK asked to be opened, signs
// in with secret when the sign-in form shows (a signed-in browser must not
// see it: then secret is null), approves every offered scope, and returns
// the redirect back to the client and the consent page.
async function playUser(browser, authUrl, secret) {
  let page = await browser.get(authUrl);
  if (page.status === 200 && page.body.includes('id="signin"')) {
    assert(secret, "a signed-in browser was shown the sign-in form");
    const f = formFields(page.body, "signin");
    f.set("secret", secret);
    const r = await browser.post("/oauth/login", f);
    assert(r.status === 303 && r.location?.startsWith("/oauth/authorize?"),
      `POST /oauth/login: ${r.status} Location ${r.location}: ${oneLine(r.body)}`);
    page = await browser.get(r.location);
  } else {
    assert(!secret, `no sign-in form: ${page.status} ${oneLine(page.body)}`);
  }
  assert(page.status === 200 && page.body.includes('id="consent"'), `consent page: ${page.status} ${oneLine(page.body)}`);
  const f = formFields(page.body, "consent");
  assert(f.get("csrf"), "the consent form has no csrf field");
  assert(f.getAll("grant_scope").length > 0, "the consent page offers no checked scope");
  f.set("decision", "approve");
  const r = await browser.post("/oauth/authorize", f);
  assert(r.status === 303 && r.location, `approve: ${r.status} ${oneLine(r.body)}`);
  return { redirect: new URL(r.location), consent: page.body };
}

// expectRedirect asserts the SDK's first connect ends in a redirect to
// the authorization endpoint, and returns that URL.
async function expectRedirect(provider) {
  provider.authUrl = undefined;
  const client = new Client(info, {});
  const transport = new StreamableHTTPClientTransport(mcpURL, { authProvider: provider });
  let err;
  try {
    await client.connect(transport);
    closers.push(client);
  } catch (e) {
    err = e;
  }
  assert(err instanceof UnauthorizedError, `connect: want UnauthorizedError, got ${err ?? "a connection"}`);
  const u = need(provider.authUrl, "redirectToAuthorization's URL");
  assert(u.origin + u.pathname === `${issuer}/oauth/authorize`, `authorization URL ${u}`);
  const q = u.searchParams;
  assert(q.get("code_challenge_method") === "S256" && q.get("code_challenge"), `PKCE: ${u.search}`);
  assert(q.get("resource") === `${issuer}/mcp`, `resource ${q.get("resource")}`);
  assert(q.get("client_id") === provider.client?.client_id, `client_id ${q.get("client_id")}`);
  return { u, transport };
}

// checkRedirect asserts the authorization response (RFC 6749 §4.1.2,
// RFC 9207) and returns the code.
function checkRedirect(provider, redirect) {
  assert(redirect.origin + redirect.pathname === provider.redirect, `redirected to ${redirect}`);
  const q = redirect.searchParams;
  assert(q.get("state") === provider.lastState, `state ${q.get("state")}, want ${provider.lastState}`);
  assert(q.get("iss") === issuer, `iss ${q.get("iss")}`);
  return need(q.get("code"), "code");
}

async function connected(provider) {
  const client = new Client(info, {});
  await client.connect(new StreamableHTTPClientTransport(mcpURL, { authProvider: provider }));
  closers.push(client);
  return client;
}

function ok(res, tool) {
  assert(!res.isError, `${tool}: isError: ${JSON.stringify(res.structuredContent ?? res.content)}`);
  return need(res.structuredContent, `${tool} structuredContent`);
}

// mcpStatus is the status of a raw MCP request with a bearer token.
async function mcpStatus(token) {
  const res = await fetch(mcpURL, { method: "POST", body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" }),
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json", accept: "application/json, text/event-stream" } });
  await res.body?.cancel();
  return { status: res.status, challenge: res.headers.get("www-authenticate") ?? "" };
}

async function tokenEndpoint(form) {
  const res = await fetch(`${issuer}/oauth/token`, { method: "POST", body: new URLSearchParams(form).toString(),
    headers: { "content-type": "application/x-www-form-urlencoded" } });
  return { status: res.status, body: await res.json().catch(() => ({})) };
}

// --- alice: registration, sign-in, consent, tools --------------------------
const alice = new MemoryProvider("continuo-oauth-interop alice");
const aliceBrowser = new Browser();

const first = await check("alice: connect is refused with 401, the SDK discovers, registers and redirects", async () => {
  const r = await expectRedirect(alice);
  assert(alice.registrations === 1 && alice.client?.client_id, `registrations ${alice.registrations}`);
  return r;
});
const aliceCode = await check("alice: sign in with a login code, approve; back at the redirect URI with code, state, iss", async () => {
  const { u } = need(first, "authorization URL");
  const { redirect, consent } = await playUser(aliceBrowser, u, opt["alice-code"]);
  assert(consent.includes(">alice<"), "the consent page does not name alice");
  assert(consent.includes(opt.project), `the consent page does not list the project ${opt.project}`);
  return checkRedirect(alice, redirect);
});
await check("alice: finishAuth exchanges the code for an access and a refresh token", async () => {
  await need(first, "transport").transport.finishAuth(need(aliceCode, "code"));
  const t = need(alice.tokens(), "tokens");
  assert(t.access_token?.startsWith("cto_oat_") && t.refresh_token?.startsWith("cto_ort_"), `tokens ${Object.keys(t)}`);
  assert(t.token_type?.toLowerCase() === "bearer" && t.expires_in > 0, `token_type ${t.token_type}, expires_in ${t.expires_in}`);
});
const aliceClient = await check("alice: reconnects; list_projects shows the project with write access", async () => {
  need(alice.tokens(), "tokens");
  const c = await connected(alice);
  const sc = ok(await c.callTool({ name: "list_projects", arguments: {} }), "list_projects");
  const p = (sc.projects ?? []).find((p) => p.name === opt.project);
  assert(p?.access === "write", `projects ${JSON.stringify(sc.projects)}`);
  return c;
});
const session = await check("alice: work_on_project starts a session and post_session_message records a note", async () => {
  const c = need(aliceClient, "client");
  const sc = ok(await c.callTool({ name: "work_on_project",
    arguments: { project: opt.project, instruction: "OAuth interop: leave a note for the team" } }), "work_on_project");
  assert(sc.session_id && sc.resumed === false, `work_on_project ${JSON.stringify(sc)}`);
  const m = ok(await c.callTool({ name: "post_session_message",
    arguments: { session_id: sc.session_id, kind: "note", text: "signed in over OAuth" } }), "post_session_message");
  assert(m.message?.kind === "note", `message ${JSON.stringify(m.message)}`);
  return sc.session_id;
});

// --- refresh: rotation, and a replayed refresh token ends the family -------
const before = alice.tokens();
const rotated = await check("alice: a refresh (the SDK's auth()) rotates both tokens", async () => {
  need(before?.refresh_token, "refresh token");
  const r = await auth(alice, { serverUrl: mcpURL });
  assert(r === "AUTHORIZED", `auth() ${r}`);
  const t = alice.tokens();
  assert(t.access_token !== before.access_token, "the access token was not replaced");
  assert(t.refresh_token && t.refresh_token !== before.refresh_token, "the refresh token was not rotated");
  return t;
});
await check("alice: the new access token works", async () => {
  need(rotated, "rotated tokens");
  const c = await connected(alice);
  ok(await c.callTool({ name: "list_projects", arguments: {} }), "list_projects");
});
await check("alice: the spent refresh token is refused with invalid_grant", async () => {
  need(rotated, "rotated tokens");
  const r = await tokenEndpoint({ grant_type: "refresh_token", refresh_token: before.refresh_token, client_id: alice.client.client_id });
  assert(r.status === 400 && r.body.error === "invalid_grant", `${r.status} ${JSON.stringify(r.body)}`);
});
await check("alice: that replay ended the family: the current access token is 401 on /mcp", async () => {
  const r = await mcpStatus(need(rotated, "rotated tokens").access_token);
  assert(r.status === 401 && r.challenge.includes('error="invalid_token"'), `${r.status} ${r.challenge}`);
});

// --- the SDK recovers with a new authorization; RFC 7009 revocation -------
const again = await check("alice: the SDK's refresh fails, it drops the tokens and redirects again", async () => {
  need(rotated, "rotated tokens");
  const r = await expectRedirect(alice);
  assert(alice.invalidated.includes("tokens"), `invalidateCredentials calls ${JSON.stringify(alice.invalidated)}`);
  assert(alice.registrations === 1, "the client registered again");
  return r;
});
await check("alice: still signed in, the browser goes straight to consent; a new grant", async () => {
  const { u, transport } = need(again, "authorization URL");
  const { redirect } = await playUser(aliceBrowser, u, null);
  await transport.finishAuth(checkRedirect(alice, redirect));
  const c = await connected(alice);
  ok(await c.callTool({ name: "list_projects", arguments: {} }), "list_projects");
});
const revoked = alice.tokens();
await check("alice: POST /oauth/revoke with the refresh token is 200", async () => {
  assert(revoked && revoked !== rotated, "no tokens from the new grant");
  const res = await fetch(`${issuer}/oauth/revoke`, { method: "POST",
    body: new URLSearchParams({ token: revoked.refresh_token, token_type_hint: "refresh_token", client_id: alice.client.client_id }).toString(),
    headers: { "content-type": "application/x-www-form-urlencoded" } });
  assert(res.status === 200, `${res.status} ${await res.text()}`);
});
await check("alice: the access token of the revoked family is 401 on /mcp", async () => {
  const r = await mcpStatus(need(revoked, "tokens").access_token);
  assert(r.status === 401 && r.challenge.includes("resource_metadata="), `${r.status} ${r.challenge}`);
});

// --- bob: a second account of the same group --------------------------------
const bob = new MemoryProvider("continuo-oauth-interop bob");
const bobFirst = await check("bob: a second provider registers a client of its own", async () => {
  const r = await expectRedirect(bob);
  assert(bob.client?.client_id && bob.client.client_id !== alice.client?.client_id, `client ${bob.client?.client_id}`);
  return r;
});
const bobClient = await check("bob: signs in with his own login code in a new browser and approves", async () => {
  const { u, transport } = need(bobFirst, "authorization URL");
  const { redirect, consent } = await playUser(new Browser(), u, opt["bob-code"]);
  assert(consent.includes(">bob<"), "the consent page does not name bob");
  await transport.finishAuth(checkRedirect(bob, redirect));
  return connected(bob);
});
await check("bob: list_sessions shows alice's session", async () => {
  const sid = need(session, "alice's session");
  const sc = ok(await need(bobClient, "client").callTool({ name: "list_sessions", arguments: { project: opt.project } }), "list_sessions");
  assert((sc.sessions ?? []).some((s) => s.session_id === sid), `sessions ${JSON.stringify(sc.sessions)}`);
});
await check("bob: work_on_project resumes alice's session", async () => {
  const sid = need(session, "alice's session");
  const sc = ok(await need(bobClient, "client").callTool({ name: "work_on_project",
    arguments: { session_id: sid, instruction: "continue alice's work" } }), "work_on_project");
  assert(sc.resumed === true && sc.session_id === sid, `work_on_project ${JSON.stringify(sc)}`);
});

for (const c of closers.reverse()) {
  try {
    await c.close();
  } catch (e) {
    console.log(`FAIL close: ${oneLine(e?.message ?? e)}`);
    failed++;
  }
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
