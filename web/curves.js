// Rate sweeps on the campaign page (issue 20, docs/reports.md "Rate
// sweeps"): per plugin workload a latency–throughput chart — x the offered
// rate (log scale when the sweep spans more than 10×), y the p99 latency
// from each transaction's intended start with its interval over blocks as
// whiskers, one line per arm — the paired p99 ratio at each rate in a
// table, and the SLO search's answers. Drawn as SVG (one element per point,
// its values in data-* attributes); colours come from style.css classes
// (CSP: no inline style). Uses el, svg, fmt, fmtRatio, chartWidth and scroll
// from app.js.
"use strict";

const CURVE_SERIES = 6; // style.css has .series-0 … .series-5

// The section, or null for a report without sweeps.
function curvesSection(report) {
  const curves = report.curves || [];
  if (curves.length === 0) return null;
  const level = Math.round((report.plan.bootstrap.level || 0.95) * 100);
  const box = el("section", { id: "curves", "aria-labelledby": "curves-title" },
    el("h2", { id: "curves-title" }, "Latency–throughput curves"),
    el("p", { class: "muted" }, `p99 latency from each transaction's intended start: the median over blocks of each run's p99, `
      + `whiskers its ${level}% bootstrap interval over blocks. A hollow point: some runs fell short of the offered rate.`));
  const bases = [...new Set(curves.map((c) => c.workload))];
  // The p99 a curve draws is the p99_latency statistic's: when the runs'
  // samples cannot support it, every point says so.
  const p99 = (report.statistics || []).find((st) => st.name === "p99_latency");
  const unsupported = p99 && p99.supported === false ? p99.reason || "not supported by the sample" : null;
  for (const base of bases) {
    const ofBase = curves.filter((c) => c.workload === base);
    // el() skips a missing ratio table (a sweep with one arm).
    box.append(el("div", { class: "curve-workload" }, el("h3", {}, `${base}: p99 latency against offered rate`),
      curveChart(base, ofBase, report.plan.measure.slo, unsupported), curveLegend(base, ofBase), curveRatios(base, ofBase)));
  }
  if ((report.slo || []).length) {
    box.append(el("h3", {}, "SLO search"),
      el("p", { class: "muted" }, "The highest swept rate at which the upper end of the statistic's interval met the objective, no run fell short, and every lower rate met it too."),
      el("ul", { id: "slo" }, report.slo.map((r) => el("li", { class: "slo", "data-workload": r.workload, "data-arm": r.arm,
        "data-sustained": r.sustained_per_s ?? "", "data-failed": r.failed_per_s ?? "", "data-supported": String(r.supported !== false), title: r.reason || "" }, r.text))));
  }
  return box;
}

// Round values for an axis from lo to hi, about `n` of them.
function niceTicks(lo, hi, n) {
  const step0 = (hi - lo) / n;
  const mag = Math.pow(10, Math.floor(Math.log10(step0)));
  const step = [1, 2, 5, 10].map((m) => m * mag).find((s) => s >= step0);
  const out = [];
  for (let t = Math.ceil(lo / step) * step; t <= hi + 1e-9; t += step) out.push(+t.toPrecision(12));
  return out;
}

// slo: the plan's `measure.slo`; a p99 bound is drawn as a dashed line.
function curveChart(base, curves, slo, unsupported) {
  const bound = slo && slo.statistic === "p99_latency" ? slo.max_ms * 1000 : null;
  const points = curves.flatMap((c) => c.points);
  const rates = [...new Set(points.map((p) => p.offered_per_s))].sort((a, b) => a - b);
  const log = rates[rates.length - 1] / rates[0] > 10;
  const fx = log ? Math.log : (v) => v;
  let [a, b] = [fx(rates[0]), fx(rates[rates.length - 1])];
  if (a === b) { a -= 1; b += 1; }
  const pad = (b - a) * 0.06;
  const yhi = Math.max(...points.map((p) => p.p99_latency_us.hi), ...points.map((p) => p.p99_latency_us.median), bound || 1, 1) * 1.08;
  const width = chartWidth(), height = 300, left = 62, right = 14, top = 12, bottom = 52;
  const x = (v) => left + ((fx(v) - a + pad) / (b - a + 2 * pad)) * (width - left - right);
  const y = (v) => top + (1 - v / yhi) * (height - top - bottom);
  const s = svg("svg", { class: "curve", width, height, viewBox: `0 0 ${width} ${height}`, role: "img",
    "aria-label": `p99 latency against offered rate on ${base}, one line per arm`, "data-workload": base,
    "data-x-scale": log ? "log" : "linear" });
  let lastLabel = -Infinity;
  for (const r of rates) {
    s.append(svg("line", { class: "grid", x1: x(r), x2: x(r), y1: top, y2: height - bottom }));
    // Labels far enough apart not to overlap at 420 px; every rate keeps its grid line.
    if (x(r) - lastLabel >= 44) {
      s.append(svg("text", { class: "tick x-tick", x: x(r), y: height - bottom + 14, "text-anchor": "middle" }, r >= 10000 ? `${r / 1000}k` : String(r)));
      lastLabel = x(r);
    }
  }
  for (const t of niceTicks(0, yhi, 5)) {
    s.append(svg("line", { class: "grid", x1: left, x2: width - right, y1: y(t), y2: y(t) }));
    s.append(svg("text", { class: "tick", x: left - 6, y: y(t) + 4, "text-anchor": "end" }, t === 0 ? "0" : fmt(t)));
  }
  s.append(svg("text", { class: "axis-title", x: left + (width - left - right) / 2, y: height - 14, "text-anchor": "middle" },
    `offered rate (txn/s${log ? ", log scale" : ""})`));
  const my = top + (height - top - bottom) / 2;
  s.append(svg("text", { class: "axis-title", x: 12, y: my, "text-anchor": "middle", transform: `rotate(-90 12 ${my})` },
    "p99 latency (µs)"));
  if (bound) {
    s.append(svg("line", { class: "slo-line", x1: left, x2: width - right, y1: y(bound), y2: y(bound), "data-max-us": bound }));
    s.append(svg("text", { class: "slo-label", x: width - right - 4, y: y(bound) - 4, "text-anchor": "end" }, `SLO: p99 ≤ ${slo.max_ms} ms`));
  }
  curves.forEach((c, i) => s.append(curveSeries(c, i, x, y, unsupported)));
  return el("div", { class: "forest-box" }, s);
}

// One arm's line, whiskers and points.
function curveSeries(c, i, x, y, unsupported) {
  const g = svg("g", { class: `curve-series series-${i % CURVE_SERIES}`, "data-arm": c.arm });
  const d = c.points.map((p, k) => `${k ? "L" : "M"}${x(p.offered_per_s).toFixed(1)},${y(p.p99_latency_us.median).toFixed(1)}`).join(" ");
  g.append(svg("path", { class: "curve-line", d }));
  for (const p of c.points) {
    const e = p.p99_latency_us;
    // Weak by the effects' rule (fewer than 5 blocks): dashed, and said so.
    g.append(svg("line", { class: "whisker" + (e.weak ? " weak" : "") + (unsupported ? " unsupported" : ""), x1: x(p.offered_per_s), x2: x(p.offered_per_s), y1: y(e.lo), y2: y(e.hi) }));
    const mark = svg("circle", { class: "curve-point" + (p.short_runs ? " short" : "") + (unsupported ? " unsupported" : ""), "data-supported": String(!unsupported), cx: x(p.offered_per_s), cy: y(e.median), r: 4,
      "data-arm": c.arm, "data-workload": p.workload, "data-offered": p.offered_per_s, "data-achieved": p.achieved_per_s,
      "data-p99": e.median, "data-lo": e.lo, "data-hi": e.hi, "data-short": p.short_runs });
    mark.append(svg("title", {}, `${c.arm} at ${p.offered_per_s}/s offered (${fmt(p.achieved_per_s)}/s achieved): p99 ${fmt(e.median)} µs `
      + `[${fmt(e.lo)}, ${fmt(e.hi)}]${e.weak ? " weak evidence" : ""}, ${p.runs} runs${p.short_runs ? `, ${p.short_runs} short of the offered rate` : ""}`
      + (unsupported ? `; not supported: ${unsupported}` : "")));
    g.append(mark);
  }
  return g;
}

function curveLegend(base, curves) {
  const item = (cls, text) => el("span", { class: "legend-item" }, el("span", { class: `swatch ${cls}`, "aria-hidden": "true" }), text);
  return el("p", { class: "legend curve-legend", "data-workload": base }, "Arms: ",
    curves.map((c, i) => item(`series-${i % CURVE_SERIES}`, c.arm)));
}

// The paired p99 ratio of each arm against its reference at every rate.
function curveRatios(base, curves) {
  const compared = curves.filter((c) => c.points.some((p) => p.p99_ratio));
  if (compared.length === 0) return null;
  const rates = [...new Set(curves.flatMap((c) => c.points.map((p) => p.offered_per_s)))].sort((a, b) => a - b);
  const head = el("tr", {}, el("th", { class: "num" }, "offered (txn/s)"), compared.map((c) => {
    const ref = c.points.find((p) => p.p99_ratio).p99_ratio.baseline;
    return el("th", { class: "num" }, `${c.arm} / ${ref}, p99`);
  }));
  const rows = rates.map((r) => el("tr", { "data-offered": r }, el("td", { class: "num" }, String(r)), compared.map((c) => {
    const e = (c.points.find((p) => p.offered_per_s === r) || {}).p99_ratio;
    if (!e) return el("td", { class: "num", "data-arm": c.arm }, "—");
    return el("td", { class: "num", "data-arm": c.arm, "data-ratio": e.ratio, "data-ci-low": e.ci_low, "data-ci-high": e.ci_high },
      // Fewer than 5 blocks: the interval is not to be trusted (report/verdicts.rs, WEAK_BLOCKS).
      `${fmtRatio(e.ratio)} [${fmtRatio(e.ci_low)}, ${fmtRatio(e.ci_high)}]${e.blocks < 5 ? " weak" : ""}`);
  })));
  return scroll(`paired p99 ratio at each rate on ${base}`,
    el("table", { class: "curve-ratios", "data-workload": base }, el("thead", {}, head), el("tbody", {}, rows)));
}
