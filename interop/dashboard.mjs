// The dashboard in a real browser: headless Chromium driven by
// playwright-core, the way a person uses it — sign in, read a session's
// brief, watch a run's output arrive, approve a worker's continuation and
// see its epoch move, settle a task in doubt, revoke a token and see it
// stop working; answer a question, add and retire a standing
// instruction, resolve a todo and a risk, cancel a task, close a swarm
// through settling its cancelled task — each refused, with the service's
// own error on the page, to a token without the scope and to another
// group's member, and each surviving a reload — then open every page on a
// desktop (1280×800) and a phone (390×844), where none may scroll
// sideways. Every page is checked for rendering (its stylesheet applied,
// no template error text, none of the plan's secrets) and photographed.
//
// Usage:
//   node dashboard.mjs --plan PLAN.json [--chromium /usr/bin/chromium]
//
// PLAN.json: {base, secret (the token to sign in with), session, task
// (a phrase of the session's task), run (a run that prints its first
// line, then waits until the file gate exists to print the rest), gate,
// runLines, swarm, worker, continuation, doubtTask, revokeToken,
// revokeTokenID, question, todo, risk, guidance (notes of the session),
// reader (a token of the same group that may only read sessions),
// stranger (a token of another group), closeSwarm, runningTask,
// queuedTask (a swarm to close and its tasks), project, pages (paths,
// with {name} standing for the plan's name; "signed out /" for the
// landing page), secrets ({what: a string no page may hold}), shots (a
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
async function rendered(shot, p = page, fullPage = true) {
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
  await p.screenshot({ path: join(plan.shots, shot), fullPage });
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
  await rendered("07-token-revoked.png");
});

// ---- a person's actions: each works, survives a reload (the form
// posts, the answer redirects to a page that shows the result: a reload
// posts nothing again), and is refused — shown as the service's
// structured error, nothing written — to a token without the scope and
// to a member of another group. ----

// The texts of internal/e2e/dashboard_browser_test.go.
const ANSWER = "Port 8080, behind the proxy";
const GUIDANCE = "Keep every page usable on a phone";
const REFUSED = "written by a refused action";

// signIn signs context's browser in with a token (as whoever it was
// before: the pages it loaded then keep their forms, as stale tabs do).
async function signIn(context, secret) {
  const p = await context.newPage();
  watch(p);
  await p.goto(at("/login"));
  await p.fill("#secret", secret);
  await p.click("#signin-submit");
  await p.waitForURL((u) => u.pathname === "/");
  await p.close();
}

// refusals: for each who (the reader: the admin's group, no write scope;
// the stranger: another group), a browser signed in as the admin opens
// every action's page, then signs in as who; each tab then submits its
// form (fill fills it), and must be shown the service's refusal, its code
// and all. Nothing is written (the test reads the brief after). The two
// browsers, and their tabs, go at once: no refusal depends on another.
async function refusals(actions) {
  const want = { reader: "forbidden", stranger: "not_found" };
  await Promise.all(Object.keys(want).map(async (who) => {
    const ctx = await browser.newContext({ viewport: { width: 1200, height: 900 } });
    try {
      await signIn(ctx, plan.secret);
      const tabs = await Promise.all(actions.map(async ([path, fill]) => {
        const p = await ctx.newPage();
        watch(p);
        await p.goto(at(path));
        return [p, path, fill];
      }));
      await signIn(ctx, plan[who]);
      await Promise.all(tabs.map(async ([p, path, fill]) => {
        await fill(p);
        await p.waitForLoadState("load");
        const code = (await p.locator(".notice.error code").innerText().catch(() => "")).trim();
        assert(code === want[who], `${who} on ${path}: the page says ${oneLine(await p.locator("main").innerText())}`);
      }));
    } finally {
      await ctx.close();
    }
  }));
}

// posted waits for the redirect back to path, reloads (a form posted
// once is not posted again) and returns the page's text.
async function posted(path) {
  await page.waitForURL((u) => u.pathname === path);
  await page.reload();
  assert(new URL(page.url()).pathname === path, `the reload went to ${page.url()}`);
  return page.locator("main").innerText();
}

const sessionPath = () => `/s/${plan.session}`;

const taskPath = (id) => `/w/${plan.closeSwarm}/tasks/${id}`;
const swarm2 = () => `/w/${plan.closeSwarm}`;

await step("every action is refused without the scope and from another group", async () => {
  const open = (sel) => (p) => p.locator(sel).evaluate((e) => { e.closest("details").open = true; });
  await refusals([
    [sessionPath(), async (p) => {
      await open(`#answer-${plan.question}`)(p);
      await p.fill(`#answer-${plan.question} textarea`, REFUSED);
      await p.click(`#answer-${plan.question} button`);
    }],
    [sessionPath(), async (p) => {
      await open("#guidance-form")(p);
      await p.fill("#guidance-text", REFUSED);
      await p.click("#guidance-form button");
    }],
    [sessionPath(), async (p) => {
      await open(`#retire-${plan.guidance}`)(p);
      await p.fill(`#retire-${plan.guidance} input[name="reason"]`, REFUSED);
      await p.click(`#retire-${plan.guidance} button`);
    }],
    ...["todo", "risk"].map((what) => [sessionPath(), async (p) => {
      await p.fill(`#resolve-${plan[what]} input[name="resolution"]`, REFUSED);
      await p.click(`#resolve-${plan[what]} button`);
    }]),
    [taskPath(plan.queuedTask), (p) => p.click("#cancel button")],
    [swarm2(), (p) => p.click("#swarm-close button")],
  ]);
});

await step("answer an open question", async () => {
  await page.goto(at(sessionPath()));
  await page.locator(`#answer-${plan.question}`).evaluate((f) => f.closest("details").open = true);
  await page.fill(`#answer-${plan.question} textarea`, ANSWER);
  await page.click(`#answer-${plan.question} button`);
  await posted(sessionPath());
  assert(await page.locator(`#answer-${plan.question}`).count() === 0, "the question is still open");
  const answered = await page.locator("#brief-answered").innerText();
  assert(answered.includes(ANSWER), `the brief's answered questions: ${oneLine(answered)}`);
  const notes = await page.locator("#timeline ~ .timeline").innerText();
  assert(notes.split(ANSWER).length === 2, "the answer is not in the notes exactly once");
  assert(/via dashboard/.test(notes), "the notes do not say the answer came from the dashboard");
});

await step("add a standing instruction", async () => {
  await page.goto(at(sessionPath()));
  await page.locator("#guidance-add").evaluate((d) => d.open = true);
  await page.fill("#guidance-text", GUIDANCE);
  await page.selectOption("#guidance-priority", "high");
  await page.click("#guidance-form button");
  await posted(sessionPath());
  const constraints = await page.locator("#brief-constraints").innerText();
  assert(constraints.split(GUIDANCE).length === 2, `the brief's constraints: ${oneLine(constraints)}`);
});

await step("retire a standing instruction", async () => {
  await page.goto(at(sessionPath()));
  await page.locator(`#retire-${plan.guidance}`).evaluate((f) => f.closest("details").open = true);
  await page.fill(`#retire-${plan.guidance} input[name="reason"]`, "we deploy any day now");
  await page.click(`#retire-${plan.guidance} button`);
  await posted(sessionPath());
  const constraints = await page.locator("#brief-constraints").innerText();
  assert(!constraints.includes("Never deploy on a Friday"), `the retired instruction is still a constraint: ${oneLine(constraints)}`);
  assert(constraints.includes(GUIDANCE), "the other instruction went too");
});

for (const what of ["todo", "risk"]) {
  await step(`resolve a ${what}`, async () => {
    await page.goto(at(sessionPath()));
    await page.fill(`#resolve-${plan[what]} input[name="resolution"]`, `settled in the browser (${what})`);
    await page.click(`#resolve-${plan[what]} button`);
    await posted(sessionPath());
    assert(await page.locator(`#resolve-${plan[what]}`).count() === 0, `the ${what} is still open`);
    const note = await page.locator(`article[id="${plan[what]}"]`).innerText();
    assert(/resolved by \S+ via dashboard/.test(note), `the ${what}'s note: ${oneLine(note)}`);
  });
}

await step("cancel a queued task", async () => {
  await page.goto(at(taskPath(plan.queuedTask)));
  await page.click("#cancel button");
  const text = await posted(taskPath(plan.queuedTask));
  assert(/State\s+cancelled/.test(text), `the task page: ${oneLine(text)}`);
  assert(await page.locator("#cancel").count() === 0, "the task can still be cancelled");
});

await step("close a swarm: refused while a task is cancel_requested, then settled and closed", async () => {
  await page.goto(at(taskPath(plan.runningTask)));
  await page.click("#cancel button");
  await posted(taskPath(plan.runningTask));
  await page.goto(at(swarm2()));
  await page.click("#swarm-close button");
  await page.waitForURL((u) => u.pathname === swarm2() && u.searchParams.get("close") === "refused");
  await page.locator("#close-refused").waitFor({ state: "visible" });
  // The page leads: settle the task on its page, come back, close.
  await page.click(`#settle-${plan.runningTask} a`);
  await page.waitForURL((u) => u.pathname === taskPath(plan.runningTask));
  const fail = page.locator(`#fail-${plan.runningTask}`);
  await fail.evaluate((f) => f.closest("details").open = true);
  await fail.locator('textarea[name="evidence"]').fill("the worker never answered the cancel");
  await fail.locator('button[type="submit"]').click();
  await posted(taskPath(plan.runningTask));
  await page.goto(at(swarm2()));
  assert(await page.locator(`#settle-${plan.runningTask}`).count() === 0, "the settled task is still listed");
  await page.click("#swarm-close button");
  const text = await posted(swarm2());
  assert(await page.locator("#swarm-close").count() === 0, "the swarm can still be closed");
  assert(/State\s+closed/.test(text), `the swarm page: ${oneLine(text.slice(0, 300))}`);
  await rendered("06-swarm-closed.png");
});

// ---- every page, on a desktop and on a phone: none scrolls sideways
// (a wide table scrolls in its own box, or wraps), each is photographed.
// The pages load in TABS tabs at once (the server and the browser each
// work while the other waits); every page that fails is named.
const VIEWPORTS = [["desktop", { width: 1280, height: 800 }, {}], ["phone", { width: 390, height: 844 }, { isMobile: true, hasTouch: true }]];
const TABS = 6;
const fillIn = (path) => path.replace(/\{(\w+)\}/g, (_, k) => ({ task: plan.doubtTask, run: plan.run }[k] ?? plan[k]));

// fits opens path in a new tab of context and checks that it does not
// scroll sideways on the viewport name (nor, on a desktop, any table in
// its own box), that it rendered, and photographs it.
async function fits(context, name, i, entry) {
  const out = entry.startsWith("signed out ");
  const path = fillIn(out ? entry.slice("signed out ".length) : entry);
  const p = await context.newPage();
  try {
    watch(p);
    await p.goto(at(path));
    assert(new URL(p.url()).pathname === path.split("?")[0], `${path} went to ${p.url()}`);
    const wide = await p.evaluate(() => ({
      width: document.documentElement.scrollWidth, view: window.innerWidth,
      // what sticks out, to say where to look
      over: [...document.querySelectorAll("body *")].filter((e) => {
        if (e.getBoundingClientRect().right <= window.innerWidth + 1) return false;
        for (let a = e.parentElement; a && a !== document.body; a = a.parentElement) {
          if (getComputedStyle(a).overflowX !== "visible") return false; // scrolls in its own box
        }
        return true;
      }).slice(0, 4).map((e) => e.tagName.toLowerCase() + (e.id ? "#" + e.id : "") + (e.className && typeof e.className === "string" ? "." + e.className.trim().replace(/\s+/g, ".") : "")),
      // on a desktop, no table may need a scroll bar of its own
      boxed: [...document.querySelectorAll(".table-wrap")]
        .filter((e) => e.scrollWidth > e.clientWidth + 1)
        .map((e) => `${e.querySelector("table")?.className} (${e.scrollWidth} px in ${e.clientWidth})`),
    }));
    assert(wide.width <= wide.view, `${path} scrolls sideways on a ${name}: ${wide.width} px wide in ${wide.view} px (${wide.over.join(", ")})`);
    if (name === "desktop") {
      assert(wide.boxed.length === 0, `${path} on a ${name}: a table scrolls sideways: ${wide.boxed.join(", ")}`);
    }
    const shot = `p${String(i).padStart(2, "0")}-${name}-${path.replace(/[^a-z0-9]+/gi, "_").replace(/^_|_$/g, "") || "home"}${out ? "-signed-out" : ""}.png`;
    try {
      await rendered(shot, p, false); // the screen's worth: the page's width is what is checked
    } catch (e) {
      throw new Error(`${path} on a ${name}: ${e.message}`);
    }
  } finally {
    await p.close();
  }
}

await step("every page fits a desktop and a phone", async () => {
  const state = await page.context().storageState(); // signed in as in the desktop window
  const contexts = [];
  const jobs = [];
  for (const [name, viewport, extra] of VIEWPORTS) {
    const signedIn = await browser.newContext({ viewport, deviceScaleFactor: 1, storageState: state, ...extra });
    const signedOut = await browser.newContext({ viewport, deviceScaleFactor: 1, ...extra });
    contexts.push(signedIn, signedOut);
    for (const [i, entry] of plan.pages.entries()) {
      jobs.push(() => fits(entry.startsWith("signed out ") ? signedOut : signedIn, name, i, entry));
    }
  }
  const failures = [];
  const tab = async () => {
    for (let job; (job = jobs.shift());) await job().catch((e) => failures.push(e?.message ?? String(e)));
  };
  await Promise.all(Array.from({ length: TABS }, tab));
  for (const c of contexts) await c.close();
  assert(failures.length === 0, failures.join(" | "));
});

anyway(); // checked even after a failure
await step("no Content-Security-Policy violation or script error", () => {
  assert(violations.length === 0, violations.join(" | "));
});

if (browser) await browser.close();
finish();
