import { seedApiKey } from '@svc/testing';
import { createApiTestContext, type ApiTestContext } from '@svc/testing/api';
import { bearer, fieldsOf, settingsWorld, type SettingsWorld } from './settings-fixtures';
import { itemsPath } from './queue-items-support';

/**
 * A queue's `unique_references` setting (docs/decisions/unique-references.md): the
 * database refuses a second item with a reference the queue already holds, through the API's
 * single add (batched and idempotent paths), the engine's bulk add (`svc items import`, archive
 * restores), concurrent producers and retention.
 */
describe('queues with unique references', () => {
  let t: ApiTestContext;
  let w: SettingsWorld;
  let n = 0;
  beforeAll(async () => {
    t = await createApiTestContext();
    w = await settingsWorld(t);
  });
  afterAll(() => t.close());

  const settings = '/api/v1/settings/queues';
  const createQueue = (body: Record<string, unknown>, token = w.admin) =>
    t.http.post(settings).set(bearer(token)).send({ name: `uq-${++n}`, ...body });
  const patchQueue = (id: string, body: unknown, token = w.admin) => t.http.patch(`${settings}/${id}`).set(bearer(token)).send(body as object);
  const key = async (tenantId = w.tenantA) => (await seedApiKey(t.sql, tenantId)).key;
  const add = async (queueName: string, body: Record<string, unknown>, opts: { apiKey?: string; idempotencyKey?: string } = {}) => {
    const req = t.http.post(itemsPath(queueName)).set('X-API-Key', opts.apiKey ?? (await key()));
    if (opts.idempotencyKey) req.set('Idempotency-Key', opts.idempotencyKey);
    return req.send(body);
  };
  const uniqueQueue = async () => {
    const res = await createQueue({ unique_references: true });
    expect(res.status).toBe(201);
    return res.body.data as { id: string; name: string; tenant_id: string };
  };
  const stored = async (queueId: string, reference: string) =>
    (await t.sql<Array<{ id: string }>>`select id from queue_items where queue_id = ${queueId} and reference = ${reference}`).map((r) => r.id);

  it('is off by default, on when asked, and shown by every read', async () => {
    const plain = await createQueue({});
    expect(plain.body.data.unique_references).toBe(false);
    const q = await uniqueQueue();
    const read = await t.http.get(`${settings}/${q.id}`).set(bearer(w.admin));
    expect(read.body.data.unique_references).toBe(true);
    const off = await patchQueue(q.id, { unique_references: false });
    expect(off.status).toBe(200);
    expect(off.body.data.unique_references).toBe(false);
  });

  it.each([['a string', 'yes'], ['null', null], ['a number', 1]])('refuses %s as unique_references with 422 naming the field', async (_label, value) => {
    const created = await createQueue({ unique_references: value });
    expect(created.status).toBe(422);
    expect(created.body).toMatchObject({ success: false, error: { code: 'VALIDATION_ERROR' } });
    expect(fieldsOf(created.body)).toContain('body → unique_references');
    const q = await uniqueQueue();
    const patched = await patchQueue(q.id, { unique_references: value });
    expect(patched.status).toBe(422);
    expect(fieldsOf(patched.body)).toContain('body → unique_references');
  });

  it('answers 409 CONFLICT naming the item that holds the reference, whatever its status', async () => {
    const q = await uniqueQueue();
    const first = await add(q.name, { data: { n: 1 }, reference: 'F-1' });
    expect(first.status).toBe(200);
    await t.sql`update queue_items set status = 'completed', processed_at = now() where id = ${first.body.data.id}`;
    const again = await add(q.name, { data: { n: 2 }, reference: 'F-1' });
    expect(again.status).toBe(409);
    expect(again.body).toEqual({
      success: false,
      error: {
        code: 'CONFLICT',
        message: 'Ya existe un elemento con esta referencia en la cola',
        details: { field: 'reference', reference: 'F-1', item_id: first.body.data.id },
        request_id: expect.any(String),
      },
    });
    // the idempotent path (its own transaction) refuses alike and frees its key
    const keyed = await add(q.name, { data: { n: 3 }, reference: 'F-1' }, { idempotencyKey: `k-${n}` });
    expect(keyed.status).toBe(409);
    expect(keyed.body.error.details.item_id).toBe(first.body.data.id);
    expect(await stored(q.id, 'F-1')).toEqual([first.body.data.id]);
    // a reference differing in case is another reference
    expect((await add(q.name, { data: {}, reference: 'f-1' })).status).toBe(200);
  });

  it('always accepts items without a reference', async () => {
    const q = await uniqueQueue();
    for (const body of [{ data: {} }, { data: {}, reference: null }, { data: {} }]) expect((await add(q.name, body)).status).toBe(200);
    expect(await t.sql`select 1 from queue_items where queue_id = ${q.id}`).toHaveLength(3);
  });

  it('answers a repeat with the same Idempotency-Key with the original', async () => {
    const q = await uniqueQueue();
    const apiKey = await key();
    const first = await add(q.name, { data: { a: 1 }, reference: 'R-1' }, { apiKey, idempotencyKey: 'once' });
    expect(first.status).toBe(200);
    const repeat = await add(q.name, { data: { a: 1 }, reference: 'R-1' }, { apiKey, idempotencyKey: 'once' });
    expect(repeat.status).toBe(200);
    expect(repeat.headers['idempotent-replayed']).toBe('true');
    expect(repeat.body).toEqual(first.body);
    expect(await stored(q.id, 'R-1')).toEqual([first.body.data.id]);
  });

  it('stores exactly one of twenty concurrent adds of one reference', async () => {
    const q = await uniqueQueue();
    const apiKey = await key();
    const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => add(q.name, { data: { i }, reference: 'RACE' }, { apiKey })));
    const ok = answers.filter((r) => r.status === 200);
    const refused = answers.filter((r) => r.status === 409);
    expect(ok).toHaveLength(1);
    expect(refused).toHaveLength(19);
    for (const r of refused) expect(r.body.error.details.item_id).toBe(ok[0]!.body.data.id);
    expect(await stored(q.id, 'RACE')).toEqual([ok[0]!.body.data.id]);
    // each in a transaction of its own (with an Idempotency-Key: no batching), the same
    const keyed = await Promise.all(Array.from({ length: 20 }, (_, i) =>
      add(q.name, { data: { i }, reference: 'RACE-2' }, { apiKey, idempotencyKey: `race-${i}` })));
    expect(keyed.map((r) => r.status).sort()).toEqual([200, ...Array(19).fill(409)]);
    expect(await stored(q.id, 'RACE-2')).toHaveLength(1);
  });

  it('refuses a bulk with a clash, with stored items or within itself, naming the indexes and adding nothing', async () => {
    const q = await uniqueQueue();
    const held = (await add(q.name, { data: {}, reference: 'B-1' })).body.data.id as string;
    const queue = { id: q.id, tenant_id: q.tenant_id, name: q.name };
    const bulk = [
      { data: { i: 0 }, reference: 'B-0' },
      { data: { i: 1 }, reference: 'B-1' },
      { data: { i: 2 } },
      { data: { i: 3 }, reference: 'B-0' },
      { data: { i: 4 }, reference: 'B-4' },
    ];
    await expect(t.deps.engine.items.addMany(queue, bulk)).rejects.toMatchObject({
      code: 'CONFLICT',
      status: 409,
      message: '2 elementos repiten referencias que ya existen en la cola o en la solicitud; no se añadió ninguno',
      details: {
        indexes: [1, 3],
        clashes: [{ index: 1, reference: 'B-1', item_id: held }, { index: 3, reference: 'B-0', same_as_index: 0 }],
      },
    });
    expect(await t.sql`select 1 from queue_items where queue_id = ${q.id}`).toHaveLength(1);
    // within the request alone
    await expect(t.deps.engine.items.addMany(queue, [{ data: {}, reference: 'X' }, { data: {}, reference: 'X' }])).rejects.toMatchObject({
      status: 409, details: { indexes: [1] },
    });
    expect(await t.deps.engine.items.addMany(queue, [{ data: {}, reference: 'B-0' }, { data: {} }, { data: {} }])).toBe(3);
    // the API's bulk body carries payloads only: never a reference, never a clash
    const res = await t.http.post(`${itemsPath(q.name)}/bulk`).set('X-API-Key', await key()).send({ items: [{}, {}] });
    expect(res.status).toBe(200);
  });

  it('refuses to turn on over items that share references, saying how many, and turns on once they are gone', async () => {
    const res = await createQueue({});
    const q = res.body.data as { id: string; name: string };
    for (const reference of ['D-1', 'D-1', 'D-1', 'D-2', 'D-2', 'D-3']) expect((await add(q.name, { data: {}, reference })).status).toBe(200);
    const on = await patchQueue(q.id, { unique_references: true });
    expect(on.status).toBe(409);
    expect(on.body.error).toMatchObject({
      code: 'CONFLICT',
      message: 'La cola ya tiene 5 elementos que comparten 2 referencias; no se pueden exigir referencias únicas',
      details: { field: 'unique_references', duplicate_references: 2, duplicate_items: 5 },
    });
    expect((await t.http.get(`${settings}/${q.id}`).set(bearer(w.admin))).body.data.unique_references).toBe(false);
    await t.sql`delete from queue_items where queue_id = ${q.id} and reference in ('D-1', 'D-2')`;
    expect((await add(q.name, { data: {}, reference: 'D-1' })).status).toBe(200);
    expect((await patchQueue(q.id, { unique_references: true })).status).toBe(200);
    // the items already there now hold their references
    expect((await add(q.name, { data: {}, reference: 'D-3' })).status).toBe(409);
    expect((await add(q.name, { data: {}, reference: 'D-1' })).status).toBe(409);
    // off again: duplicates are allowed as before, and nothing is kept for the queue
    expect((await patchQueue(q.id, { unique_references: false })).status).toBe(200);
    expect((await add(q.name, { data: {}, reference: 'D-3' })).status).toBe(200);
    expect(await t.sql`select 1 from queue_item_references where queue_id = ${q.id}`).toHaveLength(0);
  });

  it('allows duplicates on a queue with the setting off, and writes nothing for it', async () => {
    const q = (await createQueue({})).body.data as { id: string; name: string };
    for (let i = 0; i < 3; i++) expect((await add(q.name, { data: {}, reference: 'SAME' })).status).toBe(200);
    expect(await stored(q.id, 'SAME')).toHaveLength(3);
    expect(await t.sql`select 1 from queue_item_references where queue_id = ${q.id}`).toHaveLength(0);
  });

  it('no longer counts an item removed by retention, nor one deleted', async () => {
    const q = await uniqueQueue();
    await patchQueue(q.id, { retention_completed_days: 0.0001 });
    const old = await add(q.name, { data: {}, reference: 'OLD' });
    await t.sql`update queue_items set status = 'completed', processed_at = now() - interval '1 hour', updated_at = now() - interval '1 hour'
      where id = ${old.body.data.id}`;
    expect((await add(q.name, { data: {}, reference: 'OLD' })).status).toBe(409);
    const done = await t.deps.engine.sweeps.retention();
    expect(done.find((d) => d.target_id === q.id)).toMatchObject({ deleted: 1 });
    const again = await add(q.name, { data: {}, reference: 'OLD' });
    expect(again.status).toBe(200);
    expect(await t.sql`select item_id from queue_item_references where queue_id = ${q.id}`).toEqual([{ item_id: again.body.data.id }]);
    // any delete of items frees their references alike (a bulk delete, the queue's cascade)
    await t.sql`delete from queue_items where id = ${again.body.data.id}`;
    expect(await t.sql`select 1 from queue_item_references where queue_id = ${q.id}`).toHaveLength(0);
    expect((await add(q.name, { data: {}, reference: 'OLD' })).status).toBe(200);
  });

  it('leaves another workspace\'s queue with the same reference alone', async () => {
    const q = await uniqueQueue();
    const other = await t.http.post(settings).set(bearer(w.adminB)).send({ name: q.name, unique_references: true });
    expect(other.status).toBe(201);
    expect((await add(q.name, { data: {}, reference: 'SHARED' })).status).toBe(200);
    expect((await add(q.name, { data: {}, reference: 'SHARED' }, { apiKey: await key(w.tenantB) })).status).toBe(200);
    // another queue of the same workspace too
    const sibling = await uniqueQueue();
    expect((await add(sibling.name, { data: {}, reference: 'SHARED' })).status).toBe(200);
  });
});
