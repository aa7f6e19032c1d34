// B3's peer baseline, pg-boss (10.4.2): `{setup: true}` installs its schema and creates the queue
// (once, before the workers start); otherwise adds `total` jobs with `insert` in chunks of `chunk`
// and waits until every one is completed. Completed jobs stay in pgboss.job (archived hours
// later), so the end is the last `completed_on` (set by the completing statement: Postgres's
// clock, on this host). Polls every 500 ms: the end is read from the rows, not from the poll.
// Input: {databaseUrl, setup?, queue, total, chunk, payloads: [..], timeoutMs}.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const PgBoss = require('pg-boss');

const input = JSON.parse(readFileSync(process.argv[2], 'utf8'));
// a producer only: no maintenance or monitoring of its own (the workers run pg-boss's defaults)
const boss = new PgBoss({ connectionString: input.databaseUrl, supervise: false, schedule: false });
boss.on('error', (err) => console.error(err.message));
await boss.start();
if (input.setup) {
  await boss.createQueue(input.queue);
  await boss.stop({ graceful: false, wait: true });
  process.stdout.write(JSON.stringify({ setup: true }) + '\n');
  process.exit(0);
}
const db = boss.getDb();
const cpu0 = process.cpuUsage();
const startedAt = Date.now();
for (let added = 0; added < input.total; added += input.chunk) {
  const n = Math.min(input.chunk, input.total - added);
  await boss.insert(Array.from({ length: n }, (_, i) => ({ name: input.queue, data: input.payloads[(added + i) % input.payloads.length] })));
}
const addedAt = Date.now();
const until = Date.now() + input.timeoutMs;
let completed = 0;
while (Date.now() < until) {
  const { rows } = await db.executeSql("select count(*)::int as n from pgboss.job where name = $1 and state = 'completed'", [input.queue]);
  completed = rows[0].n;
  if (completed >= input.total) break;
  await new Promise((r) => setTimeout(r, 500));
}
const { rows: [{ last }] } = await db.executeSql("select (extract(epoch from max(completed_on)) * 1000)::float8 as last from pgboss.job where name = $1 and state = 'completed'", [input.queue]);
const cpu = process.cpuUsage(cpu0);
await boss.stop({ graceful: false, wait: true });
const finishedAt = last ?? Date.now();
process.stdout.write(JSON.stringify({
  total: input.total, completed, complete: completed >= input.total, startedAt, addedAt, finishedAt,
  elapsedSec: (finishedAt - startedAt) / 1000, itemsPerSec: completed / ((finishedAt - startedAt) / 1000),
  cpuMs: Math.round((cpu.user + cpu.system) / 1000),
}) + '\n');
