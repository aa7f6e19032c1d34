// B3's peer baseline: a graphile-worker (0.17.3) worker process, one per simulated machine,
// concurrency 1 (`concurrency: 1`), default settings otherwise (LISTEN/NOTIFY for new jobs, one
// job fetched at a time, jobs deleted on completion); the task does no work. Only the per-job
// "Completed task …" log line is off (NO_LOG_SUCCESS=1, set by the bench): a line per job in the
// log file is not the queue's cost. Completed jobs leave no row, so each worker notes the time of
// its last completion (the `job:complete` event, like BullMQ's worker-side finishedOn) and prints
// `done {"completed":n,"lastAt":ms}` when it is stopped (SIGTERM).
// Env: DATABASE_URL, BENCH_TASK. The schema is installed beforehand (graphile-producer.mjs, setup).
import { createRequire } from 'node:module';
import { EventEmitter } from 'node:events';

const require = createRequire(import.meta.url);
const { run } = require('graphile-worker');

let completed = 0;
let lastAt = null;
const events = new EventEmitter();
events.on('job:complete', ({ error }) => {
  if (error) return;
  completed++;
  lastAt = Date.now();
});
const runner = await run({
  connectionString: process.env.DATABASE_URL,
  concurrency: 1,
  noHandleSignals: true,
  events,
  taskList: { [process.env.BENCH_TASK]: async () => {} },
});
console.log('ready');
process.on('SIGTERM', async () => {
  await runner.stop().catch(() => undefined);
  console.log(`done ${JSON.stringify({ completed, lastAt })}`);
  process.exit(0);
});
