// Baseline of B2: multi-row INSERTs of the same rows straight through the `postgres` client,
// `connections` concurrent writers for `durationSec` (or `amount` inserts in all).
// Input: {databaseUrl, tenantId, queueId, connections, durationSec?, amount?, rows: [payload]}.
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import postgres from 'postgres';

const input = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const sql = postgres(input.databaseUrl, { max: input.connections, onnotice: () => {} });

/** The rows as items: their state and their payload, each table in one INSERT of one statement (migration 0029). */
function insert(payloads) {
  const rows = payloads.map((data) => ({ id: randomUUID(), tenant_id: input.tenantId, queue_id: input.queueId, data }));
  return sql`
    with ins as (insert into queue_items ${sql(rows, 'id', 'tenant_id', 'queue_id')})
    insert into queue_item_payloads ${sql(rows, 'id', 'queue_id', 'data')}`;
}

// one warm-up insert per connection (connect, parse)
await Promise.all(Array.from({ length: input.connections }, () => insert(input.rows.slice(0, 10))));

const started = Date.now();
const cpu0 = process.cpuUsage();
const until = started + (input.durationSec ?? 3600) * 1000;
let inserts = 0;
let left = input.amount ?? Infinity;
const latencies = [];
async function writer() {
  while (Date.now() < until && left-- > 0) {
    const t = performance.now();
    await insert(input.rows);
    latencies.push(performance.now() - t);
    inserts++;
  }
}
await Promise.all(Array.from({ length: input.connections }, writer));
const elapsedSec = (Date.now() - started) / 1000;
const cpu = process.cpuUsage(cpu0);
await sql.end();
latencies.sort((a, b) => a - b);
const pct = (p) => latencies[Math.min(latencies.length - 1, Math.floor((p / 100) * latencies.length))] ?? null;
process.stdout.write(JSON.stringify({
  // in the load generator's terms: one "request" is one multi-row INSERT
  ok: inserts,
  durationSec: elapsedSec,
  cpuMs: Math.round((cpu.user + cpu.system) / 1000),
  inserts,
  rows: inserts * input.rows.length,
  elapsedSec,
  itemsPerSec: (inserts * input.rows.length) / elapsedSec,
  latency: { p50: pct(50), p99: pct(99) },
}) + '\n');
