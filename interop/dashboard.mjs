// The dashboard in a real browser: headless Chromium driven by
// playwright-core, the way a person uses it — sign in, read a session's
// brief, watch a run's output arrive, approve a worker's continuation and
// see its epoch move, settle a task in doubt, revoke a token and see it
// stop working. Every page is checked for rendering (its stylesheet
// applied, no template error text, no planted secret) and photographed.
//
// Usage:
//   node dashboard.mjs --plan PLAN.json [--chromium /usr/bin/chromium]
//
// PLAN.json: {base, secret (the token to sign in with), session, task
// (a phrase of the session's task), run, runLines, swarm, worker,
// continuation, doubtTask, revokeToken, revokeTokenID, planted (a string
// no page may hold), shots (a directory)}.
//
// Prints "ok   NAME" or "FAIL NAME: REASON" per check, then exactly one
// line "N passed, M failed", and exits 1 if any check failed.

import { readFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { anyway, assert, finish, launch, oneLine, step } from "./steps.mjs";

const { values: opt } = parseArgs({
  options: {
    plan: { type: "string" },
    chromium: { type: "string", default: "/usr/bin/chromium" },
  },
});
if (!opt.plan) {
  console.error("dashboard.mjs: --plan is required");
  process.exit(2);
}
const plan = JSON.parse(readFileSync(opt.plan, "utf8"));
const STEP_TIMEOUT_MS = 20_000;

const browser = await launch(opt.chromium, STEP_TIMEOUT_MS);
const page = browser && await browser.newPage({ viewport: { width: 1200, height: 900 } });
page?.setDefaultTimeout(STEP_TIMEOUT_MS);
const violations = [];
page?.on("console", (m) => {
  if (m.type() === "error" && /Content Security Policy/i.test(m.text())) violations.push(m.text());
});
page?.on("pageerror", (e) => violations.push(`script error: ${e.message}`));

// rendered checks that the page is one of ours, rendered: its stylesheet
// applied, no template error text, nothing of the planted secret; then
// photographs it.
async function rendered(shot) {
  const html = await page.content();
  const text = await page.locator("body").innerText();
  for (const bad of ["template:", "{{", "<no value>", "%!"]) {
    assert(!text.includes(bad), `the page says ${JSON.stringify(bad)}`);
  }
  assert(!html.includes(plan.planted), "the planted secret is on the page");
  const styled = await page.evaluate(() => {
    const h = document.querySelector("header.top");
    return h ? getComputedStyle(h).display : "no header";
  });
  assert(styled === "flex", `the stylesheet is not applied (header display ${styled})`);
  await page.screenshot({ path: join(plan.shots, shot), fullPage: true });
}

function at(path) {
  return plan.base + path;
}

await step("sign in with a token", async () => {
  await page.goto(at("/"));
  await page.click('a[href="/login"]');
  await page.locator("#secret").waitFor({ state: "visible" });
  await page.fill("#secret", plan.secret);
  await page.click("#signin-submit");
  await page.waitForURL((u) => u.pathname === "/");
  assert((await page.locator("main h1").innerText()) === "Projects", "not the projects page");
  await rendered("01-projects.png");
});

await step("a run's output arrives live", async () => {
  await page.goto(at(`/r/${plan.run}`));
  const out = page.locator("#run-output");
  const first = (await out.innerText()).split("\n").filter((l) => /^line \d+/.test(l)).length;
  assert(first < plan.runLines, `the run had ended before the page opened (${first} lines)`);
  // New lines appear without a reload: the page's script follows the
  // run's server-sent events.
  await page.waitForFunction((n) => {
    const lines = document.querySelector("#run-output").innerText.split("\n").filter((l) => /^line \d+/.test(l));
    return lines.length >= n;
  }, plan.runLines, { timeout: 60_000 });
  await page.locator("[data-live-state]").filter({ hasText: "succeeded" }).waitFor({ timeout: 30_000 });
  await rendered("02-run.png");
});

await step("a session's brief", async () => {
  await page.goto(at(`/s/${plan.session}`));
  const task = await page.locator("#brief-task").innerText();
  assert(task.includes(plan.task), `the brief's task says ${JSON.stringify(task)}`);
  assert(await page.locator("#timeline").count() === 1, "no notes timeline");
  await rendered("03-session.png");
});

await step("approve a pending continuation: the worker's epoch moves", async () => {
  await page.goto(at(`/w/${plan.swarm}`));
  const epoch = page.locator(`tr[id="${plan.worker}"] td[data-label="Epoch"]`);
  assert((await epoch.innerText()).trim() === "0", `epoch before ${await epoch.innerText()}`);
  await page.click(`#approve-${plan.continuation} button`);
  await page.waitForURL((u) => u.pathname === `/w/${plan.swarm}`);
  // The new carrier binds when it reads its continuation's status (the
  // test's other side does, as soon as it is approved): reload until the
  // worker is at epoch 1.
  const deadline = Date.now() + 30_000;
  for (;;) {
    if ((await epoch.innerText()).trim() === "1") break;
    assert(Date.now() < deadline, `the worker is still at epoch ${await epoch.innerText()}`);
    await page.waitForTimeout(250);
    await page.reload();
  }
  const history = await page.locator("table.swarm-history").innerText();
  assert(history.includes("0 → 1") && history.includes("owner"), `history ${JSON.stringify(history)}`);
  await rendered("04-swarm-approved.png");
});

await step("settle a task in doubt: requeue it with evidence of no effect", async () => {
  await page.goto(at(`/w/${plan.swarm}`));
  const doubt = page.locator(`#doubt-${plan.doubtTask}`);
  await doubt.waitFor({ state: "visible" });
  await doubt.locator("summary", { hasText: "Requeue" }).click();
  const form = page.locator(`#requeue-${plan.doubtTask}`);
  await form.locator('input[name="disposition"]').check();
  await form.locator('textarea[name="evidence"]').fill("the worker's log shows it stopped before it changed anything");
  await form.locator('button[type="submit"]').click();
  await page.waitForLoadState("load");
  assert(await page.locator(`#doubt-${plan.doubtTask}`).count() === 0, "the task is still in doubt");
  await page.goto(at(`/w/${plan.swarm}/tasks/${plan.doubtTask}`));
  const body = await page.locator("main").innerText();
  assert(/queued/.test(body), `the task page says ${oneLine(body)}`);
  await rendered("05-task-requeued.png");
});

await step("revoke a token: it stops working", async () => {
  const mcp = (token) => fetch(at("/mcp"), {
    method: "POST",
    headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json", Accept: "application/json, text/event-stream" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize",
      params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "dashboard.mjs", version: "1" } } }),
  });
  assert((await mcp(plan.revokeToken)).status === 200, "the token did not work before");
  await page.goto(at("/admin/tokens"));
  await page.click(`#token-revoke-${plan.revokeTokenID} button`);
  await page.waitForLoadState("load");
  assert(await page.locator(`#token-revoke-${plan.revokeTokenID}`).count() === 0, "the token can still be revoked");
  const status = (await mcp(plan.revokeToken)).status;
  assert(status === 401, `the revoked token got ${status} from /mcp`);
  await rendered("06-token-revoked.png");
});

anyway(); // checked even after a failure
await step("no Content-Security-Policy violation or script error", () => {
  assert(violations.length === 0, violations.join(" | "));
});

if (browser) await browser.close();
finish();
