import { seedApiKey, seedTenant } from '@svc/testing';
import { createApiTestContext, type ApiTestContext } from '@svc/testing/api';

describe('request plumbing and the error envelope', () => {
  let t: ApiTestContext;
  beforeAll(async () => {
    t = await createApiTestContext();
  });
  afterAll(() => t.close());

  it('answers an unknown route with a 404 envelope carrying the request id', async () => {
    const res = await t.http.get('/api/v1/nope');
    expect(res.status).toBe(404);
    expect(res.body).toEqual({
      success: false,
      error: { code: 'NOT_FOUND', message: 'Ruta no encontrada', request_id: res.headers['x-request-id'] },
    });
  });

  it('honours a sane incoming X-Request-Id and replaces an unsafe one', async () => {
    const good = await t.http.get('/nope').set('X-Request-Id', 'abc-123');
    expect(good.headers['x-request-id']).toBe('abc-123');
    expect(good.body.error.request_id).toBe('abc-123');
    const bad = await t.http.get('/nope').set('X-Request-Id', 'a b <script>');
    expect(bad.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
  });

  // POST /auth/login needs no credential: its body is read right after the rate limit
  it('refuses a body over 2 MiB with 413 before reading it', async () => {
    const res = await t.http
      .post('/api/v1/auth/login')
      .set('Content-Type', 'application/json')
      .send(JSON.stringify({ data: 'x'.repeat(2 * 1024 * 1024) }));
    expect(res.status).toBe(413);
    expect(res.body.error.code).toBe('PAYLOAD_TOO_LARGE');
  });

  it('answers malformed JSON with a 422 in both validation forms', async () => {
    const res = await t.http.post('/api/v1/auth/login').set('Content-Type', 'application/json').send('{"data": ');
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe('VALIDATION_ERROR');
    expect(res.body.error.details).toEqual([{ field: 'body', message: 'JSON mal formado' }]);
    expect(res.body.detail).toEqual([{ loc: ['body'], msg: 'JSON mal formado', type: 'json_invalid' }]);
  });

  it('answers a non-JSON content type with 415 HTTP_ERROR', async () => {
    const res = await t.http.post('/api/v1/auth/login').set('Content-Type', 'text/plain').send('hello');
    expect(res.status).toBe(415);
    expect(res.body.error.code).toBe('HTTP_ERROR');
  });

  it('answers an unknown route with 404 whatever its body', async () => {
    const res = await t.http.post('/api/v1/anything').set('Content-Type', 'application/json').send('{"data": ');
    expect(res.status).toBe(404);
    expect(res.body.error.code).toBe('NOT_FOUND');
  });

  it('answers a wrong method on a known route with 405 HTTP_ERROR and an Allow header', async () => {
    const res = await t.http.put('/api/v1/jobs/trigger').set('Content-Type', 'application/json').send('{}');
    expect(res.status).toBe(405);
    expect(res.headers.allow).toContain('POST');
    expect(res.body).toEqual({
      success: false,
      error: { code: 'HTTP_ERROR', message: 'Método no permitido', request_id: res.headers['x-request-id'] },
    });
  });

  it('never sends a stack trace: an unexpected failure is a generic 500 with the request id', async () => {
    // a query against a dropped table fails deep inside a real handler
    await t.sql`alter table queues rename to queues_gone`;
    try {
      const tenant = await seedTenant(t.sql);
      const { key } = await seedApiKey(t.sql, tenant.id);
      const res = await t.http.get('/api/v1/queues/by-name/x/items').set('X-API-Key', key);
      expect(res.status).toBe(500);
      expect(res.body).toEqual({
        success: false,
        error: { code: 'INTERNAL_ERROR', message: 'Error interno del servidor', request_id: res.headers['x-request-id'] },
      });
      expect(res.text).not.toMatch(/queues_gone|at .*\.ts|relation/);
    } finally {
      await t.sql`alter table queues_gone rename to queues`;
    }
  });

  it('serves liveness and readiness', async () => {
    expect((await t.http.get('/health')).body).toEqual({ success: true, data: { status: 'ok' } });
    const ready = await t.http.get('/ready');
    expect(ready.status).toBe(200);
    expect(ready.body.data).toEqual({ postgres: 'ok', redis: 'ok' });
  });
});
