import { seedApiKey, seedQueue } from '@svc/testing';
import { apiClient, type ApiTestContext } from '@svc/testing/api';
import {
  bulkPath, counterCounts, itemsInDb, postRouteSuite, realCounts, recordingDispatch, withoutRequestId, type QueueWorld,
} from './queue-items-support';

describe('POST /api/v1/queues/by-name/:name/items/bulk', () => {
  const suite = postRouteSuite(bulkPath);
  const { post } = suite;
  let t: ApiTestContext;
  let w: QueueWorld;
  beforeAll(() => {
    ({ t, w } = suite);
  });
  const payloads = (n: number, extra: Record<string, unknown> = {}) => Array.from({ length: n }, (_, i) => ({ seq: i, ...extra }));

  /** A queue of its own, so row counts are exact. */
  const freshQueue = async () => (await seedQueue(t.sql, w.tenantId)) as { id: string; name: string };
  /** A well-formed bulk add as an integrator sends it, through the typed client (@svc/client): answers {added}. */
  const added = async (items: Array<Record<string, unknown>>, name: string) =>
    apiClient(t, { apiKey: await w.key() }).call('addQueueItems', { path: { name }, body: { items } });

  describe('success', () => {
    it('answers 200 {added} and stores each payload as a new item with the defaults', async () => {
      const q = await freshQueue();
      const res = await post(await w.key(), { items: [{ a: 1 }, { b: { c: [true, null] } }, {}] }, q.name);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ success: true, data: { added: 3 } });
      const rows = await itemsInDb(t, q.id);
      expect(rows.map((r) => r.data)).toEqual(expect.arrayContaining([{ a: 1 }, { b: { c: [true, null] } }, {}]));
      expect(rows).toHaveLength(3);
      for (const r of rows) {
        expect(r).toMatchObject({
          tenant_id: w.tenantId, queue_id: q.id, status: 'new', priority: 3, reference: null, deadline: null, postpone: null,
          result: null, retry_count: 0, error_message: null, processed_by: null,
        });
      }
    });

    it('keeps the order of the payloads in creation time (the last payload is the newest)', async () => {
      const q = await freshQueue();
      expect(await added(payloads(50), q.name)).toEqual({ added: 50 });
      const rows = await t.sql`select data from queue_item_records where queue_id = ${q.id} order by created_at, id`;
      const seqs = rows.map((r) => (r.data as { seq: number }).seq);
      // created_at is per row (clock_timestamp) and never goes backwards within the statement
      expect(seqs[0]).toBe(0);
      expect(seqs[seqs.length - 1]).toBe(49);
    });

    it('accepts exactly 1000 items', async () => {
      const q = await freshQueue();
      expect(await added(payloads(1000), q.name)).toEqual({ added: 1000 });
      expect(await realCounts(t, q.id)).toEqual({ new: 1000 });
      expect(await counterCounts(t, q.id)).toEqual({ new: 1000 });
    });

    it('accepts a single item', async () => {
      const q = await freshQueue();
      expect(await added([{ only: true }], q.name)).toEqual({ added: 1 });
    });

    it('nudges the dispatcher once, after every row is committed', async () => {
      const q = await freshQueue();
      const rec = recordingDispatch(t);
      t.deps.dispatch = rec.port;
      expect(await added(payloads(25), q.name)).toEqual({ added: 25 });
      expect(rec.nudges).toEqual([{ queueId: q.id, rowsAtNudge: 25 }]);
    });
  });

  describe('invalid bodies answer 422 and store nothing', () => {
    const cases: Array<[string, () => unknown, string]> = [
      ['no items at all (0)', () => ({ items: [] }), 'body → items'],
      ['1001 items', () => ({ items: payloads(1001) }), 'body → items'],
      ['items missing', () => ({}), 'body → items'],
      ['items not an array', () => ({ items: { a: 1 } }), 'body → items'],
      ['an item that is an array', () => ({ items: [{ a: 1 }, [1, 2]] }), 'body → items → 1'],
      ['an item that is a string', () => ({ items: ['x'] }), 'body → items → 0'],
      ['an item that is null', () => ({ items: [{}, {}, null] }), 'body → items → 2'],
      ['an unknown field next to items', () => ({ items: [{}], priority: 5 }), 'body → priority'],
    ];
    it.each(cases)('%s', async (_label, body, field) => {
      const q = await freshQueue();
      const res = await post(await w.key(), body(), q.name);
      expect(res.status).toBe(422);
      expect(res.body.error.code).toBe('VALIDATION_ERROR');
      expect(res.body.error.details.map((d: { field: string }) => d.field)).toContain(field);
      expect(await itemsInDb(t, q.id)).toHaveLength(0);
    });

    it('is all-or-nothing: one payload Postgres refuses (at position 999) leaves the queue and its counters untouched', async () => {
      const q = await freshQueue();
      const key = await w.key();
      expect((await post(key, { items: payloads(10) }, q.name)).status).toBe(200);
      const items: unknown[] = payloads(1000);
      items[999] = { text: 'bad \u0000 byte' };
      const res = await post(key, { items }, q.name);
      expect(res.status).toBe(422);
      expect(res.body.error.details[0].field).toBe('body → items → 999 → text');
      expect(await realCounts(t, q.id)).toEqual({ new: 10 });
      expect(await counterCounts(t, q.id)).toEqual({ new: 10 });
    });

    it('refuses a bulk body over 2 MiB with 413, even under 1000 items', async () => {
      const res = await post(await w.key(), { items: payloads(500, { pad: 'p'.repeat(5000) }) });
      expect(res.status).toBe(413);
      expect(res.body.error.code).toBe('PAYLOAD_TOO_LARGE');
    });
  });

  describe('authentication, scope and tenancy', () => {
    it('answers 401 without a key, with a revoked key and with an expired one', async () => {
      expect((await post(null, { items: [{}] })).status).toBe(401);
      const revoked = await seedApiKey(t.sql, w.tenantId, { is_active: false });
      expect((await post(revoked.key, { items: [{}] })).status).toBe(401);
      const expired = await seedApiKey(t.sql, w.tenantId, { expires_at: new Date(Date.now() - 1000) });
      const res = await post(expired.key, { items: [{}] });
      expect(res.status).toBe(401);
      expect(res.body.error.message).toBe('API key expirada');
    });

    it('answers 403 to a key with queues:read only', async () => {
      const res = await post(await w.key(['queues:read', 'jobs:write']), { items: [{}] });
      expect(res.status).toBe(403);
      expect(res.body.error.code).toBe('FORBIDDEN');
    });

    it("answers another tenant's queue exactly like a missing one", async () => {
      const key = await w.key();
      const foreign = await post(key, { items: [{}] }, w.otherQueue.name);
      const missing = await post(key, { items: [{}] }, 'no-such-queue');
      expect(foreign.status).toBe(404);
      expect(withoutRequestId(foreign.body)).toEqual(withoutRequestId(missing.body));
      expect(await itemsInDb(t, w.otherQueue.id)).toHaveLength(0);
    });

    it('answers a deactivated queue with 404', async () => {
      expect((await post(await w.key(), { items: [{}] }, w.inactiveQueue.name)).status).toBe(404);
    });
  });

  describe('rate limit and the order of errors', () => {
    it('allows 20 bulk requests a minute per key and answers the 21st with 429', async () => {
      const key = await w.key();
      for (let i = 0; i < 20; i++) {
        const res = await post(key, { items: [{ i }] });
        expect(res.status).toBe(200);
        expect(res.headers['x-ratelimit-limit']).toBe('20');
      }
      const over = await post(key, { items: [{}] });
      expect(over.status).toBe(429);
      expect(over.body.error.code).toBe('RATE_LIMIT_EXCEEDED');
      expect(over.headers['retry-after']).toBeDefined();
    });

    it('answers 429 before 403 (over the limit and missing the scope)', async () => {
      const key = await w.key(['queues:read']);
      for (let i = 0; i < 20; i++) expect((await post(key, { items: [{}] })).status).toBe(403);
      expect((await post(key, { items: [{}] })).status).toBe(429);
    });

    it('answers 403 before 404 (missing scope and unknown queue)', async () => {
      expect((await post(await w.key(['queues:read']), { items: [{}] }, 'no-such-queue')).status).toBe(403);
    });

    it('answers 404 before 422 (unknown queue and 1001 items)', async () => {
      expect((await post(await w.key(), { items: payloads(1001) }, 'no-such-queue')).status).toBe(404);
    });

    it('answers 401 before 404 and 422', async () => {
      expect((await post('svc_ak_bogus', { items: [] }, 'no-such-queue')).status).toBe(401);
    });
  });
});
