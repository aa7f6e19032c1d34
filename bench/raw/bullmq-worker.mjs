// Baseline of B3: a BullMQ Worker that does no work (one per simulated machine, concurrency 1
// like a one-slot machine taking items one at a time). Env: REDIS_URL, BENCH_QUEUE, BENCH_PREFIX.
import { createRequire } from 'node:module';
import { rawConnection } from './connection.mjs';

const require = createRequire(import.meta.url);
const { Worker } = require('bullmq');

const connection = rawConnection(process.env.REDIS_URL);
const worker = new Worker(process.env.BENCH_QUEUE, async () => null, {
  connection,
  prefix: process.env.BENCH_PREFIX,
  concurrency: Number(process.env.BENCH_CONCURRENCY ?? 1),
});
worker.on('error', (err) => console.error(err.message));
await worker.waitUntilReady();
console.log('ready');
process.on('SIGTERM', async () => {
  await worker.close();
  connection.disconnect();
  process.exit(0);
});
