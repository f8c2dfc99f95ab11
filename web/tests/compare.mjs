// Browser check of the compare view (issue 18 point 4, issue 19 point 2) in
// headless Chromium. Run by host/tests/all/gate.rs against a daemon it
// started over a store with three finished campaigns:
//   BLOCKLAB_URL        http://127.0.0.1:PORT
//   BLOCKLAB_A, BLOCKLAB_B  the same plan, arm `b` slowed in B
//   BLOCKLAB_C          A's arms with `b` as the baseline
//   BLOCKLAB_ARTIFACTS  where screenshots go
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { useBrowser } from "./browser.mjs";

function need(name) {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set (host/tests/all/gate.rs sets it)`);
  return v;
}
const url = need("BLOCKLAB_URL");
const [a, b, c] = ["BLOCKLAB_A", "BLOCKLAB_B", "BLOCKLAB_C"].map(need);
const artifacts = need("BLOCKLAB_ARTIFACTS");
mkdirSync(artifacts, { recursive: true });

const browser = useBrowser({ viewport: { width: 1280, height: 900 } });

async function open(hash) {
  const page = await browser.context.newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(e.message));
  await page.goto(`${url}/${hash}`);
  return { page, errors };
}

test("the compare view shows each arm's change with its interval and the plan differences", async () => {
  const api = await (await fetch(`${url}/api/compare?a=${a}&b=${b}`)).json();
  const { page, errors } = await open(`#/compare/${a}/${b}`);
  await page.waitForSelector("#compare-changes tbody tr");
  const rows = await page.$$eval("#compare-changes tbody tr", (trs) =>
    trs.map((tr) => [...tr.querySelectorAll("td")].map((td) => td.textContent)));
  assert.equal(rows.length, api.changes.length);
  const slowed = rows.find((r) => r[1] === "b" && r[2] === "cpu_measured");
  const expected = api.changes.find((r) => r.arm === "b" && r.statistic === "cpu_measured");
  assert.ok(slowed, JSON.stringify(rows));
  // The report's one ratio format (analysis::words::ratio, the UI's fmtRatio).
  const fr = (x) => (Math.abs(x) >= 1000 ? x.toFixed(0) : Math.abs(x) >= 100 ? x.toFixed(1) : Math.abs(x) >= 0.01 ? x.toFixed(3) : x.toExponential(1));
  assert.equal(slowed[3], fr(expected.ratio));
  assert.equal(slowed[4], `[${fr(expected.ci_low)}, ${fr(expected.ci_high)}]`);
  // No other campaign of the plan is stored, so the arm's own figure has
  // no drift allowance: shown, marked, not counted, and why said once.
  assert.equal(expected.supported, false, JSON.stringify(expected));
  assert.equal(slowed[6], "worse (not counted)");
  assert.equal(slowed[7], "its own figure, no drift allowance");
  assert.match(await page.locator("#compare-not-counted").innerText(), /not counted: no allowance for the drift between campaigns/);
  const effect = rows.find((r) => r[1] === "b" && r[2] === "cpu_measured" && r[7].startsWith("effect against"));
  assert.ok(effect && !effect[6].includes("not counted"), "an effect row keeps its level without a reference");
  assert.match(await page.locator("#compare-plan-diff").innerText(), /arms\[b\]\.inject_busy_ns\s+0\s+30000/);
  assert.equal(await page.locator("#compare-warnings").count(), 0);
  await page.screenshot({ path: join(artifacts, "compare-changes.png"), fullPage: true });
  assert.deepEqual(errors, []);
});

test("the compare view warns at the top when the baselines differ", async () => {
  const { page, errors } = await open(`#/compare/${a}/${c}`);
  await page.waitForSelector("#compare-warnings");
  assert.match(await page.locator("#compare-warnings").innerText(), /the baselines differ/);
  // Above the change table, not under it.
  const order = await page.evaluate(() => {
    const w = document.getElementById("compare-warnings"), t = document.getElementById("compare-changes");
    return w.compareDocumentPosition(t) & Node.DOCUMENT_POSITION_FOLLOWING;
  });
  assert.ok(order, "the warning comes before the table");
  await page.screenshot({ path: join(artifacts, "compare-baseline-warning.png"), fullPage: true });
  assert.deepEqual(errors, []);
});

test("the compare view opens with how many rows changed against chance, and can show changed rows only", async () => {
  const api = await (await fetch(`${url}/api/compare?a=${a}&b=${b}`)).json();
  const { page, errors } = await open(`#/compare/${a}/${b}`);
  await page.waitForSelector("#compare-summary");
  assert.equal(await page.locator("#compare-summary-text").innerText(), api.summary.text);
  // Counted: the rows whose interval keeps its level.
  assert.equal(api.summary.rows + api.summary.not_counted, api.changes.length);
  assert.equal(api.summary.rows, api.changes.filter((r) => r.supported).length);
  assert.match(api.summary.text, new RegExp(`^${api.summary.worse + api.summary.better} of ${api.summary.rows} rows changed`));
  assert.match(await page.locator("#compare-drift").innerText(), /unpaired/);
  // Before the change table.
  const first = await page.evaluate(() =>
    document.getElementById("compare-summary").compareDocumentPosition(document.getElementById("compare-changes")) & Node.DOCUMENT_POSITION_FOLLOWING);
  assert.ok(first, "the summary comes before the table");
  const visible = () => page.$$eval("#compare-changes tbody tr", (trs) => trs.filter((t) => !t.hidden).length);
  assert.equal(await visible(), api.changes.length);
  await page.check("#changed-only");
  const changed = api.changes.filter((r) => r.direction !== "no_detectable_change").length;
  assert.ok(changed > 0 && changed < api.changes.length, `${changed} of ${api.changes.length} changed`);
  assert.equal(await visible(), changed);
  await page.uncheck("#changed-only");
  assert.equal(await visible(), api.changes.length);
  assert.deepEqual(errors, []);
});
