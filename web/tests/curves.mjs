// Browser check of the latency–throughput curves (web/curves.js), run by
// host/tests/all/rate_sweep.rs against a daemon whose store holds the
// reduced examples/rate-sweep.toml campaign:
//   BLOCKLAB_URL        http://127.0.0.1:PORT
//   BLOCKLAB_SWEEP      the swept campaign's id
//   BLOCKLAB_ARTIFACTS  where screenshots go (the page at 1280 and 420 px)
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, readFileSync } from "node:fs";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { useBrowser } from "./browser.mjs";

const url = process.env.BLOCKLAB_URL;
const sweep = process.env.BLOCKLAB_SWEEP;
const artifacts = process.env.BLOCKLAB_ARTIFACTS;
if (!url || !sweep || !artifacts) throw new Error("BLOCKLAB_URL, BLOCKLAB_SWEEP and BLOCKLAB_ARTIFACTS are set by host/tests/all/rate_sweep.rs");
mkdirSync(artifacts, { recursive: true });
const axeSource = readFileSync(join(dirname(fileURLToPath(import.meta.url)), "node_modules/axe-core/axe.min.js"), "utf8");

const browser = useBrowser();

async function open(width) {
  const page = await browser.context.newPage();
  await page.setViewportSize({ width, height: 900 });
  const errors = [];
  page.on("pageerror", (e) => errors.push(e.message));
  // CSP refusals (an inline style, say) are console errors, not page errors.
  page.on("console", (m) => { if (m.type() === "error" && m.text().includes("Content Security Policy")) errors.push(m.text()); });
  page.on("response", (r) => { if (r.status() === 404 && !r.url().endsWith("/favicon.ico")) errors.push(`404: ${r.url()}`); });
  await page.goto(`${url}/#/campaigns/${sweep}`);
  await page.waitForSelector("#curves svg.curve .curve-point");
  return { page, errors };
}

test("a swept campaign's page draws one curve per arm per workload with the report's points, whiskers and ratios", async () => {
  const report = await (await fetch(`${url}/api/campaigns/${sweep}/report`)).json();
  assert.ok(report.curves.length > 0, "the report has curves");
  const { page, errors } = await open(1280);
  const bases = [...new Set(report.curves.map((c) => c.workload))];
  const charts = await page.$$eval("#curves svg.curve", (ss) => ss.map((s) => ({ workload: s.dataset.workload,
    scale: s.dataset.xScale, label: s.getAttribute("aria-label"),
    titles: [...s.querySelectorAll(".axis-title")].map((t) => t.textContent) })));
  assert.deepEqual(charts.map((c) => c.workload), bases);
  for (const base of bases) {
    const curves = report.curves.filter((c) => c.workload === base);
    const chart = charts.find((c) => c.workload === base);
    const rates = curves.flatMap((c) => c.points.map((p) => p.offered_per_s));
    const span = Math.max(...rates) / Math.min(...rates);
    assert.equal(chart.scale, span > 10 ? "log" : "linear", `${base}: x scale for a ${span}× span`);
    assert.ok(chart.titles.some((t) => t.startsWith("offered rate (txn/s")), chart.titles.join(" | "));
    assert.ok(chart.titles.includes("p99 latency (µs)"), chart.titles.join(" | "));
    const sel = `#curves svg.curve[data-workload="${base}"]`;
    // The plan's p99 bound as a dashed line, labelled.
    const bound = await page.$eval(`${sel} .slo-line`, (l) => +l.dataset.maxUs);
    assert.equal(bound, report.plan.measure.slo.max_ms * 1000);
    assert.equal(await page.$eval(`${sel} .slo-label`, (t) => t.textContent), `SLO: p99 ≤ ${report.plan.measure.slo.max_ms} ms`);
    // One series per arm, in the plan's order, each with its legend entry.
    const series = await page.$$eval(`${sel} .curve-series`, (gs) => gs.map((g) => g.dataset.arm));
    assert.deepEqual(series, curves.map((c) => c.arm));
    assert.deepEqual(series, report.plan.arms.map((a) => a.name));
    const legend = await page.$$eval(`#curves .curve-legend[data-workload="${base}"] .legend-item`, (is) => is.map((i) => i.textContent));
    assert.deepEqual(legend, series);
    for (const c of curves) {
      const marks = await page.$$eval(`${sel} .curve-series[data-arm="${c.arm}"] .curve-point`, (ms) => ms.map((m) => ({
        offered: +m.dataset.offered, p99: +m.dataset.p99, lo: +m.dataset.lo, hi: +m.dataset.hi, cy: +m.getAttribute("cy") })));
      assert.deepEqual(marks.map((m) => [m.offered, m.p99, m.lo, m.hi]),
        c.points.map((p) => [p.offered_per_s, p.p99_latency_us.median, p.p99_latency_us.lo, p.p99_latency_us.hi]), `${base} ${c.arm}`);
      // Whiskers span the interval around each point (SVG y grows downwards).
      const whiskers = await page.$$eval(`${sel} .curve-series[data-arm="${c.arm}"] .whisker`, (ls) => ls.map((l) => [+l.getAttribute("y1"), +l.getAttribute("y2")]));
      assert.equal(whiskers.length, c.points.length);
      whiskers.forEach(([ylo, yhi], i) => assert.ok(ylo >= marks[i].cy - 1e-6 && yhi <= marks[i].cy + 1e-6, `${c.arm} whisker ${i}`));
      // Each point says whether the p99 it draws is supported, as the statistic does.
      const p99 = report.statistics.find((st) => st.name === "p99_latency");
      const said = await page.$$eval(`${sel} .curve-series[data-arm="${c.arm}"] .curve-point`, (ps) => ps.map((p) => p.dataset.supported));
      assert.deepEqual(said, c.points.map(() => String(p99.supported !== false)));
      // A whisker from fewer than 5 blocks is marked weak, as the paired ratio at that rate is.
      const weak = await page.$$eval(`${sel} .curve-series[data-arm="${c.arm}"] .whisker`, (ls) => ls.map((l) => l.classList.contains("weak")));
      assert.deepEqual(weak, c.points.map((p) => p.p99_latency_us.weak));
      assert.deepEqual(weak, c.points.map((p) => p.p99_latency_us.blocks < 5));
      const d = await page.$eval(`${sel} .curve-series[data-arm="${c.arm}"] .curve-line`, (p) => p.getAttribute("d"));
      assert.equal((d.match(/[ML]/g) || []).length, c.points.length, `${c.arm}: a line through every point`);
    }
    // The paired p99 ratio at each rate: the report's effect of that rate's workload.
    const cells = await page.$$eval(`#curves table.curve-ratios[data-workload="${base}"] td[data-ratio]`, (ts) => ts.map((t) => ({
      offered: +t.closest("tr").dataset.offered, arm: t.dataset.arm, ratio: +t.dataset.ratio, low: +t.dataset.ciLow, high: +t.dataset.ciHigh })));
    const expected = curves.flatMap((c) => c.points.filter((p) => p.p99_ratio).map((p) => {
      const e = report.effects.find((x) => x.workload === p.workload && x.arm === c.arm && x.statistic === "p99_latency");
      return { offered: p.offered_per_s, arm: c.arm, ratio: e.ratio, low: e.ci_low, high: e.ci_high };
    }));
    assert.ok(expected.length > 0, `${base}: some arm has ratios`);
    const key = (x) => `${x.arm}@${x.offered}`;
    assert.deepEqual(cells.sort((a, b) => key(a).localeCompare(key(b))), expected.sort((a, b) => key(a).localeCompare(key(b))));
  }
  // The SLO search's answers, one per workload × arm.
  const slo = await page.$$eval("#slo li.slo", (ls) => ls.map((l) => l.textContent));
  assert.deepEqual(slo, report.slo.map((r) => r.text));
  assert.deepEqual(errors, []);
  await page.close();
});

test("the curves fit 420 px without overflow and have no serious accessibility violations", async () => {
  const problems = [];
  for (const width of [1280, 420]) {
    const { page, errors } = await open(width);
    await page.locator("#curves").screenshot({ path: join(artifacts, `curves-${width}.png`) });
    const over = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    if (over > 0) problems.push(`${width}px: the page overflows by ${over}px`);
    // Every chart inside the viewport, and no tick label overlapping the next.
    const charts = await page.$$eval("#curves svg.curve", (ss) => ss.map((s) => s.getBoundingClientRect().right));
    for (const right of charts) if (right > width + 1) problems.push(`${width}px: a chart ends at ${right}px`);
    const overlaps = await page.$$eval("#curves svg.curve", (ss) => ss.flatMap((s) => {
      const boxes = [...s.querySelectorAll("text.x-tick")].map((t) => t.getBBox());
      return boxes.slice(1).filter((b, i) => b.x < boxes[i].x + boxes[i].width).map((b) => `${s.dataset.workload} tick at ${b.x}`);
    }));
    problems.push(...overlaps.map((o) => `${width}px: ${o}`));
    await page.evaluate(axeSource + "\n;0");
    const result = await page.evaluate(() => window.axe.run("#curves", { resultTypes: ["violations"] }));
    for (const v of result.violations.filter((v) => v.impact === "serious" || v.impact === "critical")) {
      problems.push(`${width}px: ${v.id}: ${v.help}`);
    }
    if (errors.length) problems.push(`${width}px: ${errors.join("; ")}`);
    await page.close();
  }
  assert.deepEqual(problems, []);
});
