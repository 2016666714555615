// The sign-in and consent pages in a real browser: headless Chromium
// driven by playwright-core, the way a person uses them — sign in with a
// login code, read what the application asks for, approve, land back at
// the application.
//
// Usage:
//   node consent.mjs --url AUTHORIZE_URL --secret CTO_LNK --client-name NAME \
//     --scopes "SCOPE SCOPE…" --redirect REDIRECT_URI --screenshot FILE.png \
//     [--chromium /usr/bin/chromium]
//
// Prints "ok   NAME" or "FAIL NAME: REASON" per check, then exactly one
// line "N passed, M failed", and exits 1 if any check failed.

import { parseArgs } from "node:util";
import { anyway, assert, finish, launch, step } from "./steps.mjs";

const { values: opt } = parseArgs({
  options: {
    url: { type: "string" },
    secret: { type: "string" },
    "client-name": { type: "string" },
    scopes: { type: "string" },
    redirect: { type: "string" },
    screenshot: { type: "string" },
    chromium: { type: "string", default: "/usr/bin/chromium" },
  },
});
for (const k of ["url", "secret", "client-name", "scopes", "redirect", "screenshot"]) {
  if (!opt[k]) {
    console.error(`consent.mjs: --${k} is required`);
    process.exit(2);
  }
}
const STEP_TIMEOUT_MS = 15_000;

const browser = await launch(opt.chromium, STEP_TIMEOUT_MS);
const page = browser && await browser.newPage({ viewport: { width: 1024, height: 768 } });
page?.setDefaultTimeout(STEP_TIMEOUT_MS);
const violations = [];
page?.on("console", (m) => {
  if (m.type() === "error" && /Content Security Policy/i.test(m.text())) violations.push(m.text());
});

await step("the authorization URL shows the sign-in form", async () => {
  const res = await page.goto(opt.url);
  assert(res?.status() === 200, `status ${res?.status()}`);
  await page.locator("#secret").waitFor({ state: "visible" });
});
await step("sign in with the login code: the consent page", async () => {
  await page.fill("#secret", opt.secret);
  await page.click("#signin-submit");
  await page.locator("#consent").waitFor({ state: "visible" });
  assert(new URL(page.url()).pathname === "/oauth/authorize", `at ${page.url()}`);
});
await step("the consent page names the client", async () => {
  const name = await page.locator("#client-name").innerText();
  assert(name === opt["client-name"], `client name ${JSON.stringify(name)}`);
});
for (const s of opt.scopes.split(" ")) {
  await step(`scope ${s}: visible, checked, with its meaning`, async () => {
    const label = page.locator(`label.scope:has(input[name="grant_scope"][value="${s}"])`);
    assert(await label.count() === 1, `${await label.count()} labels`);
    assert(await label.isVisible(), "not visible");
    assert(await label.locator("input").isChecked(), "not checked");
    const text = await label.innerText();
    assert(text.includes(s) && text.replace(s, "").trim().length >= 10, `label ${JSON.stringify(text)}`);
  });
}
await step("screenshot", () => page.screenshot({ path: opt.screenshot, fullPage: true }));
await step("approve: back at the client's redirect URI", async () => {
  await page.click("#approve");
  await page.waitForURL((u) => u.href.startsWith(opt.redirect));
  const q = new URL(page.url()).searchParams;
  assert(q.get("code") && q.get("state"), `at ${page.url()}`);
  assert((await page.locator("body").innerText()).includes("received"), "the client's page did not load");
});
anyway(); // checked even after a failure
await step("no Content-Security-Policy violation", () => {
  assert(violations.length === 0, violations.join(" | "));
});

if (browser) await browser.close();
finish();
