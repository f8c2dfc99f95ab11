// The history page (#/history?workload=W&arm=A[&statistic=S&testbed=T&family=F]):
// one series' effect over campaigns, each with its interval, tags on hover
// (an SVG <title> per point), and the change points GET /api/history found
// marked as dashed lines. When the query matches several series (campaigns
// on two testbeds, or of two plan families), the API's `choices` become a
// list of links, one per series, instead of an error. The chart takes the
// width of the page (chartWidth), so it fits 420 px without scrolling.
// Uses el, svg, api, fmtRatio, date, chartWidth, textWidth, fit and scroll
// from app.js.
"use strict";

async function historyPage(params) {
  let h;
  try {
    h = await api("/api/history?" + params.toString());
  } catch (e) {
    if (e.status === 400 && e.body && Array.isArray(e.body.choices)) return seriesPicker(params, e.body);
    throw e;
  }
  const s = h.series;
  const n = h.points.length;
  const heading = el("h1", {}, "History ", el("span", { class: "muted" }, `${s.workload} · ${s.arm} · ${s.statistic}`));
  const facts = el("p", { class: "muted" }, `testbed ${s.testbed} · plan family ${s.family} · ${n} campaigns · ${h.change_points.length} change point(s) (${h.method}, α = ${h.alpha}, ${h.permutations} permutations)`);
  // In the page first, so chartWidth reads the width the chart will have.
  $main.replaceChildren(heading, facts);
  const rows = h.points.map((p, i) => el("tr", { "data-campaign": p.campaign },
    el("td", { class: "num" }, el("a", { href: `#/campaigns/${p.campaign}` }, p.campaign)),
    el("td", {}, date(p.created_unix_ms)),
    el("td", { class: "num" }, fmtRatio(p.ratio)),
    el("td", {}, `[${fmtRatio(p.ci_low)}, ${fmtRatio(p.ci_high)}]`),
    el("td", {}, tagText(p.tags)),
    el("td", {}, h.change_points.some((c) => c.index === i) ? "change point" : "")));
  $main.append(historyChart(h),
    scroll("history table", el("table", { id: "history-table" },
      el("thead", {}, el("tr", {}, ["campaign", "created", "ratio", "interval", "tags", ""].map((t) => el("th", {}, t)))),
      el("tbody", {}, rows))));
}

const tagText = (tags) => Object.entries(tags).map(([k, v]) => `${k}=${v}`).join(" ");

// The series chart: x the campaigns in time order, y the ratio on a log
// axis (a 2× slowdown is as far from 1 as a 2× speedup), both titled.
function historyChart(h) {
  const s = h.series;
  const n = h.points.length;
  const lows = h.points.map((p) => p.ci_low), highs = h.points.map((p) => p.ci_high);
  let lo = Math.log(Math.min(1, ...lows)), hi = Math.log(Math.max(1, ...highs));
  if (hi - lo < 1e-6) { lo -= 0.01; hi += 0.01; }
  const pad = (hi - lo) * 0.08;
  const ticks = [1, Math.exp(lo), Math.exp(hi)];
  lo -= pad; hi += pad;
  // Left of the plot: the rotated y title, then the widest tick label.
  const W = chartWidth(), H = 320, R = 16, T = 20, B = 52;
  const L = Math.ceil(30 + Math.max(...ticks.map((r) => textWidth(fmtRatio(r)))));
  const x = (i) => L + (n === 1 ? (W - L - R) / 2 : (i * (W - L - R)) / (n - 1));
  const y = (r) => T + ((hi - Math.log(r)) / (hi - lo)) * (H - T - B);
  const chart = svg("svg", { id: "history-chart", class: "history", viewBox: `0 0 ${W} ${H}`, width: W, height: H, role: "img",
    "aria-label": `${s.statistic} of arm ${s.arm} on ${s.workload} over ${n} campaigns` });
  chart.append(svg("line", { x1: L, x2: W - R, y1: y(1), y2: y(1), class: "one", stroke: "#888", "stroke-dasharray": "2 3" }));
  for (const r of ticks) {
    chart.append(svg("text", { class: "tick", x: L - 6, y: y(r) + 4, "text-anchor": "end" }, fmtRatio(r)));
  }
  for (const c of h.change_points) {
    // Between the last campaign before the change and the first after it.
    const cx = (x(c.index - 1) + x(c.index)) / 2;
    const line = svg("line", { x1: cx, x2: cx, y1: T, y2: H - B, class: "change-point", stroke: "#c0392b",
      "stroke-dasharray": "6 4", "data-campaign": c.campaign, "data-index": c.index, "data-p-value": c.p_value });
    line.append(svg("title", {}, `change point before campaign ${c.campaign}: ${fmtRatio(c.ratio_before)} → ${fmtRatio(c.ratio_after)} (p = ${c.p_value.toFixed(3)})`));
    chart.append(line);
  }
  let lastLabel = -Infinity;
  h.points.forEach((p, i) => {
    const g = svg("g", { class: "point", "data-campaign": p.campaign, "data-ratio": p.ratio,
      "data-low": p.ci_low, "data-high": p.ci_high });
    const tags = tagText(p.tags);
    g.append(svg("title", {}, `campaign ${p.campaign} · ${date(p.created_unix_ms)}\n${fmtRatio(p.ratio)} [${fmtRatio(p.ci_low)}, ${fmtRatio(p.ci_high)}]${tags ? "\n" + tags : ""}`));
    g.append(svg("line", { x1: x(i), x2: x(i), y1: y(p.ci_low), y2: y(p.ci_high), stroke: "#345" }));
    g.append(svg("circle", { cx: x(i), cy: y(p.ratio), r: 4, fill: "#345" }));
    // Ids far enough apart not to overlap on a narrow screen; every
    // campaign keeps its mark and its row in the table.
    if (x(i) - lastLabel >= 28) {
      g.append(svg("text", { class: "tick", x: x(i), y: H - B + 16, "text-anchor": "middle" }, p.campaign));
      lastLabel = x(i);
    }
    chart.append(g);
  });
  chart.append(svg("text", { class: "axis-title", x: L + (W - L - R) / 2, y: H - 10, "text-anchor": "middle" },
    "campaign (oldest first)"));
  const my = T + (H - T - B) / 2;
  // A long arm name is cut to the plot's height, whole in the tooltip.
  const yTitle = `${s.statistic}: ${s.arm} / baseline (log)`;
  const yShown = fit(yTitle, H - T - B);
  const yText = svg("text", { class: "axis-title", x: 14, y: my, "text-anchor": "middle", transform: `rotate(-90 14 ${my})` }, yShown);
  if (yShown !== yTitle) yText.append(svg("title", {}, yTitle));
  chart.append(yText);
  return chart;
}

// The query matched several series: one link per series, its testbed,
// plan family and number of campaigns, each the same query narrowed to it.
function seriesPicker(params, body) {
  const items = body.choices.map((c) => {
    const q = new URLSearchParams(params);
    q.set("testbed", c.testbed);
    q.set("family", c.family);
    return el("li", { class: "series-choice" },
      el("a", { href: `#/history?${q}` }, `testbed ${c.testbed} · family ${c.family}`),
      el("span", { class: "muted" }, ` (${c.campaigns} campaign${c.campaigns === 1 ? "" : "s"})`));
  });
  $main.replaceChildren(
    el("h1", {}, "History ", el("span", { class: "muted" }, `${params.get("workload")} · ${params.get("arm")}`)),
    el("p", { id: "series-picker-note" }, "These campaigns form several series, whose figures are not comparable with each other (another machine, or another plan). Choose one:"),
    el("ul", { id: "series-picker" }, items));
}
