// The headless Chromium every browser check runs in: a throwaway profile,
// launched before the calling file's tests and closed and removed after
// them. `options` adds to playwright's launch options (e.g. a viewport);
// `setup` is called with the new context before any test runs.
import { after, before } from "node:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
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
