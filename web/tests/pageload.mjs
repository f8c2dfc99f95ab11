// The campaign page's load time in headless Chromium (docs/benchmarks.md):
// navigation start until every forest plot is drawn, ROUNDS fresh pages.
//   node web/tests/pageload.mjs http://127.0.0.1:7878 CAMPAIGN_ID [rounds]
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";

const [base, id, rounds = "5"] = process.argv.slice(2);
const profile = mkdtempSync(join(tmpdir(), "blocklab-chromium-"));
const context = await chromium.launchPersistentContext(profile, {
  executablePath: "/usr/bin/chromium", headless: true,
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run"],
  viewport: { width: 1280, height: 900 },
});
const times = [];
for (let i = 0; i < Number(rounds); i++) {
  const page = await context.newPage();
  const t0 = Date.now();
  await page.goto(`${base}/#/campaigns/${id}`);
  await page.waitForSelector('svg.forest[data-statistic="allocs"] .forest-mark');
  await page.waitForSelector("#latency-plot canvas");
  times.push(Date.now() - t0);
  await page.close();
}
await context.close();
rmSync(profile, { recursive: true, force: true });
times.sort((a, b) => a - b);
console.log(JSON.stringify({ campaign: id, rounds: times.length, ms: times, median_ms: times[Math.floor(times.length / 2)] }));
