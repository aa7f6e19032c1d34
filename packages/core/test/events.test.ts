import { randomUUID } from 'node:crypto';
import { createEngine, createLogger, type Engine, type Sql } from '@svc/core';
import { readEventFeed, toQueueItemResponse, type QueueItemRow } from '@svc/core/internals';
import type { QueueItemResponse } from '@svc/core/schemas';
import { databaseSuite, seedJob, seedMachine, seedProcess, seedQueue, seedTenant, waitFor } from '@svc/testing';

/**
 * Events (docs/decisions/events.md): each change writes exactly one event in its own transaction,
 * whatever path made it (the agent, a sweep, the retry policy, a person); nothing for a change
 * that rolls back; the feed returns them in commit-safe order, from any cursor, and never skips
 * an event whose transaction commits after a later one was read.
 */
const db = databaseSuite();
let sql: Sql;
let engine: Engine;
let tenantId: string;
let processId: string;

beforeAll(async () => {
  sql = db.sql;
  engine = createEngine({ sql, logger: createLogger({ level: 'error', service: 'test' }) });
  tenantId = (await seedTenant(sql)).id;
  processId = (await seedProcess(sql, tenantId, { timeout_seconds: 60 })).id;
});

interface Ev {
  type: string;
  data: Record<string, unknown>;
}

/** The events of the tenant that `fn` wrote, in feed order. */
async function emitted(fn: () => Promise<unknown>): Promise<Ev[]> {
  const [{ max }] = (await sql`select coalesce(max(seq), 0)::text as max from events`) as unknown as [{ max: string }];
  await fn();
  return sql<Ev[]>`select type, data from events where tenant_id = ${tenantId} and seq > ${max}::bigint order by xid, seq`;
}
const types = (evs: Ev[]) => evs.map((e) => e.type);

async function runningJob(fields: Record<string, unknown> = {}) {
  const machineId = (await seedMachine(sql, tenantId, { slots: 5 })).row.id as string;
  const job = await seedJob(sql, tenantId, { process_id: processId, machine_id: machineId, ...fields });
  const res = await engine.machines.startJob(job.id as string, machineId, { holder: randomUUID(), leaseSeconds: 30 });
  if (!('started' in res)) throw new Error('not started');
  return { id: job.id as string, machineId, attempt: res.started.attempt };
}

describe('items', () => {
  it('one item.added per single add and one per bulk with its count; settles, the retry policy and reviews once each', async () => {
    const queue = await seedQueue(sql, tenantId, { max_retries: 0 });
    const ref = { id: queue.id as string, tenant_id: tenantId, name: queue.name as string };
    let first: QueueItemResponse | undefined;
    const added = await emitted(async () => {
      first = await engine.items.add(ref, { data: { n: 1 } } as never);
      await engine.items.addBulk(ref, { items: [{ n: 2 }, { n: 3 }, { n: 4 }] } as never);
    });
    expect(added).toEqual([
      { type: 'item.added', data: { queue_id: ref.id, count: 1, item_ids: [first!.id] } },
      { type: 'item.added', data: { queue_id: ref.id, count: 3 } },
    ]);

    const job = await seedJob(sql, tenantId, { process_id: processId, machine_id: (await seedMachine(sql, tenantId)).row.id as string, status: 'running' });
    const req = { queueId: ref.id, jobId: job.id as string, jobAttempt: job.attempt as number, machineId: job.machine_id as string };
    let claimed: Array<{ id: string; attempt: number }> = [];
    expect(await emitted(async () => {
      claimed = (await engine.machines.takeItems({ ...req, outcomes: [], take: 4 })).claimed;
    })).toEqual([]);
    expect(claimed).toHaveLength(4);
    const [a, b, c, d] = claimed as [typeof claimed[0], typeof claimed[0], typeof claimed[0], typeof claimed[0]];
    const outcomes = [
      { id: a.id, attempt: a.attempt, status: 'completed' as const, result: { ok: true } },
      { id: b.id, attempt: b.attempt, status: 'failed' as const, error_message: 'boom' },
      { id: c.id, attempt: c.attempt, status: 'pending_review' as const },
    ];
    const settled = await emitted(() => engine.machines.takeItems({ ...req, outcomes, take: 0 }));
    expect(types(settled).sort()).toEqual(['item.completed', 'item.failed', 'item.pending_review']);
    const completed = settled.find((e) => e.type === 'item.completed')!;
    const [row] = await sql<QueueItemRow[]>`select * from queue_item_records where id = ${a.id}`;
    // the resource as the API shows it
    expect(completed.data).toEqual(JSON.parse(JSON.stringify(toQueueItemResponse(row!))));
    // the same outcome again after a lost answer changes no status: no event
    expect(await emitted(() => engine.machines.takeItems({ ...req, outcomes, take: 0 }))).toEqual([]);

    // no retries left: dead letter
    const dead = await emitted(() => engine.sweeps.retryItems(ref.id));
    expect(dead.map((e) => [e.type, e.data.id])).toEqual([['item.dead_letter', b.id]]);

    const reviewer = { tenantId, userId: randomUUID(), reviewer: 'ana@example.com' };
    const reviewed = await emitted(() => engine.review.decide(reviewer, { queueId: ref.id, itemId: c.id }, { approve: true }));
    expect(reviewed.map((e) => [e.type, e.data.id, e.data.status])).toEqual([['item.reviewed', c.id, 'new']]);

    // the robot's job is lost: its held item fails once
    const lost = await emitted(() => sql`update jobs set status = 'failed', finished_at = now() where id = ${job.id as string}`.then(() => engine.sweeps.failOrphans()));
    expect(lost.map((e) => [e.type, e.data.id])).toEqual([['job.failed', job.id], ['item.failed', d.id]]);
  });

  it('concurrent single adds share their batch and still write one item.added each', async () => {
    const queue = await seedQueue(sql, tenantId);
    const ref = { id: queue.id as string, tenant_id: tenantId, name: queue.name as string };
    let rows: QueueItemResponse[] = [];
    const evs = await emitted(async () => {
      rows = await Promise.all(Array.from({ length: 30 }, (_, i) => engine.items.add(ref, { data: { i } } as never)));
    });
    expect(evs.map((e) => (e.data.item_ids as string[])[0]).sort()).toEqual(rows.map((r) => r.id).sort());
    expect(evs.every((e) => e.type === 'item.added' && e.data.count === 1)).toBe(true);
    // batched: fewer statements than adds (one outbox effect per statement)
    const [{ n }] = (await sql`select count(*)::int as n from outbox where payload->>'queue_id' = ${ref.id}`) as unknown as [{ n: number }];
    expect(n).toBeLessThan(30);
  });
});

describe('jobs', () => {
  it('created, started, completed, failed, waiting_input, stopped and timed_out: one event each', async () => {
    const machineId = (await seedMachine(sql, tenantId)).row.id as string;
    expect(types(await emitted(() => seedJob(sql, tenantId, { process_id: processId, machine_id: machineId })))).toEqual(['job.created']);

    let done!: Awaited<ReturnType<typeof runningJob>>;
    expect(types(await emitted(async () => { done = await runningJob(); }))).toEqual(['job.created', 'job.started']);
    const completed = await emitted(() => engine.machines.finishRun(done.id, done.attempt, { to: 'completed', output_data: { total: 3 } }));
    expect(completed.map((e) => [e.type, e.data.status, e.data.output_data, e.data.process_name])).toEqual([['job.completed', 'completed', { total: 3 }, expect.any(String)]]);
    expect(completed[0]!.data).not.toHaveProperty('logs');
    // a repeat of the finish changes nothing
    expect(await emitted(() => engine.machines.finishRun(done.id, done.attempt, { to: 'completed' }))).toEqual([]);

    const failing = await runningJob();
    expect(types(await emitted(() => engine.machines.finishRun(failing.id, failing.attempt, { to: 'failed', error_message: 'x' })))).toEqual(['job.failed']);

    const asking = await runningJob();
    expect(types(await emitted(() => engine.machines.askInput(asking.id, asking.attempt, { prompt: '¿Sí?', options: { choices: ['sí', 'no'] } }))))
      .toEqual(['job.waiting_input']);
    expect(types(await emitted(() => engine.jobs.stop(tenantId, asking.id)))).toEqual(['job.stopped']);

    const slow = await runningJob();
    await sql`update jobs set timeout_at = now() - interval '1 second' where id = ${slow.id}`;
    const timedOut = await emitted(() => engine.sweeps.timeOutJobs());
    expect(timedOut.map((e) => [e.type, e.data.id])).toEqual([['job.timed_out', slow.id]]);
  });

  it('a change that rolls back leaves no event', async () => {
    const machineId = (await seedMachine(sql, tenantId)).row.id as string;
    const evs = await emitted(() => sql.begin(async (tx) => {
      await seedJob(tx, tenantId, { process_id: processId, machine_id: machineId });
      throw new Error('rollback');
    }).catch(() => undefined));
    expect(evs).toEqual([]);
  });
});

describe('machines and API keys', () => {
  it('online once when a heartbeat brings it back, offline once when the sweep takes it', async () => {
    const m = (await seedMachine(sql, tenantId, { status: 'offline' })).row.id as string;
    expect(types(await emitted(() => engine.machines.heartbeat(m, { running: 0 })))).toEqual(['machine.online']);
    expect(await emitted(() => engine.machines.heartbeat(m, { running: 0 }))).toEqual([]);
    await sql`update machines set last_heartbeat_at = now() - interval '1 hour' where id = ${m}`;
    const off = await emitted(() => engine.sweeps.offlineMachines(30));
    expect(off.map((e) => [e.type, e.data.id, e.data.status])).toEqual([['machine.offline', m, 'offline']]);
    expect(off[0]!.data).not.toHaveProperty('machine_key_hash');
    // the machine as the API shows it, the environments its runs may read included
    expect(off[0]!.data.environments).toBeNull();
    await sql`update machines set environments = ${['dev', 'staging']} where id = ${m}`;
    const on = await emitted(() => engine.machines.heartbeat(m, { running: 0 }));
    expect(on.map((e) => [e.type, e.data.environments])).toEqual([['machine.online', ['dev', 'staging']]]);
  });

  it('created, rotated, revoked: never the key or its hash', async () => {
    const actor = { tenantId, userId: null, source: 'api' };
    let id = '';
    const created = await emitted(async () => { id = (await engine.keys.create(actor, { name: 'events-key', scopes: ['jobs:read'] })).id; });
    const rotated = await emitted(() => engine.keys.rotate(actor, id));
    const revoked = await emitted(() => engine.keys.revoke(actor, id));
    expect([...created, ...rotated, ...revoked].map((e) => [e.type, e.data.id])).toEqual([
      ['api_key.created', id], ['api_key.rotated', id], ['api_key.revoked', id],
    ]);
    for (const e of [...created, ...rotated, ...revoked]) {
      expect(Object.keys(e.data).sort()).toEqual(['allowed_ips', 'created_at', 'environments', 'expires_at', 'id', 'is_active', 'last_used_at', 'name', 'prefix', 'scopes']);
    }
  });
});

/**
 * The feed once every event of the tenant is below the horizon (transactions of other databases
 * on the same server hold it back for a moment too).
 */
async function wholeFeed() {
  const [{ n }] = (await sql`select count(*)::int as n from events where tenant_id = ${tenantId}`) as unknown as [{ n: number }];
  return waitFor('every event in the feed', async () => {
    const rows = (await readEventFeed(sql, tenantId, { limit: 500 })).rows;
    return rows.length === n ? rows : null;
  }, 20_000);
}

describe('the feed', () => {
  it('replays from any cursor, in order, page by page', async () => {
    const all = await wholeFeed();
    expect(all.length).toBeGreaterThan(20);
    expect([...all.map((e) => e.id)].sort()).toEqual(all.map((e) => e.id));
    const paged: string[] = [];
    let after: string | undefined;
    for (;;) {
      const page = await readEventFeed(sql, tenantId, { after, limit: 3 });
      if (page.rows.length === 0) {
        expect(page.meta.next_cursor).toBe(after);
        break;
      }
      paged.push(...page.rows.map((e) => e.id));
      after = page.meta.next_cursor!;
    }
    expect(paged).toEqual(all.map((e) => e.id));
    for (const k of [0, 5, all.length - 1]) {
      const rest = await readEventFeed(sql, tenantId, { after: all[k]!.id, limit: 500 });
      expect(rest.rows.map((e) => e.id)).toEqual(all.slice(k + 1).map((e) => e.id));
    }
    const onlyJobs = await readEventFeed(sql, tenantId, { types: 'job.created,job.started', limit: 500 });
    expect(new Set(onlyJobs.rows.map((e) => e.type))).toEqual(new Set(['job.created', 'job.started']));
  });

  it('never skips an event whose transaction commits after a later one was read', async () => {
    const machineId = (await seedMachine(sql, tenantId)).row.id as string;
    const all = await wholeFeed();
    const start = all[all.length - 1]!.id;
    const slow = await sql.reserve();
    try {
      await slow`begin`;
      // the slow transaction writes its event first (smaller seq) and commits last
      const [early] = await slow`insert into jobs (tenant_id, process_id, machine_id) values (${tenantId}, ${processId}, ${machineId}) returning id`;
      const late = await seedJob(sql, tenantId, { process_id: processId, machine_id: machineId });
      // the committed one waits behind the open transaction: nothing is handed out past it
      const meanwhile = await readEventFeed(sql, tenantId, { after: start, limit: 500 });
      expect(meanwhile.rows.map((e) => e.data.id)).not.toContain(late.id);
      await slow`commit`;
      const after = await waitFor('both events', async () => {
        const page = await readEventFeed(sql, tenantId, { after: meanwhile.meta.next_cursor!, limit: 500 });
        return page.rows.length >= 2 ? page : null;
      }, 20_000);
      expect(after.rows.map((e) => e.data.id)).toEqual([early!.id, late.id]);
    } finally {
      slow.release();
    }
  });

  it('orders by transaction and sequence as numbers, not as their text', async () => {
    // one transaction's events on both sides of a power of ten: as text "10000000000" < "9999999999"
    const other = (await seedTenant(sql)).id;
    await sql.begin((tx) => tx`
      insert into events (tenant_id, type, data, seq)
      values (${other}, 'job.created', '{"n": 1}', 9999999999), (${other}, 'job.created', '{"n": 2}', 10000000000)`);
    const page = await waitFor('both events', async () => {
      const p = await readEventFeed(sql, other, { limit: 500 });
      return p.rows.length === 2 ? p : null;
    }, 20_000);
    expect(page.rows.map((e) => e.data.n)).toEqual([1, 2]);
    // and a cursor between them returns the second
    const rest = await readEventFeed(sql, other, { after: page.rows[0]!.id, limit: 500 });
    expect(rest.rows.map((e) => e.data.n)).toEqual([2]);
    // seq values far above the sequence's would confuse the other tests' "events since max(seq)"
    await sql`delete from events where tenant_id = ${other}`;
  });

  it('keeps events for the retention and purges older ones', async () => {
    const [{ seq }] = (await sql`select max(seq)::text as seq from events where tenant_id = ${tenantId}`) as unknown as [{ seq: string }];
    await sql`update events set occurred_at = now() - interval '8 days' where tenant_id = ${tenantId} and seq <= ${seq}::bigint - 3`;
    const purged = await engine.sweeps.oldEvents(7);
    expect(purged).toBeGreaterThan(0);
    const left = await sql`select seq from events where tenant_id = ${tenantId}`;
    expect(left.length).toBe(3 + Number((await sql`select count(*)::int as n from events where tenant_id = ${tenantId} and seq > ${seq}::bigint`)[0]!.n));
    expect(await engine.sweeps.oldEvents(7)).toBe(0);
  });

  it('refuses a cursor or a type that is not one', async () => {
    await expect(readEventFeed(sql, tenantId, { after: 'nope', limit: 10 })).rejects.toMatchObject({ status: 422 });
    await expect(readEventFeed(sql, tenantId, { types: 'job.nope', limit: 10 })).rejects.toMatchObject({ status: 422 });
  });
});

describe('rendering', () => {
  it('renders dates through an expression Postgres inlines, not a call per event', async () => {
    // declared immutable around a stable to_char, event_iso ran as a function call of its own:
    // five per item event in the settle statement, one per event read from the feed
    const plan = await sql.unsafe<Array<{ 'QUERY PLAN': string }>>(`explain (verbose, costs off) select event_iso(t) from (values (now())) as v(t)`);
    const text = plan.map((r) => r['QUERY PLAN']).join('\n');
    expect(text).toContain('to_char(');
    expect(text).not.toContain('event_iso(');
    const [row] = await sql<Array<{ iso: string }>>`select event_iso('2026-11-25 08:09:10.123999+00'::timestamptz) as iso`;
    expect(row!.iso).toBe('2026-11-25T08:09:10.123Z');
  });
});
