// `npm run migrate`: applies pending migrations to DATABASE_URL (creating the database if needed).
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { ensureDatabase, ensureInstalledAndBuilt, ensureServices, ROOT } from './services.mjs';

ensureInstalledAndBuilt();
const { databaseUrl, redisUrl } = await ensureServices();
await ensureDatabase(databaseUrl);
const res = spawnSync(process.execPath, [path.join(ROOT, 'packages/cli/bin/svc.js'), 'migrate'], {
  stdio: 'inherit',
  env: { ...process.env, DATABASE_URL: databaseUrl, REDIS_URL: redisUrl },
});
process.exit(res.status ?? 1);
