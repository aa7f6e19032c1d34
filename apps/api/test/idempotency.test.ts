import { seedQueue } from '@svc/testing';
import { ConflictError } from '@svc/core';
import { beginIdempotent, canonicalJson, idempotencyRequestHash, runIdempotent } from '@svc/core/internals';
import { createApiTestContext, type ApiTestContext } from '@svc/testing/api';
import { bulkPath, itemsInDb, itemsPath, queueWorld, type QueueWorld } from './queue-items-support';

describe('Idempotency-Key on the item POSTs', () => {
  let t: ApiTestContext;
  let w: QueueWorld;
  beforeAll(async () => {
    t = await createApiTestContext();
    w = await queueWorld(t);
  });
  afterAll(() => t.close());

  const freshQueue = async () => (await seedQueue(t.sql, w.tenantId)) as { id: string; name: string };
  let n = 0;
  const newKey = () => `idem-${Date.now()}-${n++}`;
  const add = (apiKey: string, idem: string | null, body: unknown, name: string) => {
    const req = t.http.post(itemsPath(name)).set('X-API-Key', apiKey);
    if (idem !== null) req.set('Idempotency-Key', idem);
    return req.send(body as object);
  };
  const storedKeys = (key: string) => t.sql`select * from idempotency_keys where key = ${key}`;

  describe('repeats', () => {
    it('answers a repeat with the first response, byte for byte, and creates one item', async () => {
      const q = await freshQueue();
      const apiKey = await w.key();
      const idem = newKey();
      const body = { data: { order: 77, z: 1, a: 2 }, priority: 4, reference: 'R-77' };
      const first = await add(apiKey, idem, body, q.name);
      expect(first.status).toBe(200);
      expect(first.headers['idempotent-replayed']).toBeUndefined();
      const again = await add(apiKey, idem, body, q.name);
      expect(again.status).toBe(200);
      expect(again.text).toBe(first.text);
      expect(again.headers['idempotent-replayed']).toBe('true');
      expect(await itemsInDb(t, q.id)).toHaveLength(1);
    });

    it('replays the first response even after the item has moved on', async () => {
      const q = await freshQueue();
      const apiKey = await w.key();
      const idem = newKey();
      const first = await add(apiKey, idem, { data: { x: 1 } }, q.name);
      await t.sql`update queue_items set status = 'completed' where id = ${first.body.data.id}`;
      const again = await add(apiKey, idem, { data: { x: 1 } }, q.name);
      expect(again.body).toEqual(first.body);
      expect(again.body.data.status).toBe('new');
    });

    it('treats the same body with its keys in another order as the same request', async () => {
      const q = await freshQueue();
      const apiKey = await w.key();
      const idem = newKey();
      const first = await add(apiKey, idem, { priority: 2, data: { a: 1, b: { c: 1, d: 2 } } }, q.name);
      const again = await add(apiKey, idem, { data: { b: { d: 2, c: 1 }, a: 1 }, priority: 2 }, q.name);
      expect(again.status).toBe(200);
      expect(again.body.data.id).toBe(first.body.data.id);
      expect(await itemsInDb(t, q.id)).toHaveLength(1);
    });

    it('answers a repeated bulk with the first {added} and stores its items once', async () => {
      const q = await freshQueue();
      const apiKey = await w.key();
      const idem = newKey();
      const body = { items: Array.from({ length: 300 }, (_, i) => ({ i })) };
      const first = await t.http.post(bulkPath(q.name)).set('X-API-Key', apiKey).set('Idempotency-Key', idem).send(body);
      const again = await t.http.post(bulkPath(q.name)).set('X-API-Key', apiKey).set('Idempotency-Key', idem).send(body);
      expect(first.body).toEqual({ success: true, data: { added: 300 } });
      expect(again.status).toBe(200);
      expect(again.text).toBe(first.text);
      expect(again.headers['idempotent-replayed']).toBe('true');
      expect(await itemsInDb(t, q.id)).toHaveLength(300);
    });

    it('stores the response with the item, in the same transaction', async () => {
      const q = await freshQueue();
      const idem = newKey();
      const res = await add(await w.key(), idem, { data: { k: 1 } }, q.name);
      const [row] = await storedKeys(idem);
      expect(row).toMatchObject({ tenant_id: w.tenantId, scope: 'queue-items.add', status: 200 });
      expect(row!.response).toEqual(res.body);
    });

    it('keeps keys apart per tenant: another tenant may use the same key', async () => {
      const idem = newKey();
      const mine = await add(await w.key(), idem, { data: { t: 1 } }, w.queue.name);
      const theirs = await add(await w.otherKey(), idem, { data: { t: 1 } }, w.otherQueue.name);
      expect(mine.status).toBe(200);
      expect(theirs.status).toBe(200);
      expect(theirs.body.data.queue_id).toBe(w.otherQueue.id);
      expect(theirs.headers['idempotent-replayed']).toBeUndefined();
    });

    it('keeps keys apart per operation: the same key on the bulk route is a separate request', async () => {
      const q = await freshQueue();
      const apiKey = await w.key();
      const idem = newKey();
      expect((await add(apiKey, idem, { data: {} }, q.name)).status).toBe(200);
      const bulk = await t.http.post(bulkPath(q.name)).set('X-API-Key', apiKey).set('Idempotency-Key', idem).send({ items: [{}] });
      expect(bulk.status).toBe(200);
      expect(await itemsInDb(t, q.id)).toHaveLength(2);
    });

    it('stores nothing when no Idempotency-Key is sent, and each request creates an item', async () => {
      const q = await freshQueue();
      const apiKey = await w.key();
      const [before] = await t.sql`select count(*)::int as n from idempotency_keys`;
      await add(apiKey, null, { data: {} }, q.name);
      await add(apiKey, null, { data: {} }, q.name);
      const [after] = await t.sql`select count(*)::int as n from idempotency_keys`;
      expect(after!.n).toBe(before!.n);
      expect(await itemsInDb(t, q.id)).toHaveLength(2);
    });
  });

  describe('conflicts', () => {
    it('answers the same key with a different body with 422 and creates nothing more', async () => {
      const q = await freshQueue();
      const apiKey = await w.key();
      const idem = newKey();
      await add(apiKey, idem, { data: { v: 1 } }, q.name);
      const res = await add(apiKey, idem, { data: { v: 2 } }, q.name);
      expect(res.status).toBe(422);
      expect(res.body.error.code).toBe('VALIDATION_ERROR');
      expect(res.body.error.details).toEqual([{ field: 'header → Idempotency-Key', message: expect.stringContaining('otra solicitud') }]);
      expect(await itemsInDb(t, q.id)).toHaveLength(1);
    });

    it('answers the same key sent to another queue with 422', async () => {
      const q1 = await freshQueue();
      const q2 = await freshQueue();
      const apiKey = await w.key();
      const idem = newKey();
      expect((await add(apiKey, idem, { data: {} }, q1.name)).status).toBe(200);
      expect((await add(apiKey, idem, { data: {} }, q2.name)).status).toBe(422);
      expect(await itemsInDb(t, q2.id)).toHaveLength(0);
    });

    it('answers a repeat while the first is still in flight with 409 CONFLICT', async () => {
      const q = await freshQueue();
      const idem = newKey();
      const body = { data: { slow: true } };
      // the first request's claim, as it exists while that request runs
      await t.sql`insert into idempotency_keys (tenant_id, scope, key, request_hash, created_at)
                  values (${w.tenantId}, 'queue-items.add', ${idem},
                          ${idempotencyRequestHash({ path: itemsPath(q.name), body: { ...body, priority: 3 } })}, clock_timestamp())`;
      const res = await add(await w.key(), idem, body, q.name);
      expect(res.status).toBe(409);
      expect(res.body.error.code).toBe('CONFLICT');
      expect(res.headers['retry-after']).toBe('1');
      expect(await itemsInDb(t, q.id)).toHaveLength(0);
    });

    it('creates exactly one item when many identical requests race, answering the others with the first response or 409', async () => {
      const q = await freshQueue();
      const apiKeys = await Promise.all(Array.from({ length: 4 }, () => w.key()));
      const idem = newKey();
      const body = { data: { race: true } };
      const results = await Promise.all(Array.from({ length: 20 }, (_, i) => add(apiKeys[i % 4]!, idem, body, q.name)));
      const created = results.filter((r) => r.status === 200);
      expect(created.length).toBeGreaterThanOrEqual(1);
      expect(new Set(created.map((r) => r.body.data.id)).size).toBe(1);
      for (const r of results) {
        expect([200, 409]).toContain(r.status);
        if (r.status === 409) expect(r.body.error.code).toBe('CONFLICT');
      }
      expect(await itemsInDb(t, q.id)).toHaveLength(1);
      // once settled, every repeat gets the stored answer
      const later = await add(apiKeys[0]!, idem, body, q.name);
      expect(later.body.data.id).toBe(created[0]!.body.data.id);
    });

    it('creates exactly one bulk when identical bulks race', async () => {
      const q = await freshQueue();
      const apiKey = await w.key();
      const idem = newKey();
      const body = { items: Array.from({ length: 200 }, (_, i) => ({ i })) };
      const results = await Promise.all(Array.from({ length: 8 }, () =>
        t.http.post(bulkPath(q.name)).set('X-API-Key', apiKey).set('Idempotency-Key', idem).send(body)));
      expect(results.filter((r) => r.status === 200).length).toBeGreaterThanOrEqual(1);
      expect(results.every((r) => r.status === 200 || r.status === 409)).toBe(true);
      expect(await itemsInDb(t, q.id)).toHaveLength(200);
    });
  });

  describe('failures and expiry free the key', () => {
    it('frees the key when the first request fails, so the client can retry with it', async () => {
      const q = await freshQueue();
      const apiKey = await w.key();
      const idem = newKey();
      // passes validation, fails in Postgres (after the key was claimed)
      const failed = await add(apiKey, idem, { data: { s: 'nul \u0000' } }, q.name);
      expect(failed.status).toBe(422);
      expect(await storedKeys(idem)).toHaveLength(0);
      const retried = await add(apiKey, idem, { data: { s: 'fixed' } }, q.name);
      expect(retried.status).toBe(200);
      expect(retried.headers['idempotent-replayed']).toBeUndefined();
      expect(await itemsInDb(t, q.id)).toHaveLength(1);
    });

    it('never claims a key for a request refused before the work (404, 422 body)', async () => {
      const idem = newKey();
      const apiKey = await w.key();
      expect((await add(apiKey, idem, { data: {} }, 'no-such-queue')).status).toBe(404);
      expect((await add(apiKey, idem, { data: [] }, w.queue.name)).status).toBe(422);
      expect(await storedKeys(idem)).toHaveLength(0);
    });

    it('ignores and replaces a key older than 24 hours', async () => {
      const q = await freshQueue();
      const apiKey = await w.key();
      const idem = newKey();
      const first = await add(apiKey, idem, { data: { day: 1 } }, q.name);
      await t.sql`update idempotency_keys set created_at = now() - interval '24 hours 1 minute' where key = ${idem}`;
      // same key, different body: not a conflict any more, a new request
      const second = await add(apiKey, idem, { data: { day: 2 } }, q.name);
      expect(second.status).toBe(200);
      expect(second.body.data.id).not.toBe(first.body.data.id);
      expect(await itemsInDb(t, q.id)).toHaveLength(2);
      const [row] = await storedKeys(idem);
      expect(row!.response).toEqual(second.body);
    });

    it('still replays a key 23 hours old', async () => {
      const q = await freshQueue();
      const apiKey = await w.key();
      const idem = newKey();
      const first = await add(apiKey, idem, { data: { old: true } }, q.name);
      await t.sql`update idempotency_keys set created_at = now() - interval '23 hours' where key = ${idem}`;
      const again = await add(apiKey, idem, { data: { old: true } }, q.name);
      expect(again.body).toEqual(first.body);
      expect(await itemsInDb(t, q.id)).toHaveLength(1);
    });

    it('takes over a claim abandoned in flight (its process died) after the lease', async () => {
      const q = await freshQueue();
      const idem = newKey();
      await t.sql`insert into idempotency_keys (tenant_id, scope, key, request_hash, created_at)
                  values (${w.tenantId}, 'queue-items.add', ${idem}, ${Buffer.alloc(32)}, now() - interval '2 minutes')`;
      const res = await add(await w.key(), idem, { data: { recovered: true } }, q.name);
      expect(res.status).toBe(200);
      expect(await itemsInDb(t, q.id)).toHaveLength(1);
    });
  });

  describe('the header itself', () => {
    const bad: Array<[string, string]> = [
      ['empty', ''],
      ['256 characters', 'k'.repeat(256)],
      ['non-ASCII', 'clave-ñ'],
    ];
    it.each(bad)('answers a key that is %s with 422 and creates nothing', async (_label, value) => {
      const q = await freshQueue();
      const res = await add(await w.key(), value, { data: {} }, q.name);
      expect(res.status).toBe(422);
      expect(res.body.error.details[0].field).toBe('header → Idempotency-Key');
      expect(await itemsInDb(t, q.id)).toHaveLength(0);
    });

    it('accepts a key of 255 printable characters, spaces and symbols included', async () => {
      const q = await freshQueue();
      const apiKey = await w.key();
      const idem = `${'a b:c/d=e+f'.repeat(23)}xx`;
      expect(idem).toHaveLength(255);
      expect((await add(apiKey, idem, { data: {} }, q.name)).status).toBe(200);
      expect((await add(apiKey, idem, { data: {} }, q.name)).headers['idempotent-replayed']).toBe('true');
    });

    it('answers a body too deep to hash with 422, not 500', async () => {
      const depth = 50_000;
      const raw = `{"data":${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}}`;
      const res = await t.http.post(itemsPath(w.queue.name)).set('X-API-Key', await w.key()).set('Idempotency-Key', newKey())
        .set('Content-Type', 'application/json').send(raw);
      expect(res.status).toBe(422);
    });

    it('checks the queue (404) before the header (422)', async () => {
      expect((await add(await w.key(), '', { data: {} }, 'no-such-queue')).status).toBe(404);
    });

    it('lets a replay count against the rate limit like any request', async () => {
      const q = await freshQueue();
      const apiKey = await w.key();
      const idem = newKey();
      for (let i = 0; i < 60; i++) expect((await add(apiKey, idem, { data: {} }, q.name)).status).toBe(200);
      expect((await add(apiKey, idem, { data: {} }, q.name)).status).toBe(429);
      expect(await itemsInDb(t, q.id)).toHaveLength(1);
    });
  });

  describe('the core mechanism', () => {
    it('hashes requests canonically: key order does not matter, values do', () => {
      expect(canonicalJson({ b: 1, a: [{ y: 2, x: 1 }] })).toBe('{"a":[{"x":1,"y":2}],"b":1}');
      expect(idempotencyRequestHash({ a: 1, b: 2 }).equals(idempotencyRequestHash({ b: 2, a: 1 }))).toBe(true);
      expect(idempotencyRequestHash({ a: 1 }).equals(idempotencyRequestHash({ a: '1' }))).toBe(false);
    });

    it('refuses to record a response once the claim was taken over, rolling the work back', async () => {
      const id = { tenantId: w.tenantId, scope: 'test.fencing', key: newKey() };
      const outcome = await beginIdempotent(t.sql, id, { n: 1 });
      expect(outcome.kind).toBe('claimed');
      if (outcome.kind !== 'claimed') return;
      // another request took the key over (as after the lease): the claim token changed
      await t.sql`update idempotency_keys set created_at = clock_timestamp() where key = ${id.key}`;
      const q = await freshQueue();
      await expect(
        t.sql.begin(async (tx) => {
          await tx`insert into queue_item_records (tenant_id, queue_id, data) values (${w.tenantId}, ${q.id}, '{}')`;
          await outcome.claim.record(tx, { status: 200, body: { late: true } });
        }),
      ).rejects.toBeInstanceOf(ConflictError);
      expect(await itemsInDb(t, q.id)).toHaveLength(0);
    });

    it('runs the work once and replays without running it again', async () => {
      const id = { tenantId: w.tenantId, scope: 'test.run', key: newKey() };
      let runs = 0;
      const produce = async () => ({ status: 201, body: { run: ++runs } });
      const first = await runIdempotent(t.sql, id, { x: 1 }, produce);
      const second = await runIdempotent(t.sql, id, { x: 1 }, produce);
      expect(first).toEqual({ status: 201, body: { run: 1 }, replayed: false });
      expect(second).toEqual({ status: 201, body: { run: 1 }, replayed: true });
      expect(runs).toBe(1);
    });

    it('frees the key when the work answers an error status, and runs it again next time', async () => {
      const id = { tenantId: w.tenantId, scope: 'test.error', key: newKey() };
      let runs = 0;
      const produce = async () => ({ status: runs++ === 0 ? 503 : 200, body: { runs } });
      expect((await runIdempotent(t.sql, id, {}, produce)).status).toBe(503);
      expect((await runIdempotent(t.sql, id, {}, produce)).status).toBe(200);
      expect(runs).toBe(2);
    });
  });
});
