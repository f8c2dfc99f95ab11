// Browser tests of blocklab's web UI in Debian's headless Chromium, driven by
// playwright-core. Run by host/tests/all/web.rs against a daemon it started:
//   BLOCKLAB_URL        http://127.0.0.1:PORT
//   BLOCKLAB_TOKEN      the daemon's token (for setting up, never typed into the UI)
//   BLOCKLAB_FINISHED   id of a finished campaign
//   BLOCKLAB_RUNNING_PLAN  a plan (TOML) long enough to watch progress
//   BLOCKLAB_ARTIFACTS  where screenshots go
import { test, after, before } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, mkdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";

const url = need("BLOCKLAB_URL");
const token = need("BLOCKLAB_TOKEN");
const finished = need("BLOCKLAB_FINISHED");
const runningPlan = readFileSync(need("BLOCKLAB_RUNNING_PLAN"), "utf8");
const artifacts = need("BLOCKLAB_ARTIFACTS");
mkdirSync(artifacts, { recursive: true });

function need(name) {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set (host/tests/all/web.rs sets it)`);
  return v;
}

async function api(path, options) {
  const r = await fetch(url + path, options);
  const body = await r.json();
  if (!r.ok) throw new Error(`${path}: HTTP ${r.status}: ${body.error}`);
  return body;
}

let context, profile;
const foreign = [];

before(async () => {
  profile = mkdtempSync(join(tmpdir(), "blocklab-chromium-"));
  context = await chromium.launchPersistentContext(profile, {
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    headless: true,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
      "--disable-component-update", "--disable-sync", "--no-first-run"],
    viewport: { width: 1280, height: 900 },
  });
  // Nothing may be fetched from anywhere but the daemon.
  context.on("request", (r) => { if (!r.url().startsWith(url) && !r.url().startsWith("data:")) foreign.push(r.url()); });
});

after(async () => {
  await context?.close();
  if (profile) rmSync(profile, { recursive: true, force: true });
});

async function open(hash) {
  const page = await context.newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(e.message));
  await page.goto(`${url}/${hash}`);
  return { page, errors };
}

test("the page of a finished campaign shows one forest-plot mark per workload × arm with the API's values", async () => {
  const report = await api(`/api/campaigns/${finished}/report`);
  const { page, errors } = await open(`#/campaigns/${finished}`);
  await page.waitForSelector('svg.forest[data-statistic="mean_latency"] .forest-mark');
  await page.waitForSelector("#latency-plot canvas");
  const arms = report.plan.arms.filter((a) => !a.baseline).map((a) => a.name);
  const workloads = report.plan.workloads.map((w) => w.name);
  const statistics = [...new Set(report.effects.map((e) => e.statistic))];
  assert.ok(statistics.includes("mean_latency"));
  for (const stat of statistics) {
    const marks = await page.$$eval(`svg.forest[data-statistic="${stat}"] .forest-mark`, (ms) =>
      ms.map((m) => ({ workload: m.dataset.workload, arm: m.dataset.arm, ratio: +m.dataset.ratio,
        low: +m.dataset.ciLow, high: +m.dataset.ciHigh })));
    const effects = report.effects.filter((e) => e.statistic === stat);
    assert.equal(marks.length, effects.length, `${stat}: one mark per effect`);
    assert.equal(marks.length, workloads.length * arms.length, `${stat}: one mark per workload × arm`);
    for (const e of effects) {
      const m = marks.filter((x) => x.workload === e.workload && x.arm === e.arm);
      assert.equal(m.length, 1, `${stat} ${e.workload} ${e.arm}`);
      assert.deepEqual([m[0].ratio, m[0].low, m[0].high], [e.ratio, e.ci_low, e.ci_high]);
    }
  }
  // The line at 1 and the reading direction are on the plot.
  assert.equal(await page.locator('svg.forest[data-statistic="mean_latency"] line.one').count(), 1);
  assert.match(await page.locator("#forests h3").first().innerText(), /below 1 is faster\/cheaper/);
  // The absolute medians: one row per workload × arm (baseline included).
  assert.equal(await page.locator("#absolutes tbody tr").count(), workloads.length * report.plan.arms.length);
  // Provenance shows the plan hash and the seed.
  const provenance = await page.locator("#provenance").innerText();
  assert.ok(provenance.includes(report.hash), "plan hash shown");
  assert.ok(provenance.includes(String(report.plan.seed)), "seed shown");
  // The campaign profiled block 1: a flamegraph link per arm and workload.
  const profiled = report.runs.filter((r) => r.profile);
  assert.equal(profiled.length, workloads.length * report.plan.arms.length);
  const links = page.locator("#profiles a");
  assert.equal(await links.count(), profiled.filter((r) => r.profile.svg_bytes > 0).length);
  assert.ok(await links.count() > 0, "some profiled run has samples");
  const svg = await page.request.get(new URL(await links.first().getAttribute("href"), url).href);
  assert.equal(svg.headers()["content-type"], "image/svg+xml");
  assert.match(await svg.text(), /<svg[\s\S]*samples/);
  await page.waitForSelector("#block-plot canvas");
  await page.screenshot({ path: join(artifacts, "campaign-finished.png"), fullPage: true });
  assert.deepEqual(errors, []);
  await page.close();
});

// Set when the test runs as root: a finished campaign whose server ran in a
// network namespace, its arms behind an unshaped and a 10 Mbit/s link.
const netns = process.env.BLOCKLAB_NETNS_CAMPAIGN;

test("a campaign whose server ran in a namespace shows each arm's link, its counters and the tc commands",
  { skip: netns ? false : "BLOCKLAB_NETNS_CAMPAIGN is not set (namespaces need root)" }, async () => {
    const report = await api(`/api/campaigns/${netns}/report`);
    const { page, errors } = await open(`#/campaigns/${netns}`);
    await page.waitForSelector("#network tbody tr");
    assert.equal(report.links.length, report.plan.arms.length);
    for (const l of report.links) {
      const text = await page.locator(`#network tr[data-arm="${l.arm}"]`).innerText();
      assert.ok(text.includes(l.link), `${l.arm}: link ${l.link} in ${text}`);
      assert.ok(text.includes(Number(l.overlimits).toLocaleString("en")), `${l.arm}: overlimits in ${text}`);
    }
    const commands = await page.locator("#network pre").textContent();
    assert.match(commands, /^ip netns add blk-/);
    assert.match(commands, /tc qdisc replace dev blk-\S+ root tbf rate 10mbit/);
    assert.deepEqual(errors, []);
    await page.close();
  });

// Set when the Go peers are built: a finished campaign with a process arm
// (grpc-go) beside blocklab's builtin client.
const native = process.env.BLOCKLAB_PROCESS_CAMPAIGN;

test("a process arm is shown like any other arm, with its program named",
  { skip: native ? false : "BLOCKLAB_PROCESS_CAMPAIGN is not set (the Go peers are not built)" }, async () => {
    const report = await api(`/api/campaigns/${native}/report`);
    const { page, errors } = await open(`#/campaigns/${native}`);
    await page.waitForSelector('svg.forest[data-statistic="mean_latency"] .forest-mark');
    const arm = report.plan.arms.find((a) => a.client);
    const mark = page.locator(`svg.forest[data-statistic="mean_latency"] .forest-mark[data-arm="${arm.name}"]`);
    assert.equal(await mark.count(), 1, "one mark for the process arm");
    const effect = report.effects.find((e) => e.arm === arm.name && e.statistic === "mean_latency");
    assert.equal(Number(await mark.getAttribute("data-ratio")), effect.ratio);
    assert.match(await page.locator("#provenance").innerText(), new RegExp(`${arm.name} \\(process: go-ingest\\)`));
    assert.ok(report.runs.filter((r) => r.arm === arm.name).every((r) => r.status === "ok" && r.plugin === "process: go-ingest"));
    assert.equal(await page.locator("#absolutes tbody tr").count(), report.plan.arms.length);
    await page.screenshot({ path: join(artifacts, "campaign-process-arm.png"), fullPage: true });
    assert.deepEqual(errors, []);
    await page.close();
  });

test("progress updates arrive while a campaign runs", async () => {
  const created = await api("/api/campaigns", {
    method: "POST", body: runningPlan,
    headers: { "Content-Type": "application/toml", Authorization: `Bearer ${token}` },
  });
  const { page, errors } = await open(`#/campaigns/${created.id}`);
  await page.waitForSelector("#progress");
  await page.evaluate(() => { window.__notReloaded = true; });
  const start = Number(await page.getAttribute("#progress", "data-finished"));
  // Two successive updates pushed over /api/events, without reloading.
  for (const target of [start + 1, start + 2]) {
    await page.waitForFunction((t) => Number(document.querySelector("#progress").dataset.finished) >= t,
      target, { timeout: 120_000 });
  }
  assert.equal(await page.evaluate(() => window.__notReloaded), true);
  const text = await page.locator("#progress-text").innerText();
  assert.match(text, new RegExp(`/${created.total_runs} runs`));
  await page.screenshot({ path: join(artifacts, "campaign-running.png"), fullPage: true });
  // Do not wait for the rest: cancel it (the run in flight finishes).
  await api(`/api/campaigns/${created.id}/cancel`, { method: "POST", headers: { Authorization: `Bearer ${token}` } });
  await page.waitForSelector("#status .status.cancelled", { timeout: 120_000 });
  assert.deepEqual(errors, []);
  await page.close();
});

test("a submit without the token is refused and says why", async () => {
  const before = await api("/api/campaigns");
  const { page, errors } = await open("#/submit");
  await page.fill("#token", "");
  await page.click("#submit");
  const result = page.locator("#submit-result.error");
  await result.waitFor();
  const message = await result.innerText();
  assert.match(message, /HTTP 401/);
  assert.match(message, /needs the daemon's token/);
  assert.match(message, /Authorization: Bearer TOKEN/);
  assert.match(message, /\/token`/, "names the token file");
  await page.screenshot({ path: join(artifacts, "submit-refused.png"), fullPage: true });
  // With the token, a profile selection that selects nothing: 400, saying what is accepted.
  await page.fill("#token", token);
  await page.fill("#profile", "blocks=1");
  await page.click("#submit");
  await page.waitForFunction(() => /HTTP 400/.test(document.querySelector("#submit-result").textContent));
  assert.match(await result.innerText(), /`block=N`/);
  const afterList = await api("/api/campaigns");
  assert.equal(afterList.length, before.length, "nothing was stored");
  assert.deepEqual(errors, []);
  assert.deepEqual(foreign, [], "requests to anything but the daemon");
  await page.close();
});
