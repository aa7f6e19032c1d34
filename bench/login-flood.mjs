// `node bench/login-flood.mjs [--rate 50] [--seconds 20] [--concurrency 2,64]`: what a flood of
// sign-ins does to the API's other requests. For each PASSWORD_HASH_CONCURRENCY given (and once
// with no sign-ins at all), an API process runs while sign-ins with a wrong password arrive at
// `--rate` a second, open loop, each from an address of its own (X-Forwarded-For behind
// TRUST_PROXY_COUNT=1) and for an e-mail of its own, so no throttle stops them: every one costs a
// password check (an unknown e-mail is checked against a dummy hash, as long as a real one),
// and one client asks GET /health back to back; prints the /health latencies (p50, p99, max) and
// how the sign-ins were answered. Uses DATABASE_URL / REDIS_URL like npm run bench (run it on a
// private Postgres with default settings); builds nothing (run npm run build first).
import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { core } from './lib/core.mjs';
import { createBenchDatabase, dropBenchDatabase, clearRedisPrefix } from './lib/services.mjs';
import { seedTenant } from './lib/fixtures.mjs';
import { freePort, startNode, stop, waitUntil, sleep } from './lib/proc.mjs';
import { APPS } from '../scripts/apps.mjs';
import { ROOT } from '../scripts/services.mjs';

const args = Object.fromEntries(process.argv.slice(2).reduce((acc, a, i, all) => (a.startsWith('--') ? [...acc, [a.slice(2), all[i + 1]]] : acc), []));
const rate = Number(args.rate ?? 50);
const seconds = Number(args.seconds ?? 20);
const concurrencies = String(args.concurrency ?? '2,64').split(',').map(Number);
const baseUrl = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const run = `login${randomBytes(3).toString('hex')}`;
const dbName = `svc_bench_${run}`;
const logDir = mkdtempSync(path.join(os.tmpdir(), 'svc-login-flood-'));

const percentile = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];

async function measure(databaseUrl, concurrency) {
  const port = await freePort();
  const prefix = `svc-bench-${run}-${concurrency ?? 'none'}`;
  const api = startNode('api', path.join(ROOT, APPS.api.script), [], {
    env: {
      ...process.env, DATABASE_URL: databaseUrl, REDIS_URL: redisUrl, REDIS_PREFIX: prefix, PORT: String(port), HOST: '127.0.0.1',
      NODE_ENV: 'production', LOG_LEVEL: 'warn', TRUST_PROXY_COUNT: '1', ASSET_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
      PASSWORD_HASH_CONCURRENCY: String(concurrency ?? 2), AUTH_FAILURES_PER_ADDRESS: '1000000',
    },
    nodeArgs: APPS.api.nodeArgs,
    logDir,
  });
  const url = `http://127.0.0.1:${port}`;
  try {
    await waitUntil('the API', async () => (await fetch(`${url}/ready`).catch(() => null))?.ok === true, { procs: [api] });
    const statuses = {};
    let sent = 0;
    const inflight = new Set();
    const until = Date.now() + seconds * 1000;
    const flood = concurrency === null ? null : setInterval(() => {
      const n = sent++;
      const p = fetch(`${url}/api/v1/auth/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-forwarded-for': `10.${(n >> 16) & 255}.${(n >> 8) & 255}.${n & 255}` },
        body: JSON.stringify({ email: `flood-${n}@bench.test`, password: `guess-${n}` }),
      }).then((r) => { statuses[r.status] = (statuses[r.status] ?? 0) + 1; return r.arrayBuffer(); }, () => { statuses.error = (statuses.error ?? 0) + 1; });
      inflight.add(p);
      p.finally(() => inflight.delete(p));
    }, 1000 / rate);
    const latencies = [];
    await sleep(1000);
    while (Date.now() < until) {
      const t0 = performance.now();
      const r = await fetch(`${url}/health`);
      await r.arrayBuffer();
      latencies.push(performance.now() - t0);
    }
    if (flood) clearInterval(flood);
    await Promise.all(inflight);
    latencies.sort((a, b) => a - b);
    return {
      password_hash_concurrency: concurrency ?? '(no sign-ins)',
      sign_ins_sent: sent,
      sign_in_answers: statuses,
      health_requests: latencies.length,
      health_p50_ms: +percentile(latencies, 50).toFixed(2),
      health_p99_ms: +percentile(latencies, 99).toFixed(2),
      health_max_ms: +latencies[latencies.length - 1].toFixed(2),
    };
  } finally {
    await stop(api);
    await clearRedisPrefix(redisUrl, prefix);
  }
}

const databaseUrl = await createBenchDatabase(baseUrl, dbName);
try {
  const sql = core.createSql(databaseUrl, { max: 1 });
  const tenant = await seedTenant(sql, `bench-${run}`);
  await core.createUser(sql, tenant.id, { email: 'flood@bench.test', password: 'the real password', role: 'admin' });
  await sql.end();
  const results = [];
  for (const c of [null, ...concurrencies]) {
    const r = await measure(databaseUrl, c);
    console.log(JSON.stringify(r));
    results.push(r);
  }
  console.table(results);
  console.log(`API logs: ${logDir}`);
} finally {
  await dropBenchDatabase(baseUrl, dbName);
}
