import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CLI_ACTOR, ConfigError, createEngine, createLogger, parseConfig, type Engine, type Sql } from '@svc/core';
import { directoryArchive, loadQueueItemCounts } from '@svc/core/internals';
import { databaseSuite, seedJob, seedMachine, seedProcess, seedQueue, seedTenant, waitFor } from '@svc/testing';

/**
 * The retention pass on a real Postgres and a real directory archive (docs/decisions/retention.md):
 * only ended rows past their retention go, archived first when asked, the counters stay exact, a
 * pass killed between the archive and the delete loses nothing and its re-run writes no duplicate.
 */
const db = databaseSuite();
let sql: Sql;
let engine: Engine;
let dir: string;
let tenantId: string;

const logger = createLogger({ service: 'retention-test', level: 'error' });

beforeAll(async () => {
  sql = db.sql;
  dir = await mkdtemp(join(tmpdir(), 'svc-archive-'));
  engine = createEngine({ sql, logger, recordArchive: directoryArchive(dir) });
  tenantId = (await seedTenant(sql)).id;
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** `n` items of `status` whose last change was `agoSeconds` ago. */
async function items(queueId: string, status: string, n: number, agoSeconds: number): Promise<void> {
  await sql`
    insert into queue_item_records (tenant_id, queue_id, status, data, reference, priority, updated_at, processed_at)
    select ${tenantId}, ${queueId}, ${status}, jsonb_build_object('n', g, 'status', ${status}::text), 'ref-' || g, 4,
           now() - make_interval(secs => ${agoSeconds}::float8 + g), now() - make_interval(secs => ${agoSeconds}::float8 + g)
    from generate_series(1, ${n}) g`;
}

async function byStatus(queueId: string): Promise<Record<string, number>> {
  const rows = await sql<{ status: string; n: number }[]>`select status, count(*)::int as n from queue_items where queue_id = ${queueId} group by status`;
  return Object.fromEntries(rows.map((r) => [r.status, r.n]));
}

/** The trigger-maintained counters agree with the table, status by status. */
async function expectCountsExact(queueId: string): Promise<void> {
  const counted = (await loadQueueItemCounts(sql, [queueId])).get(queueId)!;
  const actual = await byStatus(queueId);
  for (const s of ['new', 'in_progress', 'pending_review', 'completed', 'failed', 'dead_letter'] as const) {
    expect(counted[s]).toBe(actual[s] ?? 0);
  }
  expect(counted.total).toBe(Object.values(actual).reduce((a, b) => a + b, 0));
}

async function queueWith(fields: Record<string, unknown>) {
  const q = await seedQueue(sql, tenantId);
  if (Object.keys(fields).length) await engine.catalog.save(CLI_ACTOR, tenantId, 'queue', { id: q.id as string }, fields);
  return { id: q.id as string, tenant_id: tenantId, name: q.name as string };
}

async function archivedIds(queueId: string): Promise<string[]> {
  const archive = directoryArchive(dir);
  const ids: string[] = [];
  for (const f of await engine.archive.list(tenantId, { queueId })) {
    for (const line of (await archive.get(f.key))!) ids.push((JSON.parse(line) as { id: string }).id);
  }
  return ids;
}

async function filesOnDisk(root: string): Promise<string[]> {
  const entries = await readdir(root, { recursive: true, withFileTypes: true });
  return entries.filter((e) => e.isFile()).map((e) => join(e.parentPath, e.name));
}

describe('the retention pass', () => {
  it('deletes only ended items past their retention, keeps the counters exact and writes one event per queue', async () => {
    // no retry left: a failed item has ended
    const q = await queueWith({ retention_completed_days: 60 / 86_400, retention_failed_days: 3600 / 86_400, max_retries: 0 });
    await items(q.id, 'completed', 30, 120); // past 60 s
    await items(q.id, 'completed', 5, -100); // ended just now
    await items(q.id, 'dead_letter', 7, 120); // within 1 h
    await items(q.id, 'dead_letter', 4, 7200); // past 1 h
    await items(q.id, 'failed', 3, 7200); // stayed failed: ended
    for (const s of ['new', 'in_progress', 'pending_review']) await items(q.id, s, 6, 1_000_000);
    const minutesBefore = await sql`select * from queue_item_minutes where queue_id = ${q.id} order by minute, shard`;

    const done = await engine.sweeps.retention({ batch: 10 });
    expect(done.find((d) => d.target_id === q.id)).toEqual({ kind: 'queue_items', target_id: q.id, deleted: 37, archived: 0 });
    expect(await byStatus(q.id)).toEqual({ completed: 5, dead_letter: 7, new: 6, in_progress: 6, pending_review: 6 });
    await expectCountsExact(q.id);
    expect(await sql`select * from queue_item_minutes where queue_id = ${q.id} order by minute, shard`).toEqual(minutesBefore);

    // several batches, one event
    const events = await sql<{ data: Record<string, unknown> }[]>`select data from events where type = 'queue.retention' and data->>'queue_id' = ${q.id}`;
    expect(events.map((e) => e.data)).toEqual([{ queue_id: q.id, queue_name: q.name, deleted: 37, archived: 0, action: 'delete' }]);

    // nothing left to do: a second pass touches nothing and writes no event
    expect((await engine.sweeps.retention()).find((d) => d.target_id === q.id)).toBeUndefined();
    expect(await sql`select 1 from events where type = 'queue.retention' and data->>'queue_id' = ${q.id}`).toHaveLength(1);
  });

  it('archives before it deletes: the manifest lists files whose lines are the deleted rows', async () => {
    const q = await queueWith({ retention_completed_days: 0.0001, retention_action: 'archive' });
    await items(q.id, 'completed', 25, 3600);
    const before = await sql<{ id: string; data: unknown }[]>`select id, data from queue_item_records where queue_id = ${q.id} order by id`;

    const done = await engine.sweeps.retention({ batch: 10 });
    expect(done.find((d) => d.target_id === q.id)).toMatchObject({ deleted: 25, archived: 25 });
    expect(await byStatus(q.id)).toEqual({});
    await expectCountsExact(q.id);

    const archive = directoryArchive(dir);
    const rows: Array<{ id: string; data: unknown; status: string }> = [];
    for (const f of await engine.archive.list(tenantId, { queueId: q.id })) {
      expect(f.key.startsWith(`${tenantId}/queues/${q.id}/`)).toBe(true);
      const lines = (await archive.get(f.key))!;
      expect(lines).toHaveLength(f.rows);
      rows.push(...lines.map((l) => JSON.parse(l)));
    }
    expect(rows.map((r) => ({ id: r.id, data: r.data })).sort((a, b) => a.id.localeCompare(b.id))).toEqual(before);
    expect(new Set(rows.map((r) => r.status))).toEqual(new Set(['completed']));
  });

  it('a queue that archives waits, without deleting, while no archive is configured', async () => {
    const q = await queueWith({ retention_completed_days: 0.0001, retention_action: 'archive' });
    await items(q.id, 'completed', 3, 3600);
    const bare = createEngine({ sql, logger });
    const done = await bare.sweeps.retention();
    expect(done.find((d) => d.target_id === q.id)).toMatchObject({ deleted: 0, skipped: 'no_archive' });
    expect(await byStatus(q.id)).toEqual({ completed: 3 });
    await engine.sweeps.retention();
    expect(await byStatus(q.id)).toEqual({});
  });

  it('a pass killed after its archive write and before its delete leaves the rows; the re-run archives each row once', async () => {
    const q = await queueWith({ retention_completed_days: 0.0001, retention_action: 'archive' });
    await items(q.id, 'completed', 12, 3600);
    const ids = (await sql<{ id: string }[]>`select id from queue_items where queue_id = ${q.id} order by id`).map((r) => r.id);

    await expect(engine.sweeps.retention({ batch: 5, afterArchive: () => { throw new Error('killed'); } })).rejects.toThrow('killed');
    expect(await byStatus(q.id)).toEqual({ completed: 12 });
    expect(await engine.archive.list(tenantId, { queueId: q.id })).toEqual([]);
    const orphans = await filesOnDisk(join(dir, tenantId, 'queues', q.id));
    expect(orphans.length).toBeGreaterThan(0);

    // the backend itself killed mid-batch
    await expect(engine.sweeps.retention({
      batch: 5,
      afterArchive: async (tx) => {
        const [me] = await tx<{ pid: number }[]>`select pg_backend_pid() as pid`;
        await sql`select pg_terminate_backend(${me!.pid})`;
      },
    })).rejects.toThrow();
    expect(await byStatus(q.id)).toEqual({ completed: 12 });

    await engine.sweeps.retention({ batch: 5 });
    expect(await byStatus(q.id)).toEqual({});
    await expectCountsExact(q.id);
    const archived = await archivedIds(q.id);
    expect([...archived].sort()).toEqual(ids);
    // the same rows gave the same file: the killed batch's file was overwritten, not doubled
    const onDisk = await filesOnDisk(join(dir, tenantId, 'queues', q.id));
    expect(onDisk.filter((f) => f.endsWith('.tmp'))).toEqual([]);
    expect(onDisk).toHaveLength((await engine.archive.list(tenantId, { queueId: q.id })).length);
    // one event for what the passes removed
    const [ev] = await sql<{ data: { deleted: number } }[]>`select data from events where type = 'queue.retention' and data->>'queue_id' = ${q.id}`;
    expect(ev!.data.deleted).toBe(12);
  });

  it('a queue whose pass another dispatcher runs is skipped; two passes at once remove each row once', async () => {
    const q = await queueWith({ retention_completed_days: 0.0001, retention_action: 'archive' });
    await items(q.id, 'completed', 40, 3600);
    // another dispatcher holds the queue's pass
    await sql.begin(async (tx) => {
      await tx`select pg_advisory_xact_lock(hashtextextended(${`retention:queue_items:${q.id}`}, 0))`;
      const done = await engine.sweeps.retention();
      expect(done.find((d) => d.target_id === q.id)).toMatchObject({ deleted: 0, skipped: 'busy' });
    });
    expect(await byStatus(q.id)).toEqual({ completed: 40 });

    const other = createEngine({ sql, logger, recordArchive: directoryArchive(dir) });
    const [a, b] = await Promise.all([engine.sweeps.retention({ batch: 7, dutyCycle: 0.5 }), other.sweeps.retention({ batch: 7, dutyCycle: 0.5 })]);
    // one pass removed them all: the other found the scope leased (or, started after, nothing left)
    const passes = [a, b].map((r) => r.find((d) => d.target_id === q.id));
    expect(passes.map((p) => p?.deleted ?? 0).sort((x, y) => x - y)).toEqual([0, 40]);
    expect(passes.filter((p) => p && p.deleted === 0).every((p) => p!.skipped === 'busy')).toBe(true);
    expect(await byStatus(q.id)).toEqual({});
    const archived = await archivedIds(q.id);
    expect(new Set(archived).size).toBe(40);
    expect(archived).toHaveLength(40);
    await expectCountsExact(q.id);
  });

  it('a pass holds its scope between its batches: another holder\'s live lease makes it busy, an expired one is taken over, and the pass releases its own', async () => {
    const q = await queueWith({ retention_completed_days: 0.0001 });
    await items(q.id, 'completed', 30, 3600);
    const lease = async () => (await sql<{ by: string | null; live: boolean | null }[]>`
      select passing_by as by, passing_until > now() as live from retention_progress where kind = 'queue_items' and target_id = ${q.id}`)[0];
    // a dispatcher that is between two batches of this queue's pass
    const elsewhere = '00000000-0000-4000-8000-000000000001';
    await sql`
      insert into retention_progress (kind, target_id, tenant_id, passing_by, passing_until)
      values ('queue_items', ${q.id}, ${tenantId}, ${elsewhere}, now() + interval '1 minute')`;
    const held = await engine.sweeps.retention({ batch: 10 });
    expect(held.find((d) => d.target_id === q.id)).toEqual({ kind: 'queue_items', target_id: q.id, deleted: 0, archived: 0, skipped: 'busy' });
    expect((await byStatus(q.id)).completed).toBe(30);

    // that dispatcher died: its lease runs out and the scope is passed again
    await sql`update retention_progress set passing_until = now() - interval '1 second' where kind = 'queue_items' and target_id = ${q.id}`;
    const taken = await engine.sweeps.retention({ batch: 10, dutyCycle: 0.5 });
    expect(taken.find((d) => d.target_id === q.id)).toEqual({ kind: 'queue_items', target_id: q.id, deleted: 30, archived: 0 });
    // released at the end of the pass, for any dispatcher's next tick
    expect(await lease()).toEqual({ by: null, live: null });
    const other = createEngine({ sql, logger, recordArchive: directoryArchive(dir) });
    await items(q.id, 'completed', 5, 3600);
    expect((await other.sweeps.retention()).find((d) => d.target_id === q.id)).toMatchObject({ deleted: 5 });
    await expectCountsExact(q.id);
  });

  it('a pass that failed midway is this engine\'s to go on with at once; another engine finds the scope busy until the lease runs out', async () => {
    const q = await queueWith({ retention_completed_days: 0.0001, retention_action: 'archive' });
    await items(q.id, 'completed', 30, 3600);
    let batches = 0;
    await expect(engine.sweeps.retention({
      batch: 10,
      afterArchive: async () => {
        if (++batches === 2) throw new Error('the archive went away');
      },
    })).rejects.toThrow('the archive went away');
    // the first batch committed, and with it the lease
    expect((await byStatus(q.id)).completed).toBe(20);
    const other = createEngine({ sql, logger, recordArchive: directoryArchive(dir) });
    expect((await other.sweeps.retention({ batch: 10 })).find((d) => d.target_id === q.id)).toMatchObject({ deleted: 0, skipped: 'busy' });
    expect((await byStatus(q.id)).completed).toBe(20);
    const resumed = await engine.sweeps.retention({ batch: 10 });
    // what the failed pass removed is told by the resumed pass's event; the result counts this pass's own
    expect(resumed.find((d) => d.target_id === q.id)).toEqual({ kind: 'queue_items', target_id: q.id, deleted: 20, archived: 20 });
    expect(await byStatus(q.id)).toEqual({});
    const [ev] = await sql<{ data: { deleted: number } }[]>`select data from events where type = 'queue.retention' and data->>'queue_id' = ${q.id}`;
    expect(ev!.data.deleted).toBe(30);
    await expectCountsExact(q.id);
  });

  it('a tick that comes while the engine\'s pass runs does nothing', async () => {
    const q = await queueWith({ retention_completed_days: 0.0001, retention_action: 'archive' });
    await items(q.id, 'completed', 12, 3600);
    let release!: () => void;
    const gate = new Promise<void>((resolve) => { release = resolve; });
    let entered!: () => void;
    const inBatch = new Promise<void>((resolve) => { entered = resolve; });
    const first = engine.sweeps.retention({
      batch: 5,
      afterArchive: async () => {
        entered();
        await gate;
      },
    });
    await inBatch;
    expect(await engine.sweeps.retention()).toEqual([]);
    expect((await byStatus(q.id)).completed).toBe(12);
    release();
    expect((await first).find((d) => d.target_id === q.id)).toEqual({ kind: 'queue_items', target_id: q.id, deleted: 12, archived: 12 });
    // and once it has ended, the next tick runs
    await items(q.id, 'completed', 3, 3600);
    expect((await engine.sweeps.retention()).find((d) => d.target_id === q.id)).toMatchObject({ deleted: 3, archived: 3 });
  });

  it('lists and counts answer while a batch holds its rows, and agree with the table after it', async () => {
    const q = await queueWith({ retention_completed_days: 0.0001, retention_action: 'archive' });
    await items(q.id, 'completed', 9, 3600);
    await items(q.id, 'new', 4, 0);
    const during: Array<{ total: number; listed: number; counted: number }> = [];
    await engine.sweeps.retention({
      afterArchive: async () => {
        // other connections, while the batch's transaction holds its row locks and has not committed
        const page = await engine.items.list(q, { page: 1, limit: 100 });
        const counts = (await loadQueueItemCounts(sql, [q.id])).get(q.id)!;
        during.push({ total: page.meta.total, listed: page.data.length, counted: counts.total });
      },
    });
    expect(during).toEqual([{ total: 13, listed: 13, counted: 13 }]);
    const after = await engine.items.list(q, { page: 1, limit: 100 });
    expect(after.meta.total).toBe(4);
    expect(after.data.map((r) => r.status)).toEqual(['new', 'new', 'new', 'new']);
    await expectCountsExact(q.id);
  });

  it('a row another transaction holds is passed over by the later batches of a pass and removed by the next pass', async () => {
    const q = await queueWith({ retention_completed_days: 0.0001 });
    await items(q.id, 'completed', 25, 3600);
    const held = await sql.reserve();
    try {
      await held`begin`;
      // the oldest expired row: the first of the pass's first batch
      const [oldest] = await held<{ id: string }[]>`
        select id from queue_items where queue_id = ${q.id} order by updated_at, id limit 1 for update`;
      const first = await engine.sweeps.retention({ batch: 10 });
      expect(first.find((d) => d.target_id === q.id)).toEqual({ kind: 'queue_items', target_id: q.id, deleted: 24, archived: 0 });
      expect((await sql`select id from queue_items where queue_id = ${q.id}`).map((r) => r.id)).toEqual([oldest!.id]);
      await held`commit`;
    } finally {
      held.release();
    }
    const next = await engine.sweeps.retention({ batch: 10 });
    expect(next.find((d) => d.target_id === q.id)).toEqual({ kind: 'queue_items', target_id: q.id, deleted: 1, archived: 0 });
    await expectCountsExact(q.id);
  });

  it('a pass throttled to a share of its time removes the same rows; a share outside (0, 1] is refused', async () => {
    const q = await queueWith({ retention_completed_days: 0.0001 });
    await items(q.id, 'completed', 25, 3600);
    for (const bad of [0, -0.5, 1.5, Number.NaN]) {
      await expect(engine.sweeps.retention({ dutyCycle: bad })).rejects.toThrow(/Illegal retention duty cycle/);
    }
    expect((await byStatus(q.id)).completed).toBe(25);
    const done = await engine.sweeps.retention({ batch: 10, dutyCycle: 0.5 });
    expect(done.find((d) => d.target_id === q.id)).toEqual({ kind: 'queue_items', target_id: q.id, deleted: 25, archived: 0 });
    await expectCountsExact(q.id);
  });

  it('RETENTION_DUTY: a quarter by default, a number in [0.01, 1] or the process refuses to start', () => {
    const env = { ASSET_ENCRYPTION_KEY: Buffer.alloc(32, 7).toString('base64'), NODE_ENV: 'test' };
    expect(parseConfig(env).retentionDuty).toBe(0.25);
    expect(parseConfig({ ...env, RETENTION_DUTY: '1' }).retentionDuty).toBe(1);
    for (const bad of ['0', '0.001', '1.5', 'x', '-1']) {
      expect(() => parseConfig({ ...env, RETENTION_DUTY: bad })).toThrow(new ConfigError(`RETENTION_DUTY must be a number between 0.01 and 1, got "${bad}".`));
    }
  });

  it('a failed item with a retry left is the retry policy\'s, not retention\'s', async () => {
    const q = await queueWith({ retention_failed_days: 0, max_retries: 2 });
    await items(q.id, 'failed', 3, 7200);
    await sql`update queue_items set retry_count = 2 where id in (select id from queue_item_records where queue_id = ${q.id} and data->>'n' = '1')`;
    const done = await engine.sweeps.retention();
    expect(done.find((d) => d.target_id === q.id)).toEqual({ kind: 'queue_items', target_id: q.id, deleted: 1, archived: 0 });
    expect((await sql`select data->>'n' as n from queue_item_records where queue_id = ${q.id} order by 1`).map((r) => r.n)).toEqual(['2', '3']);
  });

  it('a queue switched to archive while a batch waits archives that batch: each batch reads the settings it applies', async () => {
    const q = await queueWith({ retention_completed_days: 0.0001 });
    await items(q.id, 'completed', 5, 3600);
    const change = await sql.reserve();
    try {
      await change`begin`;
      await change`update queues set retention_action = 'archive' where id = ${q.id}`;
      const pass = engine.sweeps.retention();
      // the pass read its scopes (still delete) and its batch waits for the change to commit
      await waitFor('the batch to wait for the settings change', async () =>
        (await sql`select 1 from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'`).length > 0);
      await change`commit`;
      const done = await pass;
      expect(done.find((d) => d.target_id === q.id)).toEqual({ kind: 'queue_items', target_id: q.id, deleted: 5, archived: 5 });
    } finally {
      change.release();
    }
    expect(new Set(await archivedIds(q.id)).size).toBe(5);
  });

  it('a queue whose archive refuses writes keeps its rows and does not stop the other queues', async () => {
    const broken = await queueWith({ retention_completed_days: 0.0001, retention_action: 'archive' });
    const fine = await queueWith({ retention_completed_days: 0.0001, retention_action: 'archive' });
    await items(broken.id, 'completed', 3, 3600);
    await items(fine.id, 'completed', 3, 3600);
    const real = directoryArchive(dir);
    const refusing = createEngine({
      sql, logger,
      recordArchive: {
        put: (key, lines) => (key.includes(broken.id) ? Promise.reject(new Error('disk full')) : real.put(key, lines)),
        get: (key) => real.get(key),
        list: (prefix) => real.list(prefix),
        delete: (key) => real.delete(key),
      },
    });
    await expect(refusing.sweeps.retention()).rejects.toThrow('disk full');
    expect(await byStatus(broken.id)).toEqual({ completed: 3 });
    expect(await byStatus(fine.id)).toEqual({});
    expect(await archivedIds(fine.id)).toHaveLength(3);
    await engine.sweeps.retention();
    expect(await byStatus(broken.id)).toEqual({});
  });

  it('restore brings archived items back as new items', async () => {
    const q = await queueWith({ retention_completed_days: 0.0001, retention_action: 'archive' });
    await items(q.id, 'completed', 8, 3600);
    await engine.sweeps.retention();
    expect(await byStatus(q.id)).toEqual({});
    const restored = await engine.archive.restoreItems(q, new Date(Date.now() - 86_400_000), new Date());
    expect(restored).toBe(8);
    expect(await byStatus(q.id)).toEqual({ new: 8 });
    const back = await sql<{ reference: string; priority: number; data: { status: string } }[]>`select reference, priority, data from queue_item_records where queue_id = ${q.id}`;
    expect(back.every((r) => r.priority === 4 && r.reference.startsWith('ref-') && r.data.status === 'completed')).toBe(true);
    await expectCountsExact(q.id);
    // a window before the items ended restores nothing
    expect(await engine.archive.restoreItems(q, new Date(Date.now() - 3 * 86_400_000), new Date(Date.now() - 2 * 86_400_000))).toBe(0);
  });

  it('jobs: only ended ones past the workspace retention go, archived with their row', async () => {
    const t = await seedTenant(sql);
    await engine.tenants.update(t.id, { job_retention_days: 60 / 86_400, job_retention_action: 'archive' });
    const p = await seedProcess(sql, t.id);
    const m = (await seedMachine(sql, t.id)).row;
    const old = await seedJob(sql, t.id, { process_id: p.id as string, machine_id: m.id as string, status: 'completed' });
    const recent = await seedJob(sql, t.id, { process_id: p.id as string, machine_id: m.id as string, status: 'failed' });
    const running = await seedJob(sql, t.id, { process_id: p.id as string, machine_id: m.id as string, status: 'running' });
    await sql`update jobs set finished_at = now() - interval '1 hour' where id = ${old.id as string}`;
    await sql`update jobs set created_at = now() - interval '400 days' where id = ${running.id as string}`;

    const done = await engine.sweeps.retention();
    expect(done.find((d) => d.target_id === t.id)).toEqual({ kind: 'jobs', target_id: t.id, deleted: 1, archived: 1 });
    const left = await sql<{ id: string }[]>`select id from jobs where tenant_id = ${t.id} order by id`;
    expect(left.map((r) => r.id).sort()).toEqual([recent.id, running.id].sort());
    const [file] = await engine.archive.list(t.id);
    expect(file).toMatchObject({ kind: 'jobs', rows: 1 });
    const [line] = (await directoryArchive(dir).get(file!.key))!;
    expect(JSON.parse(line!)).toMatchObject({ id: old.id, status: 'completed' });
    expect(await sql`select 1 from events where tenant_id = ${t.id} and type = 'jobs.retention'`).toHaveLength(1);
  });

  it('a change of retention settings is audited', async () => {
    const q = await queueWith({ retention_failed_days: 12.5, retention_action: 'archive' });
    const rows = await sql<{ action: string; details: unknown }[]>`
      select action, details from audit_log where tenant_id = ${tenantId} and resource_id = ${q.id}`;
    expect(JSON.stringify(rows)).toContain('retention_failed_days');
    expect(JSON.stringify(rows)).toContain('retention_action');

    // the workspace's jobs retention: audited when it changes, not when it is set to what it is
    const t = await seedTenant(sql);
    await engine.tenants.update(t.id, { job_retention_days: 30 });
    await engine.tenants.update(t.id, { job_retention_days: 30, monthly_quota: 5 });
    await engine.tenants.update(t.id, { job_retention_action: 'archive' });
    const tenantRows = await sql<{ action: string; details: unknown }[]>`
      select action, details from audit_log where tenant_id = ${t.id} and resource_type = 'tenant' order by id`;
    expect(tenantRows).toEqual([
      { action: 'update_tenant_retention', details: { fields: ['job_retention_days'] } },
      { action: 'update_tenant_retention', details: { fields: ['job_retention_action'] } },
    ]);
  });

  it('finds expired items through the ended-items index', async () => {
    const q = await queueWith({});
    const plan = await sql.begin(async (tx) => {
      await tx`set local enable_seqscan = off`;
      return tx<{ 'QUERY PLAN': string }[]>`
        explain select id from queue_items where queue_id = ${q.id} and status in ('completed', 'failed', 'dead_letter')
          and updated_at < now() - interval '30 days' order by updated_at, id limit 1000`;
    });
    expect(plan.map((r) => r['QUERY PLAN']).join('\n')).toContain('queue_items_ended_idx');
  });
});
