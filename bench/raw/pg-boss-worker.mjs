// B3's peer baseline: a pg-boss (10.4.2) worker process, one per simulated machine. pg-boss
// workers poll: one `work()` loop fetches up to `batchSize` jobs, runs the handler once with them
// (here a no-op) and completes them in one statement, then waits for the rest of its polling
// interval before the next fetch (a fetch that took longer waits nothing). With `batchSize` 1 at
// the shortest interval (0.5 s) a worker does a couple of jobs a second: the bench gives each
// worker a batch that keeps it busy (BENCH_BATCH_SIZE, BENCH_POLLING_SECONDS; the values and why:
// docs/decisions/bench-peers.md). One `work()` per process = one loop at a time (concurrency 1);
// default settings otherwise (maintenance, monitoring, archiving as shipped).
// Env: DATABASE_URL, BENCH_QUEUE, BENCH_BATCH_SIZE, BENCH_POLLING_SECONDS. The schema and the
// queue are created beforehand (pg-boss-producer.mjs, setup).
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const PgBoss = require('pg-boss');

const boss = new PgBoss({ connectionString: process.env.DATABASE_URL });
boss.on('error', (err) => console.error(err.message));
await boss.start();
// what the batches looked like: a worker whose batches come full is held back by its polling
let handled = 0;
let batches = 0;
let full = 0;
await boss.work(process.env.BENCH_QUEUE, {
  batchSize: Number(process.env.BENCH_BATCH_SIZE ?? 1),
  pollingIntervalSeconds: Number(process.env.BENCH_POLLING_SECONDS ?? 2),
}, async (jobs) => {
  handled += jobs.length;
  batches++;
  if (jobs.length >= Number(process.env.BENCH_BATCH_SIZE ?? 1)) full++;
});
console.log('ready');
process.on('SIGTERM', async () => {
  await boss.stop({ graceful: true, wait: true, timeout: 5000 }).catch(() => undefined);
  console.log(`done ${JSON.stringify({ handled, batches, full })}`);
  process.exit(0);
});
