// Baseline of B4 on an idle Redis: Queue.add → a waiting Worker starts the job, and
// PUBLISH → a subscriber hears it (what a stop travels on), `tries` times each, one at a time.
// Input: {redisUrl, prefix, tries}.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { rawConnection } from './connection.mjs';

const require = createRequire(import.meta.url);
const { Queue, Worker } = require('bullmq');

const input = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const conn = () => rawConnection(input.redisUrl);
const queue = new Queue('{latency}', { connection: conn(), prefix: input.prefix });
let onStart = null;
const worker = new Worker('{latency}', async (job) => {
  onStart?.(job.data.sent);
  return null;
}, { connection: conn(), prefix: input.prefix, concurrency: 1 });
await worker.waitUntilReady();
await queue.waitUntilReady();

const startLat = [];
for (let i = 0; i < input.tries + 5; i++) {
  const started = new Promise((resolve) => (onStart = () => resolve(performance.now())));
  const t = performance.now();
  await queue.add('job', { sent: t }, { removeOnComplete: true });
  const at = await started;
  if (i >= 5) startLat.push(at - t);
}

const pub = conn();
const sub = conn();
const channel = `${input.prefix}:latency`;
await sub.subscribe(channel);
let onMessage = null;
sub.on('message', () => onMessage?.(performance.now()));
const pubLat = [];
for (let i = 0; i < input.tries + 5; i++) {
  const heard = new Promise((resolve) => (onMessage = resolve));
  const t = performance.now();
  await pub.publish(channel, 'stop');
  const at = await heard;
  if (i >= 5) pubLat.push(at - t);
}
await worker.close();
await queue.close();
for (const c of [pub, sub]) c.disconnect();
const pct = (arr, q) => {
  const s = [...arr].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((q / 100) * s.length))];
};
process.stdout.write(JSON.stringify({
  addToStart: { p50: pct(startLat, 50), p99: pct(startLat, 99) },
  publishToHeard: { p50: pct(pubLat, 50), p99: pct(pubLat, 99) },
}) + '\n');
process.exit(0);
