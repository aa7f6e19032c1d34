import { seedApiKey, seedTenantWithKey, seedProcess, seedTenant } from '@svc/testing';
import type { QueryOf } from '@svc/client';
import { apiClient, createApiTestContext, type ApiTestContext } from '@svc/testing/api';

const URL = '/api/v1/processes/list';

describe('GET /api/v1/processes/list', () => {
  let t: ApiTestContext;
  beforeAll(async () => {
    t = await createApiTestContext();
  });
  afterAll(() => t.close());

  const tenantWithKey = (scopes = ['processes:read']) => seedTenantWithKey(t.sql, scopes);
  /** A read as an integrator makes it, through the typed client (@svc/client). */
  const list = (key: string, query: QueryOf<'listProcesses'> = {}) => apiClient(t, { apiKey: key }).request('listProcesses', { query });
  const names = (page: { data: Array<{ name: string }> }) => page.data.map((p) => p.name);

  async function seedFolder(tenantId: string, name = `folder-${Math.random().toString(16).slice(2)}`) {
    const [row] = await t.sql`insert into folders (tenant_id, name) values (${tenantId}, ${name}) returning *`;
    return row!;
  }

  it('returns every field of ProcessResponse, with ISO datetimes and nothing else', async () => {
    const { tenant, key } = await tenantWithKey();
    const folder = await seedFolder(tenant.id);
    const next = await seedProcess(t.sql, tenant.id, { name: 'zz-next' });
    const p = await seedProcess(t.sql, tenant.id, {
      name: 'aa-invoices',
      folder_id: folder.id,
      input_schema: { type: 'object', required: ['invoice'] },
      timeout_seconds: 120,
      max_retries: 2,
      auto_retry: true,
      retry_delay_seconds: 30,
      sla_deadline_minutes: 45,
      on_success_trigger_process_id: next.id,
    });
    await t.sql`update processes set description = 'Reads invoices', tags = ${['erp', 'finance']}, required_assets = ${['erp-login']}
                where id = ${p.id}`;
    const [row] = await t.sql`select * from processes where id = ${p.id}`;

    const res = await list(key);
    expect(res.success).toBe(true);
    expect(res.data[0]).toEqual({
      id: p.id,
      name: 'aa-invoices',
      description: 'Reads invoices',
      release_id: row!.release_id,
      folder_id: folder.id,
      input_schema: { type: 'object', required: ['invoice'] },
      timeout_seconds: 120,
      max_retries: 2,
      auto_retry: true,
      retry_delay_seconds: 30,
      tags: ['erp', 'finance'],
      sla_deadline_minutes: 45,
      on_success_trigger_process_id: next.id,
      required_assets: ['erp-login'],
      is_active: true,
      created_at: row!.created_at.toISOString(),
      updated_at: row!.updated_at.toISOString(),
    });
    // nullable fields come back as null, not missing
    expect(res.data[1]).toMatchObject({
      name: 'zz-next', description: null, folder_id: null, input_schema: null, tags: null,
      sla_deadline_minutes: null, on_success_trigger_process_id: null, required_assets: [],
    });
    expect(res.meta).toEqual({ page: 1, limit: 20, total: 2, pages: 1 });
  });

  it('lists active processes only, ordered by name', async () => {
    const { tenant, key } = await tenantWithKey();
    await seedProcess(t.sql, tenant.id, { name: 'charlie' });
    await seedProcess(t.sql, tenant.id, { name: 'alpha' });
    await seedProcess(t.sql, tenant.id, { name: 'bravo', is_active: false });
    await seedProcess(t.sql, tenant.id, { name: 'delta' });
    const res = await list(key);
    expect(names(res)).toEqual(['alpha', 'charlie', 'delta']);
    expect(res.data.every((p) => p.is_active)).toBe(true);
    expect(res.meta.total).toBe(3);
  });

  it('pages with page and limit and reports meta {page, limit, total, pages}', async () => {
    const { tenant, key } = await tenantWithKey();
    for (let i = 0; i < 25; i++) await seedProcess(t.sql, tenant.id, { name: `p-${String(i).padStart(2, '0')}` });

    const first = await list(key);
    expect(first.data).toHaveLength(20);
    expect(first.meta).toEqual({ page: 1, limit: 20, total: 25, pages: 2 });

    const third = await list(key, { page: 3, limit: 10 });
    expect(names(third)).toEqual(['p-20', 'p-21', 'p-22', 'p-23', 'p-24']);
    expect(third.meta).toEqual({ page: 3, limit: 10, total: 25, pages: 3 });

    const beyond = await list(key, { page: 500, limit: 100 });
    expect(beyond.data).toEqual([]);
    expect(beyond.meta).toEqual({ page: 500, limit: 100, total: 25, pages: 1 });
  });

  it('filters by folder_id; a folder of another workspace matches nothing', async () => {
    const { tenant, key } = await tenantWithKey();
    const other = await seedTenant(t.sql);
    const f1 = await seedFolder(tenant.id);
    const f2 = await seedFolder(tenant.id);
    const foreign = await seedFolder(other.id);
    await seedProcess(t.sql, tenant.id, { name: 'in-f1-a', folder_id: f1.id });
    await seedProcess(t.sql, tenant.id, { name: 'in-f1-b', folder_id: f1.id });
    await seedProcess(t.sql, tenant.id, { name: 'in-f1-off', folder_id: f1.id, is_active: false });
    await seedProcess(t.sql, tenant.id, { name: 'in-f2', folder_id: f2.id });
    await seedProcess(t.sql, tenant.id, { name: 'no-folder' });
    await seedProcess(t.sql, other.id, { name: 'foreign', folder_id: foreign.id });

    const res = await list(key, { folder_id: f1.id });
    expect(names(res)).toEqual(['in-f1-a', 'in-f1-b']);
    expect(res.meta).toEqual({ page: 1, limit: 20, total: 2, pages: 1 });

    const cross = await list(key, { folder_id: foreign.id });
    expect(cross.data).toEqual([]);
    expect(cross.meta.total).toBe(0);
  });

  it('never shows another workspace\'s processes', async () => {
    const { tenant, key } = await tenantWithKey();
    const other = await seedTenant(t.sql);
    await seedProcess(t.sql, tenant.id, { name: 'mine' });
    await seedProcess(t.sql, other.id, { name: 'theirs-1' });
    await seedProcess(t.sql, other.id, { name: 'theirs-2' });
    const res = await list(key);
    expect(names(res)).toEqual(['mine']);
    expect(res.meta.total).toBe(1);
  });

  it.each([
    ['page=0', 'query → page'],
    ['page=501', 'query → page'],
    ['page=abc', 'query → page'],
    ['limit=0', 'query → limit'],
    ['limit=101', 'query → limit'],
    ['limit=2.5', 'query → limit'],
    ['folder_id=not-a-uuid', 'query → folder_id'],
    ['is_active=false', 'query → is_active'],
  ])('rejects %s with 422 naming %s', async (qs, field) => {
    const { key } = await tenantWithKey();
    const res = await t.http.get(`${URL}?${qs}`).set('X-API-Key', key);
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe('VALIDATION_ERROR');
    expect(res.body.error.details.map((d: { field: string }) => d.field)).toContain(field);
    expect(res.body.detail[0]).toMatchObject({ loc: expect.arrayContaining(['query']), msg: expect.any(String), type: expect.any(String) });
  });

  describe('authentication and scope, in the contract order', () => {
    it('answers 401 without a key, with an unknown key, a revoked key and an expired key', async () => {
      const { tenant } = await tenantWithKey();
      expect((await t.http.get(URL)).status).toBe(401);
      const unknown = await t.http.get(URL).set('X-API-Key', 'svc_ak_thisisnotakey');
      expect(unknown.status).toBe(401);
      expect(unknown.body.error).toMatchObject({ code: 'UNAUTHORIZED', message: 'Credenciales inválidas' });
      const revoked = await seedApiKey(t.sql, tenant.id, { scopes: ['processes:read'], is_active: false });
      expect((await t.http.get(URL).set('X-API-Key', revoked.key)).status).toBe(401);
      const expired = await seedApiKey(t.sql, tenant.id, { scopes: ['processes:read'], expires_at: new Date(Date.now() - 1000) });
      const res = await t.http.get(URL).set('X-API-Key', expired.key);
      expect(res.status).toBe(401);
      expect(res.body.error.message).toBe('API key expirada');
    });

    it('answers 403 without processes:read, and 403 from a disallowed IP', async () => {
      const { key } = await tenantWithKey(['machines:read', 'jobs:read']);
      const res = await t.http.get(URL).set('X-API-Key', key);
      expect(res.status).toBe(403);
      expect(res.body.error.code).toBe('FORBIDDEN');
      const tenant = await seedTenant(t.sql);
      const ipKey = await seedApiKey(t.sql, tenant.id, { scopes: ['processes:read'], allowed_ips: ['203.0.113.0/24'] });
      const ip = await t.http.get(URL).set('X-API-Key', ipKey.key);
      expect(ip.status).toBe(403);
      expect(ip.body.error.message).toBe('IP no autorizada');
    });

    it('reports 401 before 422 and 403 before 422 when the query is also invalid', async () => {
      expect((await t.http.get(`${URL}?limit=0`)).status).toBe(401);
      const { key } = await tenantWithKey(['machines:read']);
      expect((await t.http.get(`${URL}?limit=0`).set('X-API-Key', key)).status).toBe(403);
    });
  });

  it('allows 60 requests a minute per key, then answers 429 with Retry-After', async () => {
    const { key } = await tenantWithKey();
    for (let i = 0; i < 60; i++) {
      const res = await t.http.get(`${URL}?limit=1`).set('X-API-Key', key);
      expect(res.status).toBe(200);
      if (i === 0) expect(res.headers['x-ratelimit-limit']).toBe('60');
    }
    const res = await t.http.get(`${URL}?limit=1`).set('X-API-Key', key);
    expect(res.status).toBe(429);
    expect(res.body.error.code).toBe('RATE_LIMIT_EXCEEDED');
    expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
    expect(res.headers['x-ratelimit-remaining']).toBe('0');
    // another key has its own budget
    const { key: other } = await tenantWithKey();
    expect((await t.http.get(URL).set('X-API-Key', other)).status).toBe(200);
  });
});
