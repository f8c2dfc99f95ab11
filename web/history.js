// The history page (#/history?workload=W&arm=A[&statistic=S&testbed=T&family=F]):
// one series' effect over campaigns, each with its interval, tags on hover
// (an SVG <title> per point), and the change points GET /api/history found
// marked as dashed lines. Uses el, svg, api, fmtRatio and date from app.js.
"use strict";

async function historyPage(params) {
  const h = await api("/api/history?" + params.toString());
  const s = h.series;
  const W = 860, H = 320, L = 60, R = 20, T = 20, B = 40;
  const n = h.points.length;
  const lows = h.points.map((p) => p.ci_low), highs = h.points.map((p) => p.ci_high);
  // Ratios on a log axis: a 2× slowdown is as far from 1 as a 2× speedup.
  let lo = Math.log(Math.min(1, ...lows)), hi = Math.log(Math.max(1, ...highs));
  if (hi - lo < 1e-6) { lo -= 0.01; hi += 0.01; }
  const pad = (hi - lo) * 0.08;
  lo -= pad; hi += pad;
  const x = (i) => L + (n === 1 ? (W - L - R) / 2 : (i * (W - L - R)) / (n - 1));
  const y = (r) => T + ((hi - Math.log(r)) / (hi - lo)) * (H - T - B);
  const chart = svg("svg", { id: "history-chart", viewBox: `0 0 ${W} ${H}`, width: W, height: H, role: "img",
    "aria-label": `${s.statistic} of arm ${s.arm} on ${s.workload} over ${n} campaigns` });
  chart.append(svg("line", { x1: L, x2: W - R, y1: y(1), y2: y(1), class: "one", stroke: "#888", "stroke-dasharray": "2 3" }));
  chart.append(svg("text", { x: 4, y: y(1) + 4, "font-size": 11 }, "1.000"));
  for (const r of [Math.exp(lo + pad), Math.exp(hi - pad)]) {
    chart.append(svg("text", { x: 4, y: y(r) + 4, "font-size": 11 }, fmtRatio(r)));
  }
  for (const c of h.change_points) {
    // Between the last campaign before the change and the first after it.
    const cx = (x(c.index - 1) + x(c.index)) / 2;
    const line = svg("line", { x1: cx, x2: cx, y1: T, y2: H - B, class: "change-point", stroke: "#c0392b",
      "stroke-dasharray": "6 4", "data-campaign": c.campaign, "data-index": c.index, "data-p-value": c.p_value });
    line.append(svg("title", {}, `change point before campaign ${c.campaign}: ${fmtRatio(c.ratio_before)} → ${fmtRatio(c.ratio_after)} (p = ${c.p_value.toFixed(3)})`));
    chart.append(line);
  }
  h.points.forEach((p, i) => {
    const g = svg("g", { class: "point", "data-campaign": p.campaign, "data-ratio": p.ratio,
      "data-low": p.ci_low, "data-high": p.ci_high });
    const tags = Object.entries(p.tags).map(([k, v]) => `${k}=${v}`).join(" ");
    g.append(svg("title", {}, `campaign ${p.campaign} · ${date(p.created_unix_ms)}\n${fmtRatio(p.ratio)} [${fmtRatio(p.ci_low)}, ${fmtRatio(p.ci_high)}]${tags ? "\n" + tags : ""}`));
    g.append(svg("line", { x1: x(i), x2: x(i), y1: y(p.ci_low), y2: y(p.ci_high), stroke: "#345" }));
    g.append(svg("circle", { cx: x(i), cy: y(p.ratio), r: 4, fill: "#345" }));
    g.append(svg("text", { x: x(i), y: H - B + 16, "text-anchor": "middle", "font-size": 11 }, p.campaign));
    chart.append(g);
  });
  const rows = h.points.map((p, i) => el("tr", { "data-campaign": p.campaign },
    el("td", { class: "num" }, el("a", { href: `#/campaigns/${p.campaign}` }, p.campaign)),
    el("td", {}, date(p.created_unix_ms)),
    el("td", { class: "num" }, fmtRatio(p.ratio)),
    el("td", {}, `[${fmtRatio(p.ci_low)}, ${fmtRatio(p.ci_high)}]`),
    el("td", {}, Object.entries(p.tags).map(([k, v]) => `${k}=${v}`).join(" ")),
    el("td", {}, h.change_points.some((c) => c.index === i) ? "change point" : "")));
  $main.replaceChildren(
    el("h1", {}, "History ", el("span", { class: "muted" }, `${s.workload} · ${s.arm} · ${s.statistic}`)),
    el("p", { class: "muted" }, `testbed ${s.testbed} · plan family ${s.family} · ${n} campaigns · ${h.change_points.length} change point(s) (${h.method}, α = ${h.alpha}, ${h.permutations} permutations)`),
    chart,
    el("table", { id: "history-table" },
      el("thead", {}, el("tr", {}, ["campaign", "created", "ratio", "interval", "tags", ""].map((t) => el("th", {}, t)))),
      el("tbody", {}, rows)));
}
