import { execFileSync } from 'node:child_process';
import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRedis, createSql } from '@svc/core';
import { freePort } from '@svc/testing';

const SERVICES = path.join(__dirname, '..', 'scripts', 'services.mjs');

/** Runs a snippet against scripts/services.mjs in a real node process (the scripts are ES modules). */
function runServices(snippet: string): string {
  return execFileSync(process.execPath, ['--input-type=module', '-e', `import * as s from ${JSON.stringify(SERVICES)};\n${snippet}`], {
    encoding: 'utf8',
    timeout: 60_000,
  });
}

describe('npm start / npm test service set-up', () => {
  const dataRoot = mkdtempSync(path.join(os.tmpdir(), 'svc-services-'));
  // the postgres user (servers refuse to run as root) must be able to reach its data folder
  chmodSync(dataRoot, 0o755);
  afterAll(() => rmSync(dataRoot, { recursive: true, force: true }));

  it('starts a private Postgres and Redis from the installed binaries when none answers', async () => {
    const [pgPort, redisPort] = [await freePort(), await freePort()];
    const out = runServices(`
      const pg = await s.startLocalPostgres(${JSON.stringify(dataRoot)}, ${pgPort});
      const rd = await s.startLocalRedis(${JSON.stringify(dataRoot)}, ${redisPort});
      await s.ensureDatabase(pg.url);
      console.log(JSON.stringify({ pg: pg.url, redis: rd.url }));`);
    const urls = JSON.parse(out.trim().split('\n').pop()!);
    expect(urls).toEqual({ pg: `postgres://postgres@127.0.0.1:${pgPort}/svc`, redis: `redis://127.0.0.1:${redisPort}` });
    const sql = createSql(urls.pg, { max: 1 });
    const redis = createRedis(urls.redis);
    try {
      const [row] = await sql`select current_database() as db`;
      expect(row!.db).toBe('svc');
      expect(await redis.config('GET', 'maxmemory-policy')).toEqual(['maxmemory-policy', 'noeviction']);
    } finally {
      await sql.end();
      redis.disconnect();
      runServices(`
        const pg = await s.startLocalPostgres(${JSON.stringify(dataRoot)}, ${pgPort});
        const rd = await s.startLocalRedis(${JSON.stringify(dataRoot)}, ${redisPort});
        pg.stop(); rd.stop();`);
    }
  }, 60_000);

  it('finds the checkout from its own file when the checkout path holds a space (not a URL-encoded %20)', () => {
    const checkout = path.join(dataRoot, 'my checkout', 'svc platform');
    mkdirSync(path.join(checkout, 'scripts'), { recursive: true });
    mkdirSync(path.join(checkout, 'apps', 'console'), { recursive: true });
    copyFileSync(SERVICES, path.join(checkout, 'scripts', 'services.mjs'));
    writeFileSync(path.join(checkout, 'apps', 'console', 'build.mjs'), 'export const buildConsole = () => true;\n');
    const out = execFileSync(process.execPath, ['--input-type=module', '-e', `import * as s from ${JSON.stringify(path.join(checkout, 'scripts', 'services.mjs'))};
      console.log(JSON.stringify(s.ROOT));`], { encoding: 'utf8', timeout: 30_000 });
    expect(JSON.parse(out.trim())).toBe(checkout);
  });

  it('uses the servers on localhost when they answer, starting nothing', () => {
    const out = runServices(`
      delete process.env.DATABASE_URL; delete process.env.REDIS_URL;
      const r = await s.ensureServices({ dataRoot: ${JSON.stringify(path.join(dataRoot, 'unused'))}, log: () => {} });
      console.log(JSON.stringify({ db: r.databaseUrl, redis: r.redisUrl }));`);
    expect(JSON.parse(out.trim())).toEqual({ db: 'postgres://postgres@127.0.0.1:5432/svc', redis: 'redis://127.0.0.1:6379' });
  });

  it('stops with one sentence naming the server when DATABASE_URL points at nothing', async () => {
    const port = await freePort();
    let message = '';
    try {
      execFileSync(process.execPath, ['--input-type=module', '-e', `import * as s from ${JSON.stringify(SERVICES)};
        try { await s.ensureServices({ log: () => {} }); } catch (e) { console.error(e.message); process.exit(3); }`], {
        encoding: 'utf8',
        env: { ...process.env, DATABASE_URL: `postgres://postgres@127.0.0.1:${port}/svc` },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
    } catch (err) {
      message = String((err as { stderr: string }).stderr).trim();
    }
    expect(message).toBe(`Postgres is not answering at DATABASE_URL (127.0.0.1:${port}): start it or unset DATABASE_URL.`);
  });
});
