// The checks of a browser script (consent.mjs, dashboard.mjs): each step
// prints "ok   NAME" or "FAIL NAME: REASON"; once a step has failed the
// ones after it fail without running (anyway() lets a last check run
// regardless); finish() prints exactly one line "N passed, M failed" and
// exits 1 if any check failed, as budget() does once the script's time is
// spent.

import { chromium } from "playwright-core";

let passed = 0;
let failed = 0;
let broken = false; // a failed step: the ones after it cannot run
let running = null; // the name of the step under way

export function assert(cond, msg) {
  if (!cond) throw new Error(msg);
}

export function oneLine(s) {
  s = String(s).replace(/\s+/g, " ").trim();
  return s.length > 400 ? s.slice(0, 400) + "…" : s;
}

export async function step(name, fn) {
  running = name;
  try {
    if (broken) throw new Error("an earlier step failed");
    const v = await fn();
    console.log(`ok   ${name}`);
    passed++;
    return v;
  } catch (e) {
    console.log(`FAIL ${name}: ${oneLine(e?.message ?? e)}`);
    failed++;
    broken = true;
    return undefined;
  } finally {
    running = null;
  }
}

// budget gives the whole script ms milliseconds, which its caller's limit
// on the process must exceed: once they are spent, the step under way
// fails as out of time and the script finishes, so that it says where it
// stood rather than being killed. It returns how much is left, for a wait
// that has no bound of its own but the budget's.
export function budget(ms) {
  const end = Date.now() + ms;
  setTimeout(() => {
    console.log(`FAIL ${running ?? "the script"}: out of time (its budget is ${ms / 1000} s)`);
    failed++;
    finish();
  }, ms).unref();
  return () => Math.max(1, end - Date.now());
}

// anyway makes the next step run even after a failure.
export function anyway() {
  broken = false;
}

export function finish() {
  console.log(`${passed} passed, ${failed} failed`);
  process.exit(failed === 0 ? 0 : 1);
}

// launch starts headless Chromium as a step; chromium.launch uses a fresh
// user data directory of its own, removed on close: nothing of an earlier
// run is signed in.
export function launch(executablePath, timeout) {
  return step("launch headless Chromium", () => chromium.launch({
    executablePath,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
      "--disable-background-networking", "--disable-component-update", "--disable-sync"],
    timeout,
  }));
}
