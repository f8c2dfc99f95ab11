// Browser check of the history page (web/history.js), run by
// host/tests/all/history.rs against a daemon whose store holds campaigns
// of one series with a slowdown from the sixth on:
//   BLOCKLAB_URL        http://127.0.0.1:PORT
//   BLOCKLAB_FINISHED   id of one of those campaigns
//   BLOCKLAB_ARTIFACTS  where screenshots go
//   BLOCKLAB_CHOICES    set once a campaign on another testbed makes the
//                       query ambiguous: then only the picker is checked
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { axeViolations, overflow, overflowing, useBrowser } from "./browser.mjs";

const url = process.env.BLOCKLAB_URL;
const finished = process.env.BLOCKLAB_FINISHED;
const artifacts = process.env.BLOCKLAB_ARTIFACTS;
if (!url || !finished || !artifacts) throw new Error("BLOCKLAB_URL, BLOCKLAB_FINISHED and BLOCKLAB_ARTIFACTS are set by host/tests/all/history.rs");
mkdirSync(artifacts, { recursive: true });

const browser = useBrowser();
const query = "workload=get100&arm=b";

async function open(hash, width) {
  const page = await browser.context.newPage();
  await page.setViewportSize({ width, height: 900 });
  const errors = [];
  page.on("pageerror", (e) => errors.push(e.message));
  await page.goto(`${url}/${hash}`);
  return { page, errors };
}

// What a page must be at every width: inside the viewport, no serious
// accessibility violation, no script error.
async function fits(page, errors, what, width) {
  const problems = [];
  const over = await overflow(page);
  if (over > 0) problems.push(`${what} at ${width}px overflows by ${over}px: ${(await overflowing(page)).join(" | ")}`);
  for (const v of await axeViolations(page)) problems.push(`${what} at ${width}px: ${v}`);
  if (errors.length) problems.push(`${what} at ${width}px: ${errors.join("; ")}`);
  return problems;
}

if (!process.env.BLOCKLAB_CHOICES) {
  test("the campaign page links to the history, which shows each campaign's interval, tags on hover and the change point", async () => {
    const api = await (await fetch(`${url}/api/history?${query}`)).json();
    const { page, errors } = await open(`#/campaigns/${finished}`, 1280);
    await page.click('.history-links a:text("get100 · b")');
    await page.waitForSelector("#history-chart .point");
    // The link names the campaign's own testbed.
    assert.match(page.url(), /#\/history\?workload=get100&arm=b&testbed=[^&]+$/);
    assert.equal(new URL(page.url()).hash.split("testbed=")[1], encodeURIComponent(api.series.testbed));
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
    await page.close();
  });

  test("opened directly, the history draws every point with titled axes and fits 1280 and 420 px", async () => {
    const api = await (await fetch(`${url}/api/history?${query}`)).json();
    const problems = [];
    for (const width of [1280, 420]) {
      const { page, errors } = await open(`#/history?${query}`, width);
      await page.waitForSelector("#history-chart .point");
      await page.screenshot({ path: join(artifacts, `history-series-${width}.png`), fullPage: true });
      assert.equal(await page.locator("#history-chart .point").count(), api.points.length, `${width}px: one point per campaign`);
      const titles = await page.$$eval("#history-chart text.axis-title", (ts) => ts.map((t) => t.textContent));
      assert.equal(titles.length, 2, `${width}px: ${titles}`);
      assert.match(titles[0], /campaign/);
      assert.match(titles[1], new RegExp(`${api.series.statistic}.*b / baseline`));
      const right = await page.$eval("#history-chart", (s) => s.getBoundingClientRect().right);
      if (right > width + 1) problems.push(`${width}px: the chart ends at ${right}px`);
      // Campaign ids under the points never overlap the next one.
      const overlaps = await page.$$eval("#history-chart .point text", (ts) => {
        const boxes = ts.map((t) => t.getBBox());
        return boxes.slice(1).filter((b, i) => b.x < boxes[i].x + boxes[i].width).map((b) => `id at ${b.x}`);
      });
      problems.push(...overlaps.map((o) => `${width}px: ${o}`));
      // The y axis's title stays left of its tick labels.
      const [titleRight, tickLeft] = await page.$eval("#history-chart", (s) => [
        s.querySelectorAll("text.axis-title")[1].getBoundingClientRect().right,
        Math.min(...[...s.querySelectorAll(":scope > text.tick")].map((t) => t.getBoundingClientRect().left))]);
      if (titleRight > tickLeft) problems.push(`${width}px: the y title (to ${titleRight}px) runs into a tick label (from ${tickLeft}px)`);
      problems.push(...await fits(page, errors, "history", width));
      await page.close();
    }
    assert.deepEqual(problems, []);
  });
} else {
  test("a query matching several series offers one link per series, each opening its history", async () => {
    const answer = await fetch(`${url}/api/history?${query}`);
    assert.equal(answer.status, 400);
    const { choices } = await answer.json();
    assert.ok(choices.length >= 2, JSON.stringify(choices));
    const problems = [];
    for (const width of [1280, 420]) {
      const { page, errors } = await open(`#/history?${query}`, width);
      await page.waitForSelector("#series-picker li");
      await page.screenshot({ path: join(artifacts, `history-choices-${width}.png`), fullPage: true });
      assert.equal(await page.locator("#page-error").count(), 0, "no raw error");
      const items = await page.$$eval("#series-picker li", (ls) => ls.map((l) => l.textContent));
      assert.equal(items.length, choices.length);
      choices.forEach((c, i) => {
        assert.ok(items[i].includes(c.testbed) && items[i].includes(c.family), items[i]);
        assert.ok(items[i].includes(`${c.campaigns} campaign`), items[i]);
      });
      problems.push(...await fits(page, errors, "history choices", width));
      // Each choice is the same query narrowed to its series.
      const chosen = choices[choices.length - 1];
      await page.click(`#series-picker li:nth-child(${choices.length}) a`);
      await page.waitForSelector("#history-chart .point");
      assert.equal(await page.locator("#history-chart .point").count(), chosen.campaigns);
      assert.ok((await page.locator("main p.muted").first().innerText()).includes(`testbed ${chosen.testbed}`));
      await page.close();
    }
    assert.deepEqual(problems, []);
  });
}
