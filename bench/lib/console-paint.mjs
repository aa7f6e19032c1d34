// The operators' console, measured in B5 (its queue has 1,000,000 items): the JavaScript it ships,
// gzipped as the API serves it, and how long a cold load of the overview takes in Chromium until
// the big queue's card shows its counts. Needs a Chromium (scripts/chromium.cjs); without one the
// rows say so instead of a figure.
import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { percentile, round } from './scenario.mjs';

const require = createRequire(import.meta.url);
const { findChromium } = require('../../scripts/chromium.cjs');

/** Bytes of JavaScript in the built console, gzipped (the precompressed files the API serves). */
export function consoleJsGzipBytes(root) {
  const assets = path.join(root, 'apps', 'console', 'dist', 'assets');
  let total = 0;
  for (const name of readdirSync(assets).filter((n) => n.endsWith('.js'))) {
    const file = path.join(assets, name);
    try {
      total += readFileSync(`${file}.gz`).length;
    } catch {
      total += gzipSync(readFileSync(file), { level: 9 }).length;
    }
  }
  return total;
}

/**
 * Cold loads of the overview (a fresh browser context each: no cache, no session but the one
 * placed in sessionStorage before the page's script runs), timed from navigation to the queue
 * card showing `expected` in its `new` count. Also the first contentful paint of each load.
 */
export async function measureOverview({ baseUrl, session, queueName, expectedNew, loads }) {
  const executablePath = findChromium();
  if (!executablePath) return null;
  const { chromium } = await import('playwright-core');
  const browser = await chromium.launch({ executablePath, args: ['--no-sandbox', '--disable-dev-shm-usage'] });
  const rendered = [];
  const fcp = [];
  let countShown = null;
  try {
    for (let i = 0; i < loads; i++) {
      const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, locale: 'es-ES' });
      await context.addInitScript((s) => sessionStorage.setItem('svc.console.session', s), JSON.stringify(session));
      const page = await context.newPage();
      const started = performance.now();
      await page.goto(`${baseUrl}/console/`);
      const cell = page.locator(`[data-queue="${queueName}"] [data-count="new"]`);
      await cell.waitFor({ timeout: 30_000 });
      rendered.push(performance.now() - started);
      countShown = (await cell.textContent())?.replace(/\D/g, '') ?? null;
      fcp.push(await page.evaluate(() => performance.getEntriesByName('first-contentful-paint')[0]?.startTime ?? null));
      await context.close();
    }
  } finally {
    await browser.close();
  }
  const sorted = [...rendered].sort((a, b) => a - b);
  return {
    loads,
    renderedMs: { median: round(percentile(sorted, 50), 0), max: round(sorted[sorted.length - 1], 0), all: rendered.map((x) => round(x, 0)) },
    firstContentfulPaintMs: fcp.map((x) => (x === null ? null : round(x, 0))),
    countExact: countShown === String(expectedNew),
  };
}
