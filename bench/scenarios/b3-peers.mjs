// B3's peer baselines (docs/decisions/bench-peers.md): the same N no-op jobs through the two
// best-known Postgres job queues, graphile-worker and pg-boss, added in chunks of 1,000 and run by
// 4 worker processes of concurrency 1 (default settings otherwise; pg-boss's workers poll, so each
// gets a batch that keeps it busy). Each peer runs in a fresh, empty database of its own,
// `<dbName>_b3_<peer>` (dropped at the end like every scenario's), from the first add to the last
// completion, like the raw BullMQ baseline; the CPU of the Postgres backends of that database, of
// the workers and of the producer is read around the same phase, as for the platform.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { core } from '../lib/core.mjs';
import { cpuMeter, startNode, stop, waitUntil } from '../lib/proc.mjs';
import { cpuPer, raw } from '../lib/scenario.mjs';
import { dbUrl, dropBenchDatabase } from '../lib/services.mjs';

const WORKERS = 4;
const require = (await import('node:module')).createRequire(import.meta.url);
const version = (name) => require(`${name}/package.json`).version;

/**
 * pg-boss's settings (docs/decisions/bench-peers.md): the shortest polling interval it accepts
 * and a batch large enough that fetching it takes about that long under this load, so a worker
 * fetches again at once instead of sleeping out its interval.
 */
export const PGBOSS_POLLING_SECONDS = 0.5;
export const PGBOSS_BATCH_SIZE = Number(process.env.BENCH_PGBOSS_BATCH_SIZE) || 1000;

export const PEERS = {
  'graphile-worker': {
    id: 'graphile',
    label: () => `graphile-worker ${version('graphile-worker')}, ${WORKERS} worker processes × concurrency 1, defaults (NO_LOG_SUCCESS=1)`,
    producer: 'graphile-producer.mjs',
    worker: 'graphile-worker.mjs',
    input: { task: 'noop' },
    env: { BENCH_TASK: 'noop', NO_LOG_SUCCESS: '1' },
  },
  'pg-boss': {
    id: 'pgboss',
    label: () => `pg-boss ${version('pg-boss')}, ${WORKERS} worker processes × 1 work() loop, batchSize ${PGBOSS_BATCH_SIZE}, pollingIntervalSeconds ${PGBOSS_POLLING_SECONDS}`,
    producer: 'pg-boss-producer.mjs',
    worker: 'pg-boss-worker.mjs',
    input: { queue: 'noop' },
    env: { BENCH_QUEUE: 'noop', BENCH_BATCH_SIZE: String(PGBOSS_BATCH_SIZE), BENCH_POLLING_SECONDS: String(PGBOSS_POLLING_SECONDS) },
  },
};

/** One peer's run: {itemsPerSec, elapsedSec, complete, cpu: {msPer1000: {postgres, workers, producer}}, label, …}. */
export async function peerRun(run, name, { total, chunk, payloads, timeoutMs }) {
  const peer = PEERS[name];
  const database = `${run.dbName}_b3_${peer.id}`;
  const admin = core.createSql(dbUrl(run.baseDbUrl, 'postgres'), { max: 1 });
  try {
    await admin.unsafe(`drop database if exists "${database}" with (force)`);
    await admin.unsafe(`create database "${database}"`);
  } finally {
    await admin.end();
  }
  const databaseUrl = dbUrl(run.baseDbUrl, database);
  const sql = core.createSql(databaseUrl, { max: 1 });
  const workers = [];
  try {
    await raw(run, `b3-${peer.id}-setup`, peer.producer, { databaseUrl, setup: true, ...peer.input }, 120_000);
    for (let i = 0; i < WORKERS; i++) {
      workers.push(startNode(`b3-${peer.id}-worker-${i + 1}`, path.join(run.root, 'bench', 'raw', peer.worker), [], {
        env: { ...process.env, DATABASE_URL: databaseUrl, ...peer.env },
        logDir: run.logDir,
      }));
    }
    const sizes = workers.map((w) => { try { return readFileSync(w.logFile, 'utf8').length; } catch { return 0; } });
    await waitUntil(`the ${name} workers`, () => workers.every((w, i) => /^ready$/m.test(readFileSync(w.logFile, 'utf8').slice(sizes[i]))), { procs: workers, timeoutMs: 60_000 });
    const meter = cpuMeter({
      workers: () => workers.map((w) => w.pid),
      postgres: async () => (await sql`select pid from pg_stat_activity where datname = current_database()`).map((r) => r.pid),
    });
    await meter.start();
    const res = await raw(run, `b3-${peer.id}-producer`, peer.producer, { databaseUrl, ...peer.input, total, chunk, payloads, timeoutMs }, timeoutMs + 60_000);
    const cpuMs = await meter.stop();
    await Promise.all(workers.map((w) => stop(w)));
    // the last line of its kind: a log file of the same name may hold an earlier run's (--log-dir reused)
    const lastLine = (file, re) => [...readFileSync(file, 'utf8').matchAll(re)].pop();
    const done = workers.map((w) => JSON.parse(lastLine(w.logFile, /^done (.*)$/gm)?.[1] ?? '{}'));
    res.workers = done;
    // graphile-worker deletes completed jobs: the end is the workers' last completion
    if (res.finishedAt === undefined) {
      const lastAt = Math.max(...done.map((d) => d.lastAt ?? 0));
      res.completed = done.reduce((a, d) => a + (d.completed ?? 0), 0);
      res.finishedAt = lastAt || Date.now();
      res.elapsedSec = (res.finishedAt - res.startedAt) / 1000;
      res.itemsPerSec = res.complete ? res.completed / res.elapsedSec : null;
    }
    return { ...res, label: peer.label(), database, cpu: cpuPer({ ...cpuMs, producer: res.cpuMs }, res.completed) };
  } finally {
    await Promise.all(workers.map((w) => stop(w)));
    await sql.end({ timeout: 5 }).catch(() => undefined);
    if (!run.keep) await dropBenchDatabase(run.baseDbUrl, database).catch((err) => run.log(`could not drop ${database}: ${err.message}`));
  }
}
