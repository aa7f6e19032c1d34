// `npm test`: installs, builds, finds or starts Postgres and Redis, type-checks the tests (jest
// only transpiles them), then runs the whole jest suite. Extra arguments go to jest
// (`npm test -- apps/api/test/errors.test.ts`), and skip the type check.
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { ensureInstalledAndBuilt, ensureServices, ROOT, SetupError } from './services.mjs';
import chromium from './chromium.cjs';
import promtool from './promtool.cjs';
import pgbouncer from './pgbouncer.cjs';
import redisCluster from './redis-cluster.cjs';

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
  // jest.config.js leaves the console's browser tests out without a Chromium: say so, once
  if (!chromium.findChromium()) console.log(chromium.NOT_RUN_MESSAGE);
  if (!promtool.findPromtool()) console.log(promtool.NOT_RUN_MESSAGE);
  if (!pgbouncer.findPgBouncer()) console.log(pgbouncer.NOT_RUN_MESSAGE);
  if (!redisCluster.findRedisClusterTools()) console.log(redisCluster.NOT_RUN_MESSAGE);
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
