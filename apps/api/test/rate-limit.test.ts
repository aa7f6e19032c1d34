import type { Response } from 'supertest';
import { requestOnce, seedApiKey, seedTenant, seedUser, startApiProcesses, type ApiProcess } from '@svc/testing';
import { routeCatalog } from '../src/http/route';
import { createApiTestContext, type ApiTestContext } from '@svc/testing/api';

const MISSING = '00000000-0000-4000-8000-000000000000';

/** The public rate-limit table, written out here so the test does not trust the table in core. */
const CONTRACT: Record<string, number> = {
  'GET /jobs/list': 60,
  'GET /jobs/:job_id': 60,
  'POST /jobs/trigger': 30,
  'POST /jobs/:job_id/stop': 30,
  'GET /processes/list': 60,
  'GET /machines/list': 60,
  'GET /assets/by-name/:name': 30,
  'POST /queues/by-name/:name/items': 60,
  'GET /queues/by-name/:name/items': 60,
  'POST /queues/by-name/:name/items/bulk': 20,
  'POST /webhooks/trigger/:process_id': 60,
};

function expectLimitHeaders(res: Response, limit: number, remaining: number): void {
  expect(res.headers['x-ratelimit-limit']).toBe(String(limit));
  expect(res.headers['x-ratelimit-remaining']).toBe(String(remaining));
  const reset = Number(res.headers['x-ratelimit-reset']);
  const now = Date.now() / 1000;
  expect(reset).toBeGreaterThanOrEqual(Math.floor(now));
  expect(reset).toBeLessThanOrEqual(Math.ceil(now) + 61);
}

function expect429(res: Response, limit: number): void {
  expect(res.status).toBe(429);
  expect(res.body.success).toBe(false);
  expect(res.body.error).toMatchObject({ code: 'RATE_LIMIT_EXCEEDED', message: 'Límite de solicitudes excedido' });
  expect(res.body.error.request_id).toEqual(expect.any(String));
  const retryAfter = Number(res.headers['retry-after']);
  expect(Number.isInteger(retryAfter)).toBe(true);
  expect(retryAfter).toBeGreaterThanOrEqual(1);
  expect(retryAfter).toBeLessThanOrEqual(60);
  expectLimitHeaders(res, limit, 0);
}

describe('rate limits (per key, per route, one-minute windows)', () => {
  let t: ApiTestContext;
  let tenant: string;
  beforeAll(async () => {
    // one trusted proxy, so a test can choose the client IP through X-Forwarded-For
    t = await createApiTestContext({ trustedProxyCount: 1 });
    tenant = (await seedTenant(t.sql)).id;
  });
  afterAll(() => t.close());

  const asset = (key: string, ip = '198.51.100.1') =>
    t.http.get('/api/v1/assets/by-name/no-such-asset').set('X-API-Key', key).set('X-Forwarded-For', ip);

  it('allows exactly the limit in a window and answers the next request with 429 and its headers', async () => {
    const { key } = await seedApiKey(t.sql, tenant);
    for (let i = 1; i <= 30; i++) {
      const res = await asset(key);
      expect(res.status).toBe(404); // the limit comes before existence, and rejected requests count
      expectLimitHeaders(res, 30, 30 - i);
    }
    // the clock read before the request: the answer may take any time on a loaded host
    const sentAt = Math.floor(Date.now() / 1000);
    const over = await asset(key);
    expect429(over, 30);
    expect(Number(over.headers['retry-after'])).toBeLessThanOrEqual(Number(over.headers['x-ratelimit-reset']) - sentAt + 1);
    expect429(await asset(key), 30);
  });

  it('counts per key: another key, even of the same workspace and IP, has its whole budget', async () => {
    const first = await seedApiKey(t.sql, tenant);
    for (let i = 0; i < 30; i++) await asset(first.key);
    expect((await asset(first.key)).status).toBe(429);
    const second = await seedApiKey(t.sql, tenant);
    const res = await asset(second.key);
    expect(res.status).toBe(404);
    expectLimitHeaders(res, 30, 29);
  });

  it('counts per route: a key over one route limit still reaches the others', async () => {
    const { key } = await seedApiKey(t.sql, tenant);
    for (let i = 0; i < 30; i++) await asset(key);
    expect((await asset(key)).status).toBe(429);
    const other = await t.http.get('/api/v1/processes/list').set('X-API-Key', key);
    expect(other.status).toBe(200);
    expectLimitHeaders(other, 60, 59);
  });

  it('shares the webhook trigger limit among all requests of one key, whatever their IP', async () => {
    const { key } = await seedApiKey(t.sql, tenant, { scopes: [] });
    const hook = (ip: string) =>
      t.http.post(`/api/v1/webhooks/trigger/${MISSING}`).set('X-API-Key', key).set('X-Forwarded-For', ip).send({ machine_id: MISSING });
    for (let i = 1; i <= 60; i++) {
      const res = await hook(i % 2 ? `203.0.113.${i}` : `2001:db8::${i.toString(16)}`);
      expect(res.status).toBe(404);
      expectLimitHeaders(res, 60, 60 - i);
    }
    expect429(await hook('192.0.2.200'), 60);
    expect429(await hook('2001:db8::ffff'), 60);
  });

  describe('in the contract order 401 → 429 → 403 → 404 → 422', () => {
    it('answers 401, not 429, to a missing, unknown or revoked key once the budget is spent', async () => {
      const admin = (await seedUser(t.sql, tenant, { role: 'admin' })).token;
      const { key, row } = await seedApiKey(t.sql, tenant);
      for (let i = 0; i < 30; i++) await asset(key);
      expect((await asset(key)).status).toBe(429);
      expect((await t.http.get('/api/v1/assets/by-name/x').set('X-Forwarded-For', '198.51.100.1')).status).toBe(401);
      await t.http.delete(`/api/v1/settings/api-keys/${row.id}`).set('Authorization', `Bearer ${admin}`).expect(200);
      const revoked = await asset(key);
      expect(revoked.status).toBe(401);
      expect(revoked.headers['x-ratelimit-limit']).toBeUndefined();
    });

    it('answers 401 API key expirada, not 429, when the key expired after spending its budget', async () => {
      const { key, row } = await seedApiKey(t.sql, tenant);
      for (let i = 0; i < 30; i++) await asset(key);
      await t.sql`update api_keys set expires_at = now() - interval '1 second' where id = ${row.id}`;
      await t.deps.apiKeys.invalidate({ id: row.id, hashes: [] });
      const res = await asset(key);
      expect(res.status).toBe(401);
      expect(res.body.error.message).toBe('API key expirada');
    });

    it('answers 429 before a missing scope (403), and the 403s count', async () => {
      const { key } = await seedApiKey(t.sql, tenant, { scopes: ['jobs:read'] });
      for (let i = 1; i <= 30; i++) {
        const res = await asset(key);
        expect(res.status).toBe(403);
        expectLimitHeaders(res, 30, 30 - i);
      }
      expect429(await asset(key), 30);
    });

    it('answers 429 before an IP that is not allowed (403)', async () => {
      const { key } = await seedApiKey(t.sql, tenant, { allowed_ips: ['192.0.2.1'], scopes: ['jobs:read'] });
      for (let i = 0; i < 30; i++) expect((await asset(key)).body.error.message).toBe('IP no autorizada');
      expect429(await asset(key), 30);
    });

    it('answers 429 before a missing plan feature (403)', async () => {
      const poor = (await seedTenant(t.sql, { plan_features: [] })).id;
      const { key } = await seedApiKey(t.sql, poor);
      const trigger = () => t.http.post('/api/v1/jobs/trigger').set('X-API-Key', key).send({ process_id: MISSING });
      for (let i = 0; i < 30; i++) expect((await trigger()).status).toBe(403);
      expect429(await trigger(), 30);
    });

    it('answers 429 before invalid input (422)', async () => {
      const { key } = await seedApiKey(t.sql, tenant);
      const get = () => t.http.get('/api/v1/jobs/not-a-uuid').set('X-API-Key', key);
      for (let i = 0; i < 60; i++) expect((await get()).status).toBe(422);
      expect429(await get(), 60);
    });
  });

  describe('every route has a limit', () => {
    it('declares every route of the contract limit table', () => {
      const declared = Object.keys(CONTRACT).filter((id) => {
        const [method, path] = id.split(' ') as [string, string];
        return routeCatalog.has(`${method.toLowerCase()} ${path}`);
      });
      expect(declared).toEqual(Object.keys(CONTRACT));
    });

    it('answers every declared route with X-RateLimit headers of its own limit', async () => {
      const { key } = await seedApiKey(t.sql, tenant);
      const routes = [...routeCatalog.values()];
      expect(routes.length).toBeGreaterThan(20);
      for (const spec of routes) {
        const id = `${spec.method.toUpperCase()} ${spec.path}`;
        const expected = spec.rateLimit ?? CONTRACT[id] ?? 120;
        // an event stream never ends: asked with an unknown event type, it answers 422 at once (after the limiter)
        const query = spec.path.endsWith('/events/stream') ? '?types=no.such.type' : '';
        const url = `/api/v1${spec.path.replace(/:(\w+)/g, (_m, name: string) => (name.endsWith('id') ? MISSING : 'nope'))}${query}`;
        let req = t.http[spec.method](url).set('X-Forwarded-For', '198.51.100.77');
        if (spec.auth.kind === 'api_key') req = req.set('X-API-Key', key);
        if (spec.auth.kind === 'user') req = req.set('Authorization', `Bearer ${(await seedUser(t.sql, tenant, { role: 'admin' })).token}`);
        if (spec.method !== 'get' && spec.method !== 'delete') req = req.send({});
        const res = await req;
        expect([id, res.status < 500, res.headers['x-ratelimit-limit']]).toEqual([id, true, String(expected)]);
      }
    });
  });

  describe('identities other than an API key', () => {
    it('counts requests without a credential per source IP', async () => {
      const login = (ip: string) => t.http.post('/api/v1/auth/login').set('X-Forwarded-For', ip).send({});
      expectLimitHeaders(await login('203.0.113.50'), 120, 119);
      expectLimitHeaders(await login('203.0.113.50'), 120, 118);
      expectLimitHeaders(await login('203.0.113.51'), 120, 119);
      expectLimitHeaders(await login('2001:db8::50'), 120, 119);
    });

    it('counts management requests per access token, at the default 120 per minute', async () => {
      const one = (await seedUser(t.sql, tenant, { role: 'admin' })).token;
      const two = (await seedUser(t.sql, tenant, { role: 'admin' })).token;
      const list = (token: string, ip: string) =>
        t.http.get('/api/v1/settings/api-keys').set('Authorization', `Bearer ${token}`).set('X-Forwarded-For', ip);
      for (let i = 1; i <= 120; i++) expect((await list(one, `203.0.113.${i}`)).status).toBe(200);
      expect429(await list(one, '192.0.2.9'), 120);
      expectLimitHeaders(await list(two, '192.0.2.9'), 120, 119);
    });
  });

  describe('two API processes', () => {
    let a: ApiProcess;
    let b: ApiProcess;
    beforeAll(async () => {
      [a, b] = (await startApiProcesses(2, t.childEnv)) as [ApiProcess, ApiProcess];
    });
    afterAll(async () => {
      await Promise.all([a?.stop(), b?.stop()]);
    });

    // one request per connection, so that the limiter counts exactly the requests sent (requestOnce)
    const list = (p: ApiProcess, key: string) => requestOnce(`${p.url}/api/v1/processes/list`, { headers: { 'X-API-Key': key } });

    it('share one budget: N requests split across both pass, request N+1 is refused by either', async () => {
      const { key } = await seedApiKey(t.sql, tenant);
      for (let i = 1; i <= 60; i++) {
        const res = await list(i % 2 ? a : b, key);
        expect(res.status).toBe(200);
        expect(res.headers.get('x-ratelimit-remaining')).toBe(String(60 - i));
      }
      for (const p of [a, b]) {
        const res = await list(p, key);
        expect(res.status).toBe(429);
        expect(res.headers.get('retry-after')).toMatch(/^\d+$/);
        expect(res.headers.get('x-ratelimit-limit')).toBe('60');
        expect(res.headers.get('x-ratelimit-remaining')).toBe('0');
        expect(((await res.json()) as { error: { code: string } }).error.code).toBe('RATE_LIMIT_EXCEEDED');
      }
    });

    it('let exactly the limit through when the requests arrive on both at once', async () => {
      const { key } = await seedApiKey(t.sql, tenant);
      const statuses = await Promise.all(Array.from({ length: 80 }, (_, i) => list(i % 2 ? a : b, key).then((r) => r.status)));
      const byStatus: Record<number, number> = {};
      for (const s of statuses) byStatus[s] = (byStatus[s] ?? 0) + 1;
      expect(byStatus).toEqual({ 200: 60, 429: 20 });
    });
  });
});
