// Baseline of B5: the page and total of the item list straight through the `postgres` client (the
// whole items: the page's rows of queue_items, then their payloads by id),
// `connections` concurrent readers for `durationSec`, pages rotated like the load generator's.
// Input: {databaseUrl, queueId, status?, pages: [..], limit, connections, durationSec}, or
// {references: [..]} instead of pages: one reference's items (first page) and their count; or
// {dataFilters: [..]} instead of pages: the items whose data contains one filter (first page) and their count; or
// {stats: true}: the queue's row, its per-status counters and the statement of its stats (the
// queries GET /settings/queues/{queue_id}/stats makes, without the access-token look-up).
import { readFileSync } from 'node:fs';
import postgres from 'postgres';

const input = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const sql = postgres(input.databaseUrl, { max: input.connections, onnotice: () => {} });
const cols = ['id', 'tenant_id', 'queue_id', 'status', 'priority', 'reference', 'deadline', 'postpone', 'result',
  'retry_count', 'error_message', 'processed_by', 'created_at', 'processed_at', 'reviewed_by', 'reviewed_at'];
const qiCols = cols.map((c) => `qi.${c}`);
/** The rows `page` selects of queue_items, each with its payload (migration 0029), in list order. */
const withPayloads = (page) => sql`
  select ${sql(qiCols)}, p.data from (${page}) qi join queue_item_payloads p on p.id = qi.id
  order by qi.created_at desc, qi.id desc`;
let p = 0;
async function one() {
  if (input.stats) {
    await sql`select * from queues where id = ${input.queueId} and tenant_id = (select tenant_id from queues where id = ${input.queueId})`;
    await Promise.all([
      sql`select queue_id, status, sum(n)::bigint as n from queue_item_counts where queue_id = any(${[input.queueId]}::uuid[]) group by queue_id, status`,
      sql`select
            (select count(*) from queue_items where queue_id = ${input.queueId} and status = 'new' and postpone > now())::bigint as postponed,
            (select created_at from queue_items where queue_id = ${input.queueId} and status = 'new' and (postpone is null or postpone <= now())
              order by created_at, id limit 1) as oldest_ready_at,
            (select count(*) from queue_items where queue_id = ${input.queueId} and status in ('new', 'in_progress')
              and deadline <= now() + make_interval(mins => 60))::bigint as deadline_at_risk,
            m.completed, m.failed, m.processing_ms, m.timed,
            (select count(*) from jobs where queue_id = ${input.queueId} and status = 'running')::bigint as consumers_running
          from (
            select coalesce(sum(completed), 0)::bigint as completed, coalesce(sum(failed), 0)::bigint as failed,
                   coalesce(sum(processing_ms), 0)::bigint as processing_ms, coalesce(sum(timed), 0)::bigint as timed
            from queue_item_minutes where queue_id = ${input.queueId} and minute > now() - interval '1 hour') m`,
    ]);
    return;
  }
  if (input.references) {
    const reference = input.references[p++ % input.references.length];
    await Promise.all([
      withPayloads(sql`select ${sql(cols)} from queue_items where queue_id = ${input.queueId} and reference = ${reference}
          order by created_at desc, id desc limit ${input.limit}`),
      sql`select count(*)::bigint as total from queue_items where queue_id = ${input.queueId} and reference = ${reference}`,
    ]);
    return;
  }
  if (input.dataFilters) {
    const filter = input.dataFilters[p++ % input.dataFilters.length];
    await Promise.all([
      sql`select ${sql(qiCols)}, p.data from queue_item_payloads p join queue_items qi on qi.id = p.id
          where p.queue_id = ${input.queueId} and p.data @> ${sql.json(filter)}
          order by qi.created_at desc, qi.id desc limit ${input.limit}`,
      sql`select count(*)::bigint as total from queue_item_payloads where queue_id = ${input.queueId} and data @> ${sql.json(filter)}`,
    ]);
    return;
  }
  const offset = (input.pages[p++ % input.pages.length] - 1) * input.limit;
  const status = input.status;
  await Promise.all([
    status
      ? withPayloads(sql`select ${sql(cols)} from queue_items where queue_id = ${input.queueId} and status = ${status}
            order by created_at desc, id desc limit ${input.limit} offset ${offset}`)
      : withPayloads(sql`select ${sql(cols)} from queue_items where queue_id = ${input.queueId}
            order by created_at desc, id desc limit ${input.limit} offset ${offset}`),
    status
      ? sql`select coalesce(sum(n), 0)::bigint as total from queue_item_counts where queue_id = ${input.queueId} and status = ${status}`
      : sql`select coalesce(sum(n), 0)::bigint as total from queue_item_counts where queue_id = ${input.queueId}`,
  ]);
}
for (let i = 0; i < input.connections * 5; i++) await one(); // warm-up
const latencies = [];
const started = Date.now();
const cpu0 = process.cpuUsage();
const until = started + input.durationSec * 1000;
await Promise.all(Array.from({ length: input.connections }, async () => {
  while (Date.now() < until) {
    const t = performance.now();
    await one();
    latencies.push(performance.now() - t);
  }
}));
const elapsedSec = (Date.now() - started) / 1000;
const cpu = process.cpuUsage(cpu0);
await sql.end();
latencies.sort((a, b) => a - b);
const pct = (q) => latencies[Math.min(latencies.length - 1, Math.floor((q / 100) * latencies.length))] ?? null;
process.stdout.write(JSON.stringify({
  ok: latencies.length,
  durationSec: elapsedSec,
  requests: latencies.length,
  rps: latencies.length / elapsedSec,
  latency: { p50: pct(50), p90: pct(90), p99: pct(99), max: latencies[latencies.length - 1] ?? null },
  cpuMs: Math.round((cpu.user + cpu.system) / 1000),
}) + '\n');
