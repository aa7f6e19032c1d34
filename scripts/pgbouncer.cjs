// Where PgBouncer is, for the tests of the platform behind a pooler (*.pgbouncer.test.ts, see
// packages/testing/src/pgbouncer.ts). PGBOUNCER_PATH wins; else Debian's /usr/sbin/pgbouncer or
// one on PATH. CommonJS so that jest.config.js and scripts/test.mjs share it.
const { existsSync } = require('node:fs');
const path = require('node:path');

function findPgBouncer(env = process.env) {
  if (env.PGBOUNCER_PATH) return existsSync(env.PGBOUNCER_PATH) ? env.PGBOUNCER_PATH : null;
  if (existsSync('/usr/sbin/pgbouncer')) return '/usr/sbin/pgbouncer';
  for (const dir of (env.PATH || '').split(':')) {
    const candidate = path.join(dir, 'pgbouncer');
    if (dir && existsSync(candidate)) return candidate;
  }
  return null;
}

/** What scripts/test.mjs says when these tests are left out. */
const LEFT_OUT = { suites: 'tests behind PgBouncer (*.pgbouncer.test.ts)', missing: 'pgbouncer', install: 'apt-get install -y pgbouncer, or set PGBOUNCER_PATH' };

module.exports = { findPgBouncer, LEFT_OUT, PGBOUNCER_TESTS: '\\.pgbouncer\\.test\\.ts$' };
