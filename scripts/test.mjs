// `npm test`: installs, builds, finds or starts Postgres and Redis, type-checks the tests (jest
// only transpiles them), then runs the whole jest suite. Extra arguments go to jest
// (`npm test -- apps/api/test/errors.test.ts`), and skip the type check. Suites whose tool is not
// installed are left out (jest.config.js) and named in one line; with SVC_REQUIRE_ALL_SUITES=1
// (CI) that is a failure, before anything runs, so a green run has run every suite.
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { ensureInstalledAndBuilt, ensureServices, ROOT, SetupError } from './services.mjs';
import chromium from './chromium.cjs';
import promtool from './promtool.cjs';
import pgbouncer from './pgbouncer.cjs';
import python from './python.cjs';
import redisCluster from './redis-cluster.cjs';

const leftOut = [
  [chromium.findChromium(), chromium.LEFT_OUT],
  [promtool.findPromtool(), promtool.LEFT_OUT],
  [pgbouncer.findPgBouncer(), pgbouncer.LEFT_OUT],
  [python.findPython(), python.LEFT_OUT],
  [redisCluster.findRedisClusterTools(), redisCluster.LEFT_OUT],
].filter(([found]) => !found).map(([, l]) => l);
if (leftOut.length) {
  console.log(`Suites left out: ${leftOut.map((l) => `${l.suites}: no ${l.missing} (${l.install})`).join('; ')}.`);
  if (process.env.SVC_REQUIRE_ALL_SUITES === '1') {
    console.error(`SVC_REQUIRE_ALL_SUITES=1: not running with ${leftOut.length === 1 ? 'a suite' : `${leftOut.length} suites`} left out; install what the line above names.`);
    process.exit(1);
  }
}

try {
  ensureInstalledAndBuilt();
  const jestArgs = process.argv.slice(2);
  if (jestArgs.length === 0) {
    const tsc = spawnSync(process.execPath, [path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.test.json', '--noEmit'], { cwd: ROOT, stdio: 'inherit' });
    if (tsc.status !== 0) {
      console.error('The tests do not type-check (tsc -p tsconfig.test.json --noEmit above).');
      process.exit(1);
    }
  }
  const { databaseUrl, redisUrl, stopStarted } = await ensureServices();
  const res = spawnSync(process.execPath, [path.join(ROOT, 'node_modules', 'jest', 'bin', 'jest.js'), ...jestArgs], {
    cwd: ROOT,
    stdio: 'inherit',
    env: { ...process.env, DATABASE_URL: databaseUrl, REDIS_URL: redisUrl },
  });
  await stopStarted();
  process.exit(res.status ?? 1);
} catch (err) {
  if (err instanceof SetupError) {
    console.error(err.message);
    process.exit(1);
  }
  throw err;
}
