// The headless Chromium every browser check runs in: a throwaway profile,
// launched before the calling file's tests and closed and removed after
// them. `options` adds to playwright's launch options (e.g. a viewport);
// `setup` is called with the new context before any test runs. Also the
// checks every page gets: axe-core's serious violations, sideways overflow.
import { after, before } from "node:test";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

export function useBrowser(options = {}, setup = () => {}) {
  const browser = { context: null };
  let profile;
  before(async () => {
    profile = mkdtempSync(join(tmpdir(), "blocklab-chromium-"));
    browser.context = await chromium.launchPersistentContext(profile, {
      executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
      headless: true,
      args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"],
      ...options,
    });
    setup(browser.context);
  });
  after(async () => {
    await browser.context?.close();
    if (profile) rmSync(profile, { recursive: true, force: true });
  });
  return browser;
}

// axe-core (web/tests/package.json), evaluated in the page through the
// DevTools protocol, which the page's CSP does not apply to.
const axeSource = readFileSync(join(dirname(fileURLToPath(import.meta.url)), "node_modules/axe-core/axe.min.js"), "utf8");

// Serious and critical axe-core violations on the page as it is now.
export async function axeViolations(page) {
  await page.evaluate(axeSource + "\n;0");
  const result = await page.evaluate(() => window.axe.run(document, { resultTypes: ["violations"] }));
  return result.violations.filter((v) => v.impact === "serious" || v.impact === "critical")
    .map((v) => `${v.id} (${v.impact}): ${v.help}: ${v.nodes.slice(0, 3).map((n) => n.target.join(" ")).join("; ")}`);
}

// How far the page overflows the viewport sideways (0 when it does not).
export const overflow = (page) => page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
// The innermost elements sticking out to the right, for the message.
export const overflowing = (page) => page.evaluate(() => [...document.querySelectorAll("main *")]
  .filter((e) => e.getBoundingClientRect().right > window.innerWidth + 1 && ![...e.children].some((c) => c.getBoundingClientRect().right > window.innerWidth + 1))
  .slice(0, 5).map((e) => `${e.tagName.toLowerCase()}${e.id ? "#" + e.id : ""}.${e.className}: ${(e.textContent || "").slice(0, 40)}`));
