import { seedApiKey, seedQueue, seedUser } from '@svc/testing';
import { createSql } from '@svc/core';
import type { QueryOf } from '@svc/client';
import { apiClient, createApiTestContext, type ApiTestContext } from '@svc/testing/api';
import {
  QUEUE_ITEM_FIELDS, bulkPath, counterCounts, itemsPath, queueWorld, realCounts, withoutRequestId, type QueueWorld,
} from './queue-items-support';

describe('GET /api/v1/queues/by-name/:name/items', () => {
  let t: ApiTestContext;
  let w: QueueWorld;
  beforeAll(async () => {
    t = await createApiTestContext();
    w = await queueWorld(t);
  });
  afterAll(() => t.close());

  const list = (key: string | null, query: Record<string, string | number> = {}, name = w.queue.name) => {
    const req = t.http.get(itemsPath(name)).query(query);
    if (key !== null) req.set('X-API-Key', key);
    return req;
  };
  /** A read as an integrator makes it, through the typed client (@svc/client): the whole body, `meta` too. */
  const read = (key: string, query: QueryOf<'listQueueItems'> = {}, name = w.queue.name) =>
    apiClient(t, { apiKey: key }).request('listQueueItems', { path: { name }, query });
  const freshQueue = async () => (await seedQueue(t.sql, w.tenantId)) as { id: string; name: string };
  /** Adds items one by one through the API; returns their ids in creation order. */
  const addSequentially = async (name: string, n: number): Promise<string[]> => {
    const key = await w.key(['queues:write']);
    const ids: string[] = [];
    for (let i = 0; i < n; i++) {
      const res = await t.http.post(itemsPath(name)).set('X-API-Key', key).send({ data: { i } });
      expect(res.status).toBe(200);
      ids.push(res.body.data.id);
    }
    return ids;
  };

  describe('order, paging and meta', () => {
    let q: { id: string; name: string };
    let ids: string[];
    beforeAll(async () => {
      q = await freshQueue();
      ids = await addSequentially(q.name, 7);
    });

    it('lists newest first with the defaults page 1 and limit 20', async () => {
      const res = await read(await w.key(['queues:read']), {}, q.name);
      expect(res.success).toBe(true);
      expect(res.data.map((i: { id: string }) => i.id)).toEqual([...ids].reverse());
      expect(res.meta).toEqual({ page: 1, limit: 20, total: 7, pages: 1 });
    });

    it('returns each item with exactly the fields of the contract', async () => {
      const res = await read(await w.key(['queues:read']), { limit: 1 }, q.name);
      expect(Object.keys(res.data[0])).toEqual(QUEUE_ITEM_FIELDS);
      expect(res.data[0]).toMatchObject({ id: ids[6], queue_id: q.id, status: 'new', data: { i: 6 }, retry_count: 0 });
    });

    it('pages through the queue without gaps or repeats', async () => {
      const key = await w.key(['queues:read']);
      const seen: string[] = [];
      for (const page of [1, 2, 3]) {
        const res = await read(key, { page, limit: 3 }, q.name);
        expect(res.meta).toEqual({ page, limit: 3, total: 7, pages: 3 });
        seen.push(...res.data.map((i: { id: string }) => i.id));
      }
      expect(seen).toEqual([...ids].reverse());
    });

    it('answers a page past the end with no items and the real meta', async () => {
      const res = await read(await w.key(['queues:read']), { page: 500, limit: 100 }, q.name);
      expect(res.data).toEqual([]);
      expect(res.meta).toEqual({ page: 500, limit: 100, total: 7, pages: 1 });
    });

    it('answers an empty queue with no items and zero pages', async () => {
      const empty = await freshQueue();
      const res = await read(await w.key(['queues:read']), {}, empty.name);
      expect(res).toEqual({ success: true, data: [], meta: { page: 1, limit: 20, total: 0, pages: 0 } });
    });

    it('breaks ties of equal created_at by id, newest first, the same way on every page', async () => {
      const tie = await freshQueue();
      const at = new Date('2030-01-01T00:00:00Z');
      await t.sql`insert into queue_item_records (tenant_id, queue_id, data, created_at)
                  select ${w.tenantId}, ${tie.id}, '{}'::jsonb, ${at} from generate_series(1, 5)`;
      const expected = (await t.sql`select id from queue_items where queue_id = ${tie.id} order by id desc`).map((r) => r.id);
      const key = await w.key(['queues:read']);
      const a = await read(key, { limit: 2, page: 1 }, tie.name);
      const b = await read(key, { limit: 2, page: 2 }, tie.name);
      const c = await read(key, { limit: 2, page: 3 }, tie.name);
      expect([...a.data, ...b.data, ...c.data].map((i: { id: string }) => i.id)).toEqual(expected);
    });
  });

  describe('status filter and the exact total', () => {
    it('filters by status and counts only that status', async () => {
      const q = await freshQueue();
      const ids = await addSequentially(q.name, 6);
      await t.sql`update queue_items set status = 'completed', result = '{"ok":true}', processed_at = now()
                  where id in ${t.sql([ids[0]!, ids[2]!, ids[4]!])}`;
      await t.sql`update queue_items set status = 'dead_letter' where id = ${ids[5]!}`;
      const key = await w.key(['queues:read']);
      const completed = await read(key, { status: 'completed' }, q.name);
      expect(completed.data.map((i: { id: string }) => i.id)).toEqual([ids[4], ids[2], ids[0]]);
      expect(completed.data.every((i: { status: string }) => i.status === 'completed')).toBe(true);
      expect(completed.data[0].result).toEqual({ ok: true });
      expect(completed.meta).toEqual({ page: 1, limit: 20, total: 3, pages: 1 });
      const fresh = await read(key, { status: 'new' }, q.name);
      expect(fresh.data.map((i: { id: string }) => i.id)).toEqual([ids[3], ids[1]]);
      expect(fresh.meta.total).toBe(2);
      expect((await read(key, { status: 'dead_letter' }, q.name)).meta.total).toBe(1);
      expect((await read(key, { status: 'pending_review' }, q.name))).toMatchObject({ data: [], meta: { total: 0, pages: 0 } });
      expect((await read(key, {}, q.name)).meta.total).toBe(6);
    });

    it('keeps the total exact after a mixed bulk, single adds, status changes and deletes', async () => {
      const q = await freshQueue();
      const writer = await w.key(['queues:write']);
      for (let b = 0; b < 3; b++) {
        const res = await t.http.post(bulkPath(q.name)).set('X-API-Key', writer)
          .send({ items: Array.from({ length: 400 }, (_, i) => ({ b, i })) });
        expect(res.body.data.added).toBe(400);
      }
      await addSequentially(q.name, 5);
      // the engine's transitions, as whole-set statements
      await t.sql`update queue_items set status = 'in_progress' where id in (select id from queue_items where queue_id = ${q.id} and status = 'new' limit 500)`;
      await t.sql`update queue_items set status = 'completed' where id in (select id from queue_items where queue_id = ${q.id} and status = 'in_progress' limit 300)`;
      await t.sql`update queue_items set status = 'failed', error_message = 'x' where id in (select id from queue_items where queue_id = ${q.id} and status = 'in_progress' limit 50)`;
      await t.sql`update queue_items set status = 'dead_letter' where id in (select id from queue_items where queue_id = ${q.id} and status = 'failed' limit 20)`;
      await t.sql`update queue_items set status = 'pending_review' where id in (select id from queue_items where queue_id = ${q.id} and status = 'in_progress' limit 7)`;
      // an update that changes no status must not move a counter
      await t.sql`update queue_items set priority = 5 where queue_id = ${q.id} and status = 'completed'`;
      await t.sql`delete from queue_items where id in (select id from queue_items where queue_id = ${q.id} and status = 'new' limit 11)`;

      const real = await realCounts(t, q.id);
      expect(real).toEqual({ new: 694, in_progress: 143, completed: 300, failed: 30, dead_letter: 20, pending_review: 7 });
      expect(await counterCounts(t, q.id)).toEqual(real);
      const key = await w.key(['queues:read']);
      expect((await read(key, { limit: 100 }, q.name)).meta).toEqual({ page: 1, limit: 100, total: 1194, pages: 12 });
      for (const [status, n] of Object.entries(real)) {
        expect((await read(key, { status: status as QueryOf<'listQueueItems'>['status'] }, q.name)).meta.total).toBe(n);
      }
    });

    it('keeps the counters exact under concurrent bulk and single inserts from many connections', async () => {
      const q = await freshQueue();
      const writer = await seedApiKey(t.sql, w.tenantId, { scopes: ['queues:write'] });
      const other = await seedApiKey(t.sql, w.tenantId, { scopes: ['queues:write'] });
      // separate connections: different backends write different counter shards at once
      const direct = createSql(t.databaseUrl, { max: 8 });
      try {
        await Promise.all([
          ...Array.from({ length: 12 }, (_, b) =>
            t.http.post(bulkPath(q.name)).set('X-API-Key', b % 2 ? writer.key : other.key)
              .send({ items: Array.from({ length: 75 }, (_, i) => ({ b, i })) })
              .then((r) => expect(r.status).toBe(200))),
          ...Array.from({ length: 30 }, (_, i) =>
            t.http.post(itemsPath(q.name)).set('X-API-Key', i % 2 ? writer.key : other.key).send({ data: { i } })
              .then((r) => expect(r.status).toBe(200))),
          ...Array.from({ length: 16 }, (_, i) =>
            direct.begin(async (tx) => {
              await tx`insert into queue_item_records (tenant_id, queue_id, data) select ${w.tenantId}, ${q.id}, '{}'::jsonb from generate_series(1, 10)`;
              await tx`update queue_items set status = 'completed'
                       where id in (select id from queue_items where queue_id = ${q.id} and status = 'new' limit 5 for update skip locked)`;
              if (i % 4 === 0) throw new Error('rolled back on purpose');
            }).catch((err: Error) => expect(err.message).toBe('rolled back on purpose'))),
        ]);
      } finally {
        await direct.end();
      }
      const real = await realCounts(t, q.id);
      expect((real.new ?? 0) + (real.completed ?? 0)).toBe(12 * 75 + 30 + 12 * 10);
      expect(await counterCounts(t, q.id)).toEqual(real);
      const shards = await t.sql`select count(distinct shard)::int as n from queue_item_counts where queue_id = ${q.id}`;
      expect(shards[0]!.n).toBeGreaterThan(1);
      expect((await read(await w.key(['queues:read']), {}, q.name)).meta.total).toBe(12 * 75 + 30 + 12 * 10);
    });

    it('reads the total from the counters, not from count(*) over the queue', async () => {
      const q = await freshQueue();
      await addSequentially(q.name, 2);
      // a counter row that no item backs: only a counter-based total can see it
      await t.sql`insert into queue_item_counts (queue_id, status, shard, n) values (${q.id}, 'failed', 99, 40)`;
      const key = await w.key(['queues:read']);
      expect((await read(key, {}, q.name)).meta.total).toBe(42);
      expect((await read(key, { status: 'failed' }, q.name)).meta).toMatchObject({ total: 40, pages: 2 });
    });
  });

  describe('invalid queries answer 422', () => {
    const cases: Array<[string, Record<string, string>, string]> = [
      ['page 0', { page: '0' }, 'query → page'],
      ['page 501', { page: '501' }, 'query → page'],
      ['page not a number', { page: 'two' }, 'query → page'],
      ['page not an integer', { page: '1.5' }, 'query → page'],
      ['limit 0', { limit: '0' }, 'query → limit'],
      ['limit 101', { limit: '101' }, 'query → limit'],
      ['limit negative', { limit: '-5' }, 'query → limit'],
      ['status not one of the six', { status: 'done' }, 'query → status'],
      ['status in upper case', { status: 'NEW' }, 'query → status'],
      ['an unknown parameter', { statuss: 'new' }, 'query → statuss'],
    ];
    it.each(cases)('%s', async (_label, query, field) => {
      const res = await list(await w.key(['queues:read']), query);
      expect(res.status).toBe(422);
      expect(res.body.error.code).toBe('VALIDATION_ERROR');
      expect(res.body.error.details.map((d: { field: string }) => d.field)).toContain(field);
    });

    it('answers a repeated parameter with 422', async () => {
      const res = await t.http.get(`${itemsPath(w.queue.name)}?page=1&page=2`).set('X-API-Key', await w.key(['queues:read']));
      expect(res.status).toBe(422);
    });

    it('accepts every one of the six statuses and the bounds page 500 and limit 100', async () => {
      const key = await w.key(['queues:read']);
      for (const status of ['new', 'in_progress', 'pending_review', 'completed', 'failed', 'dead_letter']) {
        expect((await list(key, { status, page: 500, limit: 100 })).status).toBe(200);
      }
      expect((await list(key, { page: 1, limit: 1 })).status).toBe(200);
    });
  });

  describe('search by payload (?data=, JSON containment)', () => {
    let q: { id: string; name: string };
    const byRef = new Map<string, string>();
    beforeAll(async () => {
      q = await freshQueue();
      const key = await w.key(['queues:write']);
      const items: Array<[string, Record<string, unknown>]> = [
        ['a1', { customer: 'ACME', amount: 5, tags: ['urgent', 'eu'], address: { city: 'Madrid', zip: '28001' } }],
        ['a2', { customer: 'ACME', amount: 7, tags: ['eu'] }],
        ['a3', { customer: 'ACME', amount: 5, tags: [] }],
        ['o1', { customer: 'Otra', amount: 5, address: { city: 'Madrid' } }],
        ['o2', { customer: 'acme', amount: 5 }],
      ];
      for (const [reference, data] of items) {
        const res = await t.http.post(itemsPath(q.name)).set('X-API-Key', key).send({ data, reference });
        expect(res.status).toBe(200);
        byRef.set(res.body.data.id, reference);
      }
      // the same data in another queue of the workspace is not this queue's
      const other = await freshQueue();
      expect((await t.http.post(itemsPath(other.name)).set('X-API-Key', key).send({ data: { customer: 'ACME', amount: 5 } })).status).toBe(200);
    });
    const refsOf = (res: { body: { data: Array<{ id: string }> } }) => res.body.data.map((i) => byRef.get(i.id));
    const search = async (data: unknown, extra: Record<string, string | number> = {}) =>
      list(await w.key(['queues:read']), { data: typeof data === 'string' ? data : JSON.stringify(data), ...extra }, q.name);

    it('keeps the items whose data contains the object, newest first, with the exact total', async () => {
      const res = await search({ customer: 'ACME' });
      expect(res.status).toBe(200);
      expect(refsOf(res)).toEqual(['a3', 'a2', 'a1']);
      expect(res.body.meta).toEqual({ page: 1, limit: 20, total: 3, pages: 1 });
      // values compare exactly (case and type)
      expect(refsOf(await search({ customer: 'ACME', amount: 5 }))).toEqual(['a3', 'a1']);
      expect((await search({ amount: '5' })).body.meta.total).toBe(0);
      // nested objects and arrays by containment
      expect(refsOf(await search({ address: { city: 'Madrid' } }))).toEqual(['o1', 'a1']);
      expect(refsOf(await search({ tags: ['eu'] }))).toEqual(['a2', 'a1']);
      expect(refsOf(await search({ tags: ['eu', 'urgent'] }))).toEqual(['a1']);
      expect((await search({ customer: 'Nadie' })).body).toMatchObject({ data: [], meta: { total: 0, pages: 0 } });
      // {} holds for every item
      expect((await search({})).body.meta.total).toBe(5);
    });

    it('combines with status, reference and paging', async () => {
      const page2 = await search({ customer: 'ACME' }, { limit: 1, page: 2 });
      expect(refsOf(page2)).toEqual(['a2']);
      expect(page2.body.meta).toEqual({ page: 2, limit: 1, total: 3, pages: 3 });
      expect((await search({ customer: 'ACME' }, { reference: 'a1' })).body.meta.total).toBe(1);
      expect((await search({ customer: 'Otra' }, { reference: 'a1' })).body.meta.total).toBe(0);
      await t.sql`update queue_items set status = 'failed' where queue_id = ${q.id} and reference = 'a2'`;
      const failed = await search({ customer: 'ACME' }, { status: 'failed' });
      expect([refsOf(failed), failed.body.meta.total]).toEqual([['a2'], 1]);
      expect((await search({ customer: 'ACME' }, { status: 'new' })).body.meta.total).toBe(2);
    });

    it('is the same filter on the console\'s twin (settings, Bearer)', async () => {
      const res = await t.http.get(`/api/v1/settings/queues/${q.id}/items`).query({ data: JSON.stringify({ customer: 'ACME', amount: 5 }) })
        .set('Authorization', `Bearer ${(await seedUser(t.sql, w.tenantId, { role: 'member' })).token}`);
      expect(res.status).toBe(200);
      expect(refsOf(res)).toEqual(['a3', 'a1']);
      expect(res.body.meta.total).toBe(2);
      const bad = await t.http.get(`/api/v1/settings/queues/${q.id}/items`).query({ data: '[1]' })
        .set('Authorization', `Bearer ${(await seedUser(t.sql, w.tenantId, { role: 'member' })).token}`);
      expect([bad.status, bad.body.error.details[0].field]).toEqual([422, 'query → data']);
    });

    let deep = '1';
    for (let i = 0; i < 100; i++) deep = `{"a":${deep}}`;
    const hostile: Array<[string, string]> = [
      ['text that is not JSON', '{customer: ACME}'],
      ['JSON cut short', '{"customer":'],
      ['an array', '["ACME"]'],
      ['a string', '"ACME"'],
      ['a number', '42'],
      ['null', 'null'],
      ['U+0000 escaped in a value', '{"customer":"AC\\u0000ME"}'],
      ['U+0000 escaped in a key', '{"cus\\u0000tomer":"ACME"}'],
      ['a lone surrogate', '{"customer":"\\ud800"}'],
      ['nesting past the bound', deep],
      ['a __proto__ key', '{"__proto__":{"admin":true}}'],
      ['too long', JSON.stringify({ customer: 'x'.repeat(2100) })],
      ['empty', ''],
    ];
    it.each(hostile)('answers %s with 422 on query → data', async (_label, data) => {
      const res = await search(data);
      expect(res.status).toBe(422);
      expect(res.body).toMatchObject({ success: false, error: { code: 'VALIDATION_ERROR' } });
      expect(res.body.error.details.map((d: { field: string }) => d.field)).toEqual([expect.stringMatching(/^query → data/)]);
    });

    it('answers a raw NUL byte and a repeated data parameter with 422', async () => {
      const key = await w.key(['queues:read']);
      const nul = await t.http.get(`${itemsPath(q.name)}?data=%7B%22a%22%3A%22%00%22%7D`).set('X-API-Key', key);
      expect(nul.status).toBe(422);
      const twice = await t.http.get(`${itemsPath(q.name)}?data=%7B%7D&data=%7B%7D`).set('X-API-Key', key);
      expect(twice.status).toBe(422);
    });
  });

  describe('authentication, scope and tenancy', () => {
    it('answers 401 without a key, with a revoked key and with an expired one', async () => {
      expect((await list(null)).status).toBe(401);
      const revoked = await seedApiKey(t.sql, w.tenantId, { is_active: false });
      expect((await list(revoked.key)).status).toBe(401);
      const expired = await seedApiKey(t.sql, w.tenantId, { expires_at: new Date(Date.now() - 1000) });
      const res = await list(expired.key);
      expect(res.status).toBe(401);
      expect(res.body.error.message).toBe('API key expirada');
    });

    it('answers 403 to a key with queues:write but not queues:read', async () => {
      const res = await list(await w.key(['queues:write']));
      expect(res.status).toBe(403);
      expect(res.body.error.code).toBe('FORBIDDEN');
    });

    it("answers another tenant's queue exactly like a missing one", async () => {
      await t.sql`insert into queue_item_records (tenant_id, queue_id, data) values (${w.otherTenantId}, ${w.otherQueue.id}, '{"secret":1}')`;
      const key = await w.key(['queues:read']);
      const foreign = await list(key, {}, w.otherQueue.name);
      const missing = await list(key, {}, 'no-such-queue');
      expect(foreign.status).toBe(404);
      expect(withoutRequestId(foreign.body)).toEqual(withoutRequestId(missing.body));
      // while its own tenant sees it
      const own = await list(await w.otherKey(['queues:read']), {}, w.otherQueue.name);
      expect(own.body.data.map((i: { data: unknown }) => i.data)).toEqual([{ secret: 1 }]);
    });

    it('answers a deactivated queue with 404', async () => {
      expect((await list(await w.key(['queues:read']), {}, w.inactiveQueue.name)).status).toBe(404);
    });
  });

  describe('rate limit and the order of errors', () => {
    it('allows 60 lists a minute per key and answers the 61st with 429', async () => {
      const key = await w.key(['queues:read']);
      for (let i = 0; i < 60; i++) {
        const res = await list(key, { limit: 1 });
        expect(res.status).toBe(200);
        expect(res.headers['x-ratelimit-limit']).toBe('60');
      }
      const over = await list(key, { limit: 1 });
      expect(over.status).toBe(429);
      expect(over.body.error.code).toBe('RATE_LIMIT_EXCEEDED');
    });

    it('counts the list apart from adding items (each route has its own limit)', async () => {
      const key = await w.key(['queues:read', 'queues:write']);
      for (let i = 0; i < 60; i++) await list(key, { limit: 1 });
      expect((await list(key)).status).toBe(429);
      const add = await t.http.post(itemsPath(w.queue.name)).set('X-API-Key', key).send({ data: {} });
      expect(add.status).toBe(200);
    });

    it('answers 429 before 403 (over the limit and missing the scope)', async () => {
      const key = await w.key(['queues:write']);
      for (let i = 0; i < 60; i++) expect((await list(key)).status).toBe(403);
      expect((await list(key)).status).toBe(429);
    });

    it('answers 403 before 404 (missing scope and unknown queue)', async () => {
      expect((await list(await w.key(['queues:write']), {}, 'no-such-queue')).status).toBe(403);
    });

    it('answers 404 before 422 (unknown queue and a bad query)', async () => {
      expect((await list(await w.key(['queues:read']), { page: '0', status: 'x' }, 'no-such-queue')).status).toBe(404);
    });

    it('answers 401 before everything else', async () => {
      expect((await list('svc_ak_nope', { page: '0' }, 'no-such-queue')).status).toBe(401);
    });
  });
});
