// `node bench/retention-cost.mjs [--items 1000000] [--held-items 600000]`: what removing ended
// items costs, for the choice between batched deletes and range partitions
// (docs/decisions/retention.md, "Cheap at scale"). On its own database of DATABASE_URL (run it on
// a private Postgres with default settings, on this host: the Postgres CPU is read from /proc):
//   1. `--items` completed items past their retention, removed by the dispatcher's retention pass
//      (delete, then archive to a temporary directory): items/s and Postgres CPU per 1,000 items;
//   2. the same rows in a copy of queue_items range-partitioned by day: dropping the partition;
//   3. `--held-items` items removed while a repeatable-read transaction holds vacuum back: the
//      pass (each batch after the previous one) next to batches that each start at the head of
//      the ended-items index, as the pass did before.
// Builds nothing (run npm run build first).
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { core } from './lib/core.mjs';
import { createBenchDatabase, dropBenchDatabase } from './lib/services.mjs';

const args = Object.fromEntries(process.argv.slice(2).reduce((acc, a, i, all) => (a.startsWith('--') ? [...acc, [a.slice(2), all[i + 1]]] : acc), []));
const items = Number(args.items ?? 1_000_000);
const heldItems = Number(args['held-items'] ?? 600_000);
const baseUrl = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const dbName = `retcost${randomBytes(3).toString('hex')}`;
const CLK_TCK = 100;

/** The private server's postmaster: the parent of one of its backends (this host's /proc). */
async function postmasterOf(sql) {
  const [{ pid }] = await sql`select pg_backend_pid() as pid`;
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
}

/** CPU seconds of the server's processes: its backends and workers, not another server's on this host. */
function postgresCpuSeconds() {
  let ticks = 0;
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    let stat;
    try { stat = readFileSync(`/proc/${pid}/stat`, 'utf8'); } catch { continue; }
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (Number(pid) !== postmaster && Number(f[1]) !== postmaster) continue;
    ticks += Number(f[11]) + Number(f[12]);
  }
  return ticks / CLK_TCK;
}

const url = await createBenchDatabase(baseUrl, dbName);
const sql = core.createSql(url, { max: 4 });
const postmaster = await postmasterOf(sql);
const logger = core.createLogger({ service: 'retention-cost', level: 'error' });
const archiveDir = mkdtempSync(path.join(os.tmpdir(), 'svc-retcost-'));
const engine = core.createEngine({ sql, logger, recordArchive: core.directoryArchive(archiveDir) });
const out = {};

async function seed(n, action) {
  await sql`delete from retention_progress`;
  await sql`delete from queue_items`;
  await sql`vacuum queue_items`;
  const [t] = await sql`insert into tenants (name, job_retention_days) values (${`t-${randomBytes(3).toString('hex')}`}, 100000) returning id`;
  const [q] = await sql`insert into queues (tenant_id, name, retention_action) values (${t.id}, ${`q-${randomBytes(3).toString('hex')}`}, ${action}) returning id, name`;
  for (let i = 0; i < n; i += 100_000) {
    await sql`
      with src as materialized (select gen_random_uuid() as id, g from generate_series(${i + 1}::int, ${Math.min(n, i + 100_000)}::int) g),
      ins as (
        insert into queue_items (id, queue_id, tenant_id, reference, status, created_at, updated_at, processed_at, result)
        select id, ${q.id}, ${t.id}, 'ref-' || g, 'completed', now() - interval '40 days' + g * interval '1 ms',
               now() - interval '35 days' + g * interval '1 ms', now(), '{"ok":true}'
        from src order by g)
      insert into queue_item_payloads (id, queue_id, data)
      select id, ${q.id}, jsonb_build_object('invoice', g, 'customer', 'c' || (g % 977), 'lines', jsonb_build_array(jsonb_build_object('sku', 'A' || g, 'qty', g % 7)))
      from src order by g`;
  }
  await sql`vacuum analyze queue_items`;
  await sql`vacuum analyze queue_item_payloads`;
  return { tenantId: t.id, queueId: q.id, queueName: q.name };
}

async function timed(fn) {
  const c0 = postgresCpuSeconds();
  const w0 = Date.now();
  const removed = await fn();
  const wall = (Date.now() - w0) / 1000;
  const cpu = postgresCpuSeconds() - c0;
  return { removed, wall_s: +wall.toFixed(1), items_per_s: Math.round(removed / wall), pg_cpu_ms_per_1000: +((cpu * 1000) / (removed / 1000)).toFixed(1) };
}

async function passUntilEmpty() {
  let removed = 0;
  for (;;) {
    const n = (await engine.sweeps.retention({ budgetMs: 600_000 })).reduce((a, s) => a + s.deleted, 0);
    if (n === 0) return removed;
    removed += n;
  }
}

/** The pass as it was: every batch starts at the head of the ended-items index. */
async function headBatchesUntilEmpty(scope) {
  let removed = 0;
  for (;;) {
    const n = await sql.begin(async (tx) => {
      const rows = await core.expiredRows(tx, scope, core.RETENTION_BATCH);
      if (rows.length === 0) return 0;
      return (await tx`delete from queue_items where id = any(${rows.map((r) => r.id)}::uuid[])`).count;
    });
    if (n === 0) return removed;
    removed += n;
  }
}

try {
  for (const action of ['delete', 'archive']) {
    await seed(items, action);
    out[action] = await timed(passUntilEmpty);
    console.log(JSON.stringify({ step: `pass (${action})`, items, ...out[action] }));
  }

  // the same rows in a table partitioned by day, and the drop of the partition that holds them
  await sql`create table qi_by_day (like queue_items including defaults) partition by range (created_at)`;
  await sql.unsafe(`create table qi_by_day_old partition of qi_by_day for values from (now()::date - 41) to (now()::date - 39)`);
  await sql`create table qi_by_day_rest partition of qi_by_day default`;
  for (const ddl of [
    'create index on qi_by_day (queue_id, created_at desc, id desc)',
    'create index on qi_by_day (queue_id, status, created_at desc, id desc)',
    'create index on qi_by_day (queue_id, updated_at, id)',
    'create index on qi_by_day using gin (data jsonb_path_ops)',
  ]) await sql.unsafe(ddl);
  const { tenantId, queueId } = await seed(0, 'delete');
  await sql`
    insert into qi_by_day (tenant_id, queue_id, status, data, created_at, updated_at)
    select ${tenantId}, ${queueId}, 'completed', jsonb_build_object('invoice', g), now() - interval '40 days' + g * interval '1 ms', now()
      from generate_series(1, ${items}::int) g`;
  const [{ n: inPartition }] = await sql`select count(*)::int as n from qi_by_day_old`;
  out.partition_drop = await timed(async () => {
    await sql`drop table qi_by_day_old`;
    return inPartition;
  });
  console.log(JSON.stringify({ step: 'drop partition', ...out.partition_drop }));
  await sql`drop table qi_by_day`;

  // with vacuum held back by a repeatable-read snapshot
  for (const mode of ['pass', 'head batches']) {
    const s = await seed(heldItems, 'delete');
    const scope = { kind: 'queue_items', target_id: s.queueId, tenant_id: s.tenantId, queue_name: s.queueName, action: 'delete', completed_days: 30, failed_days: 90, pending: 0 };
    const held = await sql.reserve();
    try {
      await held`begin isolation level repeatable read`;
      await held`select count(*) from queue_items`;
      out[`held_${mode}`] = await timed(() => (mode === 'pass' ? passUntilEmpty() : headBatchesUntilEmpty(scope)));
      await held`commit`;
    } finally {
      held.release();
    }
    console.log(JSON.stringify({ step: `vacuum held back: ${mode}`, items: heldItems, ...out[`held_${mode}`] }));
  }
} finally {
  await sql.end();
  await dropBenchDatabase(baseUrl, dbName);
  rmSync(archiveDir, { recursive: true, force: true });
}
