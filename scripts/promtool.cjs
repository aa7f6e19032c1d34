// Where promtool is, for the tests that check the metrics exposition and the alert rules with it
// (`*.promtool.test.ts`). PROMTOOL_PATH wins; else one on PATH (Debian's package `prometheus`
// installs /usr/bin/promtool). CommonJS so that jest.config.js, scripts/test.mjs and the tests share it.
const { existsSync } = require('node:fs');
const path = require('node:path');

function findPromtool(env = process.env) {
  if (env.PROMTOOL_PATH) return existsSync(env.PROMTOOL_PATH) ? env.PROMTOOL_PATH : null;
  for (const dir of (env.PATH || '').split(':')) {
    const candidate = path.join(dir, 'promtool');
    if (dir && existsSync(candidate)) return candidate;
  }
  return existsSync('/usr/bin/promtool') ? '/usr/bin/promtool' : null;
}

/** What scripts/test.mjs says when these tests are left out. */
const LEFT_OUT = { suites: 'metrics exposition and alert rule checks (*.promtool.test.ts)', missing: 'promtool', install: 'apt-get install -y prometheus, or set PROMTOOL_PATH' };

module.exports = { findPromtool, LEFT_OUT, PROMTOOL_TESTS: '\\.promtool\\.test\\.ts$' };
