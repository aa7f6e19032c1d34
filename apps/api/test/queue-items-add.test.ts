import { seedApiKey } from '@svc/testing';
import { noopDispatch } from '@svc/core/internals';
import type { BodyOf } from '@svc/client';
import { apiClient, type ApiTestContext } from '@svc/testing/api';
import {
  ISO_UTC, QUEUE_ITEM_FIELDS, UUID, itemsInDb, itemsPath, postRouteSuite, recordingDispatch, withoutRequestId, type QueueWorld,
} from './queue-items-support';

describe('POST /api/v1/queues/by-name/:name/items', () => {
  const suite = postRouteSuite(itemsPath);
  const { post } = suite;
  let t: ApiTestContext;
  let w: QueueWorld;
  beforeAll(() => {
    ({ t, w } = suite);
  });
  /** A well-formed add as an integrator sends it, through the typed client (@svc/client): answers the item. */
  const add = async (body: BodyOf<'addQueueItem'>, name = w.queue.name) =>
    apiClient(t, { apiKey: await w.key() }).call('addQueueItem', { path: { name }, body });

  describe('success', () => {
    it('answers 200 with every field of the contract, one by one', async () => {
      const before = Date.now();
      const res = await post(await w.key(), {
        data: { invoice: 'F-1', lines: [1, 2], nested: { ok: true } },
        priority: 5,
        reference: 'INV-2024-001',
        deadline: '2030-01-01T10:00:00+02:00',
        postpone: '2029-12-31T23:30:00.250Z',
      });
      expect(res.status).toBe(200);
      expect(res.body.success).toBe(true);
      const item = res.body.data;
      expect(Object.keys(item)).toEqual(QUEUE_ITEM_FIELDS);
      expect(item.id).toMatch(UUID);
      expect(item.queue_id).toBe(w.queue.id);
      expect(item.status).toBe('new');
      expect(item.priority).toBe(5);
      expect(item.reference).toBe('INV-2024-001');
      expect(item.deadline).toBe('2030-01-01T08:00:00.000Z');
      expect(item.postpone).toBe('2029-12-31T23:30:00.250Z');
      expect(item.data).toEqual({ invoice: 'F-1', lines: [1, 2], nested: { ok: true } });
      expect(item.result).toBeNull();
      expect(item.retry_count).toBe(0);
      expect(item.error_message).toBeNull();
      expect(item.processed_by).toBeNull();
      expect(item.created_at).toMatch(ISO_UTC);
      expect(Date.parse(item.created_at)).toBeGreaterThanOrEqual(before - 1000);
      expect(Date.parse(item.created_at)).toBeLessThanOrEqual(Date.now() + 1000);
      expect(item.processed_at).toBeNull();
      expect(item.reviewed_by).toBeNull();
      expect(item.reviewed_at).toBeNull();

      const [row] = await t.sql`select * from queue_item_records where id = ${item.id}`;
      expect(row!.tenant_id).toBe(w.tenantId);
      expect(row!.queue_id).toBe(w.queue.id);
      expect(row!.data).toEqual(item.data);
      expect((row!.deadline as Date).toISOString()).toBe(item.deadline);
      expect((row!.created_at as Date).toISOString()).toBe(item.created_at);
    });

    it('applies the defaults: priority 3, no reference, deadline or postpone', async () => {
      expect(await add({ data: {} })).toMatchObject({
        status: 'new', priority: 3, reference: null, deadline: null, postpone: null, data: {}, result: null, retry_count: 0,
      });
    });

    it('accepts explicit nulls and the priority bounds 1 and 5', async () => {
      const low = await add({ data: { n: 1 }, priority: 1, reference: null, deadline: null, postpone: null });
      expect(low).toMatchObject({ priority: 1, reference: null, deadline: null, postpone: null });
      expect((await add({ data: { n: 2 }, priority: 5 })).priority).toBe(5);
    });

    it('keeps a lowercase t/z, an offset and sub-millisecond digits of a date-time as the instant they name', async () => {
      const item = await add({ data: {}, deadline: '2031-05-06t07:08:09.123456-03:00', postpone: '2031-05-06t00:00:00z' });
      expect(item.deadline).toBe('2031-05-06T10:08:09.123Z');
      expect(item.postpone).toBe('2031-05-06T00:00:00.000Z');
      // Postgres parses the text itself, so the microseconds survive in storage
      const [row] = await t.sql`select to_char(deadline at time zone 'UTC', 'US') as us from queue_items where id = ${item.id}`;
      expect(row!.us).toBe('123456');
    });

    it('accepts a leap second as the instant right after it', async () => {
      expect((await add({ data: {}, deadline: '2030-06-30T23:59:60Z' })).deadline).toBe('2030-07-01T00:00:00.000Z');
    });

    it('finds a queue whose name needs URL encoding', async () => {
      const [q] = await t.sql`insert into queues (tenant_id, name) values (${w.tenantId}, 'Facturas pendientes ñ') returning id, name`;
      expect((await add({ data: { a: 1 } }, q!.name as string)).queue_id).toBe(q!.id);
    });

    it('nudges the dispatcher after the item is committed', async () => {
      const rec = recordingDispatch(t);
      t.deps.dispatch = rec.port;
      const before = (await itemsInDb(t, w.queue.id)).length;
      expect((await add({ data: { nudge: true } })).data).toEqual({ nudge: true });
      expect(rec.nudges).toEqual([{ queueId: w.queue.id, rowsAtNudge: before + 1 }]);
    });

    it('still answers 200 when the dispatcher cannot be reached (Postgres is the truth)', async () => {
      t.deps.dispatch = { ...noopDispatch, queueItemsReady: async () => { throw new Error('redis down'); } };
      const item = await add({ data: { survives: true } });
      const [row] = await t.sql`select status from queue_items where id = ${item.id}`;
      expect(row!.status).toBe('new');
    });
  });

  describe('invalid bodies answer 422 and store nothing', () => {
    const cases: Array<[string, unknown, string]> = [
      ['data missing', { priority: 3 }, 'body → data'],
      ['data an array', { data: [1, 2] }, 'body → data'],
      ['data a string', { data: 'x' }, 'body → data'],
      ['data null', { data: null }, 'body → data'],
      ['data a number', { data: 42 }, 'body → data'],
      ['priority 0', { data: {}, priority: 0 }, 'body → priority'],
      ['priority 6', { data: {}, priority: 6 }, 'body → priority'],
      ['priority not an integer', { data: {}, priority: 2.5 }, 'body → priority'],
      ['priority a string', { data: {}, priority: '3' }, 'body → priority'],
      ['priority null', { data: {}, priority: null }, 'body → priority'],
      ['reference a number', { data: {}, reference: 12 }, 'body → reference'],
      ['reference over 255 characters', { data: {}, reference: 'r'.repeat(256) }, 'body → reference'],
      ['deadline not a date', { data: {}, deadline: 'tomorrow' }, 'body → deadline'],
      ['deadline a date without time', { data: {}, deadline: '2030-01-01' }, 'body → deadline'],
      ['deadline without a time zone', { data: {}, deadline: '2030-01-01T10:00:00' }, 'body → deadline'],
      ['deadline an impossible day', { data: {}, deadline: '2030-02-30T10:00:00Z' }, 'body → deadline'],
      ['deadline a number', { data: {}, deadline: 1893456000000 }, 'body → deadline'],
      ['deadline in year 0000', { data: {}, deadline: '0000-01-01T00:00:00Z' }, 'body → deadline'],
      ['postpone not a date', { data: {}, postpone: '31/12/2030' }, 'body → postpone'],
      ['postpone in year 0000', { data: {}, postpone: '0000-06-01T00:00:00Z' }, 'body → postpone'],
      ['an unknown field', { data: {}, priorty: 5 }, 'body → priorty'],
      ['a body that is an array', [{ data: {} }], 'body'],
      ['a string with the \\u0000 character Postgres cannot store', { data: { text: 'a\u0000b' } }, 'body → data → text'],
    ];
    it.each(cases)('%s', async (_label, body, field) => {
      const before = (await itemsInDb(t, w.queue.id)).length;
      const res = await post(await w.key(), body);
      expect(res.status).toBe(422);
      expect(res.body.success).toBe(false);
      expect(res.body.error.code).toBe('VALIDATION_ERROR');
      expect(res.body.error.details.map((d: { field: string }) => d.field)).toContain(field);
      expect(res.body.detail.length).toBeGreaterThan(0);
      expect((await itemsInDb(t, w.queue.id)).length).toBe(before);
    });

    it('answers an empty body with 422 naming the missing data', async () => {
      const res = await t.http.post(itemsPath(w.queue.name)).set('X-API-Key', await w.key()).set('Content-Type', 'application/json');
      expect(res.status).toBe(422);
      expect(res.body.error.details).toEqual([expect.objectContaining({ field: 'body → data' })]);
    });

    it('answers data nested deeper than Postgres accepts with 422, not 500', async () => {
      const depth = 200_000;
      const raw = `{"data":${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}}`;
      const res = await t.http.post(itemsPath(w.queue.name)).set('X-API-Key', await w.key())
        .set('Content-Type', 'application/json').send(raw);
      expect(res.status).toBe(422);
      expect(res.body.error.code).toBe('VALIDATION_ERROR');
    });

    it('refuses a body over 2 MiB with 413', async () => {
      const res = await post(await w.key(), { data: { blob: 'x'.repeat(2 * 1024 * 1024) } });
      expect(res.status).toBe(413);
      expect(res.body.error.code).toBe('PAYLOAD_TOO_LARGE');
    });

    it('accepts a body just under 2 MiB', async () => {
      const res = await post(await w.key(), { data: { blob: 'x'.repeat(2 * 1024 * 1024 - 100) } });
      expect(res.status).toBe(200);
    });
  });

  describe('authentication and scope', () => {
    it('answers 401 without a key', async () => {
      const res = await post(null, { data: {} });
      expect(res.status).toBe(401);
      expect(res.body.error).toMatchObject({ code: 'UNAUTHORIZED', message: 'Credenciales inválidas' });
    });

    it('answers 401 to an unknown key', async () => {
      const res = await post('svc_ak_notarealkeyatall', { data: {} });
      expect(res.status).toBe(401);
      expect(res.body.error.code).toBe('UNAUTHORIZED');
    });

    it('answers 401 to a revoked key', async () => {
      const { key } = await seedApiKey(t.sql, w.tenantId, { is_active: false });
      const res = await post(key, { data: {} });
      expect(res.status).toBe(401);
      expect(res.body.error.code).toBe('UNAUTHORIZED');
    });

    it('answers 401 "API key expirada" to an expired key', async () => {
      const { key } = await seedApiKey(t.sql, w.tenantId, { expires_at: new Date(Date.now() - 60_000) });
      const res = await post(key, { data: {} });
      expect(res.status).toBe(401);
      expect(res.body.error).toMatchObject({ code: 'UNAUTHORIZED', message: 'API key expirada' });
    });

    it('answers 403 to a key without queues:write (queues:read is not enough)', async () => {
      const res = await post(await w.key(['queues:read']), { data: {} });
      expect(res.status).toBe(403);
      expect(res.body.error.code).toBe('FORBIDDEN');
    });

    it('answers 403 to a key with an empty scope list (fail-closed)', async () => {
      const res = await post(await w.key([]), { data: {} });
      expect(res.status).toBe(403);
    });
  });

  describe('existence in the tenant', () => {
    it('answers 404 to an unknown queue name', async () => {
      const res = await post(await w.key(), { data: {} }, 'no-such-queue');
      expect(res.status).toBe(404);
      expect(res.body.error.code).toBe('NOT_FOUND');
    });

    it("answers another tenant's queue exactly like a missing one, and stores nothing there", async () => {
      const key = await w.key();
      const foreign = await post(key, { data: {} }, w.otherQueue.name);
      const missing = await post(key, { data: {} }, 'no-such-queue');
      expect(foreign.status).toBe(404);
      expect(withoutRequestId(foreign.body)).toEqual(withoutRequestId(missing.body));
      expect(await itemsInDb(t, w.otherQueue.id)).toHaveLength(0);
    });

    it('answers a deactivated queue like a missing one', async () => {
      const res = await post(await w.key(), { data: {} }, w.inactiveQueue.name);
      expect(res.status).toBe(404);
      expect(await itemsInDb(t, w.inactiveQueue.id)).toHaveLength(0);
    });

    it("lets the other tenant's own key add to its queue", async () => {
      const res = await post(await w.otherKey(), { data: { mine: true } }, w.otherQueue.name);
      expect(res.status).toBe(200);
      expect(res.body.data.queue_id).toBe(w.otherQueue.id);
    });
  });

  describe('rate limit and the order of errors', () => {
    it('allows 60 requests a minute per key and answers the 61st with 429', async () => {
      const key = await w.key();
      for (let i = 0; i < 60; i++) {
        const res = await post(key, { data: { i } });
        expect(res.status).toBe(200);
        expect(res.headers['x-ratelimit-limit']).toBe('60');
      }
      const over = await post(key, { data: { i: 60 } });
      expect(over.status).toBe(429);
      expect(over.body.error).toMatchObject({ code: 'RATE_LIMIT_EXCEEDED', message: 'Límite de solicitudes excedido' });
      expect(Number(over.headers['retry-after'])).toBeGreaterThan(0);
      // another key is counted on its own
      expect((await post(await w.key(), { data: {} })).status).toBe(200);
    });

    it('answers 401 before anything else (bad key, unknown queue, bad body)', async () => {
      const res = await post('svc_ak_wrong', { data: 'nope' }, 'no-such-queue');
      expect(res.status).toBe(401);
    });

    it('answers 429 before 403 (over the limit and missing the scope)', async () => {
      const key = await w.key(['queues:read']);
      for (let i = 0; i < 60; i++) expect((await post(key, { data: {} })).status).toBe(403);
      expect((await post(key, { data: {} })).status).toBe(429);
    });

    it('answers 403 before 404 (missing scope and unknown queue)', async () => {
      const res = await post(await w.key(['queues:read']), { data: {} }, 'no-such-queue');
      expect(res.status).toBe(403);
    });

    it('answers 404 before 422 (unknown queue and invalid body)', async () => {
      const res = await post(await w.key(), { data: 'not an object', priority: 9 }, 'no-such-queue');
      expect(res.status).toBe(404);
    });

    it("answers 404 before 422 for another tenant's queue too", async () => {
      const res = await post(await w.key(), { priority: 9 }, w.otherQueue.name);
      expect(res.status).toBe(404);
    });
  });
});
