// Browser tests of blocklab's web UI in Debian's headless Chromium, driven by
// playwright-core. Run by host/tests/all/web.rs against a daemon it started:
//   BLOCKLAB_URL        http://127.0.0.1:PORT
//   BLOCKLAB_TOKEN      the daemon's token (for setting up, never typed into the UI)
//   BLOCKLAB_FINISHED   id of a finished campaign
//   BLOCKLAB_RUNNING_PLAN  a plan (TOML) long enough to watch progress
//   BLOCKLAB_ARTIFACTS  where screenshots go (each page at 1280 and 420 px)
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { axeViolations, overflow, overflowing, useBrowser } from "./browser.mjs";

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

const foreign = [];
let context;
useBrowser({ viewport: { width: 1280, height: 900 } }, (launched) => {
  context = launched;
  // Nothing may be fetched from anywhere but the daemon.
  context.on("request", (r) => { if (!r.url().startsWith(url) && !r.url().startsWith("data:")) foreign.push(r.url()); });
});

async function open(hash, width = 1280) {
  const page = await context.newPage();
  await page.setViewportSize({ width, height: 900 });
  const errors = [];
  page.on("pageerror", (e) => errors.push(e.message));
  // A page's own files (favicon included) are all there: no 404 on load.
  page.on("response", (r) => {
    if (r.status() >= 400 && !new URL(r.url()).pathname.startsWith("/api/")) errors.push(`${r.status()} ${r.url()}`);
  });
  await page.goto(`${url}/${hash}`);
  return { page, errors };
}

// Waits (bounded) for a condition the test itself observes.
async function until(condition, what, ms = 30_000) {
  const end = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
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
        low: +m.dataset.ciLow, high: +m.dataset.ciHigh, weak: m.dataset.weak === "true",
        line: m.previousElementSibling.getAttribute("class") })));
    const effects = report.effects.filter((e) => e.statistic === stat);
    assert.equal(marks.length, effects.length, `${stat}: one mark per effect`);
    assert.equal(marks.length, workloads.length * arms.length, `${stat}: one mark per workload × arm`);
    for (const e of effects) {
      const m = marks.filter((x) => x.workload === e.workload && x.arm === e.arm);
      assert.equal(m.length, 1, `${stat} ${e.workload} ${e.arm}`);
      assert.deepEqual([m[0].ratio, m[0].low, m[0].high], [e.ratio, e.ci_low, e.ci_high]);
      // The effects' one weak rule, drawn: a dashed interval line.
      assert.equal(typeof e.weak, "boolean", `${stat} ${e.workload} ${e.arm}: the API says whether it is weak`);
      assert.equal(m[0].weak, e.weak);
      assert.equal(m[0].line.split(" ").includes("weak"), e.weak, m[0].line);
    }
  }
  // The line at 1 and the reading direction are on the plot.
  assert.equal(await page.locator('svg.forest[data-statistic="mean_latency"] line.one').count(), 1);
  assert.match(await page.locator("#forests h3").first().innerText(), /below 1 is faster\/cheaper/);
  // The absolute medians: one row per workload × arm (baseline included).
  assert.equal(await page.locator("#absolutes tbody tr").count(), workloads.length * report.plan.arms.length);
  // Where the time goes: one row per workload × arm × kv operation of the
  // API's report, with its calls per transaction and a bar.
  assert.ok((report.operations || []).length > 0, "the runs recorded their kv operations");
  const opRows = await page.$$eval("#operations tbody tr", (rs) => rs.map((r) => ({ workload: r.dataset.workload,
    arm: r.dataset.arm, op: r.dataset.op, perTxn: r.querySelector("td[data-per-txn]").dataset.perTxn,
    bar: r.querySelectorAll(".op-bar").length })));
  assert.equal(opRows.length, report.operations.length, "one row per operation row of the report");
  for (const o of report.operations) {
    const row = opRows.find((r) => r.workload === o.workload && r.arm === o.arm && r.op === o.op);
    assert.ok(row, `${o.workload} ${o.arm} ${o.op}`);
    assert.equal(+row.perTxn, o.per_txn);
    assert.equal(row.bar, 1);
  }
  // One history link per workload × non-baseline arm, on the campaign's
  // testbed, each set apart from the next by a separator.
  const links = await page.$$eval(".history-links a", (as) => as.map((a) => ({ text: a.textContent, href: a.getAttribute("href"),
    sep: a.nextSibling ? a.nextSibling.textContent : null })));
  assert.equal(links.length, workloads.length * arms.length);
  links.forEach((l, i) => assert.equal(l.sep, i + 1 < links.length ? " | " : null, `separator after ${l.text}`));
  const first = new URLSearchParams(links[0].href.split("?")[1]);
  assert.equal(first.get("testbed"), report.campaign.testbed);
  [historyWorkload, historyArm] = [first.get("workload"), first.get("arm")];
  assert.match(await page.locator(".history-links").innerText(), /· \S+ \| \S+ ·/);
  // Provenance shows the plan hash and the seed.
  const provenance = await page.locator("#provenance").innerText();
  assert.ok(provenance.includes(report.hash), "plan hash shown");
  assert.ok(provenance.includes(String(report.plan.seed)), "seed shown");
  // The measure and the orders' balance in the report's own words, not the plan's JSON.
  assert.match(report.design.measure, /measured transactions/);
  assert.ok(provenance.includes(report.design.measure) && provenance.includes(report.design.orders), provenance);
  assert.ok(!provenance.includes('{"mode"'), "no raw JSON in the provenance");
  // The campaign profiled block 1: each flamegraph is linked in its own run's
  // row (the shown workload's runs), opening in a new tab, never inline.
  const profiled = report.runs.filter((r) => r.profile);
  assert.equal(profiled.length, workloads.length * report.plan.arms.length);
  const shown = await page.inputValue("#block-workload");
  assert.equal(await page.locator("#runs tbody tr").count(), report.runs.filter((r) => r.workload === shown).length);
  const withSvg = profiled.filter((r) => r.workload === shown && r.profile.svg_bytes > 0);
  assert.ok(withSvg.length > 0, "some profiled run has samples");
  assert.equal(await page.locator("#runs a.flamegraph").count(), withSvg.length);
  for (const r of withSvg) {
    const link = page.locator(`#runs tr[data-slot="${r.slot}"] a.flamegraph`);
    assert.equal(await link.getAttribute("href"), `/api/campaigns/${finished}/runs/${r.slot}/profile?attempt=${r.attempt}`);
    assert.equal(await link.getAttribute("target"), "_blank");
    assert.equal(await page.locator(`#runs tr[data-slot="${r.slot}"]`).getAttribute("data-arm"), r.arm);
  }
  assert.equal(await page.locator("main svg svg, main object, main iframe, main embed").count(), 0, "no flamegraph inline");
  const svg = await page.request.get(new URL(await page.locator("#runs a.flamegraph").first().getAttribute("href"), url).href);
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
  // A running campaign's results are labelled provisional.
  await page.waitForSelector("#verdicts #provisional");
  assert.match(await page.locator("#provisional").innerText(), /Provisional: the campaign is still running/);
  await page.screenshot({ path: join(artifacts, "campaign-running.png"), fullPage: true });
  // Do not wait for the rest: cancel it from the page (the run in flight
  // finishes). Cancel asks first; saying no sends nothing.
  const cancels = [];
  page.on("request", (r) => { if (r.method() === "POST" && r.url().endsWith("/cancel")) cancels.push(r.url()); });
  await page.fill("#cancel-token", token);
  const asked = [];
  page.once("dialog", async (d) => { asked.push([d.type(), d.message()]); await d.dismiss(); });
  await page.click("#cancel");
  await page.evaluate(() => 0);
  assert.equal(asked.length, 1, "cancel asks for confirmation");
  assert.equal(asked[0][0], "confirm");
  assert.match(asked[0][1], new RegExp(`Cancel campaign ${created.id} “watched”`));
  assert.deepEqual(cancels, [], "a declined confirmation sends no cancel");
  assert.notEqual((await api(`/api/campaigns/${created.id}`)).campaign.status.state, "cancelled");
  page.once("dialog", (d) => d.accept());
  await page.click("#cancel");
  await page.waitForSelector("#status .status.cancelled", { timeout: 120_000 });
  assert.equal(cancels.length, 1);
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
  // A selection that parses but matches no run of the plan (2 blocks): 400
  // naming the selection and the plan's blocks and arms.
  await page.fill("#profile", "block=9");
  await page.click("#submit");
  await page.waitForFunction(() => /matches no run/.test(document.querySelector("#submit-result").textContent));
  const refused = await result.innerText();
  assert.match(refused, /HTTP 400/);
  assert.match(refused, /`--profile block=9` matches no run of this campaign: it has blocks 1..=2/);
  assert.match(refused, /arms `a`, `b`/);
  const afterList = await api("/api/campaigns");
  assert.equal(afterList.length, before.length, "nothing was stored");
  assert.deepEqual(errors, []);
  assert.deepEqual(foreign, [], "requests to anything but the daemon");
  await page.close();
});

test("a double-click on submit queues one campaign; an edited plan is a new submission", async () => {
  const before = await api("/api/campaigns");
  const { page, errors } = await open("#/submit");
  await page.fill("#token", token);
  // Cheap to run: few transactions.
  await page.fill("#plan", (await page.inputValue("#plan")).replace("measured = 500", "measured = 50"));
  const posts = [];
  page.on("request", (r) => { if (r.method() === "POST" && new URL(r.url()).pathname === "/api/campaigns") posts.push(r); });
  await page.dblclick("#submit");
  await page.waitForSelector("#submit-result.ok, #submit-result.error");
  assert.match(await page.locator("#submit-result").innerText(), /^queued campaign \d+/);
  // The example plan's two arms are identical and it has 2 blocks: the
  // API's warnings are shown, each one.
  await until(() => posts.length >= 1, "the first post");
  const created = await (await posts[0].response()).json();
  assert.ok(created.warnings.length > 0, "the example plan draws warnings");
  assert.deepEqual(await page.$$eval("#submit-warnings li", (ls) => ls.map((l) => l.textContent)), created.warnings.map((w) => `warning: ${w}`));
  // Both clicks were sent, with one key, and answered with one campaign.
  await until(() => posts.length >= 2, "both clicks post");
  await Promise.all(posts.map((r) => r.response()));
  assert.equal(posts.length, 2, "both clicks posted");
  let list = await api("/api/campaigns");
  assert.equal(list.length, before.length + 1, "one campaign queued, not two");
  const answers = await Promise.all(posts.map(async (r) => (await (await r.response()).json()).id));
  assert.equal(answers[0], answers[1]);
  const keys = posts.map((r) => r.headers()["idempotency-key"]);
  assert.ok(keys[0] && keys[0].length >= 16, `a key is sent: ${keys[0]}`);
  assert.equal(keys[0], keys[1]);
  // An edit is a new form fill: a new key, a second campaign.
  await page.fill("#plan", (await page.inputValue("#plan")).replace("seed = 1", "seed = 2"));
  await page.click("#submit");
  await until(() => posts.length >= 3, "the third post");
  await posts[2].response();
  assert.notEqual(posts[2].headers()["idempotency-key"], keys[0]);
  list = await api("/api/campaigns");
  assert.equal(list.length, before.length + 2);
  for (const c of list.slice(before.length)) {
    await fetch(`${url}/api/campaigns/${c.id}/cancel`, { method: "POST", headers: { Authorization: `Bearer ${token}` } });
  }
  assert.deepEqual(errors, []);
  await page.close();
});

test("charts: axis titles, a legend, one x-range per section, labels inside the plot and off the marks, a log per-block plot", async () => {
  for (const width of [1280, 420]) {
    const { page, errors } = await open(`#/campaigns/${finished}`, width);
    await page.waitForSelector("#forests svg.forest .forest-mark");
    await page.waitForSelector("#block-plot canvas");
    const legend = await page.locator("#forests .legend").innerText();
    assert.match(legend, /better/); assert.match(legend, /worse/); assert.match(legend, /contains 1/);
    const plots = await page.$$eval("#forests svg.forest", (svgs) => svgs.map((s) => {
      const box = (e) => e.getBBox();
      const overlap = (a, b) => a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height;
      const w = Number(s.getAttribute("width"));
      const texts = [...s.querySelectorAll("text.row-name, text.interval-label")].map(box);
      const marks = [...s.querySelectorAll("circle.forest-mark, line.ci")].map(box);
      return {
        statistic: s.dataset.statistic, lo: s.dataset.lo, hi: s.dataset.hi, width: w,
        title: s.querySelector("text.axis-title")?.textContent || "",
        clipped: texts.filter((t) => t.x < 0 || t.x + t.width > w).length,
        onMarks: texts.filter((t) => marks.some((m) => overlap(t, m))).length,
        names: [...s.querySelectorAll("text.row-name")].map((t) => t.textContent),
        one: s.querySelector("line.one").getBoundingClientRect().left,
        lines: [...s.querySelectorAll("line.ci")].map((l) => [l.getAttribute("class"), getComputedStyle(l).stroke]),
        // A hollow (unsupported) mark's colour is its outline.
        marks: [...s.querySelectorAll("circle.forest-mark")].map((m) => [m.getAttribute("class"),
          m.classList.contains("unsupported") ? getComputedStyle(m).stroke : getComputedStyle(m).fill]),
      };
    }));
    assert.ok(plots.length >= 2, "a forest plot per statistic");
    // Ratio 1 falls at the same x in every plot of the page.
    for (const p of plots) assert.ok(Math.abs(p.one - plots[0].one) < 0.5, `${p.statistic} at ${width}px: ratio 1 at ${p.one}, not ${plots[0].one}`);
    // Each interval line has its mark's colour.
    for (const p of plots) p.lines.forEach(([cls, stroke], i) => {
      assert.equal(stroke, p.marks[i][1], `${p.statistic}: line ${cls} is coloured as its mark ${p.marks[i][0]}`);
    });
    for (const p of plots) {
      assert.match(p.title, /^ratio to builtin \(log scale/, `${p.statistic}: axis title`);
      assert.equal(p.clipped, 0, `${p.statistic} at ${width}px: no name or interval label outside the plot`);
      assert.equal(p.onMarks, 0, `${p.statistic} at ${width}px: no name or label over a mark or interval`);
      assert.deepEqual([p.lo, p.hi], [plots[0].lo, plots[0].hi], "one x-range for the section");
      assert.ok(p.width <= width, `${p.statistic}: the plot fits ${width}px`);
    }
    // The long arm name is shown (whole, or cut with its full name in a title).
    const long = (await api(`/api/campaigns/${finished}/report`)).plan.arms.find((a) => !a.baseline).name;
    assert.ok(long.length > 30, "the test campaign has a long arm name");
    assert.ok(plots[0].names.some((n) => n.includes(long) || n.endsWith("…")), plots[0].names.join(" | "));
    // Every mark says whether the sample supports its figure, as its effect
    // does; the latency distribution draws the percentiles its samples
    // cannot support (p99.99 of 3,000, the maximum) dashed, apart.
    const report = await api(`/api/campaigns/${finished}/report`);
    const marks = await page.$$eval("#forests .forest-mark", (ms) => ms.map((m) => ({ w: m.dataset.workload, a: m.dataset.arm,
      s: m.dataset.statistic, supported: m.dataset.supported, hollow: getComputedStyle(m).fill === "rgb(255, 255, 255)" })));
    for (const m of marks) {
      const e = report.effects.find((x) => x.workload === m.w && x.arm === m.a && x.statistic === m.s);
      assert.equal(m.supported, String(e.supported !== false), `${m.s} ${m.w} ${m.a}`);
      assert.equal(m.hollow, e.supported === false, `${m.s} ${m.w} ${m.a}: hollow exactly when not supported`);
    }
    assert.ok(report.effects.some((e) => e.supported === false && /not comparable/.test(e.reason)), "the builtin and wasm arms' allocations are not comparable");
    const tails = (await page.getAttribute("#latency-plot", "data-unsupported")).split(",").map(Number);
    assert.ok(tails.length > 0 && tails.every((n) => n > 0), `unsupported points per arm: ${tails}`);
    assert.match(await page.locator("#latency-plot .u-legend").innerText(), /not supported by the samples/);
    // Before the cursor is on a plot its legend names the series only: no
    // "x" series and no "--" values.
    for (const chart of ["#block-plot", "#latency-plot"]) {
      await page.waitForSelector(`${chart} .u-legend`);
      const idle = await page.locator(`${chart} .u-legend`).innerText();
      assert.ok(!/--|\bx\b/.test(idle), `${chart} legend before hovering: ${idle}`);
    }
    await page.hover("#block-plot .u-over");
    assert.match(await page.locator("#block-plot .u-legend").innerText(), /block \d+, position \d+/);
    await page.mouse.move(0, 0);
    // The per-block plot: log scale, its axis titled with the unit.
    assert.equal(await page.getAttribute("#block-plot", "data-scale"), "log");
    assert.match(await page.getAttribute("#block-plot", "data-y-label"), /^\w+ \(.+, log scale\)$/);
    await page.uncheck("#block-log");
    assert.equal(await page.getAttribute("#block-plot", "data-scale"), "linear");
    assert.deepEqual(errors, []);
    await page.close();
  }
});

test("the summary comes first: one answer per arm, a grid cell per verdict, each note once, above the fold at 1280 and 420 px", async () => {
  const report = await api(`/api/campaigns/${finished}/report`);
  const arms = [...new Set(report.verdicts.map((v) => v.arm))];
  assert.equal(report.summary.answers.length, arms.length, "one answer per arm");
  for (const width of [1280, 420]) {
    const { page, errors } = await open(`#/campaigns/${finished}`, width);
    await page.waitForSelector("#summary #grid");
    const order = await page.$$eval("#report > *", (xs) => xs.map((x) => x.id || x.tagName));
    assert.deepEqual(order.slice(0, 2), ["summary", "verdicts"], `${width}: summary, then the verdicts`);
    // The answers start on the first screen (900 px high).
    const top = await page.locator("#answers").evaluate((e) => e.getBoundingClientRect().top);
    assert.ok(top < 900, `${width}: the answers start ${top} px down`);
    assert.deepEqual(await page.$$eval("#answers li", (ls) => ls.map((l) => l.textContent)), report.summary.answers.map((a) => a.text));
    // One cell per verdict, coloured by its direction, its interval on hover.
    const cells = await page.$$eval("#grid td.grid-cell", (cs) => cs.map((c) => ({ w: c.dataset.workload, a: c.dataset.arm,
      d: c.dataset.direction, title: c.title, bg: getComputedStyle(c).backgroundColor })));
    assert.equal(cells.length, report.verdicts.length);
    for (const v of report.verdicts) {
      const c = cells.find((x) => x.w === v.workload && x.a === v.arm);
      assert.ok(c, `${v.workload} ${v.arm}`);
      assert.equal(c.d, v.direction);
      // The report's one ratio format (analysis::words::ratio).
      const r3 = (x) => (Math.abs(x) >= 1000 ? x.toFixed(0) : Math.abs(x) >= 100 ? x.toFixed(1) : Math.abs(x) >= 0.01 ? x.toFixed(3) : x.toExponential(1));
      if (v.blocks > 1) assert.ok(c.title.includes(`[${r3(v.lo)}, ${r3(v.hi)}]`), c.title);
    }
    const colours = new Map(cells.map((c) => [c.d, c.bg]));
    assert.equal(new Set(colours.values()).size, colours.size, "each direction its own colour");
    // Each note once, and no verdict repeats a note's words.
    assert.equal(await page.locator("#notes li").count(), report.summary.notes.length);
    const verdictText = await page.locator("#verdicts").innerText();
    for (const n of report.summary.notes) assert.ok(!verdictText.includes(n.text), `note ${n.number} repeated under a verdict`);
    await page.screenshot({ path: join(artifacts, `campaign-summary-${width}.png`) });
    assert.deepEqual(errors, []);
    await page.close();
  }
});

test("at 420 px a table wider than the screen says so, and no provenance key is broken mid-word", async () => {
  const { page, errors } = await open(`#/campaigns/${finished}`, 420);
  await page.waitForSelector("#absolutes");
  await page.waitForSelector("#provenance .kv");
  const boxes = await page.$$eval("#report .scroll", (bs) => bs.map((b) => ({ label: b.getAttribute("aria-label"),
    over: b.scrollWidth > b.clientWidth + 1, cls: b.classList.contains("overflows"),
    hint: !b.querySelector(":scope > .scroll-hint").hidden })));
  const medians = boxes.find((b) => b.label === "absolute medians");
  assert.ok(medians && medians.over, "the absolute medians are wider than 420 px");
  for (const b of boxes) assert.deepEqual([b.cls, b.hint], [b.over, b.over], `${b.label}: the cue is shown exactly when it overflows`);
  // Each key of the provenance tables is on one line.
  const broken = await page.$$eval("#provenance .kv td:first-child", (tds) => tds.filter((td) => {
    const r = document.createRange(); r.selectNodeContents(td);
    return new Set([...r.getClientRects()].map((x) => Math.round(x.top))).size > 1;
  }).map((td) => td.textContent));
  assert.deepEqual(broken, []);
  assert.deepEqual(errors, []);
  await page.close();
});

test("verdicts follow the summary, weak ones greyed and labelled with their own warnings and their notes beside them", async (t) => {
  const report = await api(`/api/campaigns/${finished}/report`);
  const { page, errors } = await open(`#/campaigns/${finished}`);
  await page.waitForSelector("#verdicts");
  // Above the effects, right under the summary.
  const order = await page.$$eval("#report > *", (xs) => xs.map((x) => x.id || x.tagName));
  assert.equal(order[1], "verdicts");
  if (!report.verdicts) {
    assert.match(await page.locator("#verdicts").innerText(), /no verdicts/);
    await page.close();
    t.skip("the report API has no `verdicts` (the results branch is not merged)");
    return;
  }
  assert.ok(report.verdicts.length > 0);
  assert.equal(await page.locator("#verdicts li.verdict").count(), report.verdicts.length);
  for (const v of report.verdicts) {
    const li = page.locator(`#verdicts li.verdict[data-workload="${v.workload}"][data-arm="${v.arm}"][data-statistic="${v.statistic}"]`);
    assert.equal(await li.count(), 1, `${v.workload} ${v.arm}`);
    const text = await li.innerText();
    assert.ok(text.includes(v.text), text);
    assert.equal((await li.getAttribute("class")).includes("weak"), !!v.weak);
    if (v.weak) assert.match(text, /weak evidence \(\d+ of \d+ blocks\)/i);
    for (const w of v.warnings) assert.ok(text.includes(w), `warning beside the verdict: ${w}`);
    for (const n of v.notes || []) assert.ok(text.includes(`note ${n}`), `note ${n} named beside the verdict`);
  }
  // Every verdict has 2 blocks of 2: the weak-evidence warning is one note for all.
  const weakNote = report.summary.notes.find((n) => n.caveat === "weak-evidence");
  assert.ok(weakNote && report.verdicts.every((v) => v.notes.includes(weakNote.number)), JSON.stringify(report.summary.notes));
  // Two blocks are too few: this campaign's verdicts are weak, and greyed.
  assert.ok(report.verdicts.every((v) => v.weak), "2 blocks give weak evidence");
  const colour = await page.locator("#verdicts li.verdict.weak").first().evaluate((e) => getComputedStyle(e).color);
  assert.equal(colour, "rgb(102, 112, 133)", "greyed");
  assert.equal(report.provisional, false);
  assert.equal(await page.locator("#provisional").count(), 0, "a finished campaign is not provisional");
  assert.deepEqual(errors, []);
  await page.close();
});

test("the reference arm can be chosen and the report is recomputed against it", async (t) => {
  const report = await api(`/api/campaigns/${finished}/report`);
  const other = report.plan.arms.find((a) => !a.baseline).name;
  const base = report.plan.arms.find((a) => a.baseline).name;
  const against = await api(`/api/campaigns/${finished}/report?baseline=${encodeURIComponent(other)}`);
  if (!against.effects.some((e) => e.arm === base)) {
    t.skip("the report API ignores `?baseline=` (the results branch is not merged)");
    return;
  }
  const { page, errors } = await open(`#/campaigns/${finished}`);
  await page.waitForSelector('svg.forest[data-statistic="mean_latency"] .forest-mark');
  const requested = page.waitForRequest((r) => r.url().includes(`/report?baseline=${encodeURIComponent(other)}`));
  await page.selectOption("#baseline", other);
  await requested;
  assert.ok(page.url().endsWith(`#/campaigns/${finished}?baseline=${encodeURIComponent(other)}`), page.url());
  const effects = against.effects.filter((e) => e.statistic === "mean_latency");
  assert.ok(effects.length > 0 && effects.every((e) => e.arm === base),
    `the API recomputes against ${other} (results branch): ${JSON.stringify(effects.map((e) => [e.arm, e.baseline]))}`);
  const mark = page.locator(`svg.forest[data-statistic="mean_latency"] .forest-mark[data-arm="${base}"]`);
  await mark.first().waitFor();
  assert.equal(await mark.count(), effects.length);
  for (const e of effects) {
    const m = page.locator(`svg.forest[data-statistic="mean_latency"] .forest-mark[data-arm="${base}"][data-workload="${e.workload}"]`);
    assert.equal(Number(await m.getAttribute("data-ratio")), e.ratio);
  }
  assert.match(await page.locator("#forests h3").first().innerText(), new RegExp(`ratio arm/${other}`));
  assert.equal(await page.inputValue("#baseline"), other);
  assert.deepEqual(errors, []);
  await page.close();
});

test("a list refresh still in flight never replaces the page opened after it", async () => {
  const { page, errors } = await open(`#/campaigns/${finished}`);
  await page.waitForSelector("#forests svg.forest");
  const targets = [
    ["#/submit", "Submit a plan"],
    [`#/campaigns/${finished}`, `Campaign ${finished}`],
    ["#/compare", "Compare two campaigns"],
  ];
  for (const [hash, title] of targets) {
    // The next list request is held, then answered 400 ms late (an SSH tunnel).
    let release, arrived;
    const held = new Promise((r) => { release = r; });
    const seen = new Promise((r) => { arrived = r; });
    const settled = new Promise((resolve) => {
      const done = (r) => { if (new URL(r.url()).pathname === "/api/campaigns") { page.off("requestfinished", done); page.off("requestfailed", done); resolve(); } };
      page.on("requestfinished", done); page.on("requestfailed", done);
    });
    await page.route((u) => u.pathname === "/api/campaigns", async (route) => {
      arrived();
      await held;
      await new Promise((r) => setTimeout(r, 400));
      await route.continue().catch(() => {});
    }, { times: 1 });
    await page.click('header nav a[href="#/"]');
    await seen;
    // Open another page while the list is still on its way.
    await page.evaluate((h) => { location.hash = h; }, hash);
    await page.waitForFunction((t) => document.querySelector("main h1")?.textContent.startsWith(t), title);
    release();
    await settled;
    await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0))));
    assert.ok((await page.locator("main h1").innerText()).startsWith(title), `${hash}: still shown after the late list`);
    assert.equal(await page.locator("#campaigns").count(), 0, `${hash}: the late list did not replace it`);
    assert.ok(page.url().endsWith(hash));
  }
  assert.deepEqual(errors, []);
  await page.close();
});

// The series the finished campaign's first history link names.
let historyWorkload, historyArm;

test("list, campaign, compare, submit and history fit 1280 and 420 px and have no serious accessibility violations", async () => {
  const pages = [
    ["list", "#/", "#campaigns tbody tr"],
    ["campaign", `#/campaigns/${finished}`, "#latency-plot canvas"],
    ["compare", `#/compare/${finished}/${finished}`, "#compare svg.forest .forest-mark"],
    ["submit", "#/submit", "#plan"],
    // Opened directly, not by a link: history.js must be loaded before the first route.
    ["history", `#/history?workload=${encodeURIComponent(historyWorkload)}&arm=${encodeURIComponent(historyArm)}`, "#history-chart .point"],
  ];
  const problems = [];
  for (const [name, hash, ready] of pages) {
    for (const width of [1280, 420]) {
      const { page, errors } = await open(hash, width);
      await page.waitForSelector(ready);
      if (name === "campaign") await page.waitForSelector("#block-plot canvas");
      // Every colour a forest plot draws in is one its legend explains.
      if (name === "compare" || name === "campaign") {
        const { swatches, drawn } = await page.$eval("#main", (m) => ({
          swatches: [...m.querySelectorAll(".legend .swatch")].map((s) => getComputedStyle(s).backgroundColor),
          drawn: [...m.querySelectorAll("svg.forest .forest-mark")].map((x) => getComputedStyle(x).fill)
            .concat([...m.querySelectorAll("svg.forest line.ci")].map((x) => getComputedStyle(x).stroke)),
        }));
        for (const colour of new Set(drawn)) if (!swatches.includes(colour)) problems.push(`${name} at ${width}px: ${colour} drawn but not in the legend`);
      }
      await page.screenshot({ path: join(artifacts, `${name}-${width}.png`), fullPage: true });
      const over = await overflow(page);
      if (over > 0) problems.push(`${name} at ${width}px overflows by ${over}px: ${(await overflowing(page)).join(" | ")}`);
      // The history's axis titles (the y one names the arm, here a long
      // one) lie inside the chart, not cut off by its edges.
      if (name === "history") {
        const outside = await page.$eval("#history-chart", (s) => {
          const box = s.getBoundingClientRect();
          return [...s.querySelectorAll("text.axis-title")].map((t) => t.getBoundingClientRect())
            .filter((r) => r.top < box.top - 1 || r.bottom > box.bottom + 1 || r.left < box.left - 1 || r.right > box.right + 1)
            .map((r) => `${r.left},${r.top}-${r.right},${r.bottom}`);
        });
        if (outside.length) problems.push(`history at ${width}px: axis titles outside the chart: ${outside.join("; ")}`);
      }
      for (const v of await axeViolations(page)) problems.push(`${name} at ${width}px: ${v}`);
      if (errors.length) problems.push(`${name} at ${width}px: ${errors.join("; ")}`);
      await page.close();
    }
  }
  assert.deepEqual(problems, []);
  assert.deepEqual(foreign, [], "requests to anything but the daemon");
});
