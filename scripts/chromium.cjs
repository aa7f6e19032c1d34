// Where a Chromium for the console's browser tests is (playwright-core drives it; it downloads
// no browser). CHROMIUM_PATH wins; else Debian's /usr/bin/chromium or one on PATH. CommonJS so
// that jest.config.js and scripts/test.mjs share it.
const { existsSync } = require('node:fs');
const path = require('node:path');

const NAMES = ['chromium', 'chromium-browser', 'google-chrome'];

function findChromium(env = process.env) {
  if (env.CHROMIUM_PATH) return existsSync(env.CHROMIUM_PATH) ? env.CHROMIUM_PATH : null;
  if (existsSync('/usr/bin/chromium')) return '/usr/bin/chromium';
  for (const dir of (env.PATH || '').split(':')) {
    for (const name of NAMES) {
      const candidate = path.join(dir, name);
      if (dir && existsSync(candidate)) return candidate;
    }
  }
  return null;
}

/** What scripts/test.mjs says when these tests are left out. */
const LEFT_OUT = { suites: 'console browser tests (*.browser.test.ts)', missing: 'Chromium', install: 'apt-get install -y chromium, or set CHROMIUM_PATH' };

module.exports = { findChromium, LEFT_OUT, BROWSER_TESTS: '\\.browser\\.test\\.ts$' };
