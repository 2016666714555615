// The dashboard in a real browser: headless Chromium driven by
// playwright-core, the way a person uses it — sign in, read a session's
// brief, watch a run's output arrive, approve a worker's continuation and
// see its epoch move, settle a task in doubt, revoke a token and see it
// stop working, and open the key pages on a phone. Every page is checked
// for rendering (its stylesheet applied, no template error text, none of
// the plan's secrets) and photographed.
//
// Usage:
//   node dashboard.mjs --plan PLAN.json [--chromium /usr/bin/chromium]
//
// PLAN.json: {base, secret (the token to sign in with), session, task
// (a phrase of the session's task), run (a run that prints its first
// line, then waits until the file gate exists to print the rest), gate,
// runLines, swarm, worker, continuation, doubtTask, revokeToken,
// revokeTokenID, secrets ({what: a string no page may hold}), shots (a
// directory), budgetMs (the script's time in all)}.
//
// Prints "ok   NAME" or "FAIL NAME: REASON" per check, then exactly one
// line "N passed, M failed", and exits 1 if any check failed.

import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { anyway, assert, budget, finish, launch, oneLine, step } from "./steps.mjs";

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
// One action (a click, a page load) waits at most STEP_TIMEOUT_MS; a wait
// for the server's work (a run's output, a worker's epoch) is bounded by
// what is left of the script's budget, which ends the script before its
// caller's limit does.
const STEP_TIMEOUT_MS = 20_000;
const left = budget(plan.budgetMs);

const browser = await launch(opt.chromium, STEP_TIMEOUT_MS);
const page = browser && await browser.newPage({ viewport: { width: 1200, height: 900 } });
const violations = [];
if (page) watch(page);

// watch collects a page's Content-Security-Policy violations and script
// errors.
function watch(p) {
  p.setDefaultTimeout(STEP_TIMEOUT_MS);
  p.on("console", (m) => {
    if (m.type() === "error" && /Content Security Policy/i.test(m.text())) violations.push(m.text());
  });
  p.on("pageerror", (e) => violations.push(`script error: ${e.message}`));
}

// rendered checks that the page is one of ours, rendered: its stylesheet
// applied, no template error text, none of the secrets (named, never
// shown, when one is there); then photographs it.
async function rendered(shot, p = page) {
  const html = await p.content();
  const text = await p.locator("body").innerText();
  for (const bad of ["template:", "{{", "<no value>", "%!"]) {
    assert(!text.includes(bad), `the page says ${JSON.stringify(bad)}`);
  }
  for (const [what, secret] of Object.entries(plan.secrets)) {
    assert(!html.includes(secret), `${what} is on the page`);
  }
  const styled = await p.evaluate(() => {
    const h = document.querySelector("header.top");
    return h ? getComputedStyle(h).display : "no header";
  });
  assert(styled === "flex", `the stylesheet is not applied (header display ${styled})`);
  await p.screenshot({ path: join(plan.shots, shot), fullPage: true });
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
  const lines = (n) => page.waitForFunction((n) => {
    const out = document.querySelector("#run-output");
    return out.innerText.split("\n").filter((l) => /^line \d+/.test(l)).length >= n;
  }, n, { timeout: left() });
  // The run prints its first line and waits for the gate: it is running
  // while the page shows that line, however late the page opened.
  await lines(1);
  assert(await page.locator("#run-output[data-live]").count() === 1, "the page does not follow the run");
  const state = await page.locator("[data-live-state]").innerText();
  assert(state === "queued" || state === "running", `the run is ${state} before the gate opened`);
  // The rest appears once the gate opens, without a reload: the page's
  // script follows the run's server-sent events.
  await page.evaluate(() => { window.continuoSamePage = true; });
  writeFileSync(plan.gate, "open\n");
  await lines(plan.runLines);
  await page.locator("[data-live-state]").filter({ hasText: "succeeded" }).waitFor({ timeout: left() });
  assert(await page.evaluate(() => window.continuoSamePage === true), "the page was reloaded");
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
  // worker is at epoch 1, while the budget lasts.
  while ((await epoch.innerText()).trim() !== "1") {
    assert(left() > STEP_TIMEOUT_MS, `the worker is still at epoch ${await epoch.innerText()}`);
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

// A phone: the pages fit its width (they do not scroll sideways; a wide
// table scrolls in its own box).
const PHONE = { width: 390, height: 844 };
await step("on a phone, the home, session and swarm pages fit the screen", async () => {
  const phone = await browser.newContext({ viewport: PHONE, isMobile: true, hasTouch: true, deviceScaleFactor: 1,
    storageState: await page.context().storageState() }); // signed in as in the desktop window
  const p = await phone.newPage();
  watch(p);
  for (const [path, shot] of [["/", "07-phone-home.png"], [`/s/${plan.session}`, "08-phone-session.png"],
    [`/w/${plan.swarm}`, "09-phone-swarm.png"]]) {
    await p.goto(at(path));
    assert(new URL(p.url()).pathname === path, `${path} went to ${p.url()}`);
    const wide = await p.evaluate((w) => ({
      width: document.scrollingElement.scrollWidth,
      // what sticks out, to say where to look
      over: [...document.querySelectorAll("body *")].filter((e) => {
        if (e.getBoundingClientRect().right <= w + 1) return false;
        for (let a = e.parentElement; a && a !== document.body; a = a.parentElement) {
          if (getComputedStyle(a).overflowX !== "visible") return false; // scrolls in its own box
        }
        return true;
      }).slice(0, 4).map((e) => e.tagName.toLowerCase() + (e.id ? "#" + e.id : "") + (e.className && typeof e.className === "string" ? "." + e.className.trim().replace(/\s+/g, ".") : "")),
    }), PHONE.width);
    assert(wide.width <= PHONE.width + 1, `${path} scrolls sideways: ${wide.width} px wide on a ${PHONE.width} px screen (${wide.over.join(", ")})`);
    await rendered(shot, p);
  }
  await phone.close();
});

anyway(); // checked even after a failure
await step("no Content-Security-Policy violation or script error", () => {
  assert(violations.length === 0, violations.join(" | "));
});

if (browser) await browser.close();
finish();
