// blocklab's web UI: plain JS over the daemon's JSON API (/api), no build
// step. Views by URL hash: #/ list, #/campaigns/ID, #/compare/A/B, #/submit,
// #/history?... (web/history.js).
// Charts: forest plots are drawn as SVG here (one element per effect, so
// each mark carries its values as data-* attributes); per-block dots and
// latency distributions use the vendored uPlot.
"use strict";

const $main = document.getElementById("main");
const $live = document.getElementById("live");
let view = null; // { kind, id, onEvent? }

function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === null || v === undefined) continue;
    if (k === "class") e.className = v;
    else if (k === "text") e.textContent = v;
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v);
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

const SVG = "http://www.w3.org/2000/svg";
function svg(tag, attrs = {}, text) {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
}

// Every page load is one navigation: a newer one aborts the older one's
// reads and makes its late answers stale, so a slow list refresh never
// replaces the page opened after it (issue 18 point 7).
let nav = { seq: 0, abort: new AbortController() };
const stale = (seq) => seq !== nav.seq;

async function api(path, options) {
  const method = (options && options.method) || "GET";
  // Writes are not aborted by leaving the page: the daemon acts on them anyway.
  const r = await fetch(path, method === "GET" ? { signal: nav.abort.signal, ...options } : options);
  const type = r.headers.get("content-type") || "";
  const body = type.includes("json") ? await r.json() : await r.text();
  if (!r.ok) {
    const message = body && body.error ? body.error : String(body);
    throw Object.assign(new Error(message), { status: r.status, body });
  }
  return body;
}

function fmt(x) {
  if (x === null || x === undefined || Number.isNaN(x)) return "—";
  const a = Math.abs(x);
  if (a >= 1000) return x.toFixed(0);
  if (a >= 100) return x.toFixed(1);
  if (a >= 1) return x.toFixed(2);
  return x.toPrecision(3);
}
// A ratio as every rendering writes it (analysis::words::ratio): three
// decimals, fewer above 100, two significant digits below 0.01 (never "0.000").
function fmtRatio(x) {
  if (x === null || x === undefined) return "—";
  const a = Math.abs(x);
  if (x === 0 || !Number.isFinite(x)) return String(x);
  if (a >= 1000) return x.toFixed(0);
  if (a >= 100) return x.toFixed(1);
  if (a >= 0.01) return x.toFixed(3);
  return x.toExponential(1);
}
const stateOf = (c) => c.status.state;
const date = (ms) => new Date(ms).toISOString().replace("T", " ").slice(0, 16) + " UTC";

function statusBadge(status) {
  return el("span", { class: "status " + status.state, title: status.reason || "" }, status.state);
}

// ---- live events ---------------------------------------------------------

function connectEvents() {
  const source = new EventSource("/api/events");
  source.onopen = () => { $live.textContent = "● live"; $live.className = "on"; };
  source.onerror = () => { $live.textContent = "○ reconnecting"; $live.className = ""; };
  for (const name of ["campaign-queued", "campaign-started", "run-started", "run-finished", "campaign-finished"]) {
    source.addEventListener(name, (m) => {
      const data = JSON.parse(m.data);
      if (view && view.onEvent) view.onEvent(data);
    });
  }
}

// ---- routing -------------------------------------------------------------

async function route() {
  const [path, query] = location.hash.replace(/^#\/?/, "").split("?");
  const parts = path.split("/").filter(Boolean);
  const params = new URLSearchParams(query || "");
  nav.abort.abort();
  nav = { seq: nav.seq + 1, abort: new AbortController() };
  const seq = nav.seq;
  $main.replaceChildren(el("p", { class: "muted" }, "loading…"));
  view = null;
  try {
    if (parts[0] === "campaigns" && parts[1]) await campaignPage(parts[1], params.get("baseline"), seq);
    else if (parts[0] === "compare") await comparePage(parts[1], parts[2], seq);
    else if (parts[0] === "submit") submitPage();
    else if (parts[0] === "history") await historyPage(params); // web/history.js
    else await listPage(seq);
  } catch (e) {
    if (e.name === "AbortError" || stale(seq)) return;
    $main.replaceChildren(el("p", { class: "error", id: "page-error" }, e.message));
  }
}
window.addEventListener("hashchange", route);

// ---- campaign list -------------------------------------------------------

async function listPage(seq) {
  const list = await api("/api/campaigns");
  if (stale(seq)) return;
  const rows = list.slice().reverse().map((c) => c.name === undefined
    ? el("tr", { "data-campaign": c.id },
        el("td", { class: "num" }, c.id),
        el("td", { colspan: 6, class: "muted" }, `unreadable: ${c.unreadable}`))
    : el("tr", { "data-campaign": c.id, title: c.unreadable || "" },
      el("td", { class: "num" }, el("a", { href: `#/campaigns/${c.id}` }, c.id)),
      el("td", {}, el("a", { href: `#/campaigns/${c.id}` }, c.name)),
      el("td", {}, statusBadge(c.status)),
      el("td", { class: "num" }, `${c.finished_runs}/${c.total_runs}`),
      el("td", {}, c.arms.map((a) => (a === c.baseline ? a + " (baseline)" : a)).join(", ")),
      el("td", { title: c.workloads.join(", ") }, `${c.workloads.length}: ${c.workloads.slice(0, 4).join(", ")}${c.workloads.length > 4 ? ", …" : ""}`),
      el("td", {}, date(c.created_unix_ms))));
  $main.replaceChildren(
    el("h1", {}, "Campaigns"),
    list.length === 0
      ? el("p", { class: "muted" }, "No campaigns yet. ", el("a", { href: "#/submit" }, "Submit a plan"), " or run `blocklab campaign PLAN.toml` with this data directory.")
      : scroll("campaigns", el("table", { id: "campaigns" },
          el("thead", {}, el("tr", {}, ["id", "name", "status", "runs", "arms", "workloads", "created"].map((h) => el("th", {}, h)))),
          el("tbody", {}, rows))));
  view = { kind: "list", onEvent: (e) => { if (e.event !== "run-started") scheduleRefresh(seq); } };
}

let refreshTimer = null;
function scheduleRefresh(seq) {
  clearTimeout(refreshTimer);
  refreshTimer = setTimeout(() => {
    if (!stale(seq)) listPage(seq).catch((e) => { if (e.name !== "AbortError") console.warn(e); });
  }, 300);
}

// A wide table scrolls inside its own box on a narrow screen, not the page;
// the box is focusable so keyboard users can scroll it too. A box whose
// table is wider than it says so (a hint and a shadow at its edge), so no
// column is cut off without a cue.
function scroll(label, child) {
  const hint = el("p", { class: "scroll-hint", hidden: "hidden" }, "wider than the screen: scroll sideways for more columns →");
  const box = el("div", { class: "scroll", tabindex: 0, role: "region", "aria-label": label }, hint, child);
  overflowWatch.observe(box);
  overflowWatch.observe(child);
  return box;
}
const overflowWatch = new ResizeObserver((entries) => {
  for (const e of entries) {
    const box = e.target.closest(".scroll");
    const over = box.scrollWidth > box.clientWidth + 1;
    box.classList.toggle("overflows", over);
    box.querySelector(":scope > .scroll-hint").hidden = !over;
  }
});

// ---- campaign page -------------------------------------------------------

// One history link per workload × non-baseline arm, on the campaign's own
// testbed, separated so they read as a list and not as one run of text.
function historyLinks(plan, testbed) {
  const links = plan.workloads.flatMap((w) => plan.arms.filter((a) => !a.baseline).map((a) => {
    const q = new URLSearchParams({ workload: w.name, arm: a.name });
    if (testbed) q.set("testbed", testbed);
    return el("a", { href: `#/history?${q}` }, `${w.name} · ${a.name}`);
  }));
  return el("p", { class: "history-links" }, "history: ", links.flatMap((a, i) => (i ? [el("span", { class: "sep", "aria-hidden": "true" }, " | "), a] : [a])));
}

async function campaignPage(id, chosenBaseline, seq) {
  const detail = await api(`/api/campaigns/${id}`);
  if (stale(seq)) return;
  const c = detail.campaign;
  const sealed = detail.sealed;
  const plan = sealed.plan;
  const planBaseline = plan.arms.find((a) => a.baseline).name;
  const baseline = plan.arms.some((a) => a.name === chosenBaseline) ? chosenBaseline : planBaseline;

  const progress = el("progress", { id: "progress", max: c.total_runs, value: c.finished_runs,
    "data-finished": c.finished_runs, "data-total": c.total_runs });
  const progressText = el("span", { id: "progress-text" }, ` ${c.finished_runs}/${c.total_runs} runs`);
  const current = el("div", { id: "current", class: "muted" }, currentText(detail.current, detail.queue_position));
  const status = el("span", { id: "status" }, statusBadge(c.status));
  const cancelBox = el("span", {});
  if (["queued", "running"].includes(stateOf(c))) cancelBox.append(cancelControl(c));
  // Any arm as the reference: the report is recomputed against it (?baseline=).
  const reference = el("select", { id: "baseline", "aria-label": "reference arm" },
    plan.arms.map((a) => el("option", { value: a.name, selected: a.name === baseline ? "selected" : null },
      a.name + (a.name === planBaseline ? " (the plan's baseline)" : ""))));
  reference.addEventListener("change", () => {
    location.hash = reference.value === planBaseline ? `#/campaigns/${c.id}` : `#/campaigns/${c.id}?baseline=${encodeURIComponent(reference.value)}`;
  });
  const query = baseline === planBaseline ? "" : `?baseline=${encodeURIComponent(baseline)}`;

  const body = el("div", { id: "report" }, el("p", { class: "muted" }, "loading the report…"));
  $main.replaceChildren(
    el("h1", {}, `Campaign ${c.id} `, el("span", { class: "muted" }, `“${c.name}”`)),
    el("div", {}, status, " ", progress, progressText, " ", cancelBox),
    current,
    el("p", { class: "muted" }, `${plan.workloads.length} workloads × ${plan.arms.length} arms × ${plan.blocks} blocks; baseline `, el("b", {}, planBaseline),
      `; plan `, el("span", { class: "hash" }, sealed.hash.slice(0, 16)), ` · created ${date(c.created_unix_ms)}`),
    el("p", {}, el("label", { for: "baseline" }, "ratios against "), reference),
    el("p", { class: "downloads" }, "report: ",
      ["md", "json", "csv"].map((f) => el("a", { href: `/api/campaigns/${c.id}/report?format=${f}${query ? "&" + query.slice(1) : ""}`, download: `campaign-${c.id}.${f}` }, f)),
      el("a", { href: `#/compare/${c.id}` }, "compare with…")),
    historyLinks(plan, c.testbed),
    body);

  let finished = c.finished_runs;
  let reloadTimer = null;
  const reloadReport = () => {
    clearTimeout(reloadTimer);
    reloadTimer = setTimeout(() => renderReport(c.id, detail.statistics, body, baseline, seq, query).catch((e) => {
      if (e.name !== "AbortError" && !stale(seq)) body.replaceChildren(el("p", { class: "error" }, e.message));
    }), 250);
  };
  view = {
    kind: "campaign", id: c.id,
    onEvent: (e) => {
      if (e.campaign !== c.id) return;
      if (e.event === "run-started") {
        current.textContent = currentText(e, null);
        status.replaceChildren(statusBadge({ state: "running" }));
      } else if (e.event === "run-finished") {
        finished = Math.max(finished, e.finished_runs);
        progress.value = finished;
        progress.setAttribute("data-finished", finished);
        progressText.textContent = ` ${finished}/${e.total} runs`;
        // The report is rebuilt with every finished block, not every run.
        if (finished % plan.arms.length === 0) reloadReport();
      } else if (e.event === "campaign-started") {
        status.replaceChildren(statusBadge({ state: "running" }));
      } else if (e.event === "campaign-finished") {
        status.replaceChildren(statusBadge({ state: e.status, reason: e.reason }));
        current.textContent = e.reason ? `stopped: ${e.reason}` : "";
        cancelBox.replaceChildren();
        reloadReport();
      }
    },
  };
  await renderReport(c.id, detail.statistics, body, baseline, seq, query);
}

function currentText(cur, queuePosition) {
  if (cur && cur.workload) return `now: ${cur.workload}, block ${cur.block + 1}, arm ${cur.arm} (slot ${cur.slot})`;
  if (queuePosition !== null && queuePosition !== undefined) return `queued (position ${queuePosition + 1})`;
  return "";
}

function cancelControl(c) {
  const id = c.id;
  const token = el("input", { type: "password", id: "cancel-token", placeholder: "token", size: 12, "aria-label": "token" });
  token.value = localStorage.getItem("blocklab-token") || "";
  const out = el("span", { class: "error", id: "cancel-result" });
  return el("span", {}, token, " ", el("button", { id: "cancel", onclick: async () => {
    // A stray click must not throw away a campaign's remaining runs.
    if (!confirm(`Cancel campaign ${id} “${c.name}”? A queued campaign leaves the queue; a running one stops after the run in flight (finished runs are kept).`)) return;
    try {
      const r = await api(`/api/campaigns/${id}/cancel`, { method: "POST", headers: authHeaders(token.value) });
      out.className = "ok"; out.textContent = ` ${r.status}`;
    } catch (e) { out.className = "error"; out.textContent = ` ${e.message}`; }
  } }, "cancel"), out);
}

function pct(x) {
  return `${(100 * x).toFixed(2)}%`;
}

function authHeaders(token) {
  return token ? { Authorization: `Bearer ${token.trim()}` } : {};
}

async function renderReport(id, statistics, into, baseline, seq, query) {
  const report = await api(`/api/campaigns/${id}/report${query}`);
  if (stale(seq)) return;
  const plan = report.plan;
  const arms = plan.arms.map((a) => a.name);
  const workloads = plan.workloads.map((w) => w.name);
  const level = Math.round((plan.bootstrap.level || 0.95) * 100);

  const forests = el("div", { id: "forests" });
  if (report.intervals) forests.append(el("p", { id: "intervals" }, `Intervals: ${report.intervals.description}.`));
  for (const stop of report.sequential || []) {
    const where = stop.precise && stop.blocks < stop.max_blocks
      ? `stopped after block ${stop.blocks} of ${stop.max_blocks}: every primary effect within ±${pct(stop.target_half_width)}`
      : (stop.precise ? `reached ±${pct(stop.target_half_width)} at its last block` : `ran all ${stop.max_blocks} blocks without reaching ±${pct(stop.target_half_width)}`);
    forests.append(el("p", { class: "sequential" }, `Sequential: ${stop.workload} ${where} (widest ${stop.widest} ±${stop.widest_half_width == null ? "?" : pct(stop.widest_half_width)}, intervals at ${(100 * stop.level).toFixed(2)}%).`));
  }
  const cal = report.calibration;
  if (cal) {
    const shown = new Set(statistics.map((s) => s.name));
    const rows = cal.rows.filter((r) => shown.has(r.statistic) && workloads.includes(r.workload));
    forests.append(el("div", { id: "calibration" },
      el("h3", {}, `Calibration of this machine (${cal.machine}): ${cal.campaigns.length} A/A campaigns of ${cal.plan}, ${cal.blocks} blocks`),
      scroll("calibration", el("table", {}, el("tr", {}, ["workload", "statistic", "contained 1", "noise floor ±", `detectable at ${cal.blocks} blocks`, `blocks for ±${pct(cal.target_half_width)}`].map((h) => el("th", {}, h))),
        rows.map((r) => el("tr", {}, [r.workload, r.statistic, `${r.covered}/${r.intervals}`, pct(r.noise_floor),
          r.min_detectable == null ? "?" : pct(r.min_detectable), r.recommended_blocks ?? "> 10000"].map((c) => el("td", {}, String(c)))))))));
  }
  // One frame for every plot of the section: the same range and margins,
  // so ratio 1 and each tick line up and marks compare across plots.
  const frame = forestFrame([report.effects.filter((e) => statistics.some((s) => s.name === e.statistic))], undefined, baseline);
  forests.append(forestLegend());
  for (const stat of statistics) {
    const rows = report.effects.filter((e) => e.statistic === stat.name);
    if (rows.length === 0) continue;
    const better = stat.lower_is_better ? "below 1 is faster/cheaper" : "above 1 is better (more per second)";
    forests.append(el("h3", {}, `${stat.name} (${stat.unit}): ratio arm/${baseline}, ${level}% interval; ${better}`),
      forestPlot(stat, [rows], workloads, arms.filter((a) => rows.some((r) => r.arm === a)), undefined, baseline, frame));
  }
  if (report.missing_effects.length) {
    forests.append(el("p", { class: "muted" }, `${report.missing_effects.length} effects could not be computed, e.g. `,
      `${report.missing_effects[0].workload}/${report.missing_effects[0].arm}: ${report.missing_effects[0].reason}`));
  }

  const blockSection = el("div", {});
  const wlSelect = el("select", { id: "block-workload", "aria-label": "workload" }, workloads.map((w) => el("option", { value: w }, w)));
  const stSelect = el("select", { id: "block-statistic", "aria-label": "statistic" }, statistics.map((s) => el("option", { value: s.name }, s.name)));
  const logScale = el("input", { type: "checkbox", id: "block-log", checked: "checked" });
  const blockChart = el("div", { id: "block-plot", class: "chart" });
  const latencyChart = el("div", { id: "latency-plot", class: "chart" });
  const runsTable = el("div", { id: "runs-of-workload" });
  const drawBlocks = () => {
    const stat = statistics.find((s) => s.name === stSelect.value);
    blockPlot(report, stat, wlSelect.value, arms, blockChart, logScale);
    runsTable.replaceChildren(runsOf(report, stat, wlSelect.value));
  };
  const drawLatency = () => latencyPlot(id, wlSelect.value, latencyChart).catch((e) => {
    if (e.name !== "AbortError") latencyChart.replaceChildren(el("p", { class: "error" }, e.message));
  });
  wlSelect.addEventListener("change", () => { drawBlocks(); drawLatency(); });
  stSelect.addEventListener("change", drawBlocks);
  logScale.addEventListener("change", drawBlocks);
  blockSection.append(el("p", {}, el("label", {}, "workload ", wlSelect), " ", el("label", {}, "statistic ", stSelect), " ",
    el("label", {}, logScale, " log scale")),
    el("h3", {}, "Per-block runs (x: block, offset by position in the block)"), blockChart,
    el("h3", {}, "Runs of this workload, with their flamegraphs"), runsTable,
    el("h3", {}, "Latency distribution per arm (final runs' histograms merged)"), latencyChart);

  into.replaceChildren(
    summary(report),
    verdicts(report, statistics),
    el("h2", {}, "Effects"), forests,
    el("h2", {}, "Absolute medians"), absolutesTable(report, statistics, workloads, arms),
    ...operationsSection(report, workloads, arms),
    el("h2", {}, "Runs by block and latency"), blockSection,
    el("h2", {}, "Gates and provenance"), provenance(report));
  if (report.hosts) into.append(el("h2", {}, "Hosts"), hostsSection(report.hosts));
  const sweep = curvesSection(report); // web/curves.js: rate sweeps, after the verdicts
  if (sweep) into.firstChild.after(sweep);
  drawBlocks();
  drawLatency();
}

// A process arm's program as the report's plugin column names it: `process: NAME`,
// NAME the script an interpreter runs or the executable (ProcessSpec::label).
function clientLabel(client) {
  const path = client.command[client.script ? 1 : 0] || "";
  return `process: ${path.split("/").pop()}`;
}

// The summary, above everything else: each arm's answer across the
// workloads in one line, a workloads × arms grid coloured by the verdict
// (its interval on hover), and what qualifies several verdicts said once.
function summary(report) {
  const s = report.summary;
  const list = report.verdicts || [];
  if (!s || list.length === 0) return el("section", { id: "summary", hidden: "hidden" });
  const arms = [...new Set(list.map((v) => v.arm))];
  const workloads = [...new Set(list.map((v) => v.workload))];
  const stat = list[0].statistic;
  const cell = (w, a) => {
    const v = list.find((x) => x.workload === w && x.arm === a);
    if (!v) return el("td", { class: "muted" }, "—");
    const interval = v.blocks > 1 ? `[${fmtRatio(v.lo)}, ${fmtRatio(v.hi)}]` : "one block: no interval";
    return el("td", { class: `num grid-cell ${v.direction}${v.weak ? " weak" : ""}`, "data-workload": w, "data-arm": a,
      "data-direction": v.direction, title: `${w} · ${a}: ${stat} ratio ${fmtRatio(v.ratio)} ${interval} against ${v.baseline}, ${v.blocks} of ${v.blocks_planned} blocks${v.weak ? ", weak evidence" : ""}` },
    fmtRatio(v.ratio));
  };
  const grid = scroll("summary grid", el("table", { id: "grid" },
    el("caption", {}, `${stat}, ratio arm/baseline: red slower or costlier, green faster or cheaper, grey no detectable difference; hover for the interval`),
    el("thead", {}, el("tr", {}, el("th", { scope: "col" }, "workload"), arms.map((a) => el("th", { scope: "col" }, a)))),
    el("tbody", {}, workloads.map((w) => el("tr", {}, el("th", { scope: "row" }, w), arms.map((a) => cell(w, a)))))));
  return el("section", { id: "summary", "aria-labelledby": "summary-title" },
    el("h2", { id: "summary-title" }, `Summary (${stat})`),
    el("ul", { id: "answers" }, s.answers.map((a) => el("li", { "data-arm": a.arm, class: a.weak ? "weak" : "" }, a.text))),
    grid,
    s.notes.length ? el("div", { id: "notes" }, el("h3", {}, "Notes"),
      el("ol", {}, s.notes.map((n) => el("li", { id: `note-${n.number}`, value: n.number, "data-caveat": n.caveat },
        n.text, el("span", { class: "muted" }, ` (concerns ${n.concerns})`))))) : null);
}

// The verdicts, one line per workload and arm, under the summary: the
// answer at a glance. Weak evidence (few blocks) is greyed and labelled, and
// the warnings that qualify a verdict sit beside it.
function verdicts(report) {
  const state = report.campaign && report.campaign.status ? report.campaign.status.state : "";
  const provisional = report.provisional ?? ["running", "queued"].includes(state);
  const box = el("section", { id: "verdicts", "aria-labelledby": "verdicts-title" }, el("h2", { id: "verdicts-title" }, "Verdicts"));
  if (provisional) {
    box.append(el("p", { id: "provisional", class: "provisional" },
      "Provisional: the campaign is still running; these results change as blocks finish."));
  }
  const list = report.verdicts;
  if (!list) {
    box.append(el("p", { class: "muted" }, "This daemon's report has no verdicts; see the effects below."));
    return box;
  }
  if (list.length === 0) box.append(el("p", { class: "muted" }, "No verdicts yet: no effect could be computed."));
  box.append(el("ul", { class: "verdicts" }, list.map((v) => el("li", {
    class: `verdict ${v.direction}${v.weak ? " weak" : ""}`,
    "data-workload": v.workload, "data-arm": v.arm, "data-baseline": v.baseline, "data-statistic": v.statistic,
    "data-direction": v.direction, "data-weak": String(!!v.weak), "data-ratio": v.ratio, "data-lo": v.lo, "data-hi": v.hi,
  },
  el("span", { class: "verdict-where" }, `${v.workload}, ${v.statistic}: `),
  v.weak ? el("span", { class: "weak-label", title: `${v.blocks} of ${v.blocks_planned} blocks: too few for a trustworthy interval` }, `weak evidence (${v.blocks} of ${v.blocks_planned} blocks) `) : null,
  el("span", { class: "verdict-text" }, v.text),
  (v.notes || []).length ? el("span", { class: "note-refs" }, " [", v.notes.flatMap((n, i) => [i ? ", " : "", el("a", { href: `#note-${n}`, onclick: (e) => { e.preventDefault(); document.getElementById(`note-${n}`).scrollIntoView(); } }, `note ${n}`)]), "]") : null,
  (v.warnings || []).length ? el("ul", { class: "verdict-warnings" }, v.warnings.map((w) => el("li", {}, w))) : null))));
  return box;
}

// What the forest marks' colours mean (also said in each mark's title).
function forestLegend(setNames) {
  const item = (cls, text) => el("span", { class: "legend-item" }, el("span", { class: `swatch ${cls}`, "aria-hidden": "true" }), text);
  return el("p", { class: "legend" }, "Legend: ",
    setNames ? [item("set-a line", `${setNames[0]}: blue line`), item("set-b line", `${setNames[1]}: orange line`)] : [],
    [item("better", `better: the interval excludes 1 in the arm's favour`), item("worse", "worse: excludes 1 against it"),
      item("same", "no detectable difference: the interval contains 1")],
    item("unsupported", "hollow: a figure the sample does not support (hover for why)"),
    item("one", "dashed line: ratio 1"));
}

// The ratio range (log-padded) covering every interval and 1.
function ratioRange(rows) {
  const all = rows.flatMap((r) => [r.ci_low, r.ci_high, r.ratio]).filter((x) => x > 0 && Number.isFinite(x));
  let lo = Math.min(1, ...all), hi = Math.max(1, ...all);
  const pad = Math.max(Math.log(hi / lo) * 0.06, 0.01);
  return [Math.exp(Math.log(lo) - pad), Math.exp(Math.log(hi) + pad)];
}

let measureCanvas = null;
// Pixel width of SVG text at the forest plots' font (11px system-ui).
function textWidth(text) {
  measureCanvas = measureCanvas || document.createElement("canvas").getContext("2d");
  measureCanvas.font = "11px system-ui, sans-serif";
  return measureCanvas.measureText(text).width;
}

// `text` cut with an ellipsis to at most `px` wide.
function fit(text, px) {
  if (textWidth(text) <= px) return text;
  let n = text.length;
  while (n > 1 && textWidth(text.slice(0, n) + "…") > px) n--;
  return text.slice(0, n) + "…";
}

// The width a chart may take: its section's, at most 860 px.
function chartWidth() {
  const inner = $main.clientWidth - 2 * parseFloat(getComputedStyle($main).paddingLeft || "0");
  return Math.max(280, Math.min(860, Math.floor(inner)));
}

// rowsBySet: one array of effect rows per campaign (1 here, 2 when comparing).
// range: [lo, hi] shared by the plots of one section. On a narrow screen each
// row's name and interval go on lines of their own above its marks, so
// neither is clipped nor overlaps the plot.
// A row's name: workload · arm, and the arm it is compared with when that
// is not the chosen baseline (its `compare_to`).
function forestName(r, baseline) {
  return `${r.workload} · ${r.arm}` + (baseline && r.baseline && r.baseline !== baseline ? ` / ${r.baseline}` : "");
}
// A row's value label; `k` says which campaign when comparing two.
function forestValue(r, k, setNames) {
  return (setNames ? (k ? "B " : "A ") : "") + `${fmtRatio(r.ratio)} [${fmtRatio(r.ci_low)}, ${fmtRatio(r.ci_high)}]` + (r.weak ? " weak" : "")
    + (r.supported === false ? " not supported" : "");
}

// What the forest plots of one page share, so that their ratio 1 (and every
// tick) falls at the same x in each: the range and the label widths, from
// every row any of them shows (rowsBySet as forestPlot takes it).
function forestFrame(rowsBySet, setNames, baseline) {
  const all = rowsBySet.flatMap((rows, k) => rows.map((r) => [r, k]));
  return {
    range: ratioRange(all.map(([r]) => r)),
    name: Math.max(...all.map(([r]) => textWidth(forestName(r, baseline))), 40),
    value: Math.max(...all.map(([r, k]) => textWidth(forestValue(r, k, setNames))), 40),
  };
}

function forestPlot(stat, rowsBySet, workloads, arms, setNames, baseline, frame) {
  const lines = [];
  for (const w of workloads) for (const a of arms) {
    const found = rowsBySet.map((rows) => rows.find((r) => r.workload === w && r.arm === a));
    if (found.some(Boolean)) lines.push({ w, a, found });
  }
  frame = frame || forestFrame(rowsBySet, setNames, baseline);
  const [lo, hi] = frame.range;
  const n = rowsBySet.length;
  const name = (l) => forestName(l.found.find(Boolean), baseline);
  const value = (r, k) => forestValue(r, k, setNames);
  const width = chartWidth();
  const longestName = frame.name;
  const longestValue = frame.value;
  // Wide: names left, values right, if that leaves the plot 45 % of the width.
  const narrow = longestName + longestValue + 28 > width * 0.55;
  const left = narrow ? 10 : Math.ceil(longestName) + 14;
  const right = narrow ? 10 : Math.ceil(longestValue) + 14;
  const setH = narrow ? 28 : 16;
  const head = narrow ? 14 : 0;
  const rowH = head + setH * n + 4, top = 20;
  const height = top + lines.length * rowH + 44;
  const x = (v) => left + (Math.log(v) - Math.log(lo)) / (Math.log(hi) - Math.log(lo)) * (width - left - right);
  const s = svg("svg", { class: "forest", width, height, viewBox: `0 0 ${width} ${height}`, "data-statistic": stat.name, role: "img",
    "aria-label": `forest plot of ${stat.name}`, "data-lo": lo, "data-hi": hi });
  const bottom = top + lines.length * rowH;
  for (const t of ticks(lo, hi, x)) {
    s.append(svg("line", { class: "grid", x1: x(t), x2: x(t), y1: top - 4, y2: bottom }));
    s.append(svg("text", { x: x(t), y: bottom + 14, "text-anchor": "middle" }, t >= 1000 ? `${t / 1000}k` : String(t)));
  }
  s.append(svg("line", { class: "one", x1: x(1), x2: x(1), y1: top - 8, y2: bottom }));
  s.append(svg("text", { class: "axis-title", x: left + (width - left - right) / 2, y: bottom + 32, "text-anchor": "middle" },
    `ratio to ${baseline || "the baseline"} (log scale; ${stat.unit} per ${stat.unit}, 1 = no difference)`));
  lines.forEach((l, i) => {
    const y0 = top + i * rowH;
    const full = name(l);
    const shown = narrow ? fit(full, width - 2 * left) : full;
    const label = svg("text", { class: "row-name", x: narrow ? left : 4, y: narrow ? y0 + 11 : y0 + rowH / 2 + 4 }, shown);
    if (shown !== full) label.append(svg("title", {}, full));
    s.append(label);
    l.found.forEach((r, k) => {
      if (!r) return;
      const y = y0 + head + (narrow ? 22 : 10) + k * setH;
      const cls = (k ? " b" : "") + (r.weak ? " weak" : "");
      const sig = r.ci_high < 1 ? (stat.lower_is_better ? " better" : " worse") : r.ci_low > 1 ? (stat.lower_is_better ? " worse" : " better") : "";
      const way = sig || " same";
      // A figure the sample cannot support (a p99 of 55 samples, allocations
      // of unlike heaps) is drawn hollow and says why.
      // Neither better nor worse: it is not a measurement of either.
      const unsupported = r.supported === false ? " unsupported" : "";
      const shown = unsupported ? unsupported : way;
      // One campaign: the line takes its mark's colour. Two: the line says
      // which campaign (blue A, orange B) and the mark which way.
      s.append(svg("line", { class: "ci" + cls + (setNames && !unsupported ? "" : shown), x1: x(r.ci_low), x2: x(r.ci_high), y1: y, y2: y }));
      const mark = svg("circle", { class: "forest-mark" + shown + cls, cx: x(r.ratio), cy: y, r: 4, "data-supported": String(!unsupported), "data-weak": String(!!r.weak),
        "data-workload": r.workload, "data-arm": r.arm, "data-statistic": r.statistic,
        "data-ratio": r.ratio, "data-ci-low": r.ci_low, "data-ci-high": r.ci_high, "data-set": k });
      mark.append(svg("title", {}, `${r.workload} ${r.arm}: ${fmtRatio(r.ratio)} [${fmtRatio(r.ci_low)}, ${fmtRatio(r.ci_high)}], won ${r.won}/${r.blocks} blocks${sig ? "," + sig : ", no detectable difference"}`
        + (unsupported ? `; not supported: ${r.reason}` : "")));
      s.append(mark);
      s.append(svg("text", { class: "interval-label" + cls, x: narrow ? left : width - right + 6, y: narrow ? y - 7 : y + 4 }, value(r, k)));
    });
  });
  return el("div", { class: "forest-box" }, s);
}

// Ticks at round ratios, at least `gap` pixels apart, 1 always among them.
function ticks(lo, hi, x, gap = 36) {
  const decades = [1e-4, 1e-3, 1e-2, 0.1, 1, 10, 100, 1e3, 1e4, 1e5].flatMap((d) => [d, 2 * d, 5 * d]).filter((t) => t !== 2 && t !== 5 && t !== 0.2 && t !== 0.5);
  const candidates = [...new Set([...decades, 0.2, 0.5, 0.8, 0.9, 0.95, 1, 1.05, 1.1, 1.25, 1.5, 2, 3, 5])].sort((a, b) => a - b);
  const inside = candidates.filter((t) => t >= lo && t <= hi);
  const kept = [1];
  for (const t of inside.filter((t) => t > 1)) if (x(t) - x(kept[kept.length - 1]) >= gap) kept.push(t);
  for (const t of inside.filter((t) => t < 1).reverse()) if (x(kept[0]) - x(t) >= gap) kept.unshift(t);
  return kept;
}

function absolutesTable(report, statistics, workloads, arms) {
  const head = el("tr", {}, el("th", {}, "workload"), el("th", {}, "arm"),
    statistics.map((s) => el("th", { class: "num" }, `${s.name} (${s.unit})`)), el("th", { class: "num" }, "runs"));
  const rows = [];
  for (const w of workloads) for (const a of arms) {
    const cells = statistics.map((s) => {
      const row = report.absolutes.find((x) => x.workload === w && x.arm === a && x.statistic === s.name);
      // A statistic the sample cannot support (p99.99 of 400 samples) is marked.
      if (row && row.supported === false) {
        return el("td", { class: "num unsupported", "data-statistic": s.name, "data-supported": "false", title: row.reason || "not supported by the sample" },
          fmt(row.median), el("span", { class: "unsupported-mark" }, " (unsupported)"));
      }
      return el("td", { class: "num", "data-statistic": s.name }, row ? fmt(row.median) : "—");
    });
    const any = report.absolutes.find((x) => x.workload === w && x.arm === a);
    rows.push(el("tr", { "data-workload": w, "data-arm": a }, el("td", {}, w), el("td", {}, a), cells,
      el("td", { class: "num" }, any ? any.runs : 0)));
  }
  return scroll("absolute medians", el("table", { id: "absolutes" }, el("thead", {}, head), el("tbody", {}, rows)));
}

// Where the time goes (docs/method.md): per workload, arm and kv operation,
// calls per transaction, latency from issue to ready and the paired effect on
// its mean latency; a bar of the µs per transaction spent in it, scaled to
// the workload's largest. Nothing when no run recorded kv operations.
function operationsSection(report, workloads, arms) {
  const ops = report.operations || [];
  if (ops.length === 0) return [];
  const head = el("tr", {}, ["workload", "arm", "operation"].map((h) => el("th", {}, h)),
    ["calls/txn", "mean µs", "p50 µs", "p99 µs", "µs/txn"].map((h) => el("th", { class: "num" }, h)),
    el("th", {}, "vs baseline"));
  const rows = [];
  for (const w of workloads) {
    const mine = ops.filter((o) => o.workload === w);
    const widest = Math.max(...mine.map((o) => o.us_per_txn), 1e-9);
    for (const a of arms) for (const o of mine.filter((x) => x.arm === a)) {
      const e = o.effect;
      const vs = !e ? "—" : (e.blocks > 1 ? `${e.ratio.toFixed(3)} [${e.ci_low.toFixed(3)}, ${e.ci_high.toFixed(3)}]`
        : `${e.ratio.toFixed(3)} (one block: no interval)`);
      const bar = el("span", { class: "op-bar", style: `width: ${(100 * o.us_per_txn / widest).toFixed(1)}%` });
      rows.push(el("tr", { "data-workload": w, "data-arm": a, "data-op": o.op },
        el("td", {}, w), el("td", {}, a), el("td", {}, o.op + (o.simulated ? " (simulated)" : "")),
        el("td", { class: "num", "data-per-txn": String(o.per_txn) }, o.per_txn.toFixed(2)),
        [o.mean_us, o.p50_us, o.p99_us].map((x) => el("td", { class: "num" }, fmt(x))),
        el("td", { class: "num op-time" }, el("span", { class: "op-bar-track" }, bar), " ", fmt(o.us_per_txn)),
        el("td", {}, vs)));
    }
  }
  const out = [el("h2", {}, "Where the time goes"),
    el("p", { class: "muted" }, "Medians over runs, per kv operation: calls per transaction, latency from issue to ready, µs of a transaction spent in it (bar), and the paired ratio of its mean latency against the baseline."),
    scroll("where the time goes", el("table", { id: "operations" }, el("thead", {}, head), el("tbody", {}, rows)))];
  if (ops.some((o) => o.simulated)) {
    out.push(el("p", { class: "muted" }, "Operations marked (simulated) waited the embedded target's simulated round trips (grv_us, read_us, commit_us): their time is the simulation's, not a network's."));
  }
  return out;
}

const PALETTE = ["#2563eb", "#d97706", "#15803d", "#9333ea", "#dc2626", "#0891b2"];

// uPlot's legend shows "--" for every series until the cursor is on the
// plot: until then it shows the series' names only.
const legendIdle = (u) => u.root.classList.toggle("legend-idle", u.cursor.idx == null);
const idleHooks = { ready: [legendIdle], setLegend: [legendIdle] };

function blockPlot(report, stat, workload, arms, into, logScale) {
  into.replaceChildren();
  if (!stat) return;
  const runs = report.runs.filter((r) => r.workload === workload && r.status === "ok");
  // The report computes every statistic per run from its one table.
  const value = (r) => (r.values && stat.name in r.values ? r.values[stat.name] : null);
  if (runs.length === 0) { into.append(el("p", { class: "muted" }, "no successful runs of this workload yet")); return; }
  const k = arms.length;
  // One x per run: block + position / k, so a block's runs sit side by side in run order.
  const points = runs.map((r) => ({ x: r.block + 1 + r.position / (k + 1), arm: r.arm, y: value(r), pos: r.position }))
    .sort((a, b) => a.x - b.x);
  const xs = points.map((p) => p.x);
  const series = arms.map((a) => points.map((p) => (p.arm === a ? p.y : null)));
  // Log scale by default (arms often differ by multiples); it needs every value above 0.
  const positive = points.every((p) => p.y == null || p.y > 0);
  logScale.disabled = !positive;
  const log = positive && logScale.checked;
  into.setAttribute("data-scale", log ? "log" : "linear");
  const yLabel = `${stat.name} (${stat.unit}${log ? ", log scale" : ""})`;
  into.setAttribute("data-y-label", yLabel);
  const opts = {
    width: chartWidth(), height: 280,
    scales: { x: { time: false, range: [0.6, report.plan.blocks + 1] }, y: log ? { distr: 3 } : {} },
    axes: [{ label: "block (runs in block order)", splits: () => Array.from({ length: report.plan.blocks }, (_, i) => i + 1), values: (u, vals) => vals.map((v) => (Number.isInteger(v) ? v : "")) },
           { label: yLabel, size: 70 }],
    hooks: idleHooks,
    series: [{ label: "run", value: (u, v) => (v == null ? "" : `block ${Math.floor(v)}, position ${Math.round((v % 1) * (k + 1)) + 1}`) },
      ...arms.map((a, i) => ({ label: a, stroke: PALETTE[i % PALETTE.length], paths: () => null,
        points: { show: true, size: 8, fill: PALETTE[i % PALETTE.length] }, value: (u, v) => (v == null ? "—" : fmt(v)) }))],
  };
  new uPlot(opts, [xs, ...series], into);
}

async function latencyPlot(id, workload, into) {
  const data = await api(`/api/campaigns/${id}/latency?workload=${encodeURIComponent(workload)}`);
  into.replaceChildren();
  if (data.arms.length === 0) { into.append(el("p", { class: "muted" }, "no stored histograms for this workload yet")); return; }
  // x: the number of nines, -log10(1 - p), so the tail gets room.
  const nines = (p) => -Math.log10(Math.max(1 - p / 100, 1e-5));
  const percentiles = data.arms[0].points.map((p) => p.percentile);
  const xs = percentiles.map(nines);
  // Each arm twice: its supported percentiles solid, and from the last of
  // them on, the ones the runs' samples cannot support dashed (p99.99 of
  // 3,000 samples, the maximum), so no tail reads as a measurement.
  const solid = (a) => a.points.map((p) => (p.supported === false ? null : p.latency_us));
  const tail = (a) => a.points.map((p, i) => (p.supported === false || (a.points[i + 1] && a.points[i + 1].supported === false) ? p.latency_us : null));
  const label = (v) => { const p = 100 * (1 - Math.pow(10, -v)); return p >= 99.999 ? "max" : `p${+p.toFixed(3)}`; };
  const opts = {
    width: chartWidth(), height: 300,
    scales: { x: { time: false }, y: { distr: 3 } },
    axes: [{ label: "percentile", splits: () => [0, nines(50), 1, 2, 3, 4, 5], values: (u, vals) => vals.map(label) }, { label: "latency (µs, log)", size: 70 }],
    hooks: idleHooks,
    series: [{ label: "percentile", value: (u, v) => (v == null ? "" : label(v)) },
      ...data.arms.flatMap((a, i) => [
        { label: `${a.arm} (${a.runs} runs, ${a.count} txn)`, stroke: PALETTE[i % PALETTE.length], width: 2,
          value: (u, v) => (v == null ? "—" : `${fmt(v)} µs`) },
        { label: `${a.arm}: not supported by the samples`, stroke: PALETTE[i % PALETTE.length], width: 1.5, dash: [4, 4],
          value: (u, v) => (v == null ? "—" : `${fmt(v)} µs`) }])],
  };
  new uPlot(opts, [xs, ...data.arms.flatMap((a) => [solid(a), tail(a)])], into);
  into.setAttribute("data-unsupported", data.arms.map((a) => a.points.filter((p) => p.supported === false).length).join(","));
  into.setAttribute("data-arms", data.arms.map((a) => a.arm).join(","));
}

// A campaign whose blocks ran on several nodes (the Slurm executor,
// docs/fleet.md): which node ran each block, the Slurm jobs and their last
// state, per-host effects and whether the hosts agree.
function hostsSection(h) {
  const slurm = (h.slurm && h.slurm.blocks) || {};
  const blockNodes = {};
  for (const b of h.blocks) (blockNodes[b.block] = blockNodes[b.block] || new Set()).add(b.server_host ? `${b.host} (server on ${b.server_host})` : b.host);
  const blocks = [...new Set([...Object.keys(blockNodes), ...Object.keys(slurm)].map(Number))].sort((a, b) => a - b);
  const jobs = el("table", { id: "hosts-blocks" },
    el("thead", {}, el("tr", {}, ["block", "host", "Slurm jobs (last state)", "executions discarded"].map((t) => el("th", {}, t)))),
    el("tbody", {}, blocks.map((b) => {
      const s = slurm[b] || { jobs: [], discarded: [] };
      return el("tr", { "data-block": b },
        el("td", {}, String(b)),
        el("td", {}, blockNodes[b] ? [...blockNodes[b]].join(", ") : (s.host || "—")),
        el("td", {}, s.jobs.map((j) => `${j.id} (${j.last_state || (j.ended ? "ended" : "submitted")}${j.pinned ? ", pinned " + j.pinned : ""})`).join("; ") || "—"),
        el("td", {}, s.discarded.map((d) => `${d.execution} on ${d.host} (${d.runs} records)`).join("; ") || "none"));
    })));
  const fmt = (e) => e.ci_low != null ? `${fmtRatio(e.ratio)} [${fmtRatio(e.ci_low)}, ${fmtRatio(e.ci_high)}]` : e.ratio != null ? `${fmtRatio(e.ratio)} (${e.reason})` : "—";
  const effects = el("table", { id: "hosts-effects" },
    el("thead", {}, el("tr", {}, ["workload", "arm", "statistic", "host", "blocks", "ratio [interval]"].map((t) => el("th", {}, t)))),
    el("tbody", {}, h.effects.map((e) => el("tr", {}, [e.workload, e.arm, e.statistic, e.host, String(e.blocks), fmt(e)].map((t) => el("td", {}, t))))));
  const agreement = el("ul", { id: "hosts-agreement" }, h.agreement.map((a) => el("li", {}, `${a.workload} · ${a.arm}: `,
    a.test ? `hosts differ by ×${a.test.spread.toFixed(3)} at most; F(${a.test.df_between}, ${a.test.df_within}) = ${a.test.f.toFixed(2)}, p = ${a.test.p_value.toFixed(3)}` : `no test: ${a.reason}`)));
  return el("div", { id: "hosts" }, scroll("blocks and hosts", jobs), el("h3", {}, "Effects per host"), scroll("effects per host", effects), el("h3", {}, "Do the hosts agree?"), agreement);
}

function provenance(report) {
  const plan = report.plan;
  const kv = (rows) => el("table", { class: "kv" }, el("tbody", {}, rows.map(([k, v]) => el("tr", {}, el("td", {}, k), el("td", {}, v)))));
  const env = report.environment || {};
  const place = report.placement;
  const g = report.gates;
  const cpus = (xs) => (xs && xs.length ? xs.join(",") : "—");
  const orders = plan.workloads.slice(0, 1).map((w) => {
    const blocks = [];
    for (let b = 0; b < plan.blocks; b++) {
      blocks.push(report.schedule.filter((s) => s.workload === w.name && s.block === b).map((s) => s.arm).join(" → "));
    }
    return el("div", {}, el("b", {}, w.name), el("ol", {}, blocks.map((o) => el("li", {}, o))));
  });
  return el("div", { id: "provenance", class: "cols" },
    el("div", {},
      el("h3", {}, "Design"),
      kv([["plan hash", el("span", { class: "hash" }, report.hash)], ["seed", plan.seed], ["blocks", plan.blocks],
          ["arms", plan.arms.map((a) => a.name + (a.baseline ? " (baseline)" : "") + (a.client ? ` (${clientLabel(a.client)})` : "")
            + ((a.adapters || []).length ? ` (through ${a.adapters.map((p) => p.split("/").pop()).join(" → ")})` : "")).join(", ")],
          ["measure", report.design ? report.design.measure : JSON.stringify(plan.measure)], ["orders", report.design ? report.design.orders : "—"], ["intervals", report.intervals ? report.intervals.description : `${plan.bootstrap.method}, level ${plan.bootstrap.level}`],
          ["overrides", report.overrides.join("; ") || "none"], ["source", report.source], ["blocklab", report.version]]),
      el("h3", {}, "Orders (first workload; every workload has its own)"), orders),
    el("div", {},
      el("h3", {}, "Inputs (sha256)"),
      kv(Object.entries(report.inputs).map(([k, v]) => [k, el("span", { class: "hash" }, v)]))),
    el("div", {},
      el("h3", {}, "Environment"),
      kv([["CPU", env.cpu_model || "—"], ["kernel", env.kernel || "—"], ["governor", env.governor || "—"],
          ["SMT layout", (env.smt_layout || []).join(" ")], ["online CPUs", env.online_cpus ?? "—"], ["host", env.hostname || "—"], ["built with", env.toolchain || "—"]]),
      el("h3", {}, "Placement"),
      kv(place ? [["runner", cpus(place.runner)], ["client", cpus(place.client)], ["server", cpus(place.server)], ["origin", place.origin]] : [["placement", "not recorded yet"]]),
      network(report)),
    el("div", { id: "gates" },
      el("h3", {}, "Gates"),
      kv([["runs", g.runs], ["failed", g.failed.length], ["flagged (quiescence)", g.flagged.length], ["reruns", g.reruns],
          ["CPU steal", g.steal_text || "—"], ["OOM kills", g.oom_kills], ["unfinished slots", g.unfinished_slots]]),
      g.failed.length ? el("div", {}, el("b", {}, "failed runs"), el("ul", { class: "error" }, g.failed.slice(0, 20).map((f) => el("li", {}, f)))) : null,
      el("h3", {}, "Limits"), el("ul", {}, report.limits.map((l) => el("li", {}, l)))));
}

// Flamegraphs of the runs a campaign profiled (`--profile`, `?profile=`).
// Targets in their own network namespace (docs/network.md): each arm's link
// with its counters, and the exact ip and tc commands applied.
function network(report) {
  const links = report.links || [];
  if (links.length === 0) return null;
  const n = (x) => Number(x).toLocaleString("en");
  const commands = (report.network || []).flatMap((x) => [
    ...x.netns.setup.map((c) => c.join(" ")),
    ...Object.entries(x.arms).flatMap(([arm, a]) => [`# arm ${arm}: ${a.link}`, ...a.commands.map((c) => c.join(" "))]),
  ]);
  return el("div", { id: "network" },
    el("h3", {}, "Links"),
    scroll("links", el("table", {},
      el("thead", {}, el("tr", {}, ["arm", "link", "runs", "client → target bytes", "target → client bytes", "qdisc drops", "qdisc overlimits"].map((h) => el("th", {}, h)))),
      el("tbody", {}, links.map((l) => el("tr", { "data-arm": l.arm }, [l.arm, l.link, l.runs, n(l.client_to_target_bytes), n(l.target_to_client_bytes), n(l.drops), n(l.overlimits)].map((v) => el("td", {}, String(v)))))))),
    el("details", {}, el("summary", {}, "ip and tc commands"), el("pre", {}, commands.join("\n"))));
}

// The runs of one workload, in run order, each with its value and, when it
// was profiled, a link to its flamegraph (opened in a new tab: the SVG is
// served sandboxed and is never put inline into this page).
function runsOf(report, stat, workload) {
  const runs = report.runs.filter((r) => r.workload === workload);
  if (runs.length === 0) return el("p", { class: "muted" }, "no runs of this workload yet");
  const href = (r) => `/api/campaigns/${report.campaign.id}/runs/${r.slot}/profile?attempt=${r.attempt}`;
  const flame = (r) => {
    if (!r.profile) return "—";
    // A window shorter than one sampling period has no flamegraph.
    if (!(r.profile.svg_bytes > 0)) return `no samples (${r.profile.samples})`;
    return el("a", { class: "flamegraph", href: href(r), target: "_blank", rel: "noopener noreferrer" },
      `flamegraph (${r.profile.samples} samples at ${r.profile.frequency_hz} Hz)`);
  };
  const value = (r) => (stat && r.values && stat.name in r.values ? fmt(r.values[stat.name]) : "—");
  return scroll(`runs of ${workload}`, el("table", { id: "runs" },
    el("thead", {}, el("tr", {}, ["slot", "block", "position", "arm", "status", stat ? `${stat.name} (${stat.unit})` : "value", "CPU profile"].map((h) => el("th", {}, h)))),
    el("tbody", {}, runs.map((r) => el("tr", { "data-slot": r.slot, "data-arm": r.arm, "data-block": r.block + 1 },
      el("td", { class: "num" }, r.slot), el("td", { class: "num" }, r.block + 1), el("td", { class: "num" }, r.position + 1),
      el("td", {}, r.arm), el("td", {}, r.status), el("td", { class: "num" }, value(r)), el("td", {}, flame(r)))))));
}

// ---- compare -------------------------------------------------------------

async function comparePage(a, b, seq) {
  const list = await api("/api/campaigns");
  if (stale(seq)) return;
  const pick = (id, value) => el("select", { id, "aria-label": id === "compare-a" ? "campaign A" : "campaign B" }, el("option", { value: "" }, "—"),
    list.map((c) => el("option", { value: c.id, selected: String(c.id) === String(value) ? "selected" : null }, `${c.id} ${c.name} (${c.status.state})`)));
  const sa = pick("compare-a", a), sb = pick("compare-b", b);
  // B is drawn under A on each row, in orange.
  const go = () => { if (sa.value && sb.value) location.hash = `#/compare/${sa.value}/${sb.value}`; };
  sa.addEventListener("change", go); sb.addEventListener("change", go);
  const out = el("div", { id: "compare" });
  $main.replaceChildren(el("h1", {}, "Compare two campaigns"), el("p", { class: "pickers" }, el("label", {}, "A ", sa), " ", el("label", {}, "B ", sb)), out);
  if (!a || !b) { out.append(el("p", { class: "muted" }, "Pick two campaigns with the same workloads and arms.")); return; }
  const [ra, rb, detail, change] = await Promise.all([api(`/api/campaigns/${a}/report`), api(`/api/campaigns/${b}/report`), api(`/api/campaigns/${a}`),
    api(`/api/compare?a=${encodeURIComponent(a)}&b=${encodeURIComponent(b)}`)]);
  if (stale(seq)) return;
  out.append(...changeSection(change));
  const wa = ra.plan.workloads.map((w) => w.name), wb = rb.plan.workloads.map((w) => w.name);
  const workloads = wa.filter((w) => wb.includes(w));
  const armsB = rb.plan.arms.map((x) => x.name);
  const arms = ra.plan.arms.filter((x) => !x.baseline && armsB.includes(x.name)).map((x) => x.name);
  if (workloads.length === 0 || arms.length === 0) {
    out.append(el("p", { class: "error" }, "These campaigns share no workload × non-baseline arm; nothing to put side by side."));
    return;
  }
  if (workloads.length < Math.max(wa.length, wb.length)) out.append(el("p", { class: "muted" }, `Only the ${workloads.length} shared workloads are shown.`));
  const names = [`A: campaign ${a}`, `B: campaign ${b}`];
  const shown = (e) => workloads.includes(e.workload) && arms.includes(e.arm) && detail.statistics.some((s) => s.name === e.statistic);
  const baselineA = ra.plan.arms.find((x) => x.baseline).name;
  const frame = forestFrame([ra.effects.filter(shown), rb.effects.filter(shown)], names, baselineA);
  out.append(forestLegend(names));
  for (const stat of detail.statistics) {
    const rows = [ra, rb].map((r) => r.effects.filter((e) => e.statistic === stat.name));
    if (rows[0].length === 0 && rows[1].length === 0) continue;
    out.append(el("h3", {}, `${stat.name}: ${stat.lower_is_better ? "below 1 is faster/cheaper" : "above 1 is better"}`),
      forestPlot(stat, rows, workloads, arms, names, baselineA, frame));
  }
}

// Campaign B against campaign A from /api/compare: the warnings first (a
// different baseline makes the forest plots below incomparable), then each
// shared arm's change with its interval, then the plan differences.
function changeSection(c) {
  const parts = [];
  if (c.warnings.length) {
    parts.push(el("div", { id: "compare-warnings", class: "error", role: "alert" },
      c.warnings.map((w) => el("p", {}, `Warning: ${w}`))));
  }
  const words = { better: "better", worse: "worse", no_detectable_change: "no detectable change" };
  // The answer first: how many rows changed against how many chance gives,
  // and what an unpaired comparison cannot tell apart from the code.
  if (c.summary) {
    parts.push(el("section", { id: "compare-summary" }, el("h2", {}, "Summary"),
      el("p", { id: "compare-summary-text", class: c.summary.beyond_chance ? "beyond-chance" : "" }, el("b", {}, c.summary.text)),
      el("p", { class: "muted", id: "compare-drift" }, c.summary.drift)));
  }
  const changedOnly = el("input", { type: "checkbox", id: "changed-only" });
  changedOnly.addEventListener("change", () => {
    for (const tr of document.querySelectorAll("#compare-changes tbody tr")) tr.hidden = changedOnly.checked && tr.classList.contains("change-no_detectable_change");
  });
  parts.push(el("h2", {}, `Change B/A (${Math.round(c.level * 100)}% intervals)`),
    el("p", { class: "muted" }, c.method),
    el("p", {}, el("label", {}, changedOnly, " changed rows only")),
    scroll("change B/A", el("table", { id: "compare-changes" },
      el("thead", {}, el("tr", {}, ["workload", "arm", "statistic", "B/A", "interval", "blocks A/B", "verdict", "of"].map((h) => el("th", { scope: "col" }, h)))),
      el("tbody", {}, c.changes.map((r) => el("tr", { class: `change-${r.direction}${r.supported === false ? " unsupported" : ""}`, "data-basis": r.basis || "absolute",
          title: r.supported === false ? `not counted: ${r.reason}` : null },
        el("td", {}, r.workload), el("td", {}, r.arm), el("td", {}, r.statistic),
        el("td", { class: "num" }, fmtRatio(r.ratio)),
        el("td", { class: "num" }, `[${fmtRatio(r.ci_low)}, ${fmtRatio(r.ci_high)}]`),
        el("td", { class: "num" }, `${r.blocks_a}/${r.blocks_b}`),
        el("td", {}, (words[r.direction] || r.direction) + (r.supported === false ? " (not counted)" : "")),
        // An effect row cancels drift between the campaigns; an absolute
        // one carries it, and its interval allows for it when the
        // reference campaigns could show how much.
        el("td", {}, r.basis === "effect" ? `effect against ${r.baseline}`
          : r.drift_sd != null ? `its own figure, drift ±${(100 * (Math.exp(r.drift_sd) - 1)).toFixed(1)}% allowed` : "its own figure, no drift allowance")))))));
  const reasons = [...new Set(c.changes.filter((r) => r.supported === false).map((r) => r.reason))];
  if (reasons.length) parts.push(el("ul", { id: "compare-not-counted", class: "muted" }, reasons.map((r) => el("li", {}, `not counted: ${r}`))));
  for (const m of c.missing) parts.push(el("p", { class: "muted" }, `${m.workload} ${m.arm} ${m.statistic}: ${m.reason}`));
  const show = (v) => v === null ? "—" : typeof v === "string" ? v : JSON.stringify(v);
  parts.push(el("h2", {}, "Plan differences"), c.plan_differences.length === 0
    ? el("p", { id: "compare-plan-diff" }, "The sealed plans are the same.")
    : scroll("plan differences", el("table", { id: "compare-plan-diff" },
      el("thead", {}, el("tr", {}, ["field", "A", "B"].map((h) => el("th", { scope: "col" }, h)))),
      el("tbody", {}, c.plan_differences.map((d) => el("tr", {},
        el("td", {}, d.path), el("td", {}, show(d.a)), el("td", {}, show(d.b))))))));
  return parts;
}

// ---- submit --------------------------------------------------------------

const EXAMPLE_PLAN = `name = "from-the-ui"
seed = 1
blocks = 2
plugin = "builtin"

[measure]
warmup = 100
measured = 500

[[workloads]]
name = "get100"

[[arms]]
name = "a"
baseline = true

[[arms]]
name = "b"
`;

function submitPage() {
  const text = el("textarea", { id: "plan", spellcheck: "false", "aria-label": "plan (TOML)" });
  text.value = EXAMPLE_PLAN;
  const file = el("input", { type: "file", id: "plan-file", accept: ".toml,.json,text/plain" });
  file.addEventListener("change", async () => { if (file.files[0]) text.value = await file.files[0].text(); });
  const token = el("input", { type: "password", id: "token", size: 40, placeholder: "contents of <data>/token", "aria-label": "token" });
  token.value = localStorage.getItem("blocklab-token") || "";
  const remember = el("input", { type: "checkbox", id: "remember" });
  remember.checked = !!localStorage.getItem("blocklab-token");
  const profile = el("input", { type: "text", id: "profile", size: 16, placeholder: "e.g. block=1",
    "aria-label": "runs to CPU-profile" });
  const out = el("div", { id: "submit-result" });
  // One key per form fill: a double-click or a retry of the same fill queues
  // one campaign (the daemon answers a repeated key with the first campaign);
  // any edit is a new fill.
  let key = newKey();
  for (const input of [text, profile]) input.addEventListener("input", () => { key = newKey(); });
  file.addEventListener("change", () => { key = newKey(); });
  const submit = el("button", { id: "submit", onclick: async () => {
    out.className = ""; out.textContent = "submitting…";
    if (remember.checked && token.value) localStorage.setItem("blocklab-token", token.value.trim());
    if (!remember.checked) localStorage.removeItem("blocklab-token");
    const json = text.value.trim().startsWith("{");
    try {
      const query = profile.value.trim() ? `?profile=${encodeURIComponent(profile.value.trim())}` : "";
      const r = await api(`/api/campaigns${query}`, { method: "POST", body: text.value,
        headers: { "Content-Type": json ? "application/json" : "application/toml", "Idempotency-Key": key, ...authHeaders(token.value) } });
      out.className = "ok";
      // What sealing found legal but unable to compare (identical arms, too
      // few blocks for an interval) is said here, before the runs are spent.
      const warned = (r.warnings || []).length
        ? el("ul", { id: "submit-warnings", class: "verdict-warnings" }, r.warnings.map((w) => el("li", {}, `warning: ${w}`))) : null;
      out.replaceChildren(`queued campaign ${r.id} (${r.total_runs} runs): `, el("a", { href: `#/campaigns/${r.id}`, id: "submitted-link" }, "open it"), warned);
    } catch (e) {
      out.className = "error";
      const where = e.body && e.body.line ? ` (line ${e.body.line}, column ${e.body.column})` : "";
      out.textContent = `refused (HTTP ${e.status || "?"})${where}: ${e.message}`;
    }
  } }, "submit");
  $main.replaceChildren(el("h1", {}, "Submit a plan"),
    el("p", { class: "muted" }, "A plan in TOML (docs/plans.md) or the same fields as JSON. Plugin paths are read on the daemon's machine, relative to where it was started. The token is in the file `token` of the daemon's data directory."),
    el("p", {}, el("label", {}, "upload ", file)), text,
    el("p", {}, el("label", {}, "CPU-profile runs ", profile), el("span", { class: "muted" },
      " (optional: all, block=N, slot=N, arm=NAME or workload=NAME, comma-separated; whole blocks keep ratios fair)")),
    el("p", {}, "token ", token, " ", el("label", {}, remember, " remember in this browser"), " ", submit),
    out);
  view = { kind: "submit" };
}

function newKey() {
  if (crypto.randomUUID) return crypto.randomUUID();
  return Array.from(crypto.getRandomValues(new Uint8Array(16)), (b) => b.toString(16).padStart(2, "0")).join("");
}

connectEvents();
// The first route waits for the page's other scripts (history.js,
// curves.js come after this one in index.html): a page opened directly,
// e.g. #/history?..., needs their functions at once.
if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", route);
else route();
