// Baseline of B3: the same jobs added with Queue.addBulk (chunks of `chunk`), then waits until
// the no-op workers have completed them all. Completed jobs are kept (BullMQ's default), so the
// end is the finishedOn of the last one (the score of the completed set).
// Input: {redisUrl, prefix, queue, total, chunk, payloads: [..], timeoutMs}.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { rawConnection } from './connection.mjs';

const require = createRequire(import.meta.url);
const { Queue } = require('bullmq');

const input = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const connection = rawConnection(input.redisUrl);
const queue = new Queue(input.queue, { connection, prefix: input.prefix });
await queue.waitUntilReady();

const startedAt = Date.now();
for (let added = 0; added < input.total; added += input.chunk) {
  const n = Math.min(input.chunk, input.total - added);
  await queue.addBulk(Array.from({ length: n }, (_, i) => ({ name: 'item', data: input.payloads[(added + i) % input.payloads.length] })));
}
const addedAt = Date.now();
const until = Date.now() + input.timeoutMs;
let completed = 0;
while (Date.now() < until) {
  completed = await queue.getCompletedCount();
  if (completed >= input.total) break;
  await new Promise((r) => setTimeout(r, 20));
}
const completedKey = `${input.prefix}:${input.queue}:completed`;
const last = await connection.zrevrange(completedKey, 0, 0, 'WITHSCORES');
const finishedAt = last.length ? Number(last[1]) : Date.now();
await queue.close();
connection.disconnect();
process.stdout.write(JSON.stringify({
  total: input.total,
  completed,
  complete: completed >= input.total,
  startedAt,
  addedAt,
  finishedAt,
  elapsedSec: (finishedAt - startedAt) / 1000,
  itemsPerSec: completed / ((finishedAt - startedAt) / 1000),
}) + '\n');
