// `npm test`: installs, builds, finds or starts Postgres and Redis, then runs the whole jest suite.
// Extra arguments go to jest (`npm test -- apps/api/test/errors.test.ts`).
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { ensureInstalledAndBuilt, ensureServices, ROOT, SetupError } from './services.mjs';

try {
  ensureInstalledAndBuilt();
  const { databaseUrl, redisUrl, stopStarted } = await ensureServices();
  const res = spawnSync(process.execPath, [path.join(ROOT, 'node_modules', 'jest', 'bin', 'jest.js'), ...process.argv.slice(2)], {
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
