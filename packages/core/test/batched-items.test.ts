import { Batcher, NotFoundError, ValidationError } from '@svc/core';
import { toQueueItemResponse } from '@svc/core/internals';
import { ITEM_COLUMNS, addItem, addItemToQueueNamed, getActiveQueueByName, noopDispatch, type QueueItemRow } from '@svc/core/internals';
import { seedQueue, seedTenant, databaseSuite } from '@svc/testing';

/**
 * Concurrent `POST …/items` share their Postgres round trips (queue-items/batched-inserts.ts): the
 * batching must be invisible to each caller — its own row, its own error, fresh reads.
 */
const db = databaseSuite();

const deps = () => ({ sql: db.sql, dispatch: noopDispatch });

/** Two workspaces with an active queue named `shared` each, and a deactivated one named `off` in the first. */
async function twoWorkspaces(shared: string, off: string) {
  const t1 = await seedTenant(db.sql);
  const t2 = await seedTenant(db.sql);
  const q1 = await seedQueue(db.sql, t1.id, { name: shared });
  const q2 = await seedQueue(db.sql, t2.id, { name: shared });
  const inactive = await seedQueue(db.sql, t1.id, { name: off });
  await db.sql`update queues set is_active = false where id = ${inactive.id}`;
  return { t1, t2, q1, q2, inactive };
}

describe('batched queue look-ups and item inserts', () => {
  it('gives each of many concurrent adds its own row, in its own queue and tenant, and counts them all', async () => {
    const t1 = await seedTenant(db.sql);
    const t2 = await seedTenant(db.sql);
    const q1 = await seedQueue(db.sql, t1.id);
    const q2 = await seedQueue(db.sql, t2.id);
    const refs = [q1, q2].map((q) => ({ id: q.id, tenant_id: q.tenant_id, name: q.name }));
    const rows = await Promise.all(
      Array.from({ length: 60 }, (_, i) =>
        addItem(deps(), refs[i % 2]!, { data: { n: i, text: `item ${i}` }, priority: 1 + (i % 5), reference: `R-${i}`, deadline: i % 3 ? null : '2031-01-02T03:04:05.678Z' }),
      ),
    );
    rows.forEach((row, i) => {
      expect(row.data).toEqual({ n: i, text: `item ${i}` });
      expect(row.queue_id).toBe(refs[i % 2]!.id);
      expect(row.tenant_id).toBe(refs[i % 2]!.tenant_id);
      expect(row.priority).toBe(1 + (i % 5));
      expect(row.reference).toBe(`R-${i}`);
      expect(row.deadline?.toISOString() ?? null).toBe(i % 3 ? null : '2031-01-02T03:04:05.678Z');
      expect(row.status).toBe('new');
    });
    expect(new Set(rows.map((r) => r.id)).size).toBe(60);
    const counts = await db.sql<{ queue_id: string; n: number }[]>`
      select queue_id, sum(n)::int as n from queue_item_counts where queue_id in (${q1.id}, ${q2.id}) group by queue_id`;
    expect(Object.fromEntries(counts.map((c) => [c.queue_id, c.n]))).toEqual({ [q1.id]: 30, [q2.id]: 30 });
  });

  it('fails only the add whose data Postgres refuses, with its 422, and stores the others', async () => {
    const t = await seedTenant(db.sql);
    const q = await seedQueue(db.sql, t.id);
    const ref = { id: q.id, tenant_id: q.tenant_id, name: q.name };
    const results = await Promise.allSettled(
      Array.from({ length: 20 }, (_, i) => addItem(deps(), ref, { data: { n: i, text: i === 7 ? 'bad \u0000 char' : 'ok' } })),
    );
    results.forEach((r, i) => expect(r.status).toBe(i === 7 ? 'rejected' : 'fulfilled'));
    const err = (results[7] as PromiseRejectedResult).reason;
    expect(err).toBeInstanceOf(ValidationError);
    expect(JSON.stringify(err.details)).toContain('data');
    const [{ n }] = await db.sql<{ n: number }[]>`select count(*)::int as n from queue_items where queue_id = ${q.id}`;
    expect(n).toBe(19);
  });

  it('answers concurrent look-ups each with its own queue, and 404 for a missing, foreign or deactivated one', async () => {
    const { t1, t2, q1: a, q2: b } = await twoWorkspaces('shared-name', 'switched-off');
    const [ra, rb, missing, foreign, inactive] = await Promise.allSettled([
      getActiveQueueByName(db.sql, t1.id, 'shared-name'),
      getActiveQueueByName(db.sql, t2.id, 'shared-name'),
      getActiveQueueByName(db.sql, t1.id, 'no-such-queue'),
      getActiveQueueByName(db.sql, t2.id, 'switched-off'),
      getActiveQueueByName(db.sql, t1.id, 'switched-off'),
    ]);
    expect(ra).toMatchObject({ status: 'fulfilled', value: { id: a.id, tenant_id: t1.id } });
    expect(rb).toMatchObject({ status: 'fulfilled', value: { id: b.id, tenant_id: t2.id } });
    for (const r of [missing, foreign, inactive]) {
      expect(r.status).toBe('rejected');
      expect((r as PromiseRejectedResult).reason).toBeInstanceOf(NotFoundError);
    }
  });

  it('sees a deactivation at once: look-ups are never cached', async () => {
    const t = await seedTenant(db.sql);
    const q = await seedQueue(db.sql, t.id);
    await expect(getActiveQueueByName(db.sql, t.id, q.name)).resolves.toMatchObject({ id: q.id });
    await db.sql`update queues set is_active = false where id = ${q.id}`;
    await expect(getActiveQueueByName(db.sql, t.id, q.name)).rejects.toBeInstanceOf(NotFoundError);
  });
});

describe('Batcher', () => {
  it('sends the calls of one event-loop turn as one batch and keeps at most maxInFlight batches running', async () => {
    const batches: number[][] = [];
    let running = 0;
    let most = 0;
    const b = new Batcher<number, number>({
      runBatch: async (xs) => {
        batches.push(xs);
        most = Math.max(most, ++running);
        await new Promise((r) => setTimeout(r, 20));
        running--;
        return xs.map((x) => x * 2);
      },
      runOne: async () => {
        throw new Error('not expected');
      },
      maxInFlight: 2,
      maxBatch: 5,
    });
    const first = await Promise.all([1, 2, 3].map((x) => b.run(x)));
    expect(first).toEqual([2, 4, 6]);
    expect(batches).toEqual([[1, 2, 3]]);
    const many = await Promise.all(Array.from({ length: 23 }, (_, i) => b.run(i)));
    expect(many).toEqual(Array.from({ length: 23 }, (_, i) => i * 2));
    expect(most).toBe(2);
    expect(Math.max(...batches.map((x) => x.length))).toBe(5);
  });

  it('never runs a call again when the outcome of its batch is unknown (a lost connection)', async () => {
    let alone = 0;
    const b = new Batcher<number, number>({
      runBatch: async () => {
        throw Object.assign(new Error('write CONNECTION_CLOSED'), { code: 'CONNECTION_CLOSED' });
      },
      runOne: async (x) => {
        alone++;
        return x;
      },
    });
    const results = await Promise.allSettled([1, 2, 3].map((x) => b.run(x)));
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected', 'rejected']);
    expect(alone).toBe(0);
  });
});

describe('adding an item to a queue addressed by name (the insert finds the queue)', () => {
  it('adds each concurrent item to its own tenant\'s active queue and answers 404 for the others, writing nothing for them', async () => {
    const { t1, t2, q1, q2, inactive: off } = await twoWorkspaces('orders', 'paused');
    const calls: Array<[string, string]> = [
      [t1.id, 'orders'], [t2.id, 'orders'], [t1.id, 'missing'], [t2.id, 'paused'], [t1.id, 'paused'], [t1.id, 'orders'],
    ];
    const results = await Promise.allSettled(calls.map(([t, name], i) => addItemToQueueNamed(deps(), t, name, { data: { i } })));
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'rejected', 'rejected', 'fulfilled']);
    for (const i of [2, 3, 4]) expect((results[i] as PromiseRejectedResult).reason).toBeInstanceOf(NotFoundError);
    const rows = results.map((r) => (r.status === 'fulfilled' ? r.value : null));
    expect(rows[0]).toMatchObject({ queue_id: q1.id, tenant_id: t1.id, data: { i: 0 }, status: 'new', priority: 3 });
    expect(rows[1]).toMatchObject({ queue_id: q2.id, tenant_id: t2.id, data: { i: 1 } });
    expect(rows[5]).toMatchObject({ queue_id: q1.id, data: { i: 5 } });
    const [{ n }] = await db.sql<{ n: number }[]>`select count(*)::int as n from queue_items where queue_id = ${off.id}`;
    expect(n).toBe(0);
  });

  it('answers each concurrent add with its row exactly as a read gives it back, data in jsonb\'s key order', async () => {
    const t = await seedTenant(db.sql);
    const q = await seedQueue(db.sql, t.id);
    const ref = { id: q.id, tenant_id: q.tenant_id, name: q.name };
    const inputs = Array.from({ length: 12 }, (_, i) => ({
      data: { zulu: i, alpha: { yy: [{ b: 1, a: 2 }], x: 'é' }, '10': 'ten', '2': 'two', 'ñ': null },
      priority: 1 + (i % 5),
      reference: i % 2 ? `R-${i}` : null,
      deadline: i % 3 ? null : '2031-01-02T03:04:05.678901+02:00',
      postpone: i % 4 ? null : '2030-06-30T23:59:59Z',
    }));
    // by name (the hot path) and by queue (the Idempotency-Key path), both batched
    const rows = await Promise.all([
      ...inputs.slice(0, 6).map((input) => addItemToQueueNamed(deps(), t.id, q.name, input)),
      ...inputs.slice(6).map((input) => addItem(deps(), ref, input)),
    ]);
    const stored = await db.sql<QueueItemRow[]>`select ${db.sql(ITEM_COLUMNS)} from queue_item_records where queue_id = ${q.id}`;
    const byId = new Map(stored.map((r) => [r.id, r]));
    expect(byId.size).toBe(12);
    for (const row of rows) {
      const read = byId.get(row.id)!;
      expect(row).toEqual(read);
      expect(JSON.stringify(toQueueItemResponse(row))).toBe(JSON.stringify(toQueueItemResponse(read)));
    }
    expect(Object.keys(rows[0]!.data)).toEqual(['2', '10', 'ñ', 'zulu', 'alpha']);
  });

  it('answers 404 before the 422 of data Postgres refuses when the queue does not exist, and the 422 when it does', async () => {
    const t = await seedTenant(db.sql);
    const q = await seedQueue(db.sql, t.id);
    const bad = { data: { text: 'nul \u0000 here' } };
    await expect(addItemToQueueNamed(deps(), t.id, 'no-such-queue', bad)).rejects.toBeInstanceOf(NotFoundError);
    await expect(addItemToQueueNamed(deps(), t.id, q.name, bad)).rejects.toBeInstanceOf(ValidationError);
    await expect(addItemToQueueNamed(deps(), t.id, 'no-such-queue', { data: {}, deadline: '0000-01-01T00:00:00Z' })).rejects.toBeInstanceOf(NotFoundError);
    await expect(addItemToQueueNamed(deps(), t.id, q.name, { data: {}, deadline: '0000-01-01T00:00:00Z' })).rejects.toBeInstanceOf(ValidationError);
  });
});
