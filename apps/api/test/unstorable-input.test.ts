import { MAX_JSON_DEPTH } from '@svc/core';
import {
  captureLog, seedApiKey, seedMachine, seedProcess, seedQueue, seedTenant, seedUser, type CapturedLog,
} from '@svc/testing';
import { createApiTestContext, type ApiTestContext } from '@svc/testing/api';
import { bearer } from './settings-fixtures';

const NUL_MESSAGE = 'no puede contener el carácter nulo (U+0000)';
const SURROGATE_MESSAGE = 'no puede contener un carácter sustituto UTF-16 sin pareja (U+D800 a U+DFFF)';

/** `{"a":{"a":…}}` `levels` deep, as text (JSON.stringify itself would overflow at 10,000). */
const deepObjectText = (levels: number) => `${'{"a":'.repeat(levels - 1)}{}${'}'.repeat(levels - 1)}`;

/**
 * Text Postgres cannot store (U+0000, lone UTF-16 surrogates) and absurd nesting, in bodies, path
 * segments and query strings: each is refused once, at the edge, as a 422 naming the field (or a
 * 404 for a name in the path, which cannot exist) — never a 500 with a stack trace in the log.
 */
describe('text Postgres cannot store', () => {
  let t: ApiTestContext;
  let log: CapturedLog;
  let tenantId: string;
  let queueName: string;
  let processId: string;
  let machineId: string;
  let admin: string;
  const key = async () => (await seedApiKey(t.sql, tenantId)).key;

  beforeAll(async () => {
    t = await createApiTestContext();
    log = captureLog(t.deps.logger);
    const tenant = await seedTenant(t.sql);
    tenantId = tenant.id;
    queueName = (await seedQueue(t.sql, tenantId)).name;
    processId = (await seedProcess(t.sql, tenantId)).id;
    machineId = (await seedMachine(t.sql, tenantId)).row.id;
    admin = (await seedUser(t.sql, tenantId, { role: 'admin' })).token;
  });
  afterAll(async () => {
    log.stop();
    await t.close();
  });
  afterEach(() => {
    // every 500 logs its stack at error level: none may have happened during the test
    expect(log.entries.splice(0).map((e) => e.message)).toEqual([]);
  });

  const postItem = async (body: unknown | string, name = queueName) => {
    const req = t.http.post(`/api/v1/queues/by-name/${encodeURIComponent(name)}/items`).set('X-API-Key', await key());
    return typeof body === 'string' ? req.set('Content-Type', 'application/json').send(body) : req.send(body as object);
  };

  it('refuses U+0000 and lone surrogates anywhere in an item body with a 422 naming the field', async () => {
    const cases: Array<[unknown, string, string]> = [
      [{ data: { note: 'a\u0000b' } }, 'body → data → note', NUL_MESSAGE],
      [{ data: { list: ['ok', '\ud800'] } }, 'body → data → list → 1', SURROGATE_MESSAGE],
      [{ data: {}, reference: 'ref\u0000' }, 'body → reference', NUL_MESSAGE],
      [{ data: { '\udc00key': 1 } }, 'body → data → \\udc00key', `el nombre del campo ${SURROGATE_MESSAGE}`],
    ];
    for (const [body, field, message] of cases) {
      const res = await postItem(body);
      expect(res.status).toBe(422);
      expect(res.body.error).toMatchObject({ code: 'VALIDATION_ERROR', details: [{ field, message }], request_id: res.headers['x-request-id'] });
    }
    const ok = await postItem({ data: { emoji: '\ud83d\ude00', accents: 'ñandú' } });
    expect(ok.status).toBe(200);
    expect(ok.body.data.data).toEqual({ emoji: '\ud83d\ude00', accents: 'ñandú' });
  });

  it(`refuses JSON nested deeper than ${MAX_JSON_DEPTH} levels (10,000 too) and keeps ${MAX_JSON_DEPTH}`, async () => {
    const deep = await postItem(`{"data":${deepObjectText(10_000)}}`);
    expect(deep.status).toBe(422);
    expect(deep.body.detail[0]).toMatchObject({ type: 'json_too_deep', loc: ['body', 'data', ...Array<string>(MAX_JSON_DEPTH - 1).fill('a')] });
    const deepBulk = await t.http
      .post(`/api/v1/queues/by-name/${queueName}/items/bulk`)
      .set('X-API-Key', await key())
      .set('Content-Type', 'application/json')
      .send(`{"items":[${'['.repeat(10_000)}${']'.repeat(10_000)}]}`);
    expect(deepBulk.status).toBe(422);
    expect(deepBulk.body.detail[0].type).toBe('json_too_deep');
    const limit = await postItem(`{"data":${deepObjectText(MAX_JSON_DEPTH - 1)}}`);
    expect(limit.status).toBe(200);
  });

  it('answers 404 before any of this when the queue does not exist (the order 404 → 422 holds)', async () => {
    const res = await postItem({ data: { note: '\u0000' } }, 'no-such-queue');
    expect(res.status).toBe(404);
  });

  it('refuses it in bulk items, settings bodies and both triggers', async () => {
    const k = await key();
    const bulk = await t.http.post(`/api/v1/queues/by-name/${queueName}/items/bulk`).set('X-API-Key', k).send({ items: [{ a: 1 }, { b: 'x\u0000' }] });
    expect(bulk.status).toBe(422);
    expect(bulk.body.error.details).toEqual([{ field: 'body → items → 1 → b', message: NUL_MESSAGE }]);

    const folder = await t.http.post('/api/v1/settings/folders').set(bearer(admin)).send({ name: 'fine', description: 'bad\u0000' });
    expect(folder.status).toBe(422);
    expect(folder.body.error.details).toEqual([{ field: 'body → description', message: NUL_MESSAGE }]);

    const asset = await t.http
      .post('/api/v1/settings/assets')
      .set(bearer(admin))
      .send({ name: 'token', type: 'text', values: { production: 'v\ud800' } });
    expect(asset.status).toBe(422);
    expect(asset.body.error.details).toEqual([{ field: 'body → values → production', message: SURROGATE_MESSAGE }]);

    const job = await t.http.post('/api/v1/jobs/trigger').set('X-API-Key', k).send({ process_id: processId, input_data: { a: '\u0000' } });
    expect(job.status).toBe(422);
    expect(job.body.error.details).toEqual([{ field: 'body → input_data → a', message: NUL_MESSAGE }]);

    const hook = await t.http.post(`/api/v1/webhooks/trigger/${processId}`).set('X-API-Key', k).send({ machine_id: machineId, input_data: { '\u0000': 1 } });
    expect(hook.status).toBe(422);
    expect(hook.body.error.details).toEqual([{ field: 'body → input_data → \\u0000', message: `el nombre del campo ${NUL_MESSAGE}` }]);

    // the webhook's process is in the path: its absence still answers first, with an Idempotency-Key too
    const missing = await t.http
      .post('/api/v1/webhooks/trigger/00000000-0000-4000-8000-000000000000')
      .set('X-API-Key', k)
      .set('Idempotency-Key', 'unstorable-1')
      .send({ machine_id: machineId, input_data: { a: '\u0000' } });
    expect(missing.status).toBe(404);
  });

  it('answers 404 for a queue or asset name in the path that holds U+0000, and 422 for such an id', async () => {
    const k = await key();
    for (const segment of ['a%00b', '%00']) {
      expect((await t.http.get(`/api/v1/queues/by-name/${segment}/items`).set('X-API-Key', k)).status).toBe(404);
      expect((await t.http.post(`/api/v1/queues/by-name/${segment}/items`).set('X-API-Key', k).send({ data: {} })).status).toBe(404);
      expect((await t.http.get(`/api/v1/assets/by-name/${segment}`).set('X-API-Key', k)).status).toBe(404);
    }
    const job = await t.http.get('/api/v1/jobs/%00').set('X-API-Key', k);
    expect(job.status).toBe(422);
    expect(job.body.error.details[0].field).toBe('path → job_id');
    const folder = await t.http.get('/api/v1/settings/folders/x%00').set(bearer(admin));
    expect(folder.status).toBe(422);
    expect(folder.body.error.details[0].field).toBe('path → id');
  });

  it('takes a path segment that is not valid percent-encoded UTF-8 as the text sent: a name that does not exist', async () => {
    const k = await key();
    for (const segment of ['%ED%A0%80', '%', '%E0%A4%A', '%FF', 'a%2Fb']) {
      const res = await t.http.get(`/api/v1/queues/by-name/${segment}/items`).set('X-API-Key', k);
      expect(res.status).toBe(404);
      expect(res.body.error.code).toBe('NOT_FOUND');
    }
  });

  it('refuses U+0000 in a query value or name with a 422 naming the parameter', async () => {
    const k = await key();
    const value = await t.http.get(`/api/v1/queues/by-name/${queueName}/items?status=new%00`).set('X-API-Key', k);
    expect(value.status).toBe(422);
    expect(value.body.error.details).toEqual([{ field: 'query → status', message: NUL_MESSAGE }]);
    const name = await t.http.get('/api/v1/settings/folders?a%00=1').set(bearer(admin));
    expect(name.status).toBe(422);
    expect(name.body.error.details).toEqual([{ field: 'query → a\\u0000', message: NUL_MESSAGE }]);
  });

  it('keeps refusing an Idempotency-Key that is not printable ASCII (headers cannot carry U+0000)', async () => {
    const res = await t.http
      .post(`/api/v1/queues/by-name/${queueName}/items`)
      .set('X-API-Key', await key())
      .set('Idempotency-Key', 'caf\u00e9')
      .send({ data: {} });
    expect(res.status).toBe(422);
    expect(res.body.error.details[0].field).toBe('header → Idempotency-Key');
  });
});
