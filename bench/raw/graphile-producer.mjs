// B3's peer baseline, graphile-worker (0.17.3): `{setup: true}` installs its schema in the
// database (once, before the workers start); otherwise adds `total` jobs with WorkerUtils.addJobs
// in chunks of `chunk` and waits until none is left (completed jobs are deleted; the workers note
// the time of the last completion, graphile-worker.mjs). Polls every 500 ms: the end of the run is
// the workers' last completion, not the poll's.
// Input: {databaseUrl, setup?, task, total, chunk, payloads: [..], timeoutMs}.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { makeWorkerUtils, runMigrations } = require('graphile-worker');

const input = JSON.parse(readFileSync(process.argv[2], 'utf8'));
if (input.setup) {
  await runMigrations({ connectionString: input.databaseUrl });
  process.stdout.write(JSON.stringify({ setup: true }) + '\n');
  process.exit(0);
}
const utils = await makeWorkerUtils({ connectionString: input.databaseUrl });
const cpu0 = process.cpuUsage();
const startedAt = Date.now();
for (let added = 0; added < input.total; added += input.chunk) {
  const n = Math.min(input.chunk, input.total - added);
  await utils.addJobs(Array.from({ length: n }, (_, i) => ({ identifier: input.task, payload: input.payloads[(added + i) % input.payloads.length] })));
}
const addedAt = Date.now();
const until = Date.now() + input.timeoutMs;
let left = input.total;
while (Date.now() < until) {
  const { rows } = await utils.withPgClient((c) => c.query('select count(*)::int as n from graphile_worker._private_jobs'));
  left = rows[0].n;
  if (left === 0) break;
  await new Promise((r) => setTimeout(r, 500));
}
const cpu = process.cpuUsage(cpu0);
await utils.release();
process.stdout.write(JSON.stringify({
  total: input.total, left, complete: left === 0, startedAt, addedAt, cpuMs: Math.round((cpu.user + cpu.system) / 1000),
}) + '\n');
