// Browser check of the history page (web/history.js), run by
// host/tests/all/history.rs against a daemon whose store holds ten campaigns
// of one series with a slowdown from the sixth on:
//   BLOCKLAB_URL       http://127.0.0.1:PORT
//   BLOCKLAB_FINISHED  id of one of those campaigns
import { test } from "node:test";
import assert from "node:assert/strict";
import { useBrowser } from "./browser.mjs";

const url = process.env.BLOCKLAB_URL;
const finished = process.env.BLOCKLAB_FINISHED;
if (!url || !finished) throw new Error("BLOCKLAB_URL and BLOCKLAB_FINISHED are set by host/tests/all/history.rs");

const browser = useBrowser();

test("the campaign page links to the history, which shows each campaign's interval, tags on hover and the change point", async () => {
  const api = await (await fetch(`${url}/api/history?workload=get100&arm=b`)).json();
  const page = await browser.context.newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(e.message));
  await page.goto(`${url}/#/campaigns/${finished}`);
  await page.click('.history-links a:text("get100 · b")');
  await page.waitForSelector("#history-chart .point");
  assert.match(page.url(), /#\/history\?workload=get100&arm=b$/);
  const points = await page.$$eval("#history-chart .point", (gs) => gs.map((g) => ({
    campaign: +g.dataset.campaign, ratio: +g.dataset.ratio, low: +g.dataset.low, high: +g.dataset.high,
    title: g.querySelector("title").textContent })));
  assert.equal(points.length, api.points.length);
  api.points.forEach((p, i) => {
    assert.equal(points[i].campaign, p.campaign);
    assert.equal(points[i].ratio, p.ratio);
    assert.equal(points[i].low, p.ci_low);
    assert.equal(points[i].high, p.ci_high);
    assert.ok(points[i].title.includes(`commit=${p.tags.commit}`), points[i].title);
  });
  const changes = await page.$$eval("#history-chart .change-point", (ls) => ls.map((l) => +l.dataset.index));
  assert.deepEqual(changes, api.change_points.map((c) => c.index));
  assert.equal(changes.length, 1);
  assert.deepEqual(errors, []);
});
